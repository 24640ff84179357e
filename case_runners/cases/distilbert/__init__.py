"""distilbert: DistilBERT-base fine-tuned for SST-2 sentence classification on FlagPerf's pre-tokenised .npz files."""

from __future__ import annotations

from typing import Any


def plan_problems(params: dict[str, Any]) -> list[tuple[str, str]]:
    """(param, message) for a DistilBERT that cannot be built: a width its heads do not divide."""
    if int(params["dim"]) % int(params["n_heads"]):
        return [("n_heads", f"key 'n_heads' is {params['n_heads']}, which does not divide dim {params['dim']}: "
                            f"each head gets dim / n_heads features")]
    return []
