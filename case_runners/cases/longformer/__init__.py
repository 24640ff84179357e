"""longformer: Longformer-base masked-LM training on FlagPerf's pre-tokenised .npz files (wikitext)."""

from __future__ import annotations

from typing import Any


def plan_problems(params: dict[str, Any]) -> list[tuple[str, str]]:
    """(param, message) for a Longformer that cannot be built: heads that do not divide the width, an odd window."""
    if int(params["hidden_size"]) % int(params["num_heads"]):
        return [("num_heads", f"key 'num_heads' is {params['num_heads']}, which does not divide hidden_size "
                              f"{params['hidden_size']}")]
    if int(params["attention_window"]) % 2:
        return [("attention_window", f"key 'attention_window' is {params['attention_window']}: Longformer needs an "
                                     f"even window (w/2 tokens either side)")]
    return []
