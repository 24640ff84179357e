"""What the import-flagperf tests share: FlagPerf-shaped files written in its real formats, a checkout's copy to
import into, the importer's report as lines, and the YAML it wrote."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path
from typing import Any

import yaml

from case_runners.core.paths import project_root
from case_runners.vendors.flagperf.importer import import_flagperf

ROOT = project_root()


def write(base: Path, files: dict[str, str]) -> Path:
    """Each {relative path: text} under base (the text dedented), its folders made; base."""
    for name, text in files.items():
        path = base / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return base


def checkout(root: Path) -> Path:
    """A checkout at `root`: a copy of the vendor folders (a test may edit them) and the cases as they are."""
    shutil.copytree(ROOT / "vendor", root / "vendor")
    (root / "case_runners").symlink_to(ROOT / "case_runners")
    return root


def lines(report: Any) -> list[str]:
    return [str(item) for item in report.items]


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def import_nvidia_configs(tmp_path: Path, folder: str, files: dict[str, str]) -> list[str]:
    """FlagPerf's training/nvidia/<folder>/config/ of these files imported into tmp_path/out: the report's lines."""
    write(tmp_path / "FlagPerf" / "training" / "nvidia" / folder / "config", files)
    return lines(import_flagperf(tmp_path / "FlagPerf", tmp_path / "out"))
