"""Where the project's files are, relative to this package."""

from pathlib import Path

RESOLVED_NAME = "resolved_config.json"  # a case's resolved config, <run_dir>/<case_id>/resolved_config.json


def project_root() -> Path:
    """The repository root: the folder holding case_runners/ and vendor/."""
    return Path(__file__).resolve().parent.parent


def display_path(path: Path, root: Path | None = None) -> str:
    """A path relative to the project root when it lies inside it, for messages."""
    root = root or project_root()
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)
