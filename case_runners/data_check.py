"""Check a case's data directory before anything is launched (stdlib only: no torch on this path)."""

from __future__ import annotations

import importlib
from typing import Any


def check_data(config: dict[str, Any]) -> list[str]:
    """Problems with the case's data dir, each naming the path and the expected format; [] when fine."""
    params = config["params"]
    if params.get("synthetic"):
        return []
    module = importlib.import_module(f"case_runners.cases.{config['case']}.data")
    return list(module.check_data_dir(config.get("data_dir"), params))
