"""Format check for vit_l_16 data: ImageNet val in ImageFolder layout (case_runners/cases/imagenet/data.py)."""

from case_runners.cases.imagenet.data import VAL_LAYOUT, check_data_dir, check_inference_data_dir, inference_split

__all__ = ["VAL_LAYOUT", "check_data_dir", "check_inference_data_dir", "inference_split"]
