"""Format check for resnet50 data: ImageNet in ImageFolder layout (case_runners/cases/imagenet/data.py)."""

from case_runners.cases.imagenet.data import (
    LAYOUT,
    VAL_LAYOUT,
    check_data_dir,
    check_inference_data_dir,
    inference_split,
)

__all__ = ["LAYOUT", "VAL_LAYOUT", "check_data_dir", "check_inference_data_dir", "inference_split"]
