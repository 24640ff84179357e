"""bigtransfer: BiT-M-R152x2 (ResNetV2 152 layers, width 2) image classification on ImageNet (ImageFolder layout)."""

from __future__ import annotations

from typing import Any

GROUPS = 32  # BiT's group norm: every normalised width a multiple of it


def plan_problems(params: dict[str, Any]) -> list[tuple[str, str]]:
    """(param, message) for a layout group norm cannot normalise: a stem, stage or bottleneck (a quarter of the
    stage) width that is not a multiple of 32; and a crop larger than the resize it is cut from."""
    problems = []
    if int(params["embedding_size"]) % GROUPS:
        problems.append(("embedding_size", f"key 'embedding_size' is {params['embedding_size']}: group norm needs a "
                                           f"multiple of {GROUPS}"))
    bad = [h for h in params["hidden_sizes"] if int(h) % (4 * GROUPS)]
    if bad:
        problems.append(("hidden_sizes", f"key 'hidden_sizes' has {bad[0]}: each width and its bottleneck (a "
                                         f"quarter) must be a multiple of {GROUPS}, so a multiple of {4 * GROUPS}"))
    if len(params["hidden_sizes"]) != len(params["depths"]):
        problems.append(("hidden_sizes", f"key 'hidden_sizes' has {len(params['hidden_sizes'])} entries but depths "
                                         f"has {len(params['depths'])}: one width per stage"))
    if int(params["train_resize"]) < int(params["image_size"]):
        problems.append(("train_resize", f"key 'train_resize' is {params['train_resize']}, smaller than the "
                                         f"image_size {params['image_size']} crop cut from it"))
    return problems
