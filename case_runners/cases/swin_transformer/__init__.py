"""swin_transformer: Swin-T image classification on ImageNet (ImageFolder layout)."""

from __future__ import annotations

from typing import Any


def plan_problems(params: dict[str, Any]) -> list[tuple[str, str]]:
    """(param, message) for a Swin layout that cannot be built: a stage without its heads, or a stage's width
    (embed_dim doubled per stage) that its heads do not divide."""
    depths, heads, width = params["depths"], params["num_heads"], int(params["embed_dim"])
    if len(heads) != len(depths):
        return [("num_heads", f"key 'num_heads' has {len(heads)} entries but depths has {len(depths)}: one number of "
                              f"attention heads per stage")]
    for stage, count in enumerate(heads):
        if (width << stage) % int(count):
            return [("num_heads", f"key 'num_heads': stage {stage} is {width << stage} wide (embed_dim {width} x "
                                  f"{1 << stage}), which its {count} heads do not divide")]
    return []
