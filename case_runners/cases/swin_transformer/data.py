"""Format check for swin_transformer data: ImageNet in ImageFolder layout (case_runners/cases/imagenet/data.py); the
inference part reads val/ only."""

from case_runners.cases.imagenet.data import LAYOUT, VAL_LAYOUT, check_data_dir, check_inference_data_dir

__all__ = ["LAYOUT", "VAL_LAYOUT", "check_data_dir", "check_inference_data_dir"]
