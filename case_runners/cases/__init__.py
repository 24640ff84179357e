"""Standard cases: one folder each with case.py, config.yaml, data.py and README.md (training), and inference/
with configurations.yaml, parameters.yaml and the six functions of the inference pipeline.

A case's models/<name>.yaml is a model case: a case of its own named <name> (FlagPerf's llama3_8b), the folder's
case with its param `model` fixed to <name> and the file's workload laid over its defaults (plan/layering.py
load_case_base). It runs the folder's code (case_package), and its vendor configs are in vendor/<v>/cases/<name>/.

Importing this package (and any case's data.py) never imports torch.
"""

from __future__ import annotations

from pathlib import Path

from case_runners.core.errors import ConfigError

CASES_DIR = Path(__file__).resolve().parent
MODELS_DIR = "models"  # a case folder's model cases, one YAML file each


def _cases_dir(root: Path | None) -> Path:
    return CASES_DIR if root is None else root / "case_runners" / "cases"


def code_cases(root: Path | None = None) -> list[str]:
    """Names of the case packages shipped here (folders with config.yaml and case.py); root: another checkout's."""
    return sorted(p.name for p in _cases_dir(root).iterdir()
                  if p.is_dir() and (p / "config.yaml").is_file() and (p / "case.py").is_file())


def model_cases(root: Path | None = None) -> dict[str, str]:
    """{model case: the case package it runs}: every models/<name>.yaml of a case package."""
    base = _cases_dir(root)
    return {path.stem: case for case in code_cases(root) for path in sorted((base / case / MODELS_DIR).glob("*.yaml"))}


def list_cases(root: Path | None = None) -> list[str]:
    """Names of the training cases a selection may name: the case packages and their model cases."""
    return sorted({*code_cases(root), *model_cases(root)})


def case_package(name: str) -> str:
    """The case package whose code runs case `name`: its own, or the one whose models/ holds it."""
    return model_cases().get(name, name)


def case_dir(name: str) -> Path:
    """The folder of case `name`'s package; ConfigError naming the known cases when there is none."""
    if name not in list_cases():
        raise ConfigError("unknown case", key="case", allowed=list_cases())
    return CASES_DIR / case_package(name)


def model_file(name: str) -> Path | None:
    """A model case's file (its package's models/<name>.yaml); None for a case package."""
    package = case_package(name)
    return None if package == name else CASES_DIR / package / MODELS_DIR / f"{name}.yaml"
