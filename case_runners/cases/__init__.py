"""Standard cases: one folder each with case.py, config.yaml, data.py and README.md (training), and inference/
with configurations.yaml, parameters.yaml and the six functions of the inference pipeline.

Importing this package (and any case's data.py) never imports torch.
"""

from __future__ import annotations

from pathlib import Path

from case_runners.core.errors import ConfigError

CASES_DIR = Path(__file__).resolve().parent


def list_cases(root: Path | None = None) -> list[str]:
    """Names of the cases shipped here (folders with config.yaml and case.py); root: those of another checkout."""
    base = CASES_DIR if root is None else root / "case_runners" / "cases"
    return sorted(p.name for p in base.iterdir()
                  if p.is_dir() and (p / "config.yaml").is_file() and (p / "case.py").is_file())


def case_dir(name: str) -> Path:
    """The folder of case `name`; ConfigError naming the known cases when there is none."""
    if name not in list_cases():
        raise ConfigError("unknown case", key="case", allowed=list_cases())
    return CASES_DIR / name
