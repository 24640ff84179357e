"""Format check for vit data: ImageNet in ImageFolder layout (case_runners/cases/imagenet/data.py)."""

from case_runners.cases.imagenet.data import LAYOUT, check_data_dir

__all__ = ["LAYOUT", "check_data_dir"]
