"""A scaffold's inputs checked before anything is written, its templates filled, and its folders written all or
nothing: each into a new folder beside its target, renamed into place together at the end. Stdlib only."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import string
from pathlib import Path

from case_runners.core.errors import PerfplayError
from case_runners.core.paths import display_path

TEMPLATES = Path(__file__).resolve().parent / "templates"
# A vendor or case name is also a folder, a Python module and part of a docker image name
# (perfplay-<vendor>-<framework>): lower case words of letters and digits joined by single underscores.
NAME = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")
NAME_RULE = "lower case letters and digits, starting with a letter, words joined by single underscores"
MAX_NAME = 32


class ScaffoldError(PerfplayError):
    """Input a scaffold refuses; nothing was written."""


def check_name(value: str, what: str, pattern: re.Pattern[str] = NAME, rule: str = NAME_RULE) -> str:
    if not pattern.match(value) or len(value) > MAX_NAME:
        raise ScaffoldError(f"{what} '{value}' is not a plain identifier ({rule}; at most {MAX_NAME} characters); "
                            f"nothing was written")
    return value


def check_root(root: Path) -> Path:
    """root, if it is a perfplay checkout (it has case_runners/cases/ and vendor/)."""
    if not (root / "case_runners" / "cases").is_dir() or not (root / "vendor").is_dir():
        raise ScaffoldError(f"{root} is not a perfplay checkout (no case_runners/cases/ and vendor/ in it); "
                            f"nothing was written")
    return root


def render(template: str, **values: object) -> str:
    """templates/<template> with its $placeholders filled; a placeholder without a value is an error."""
    text = (TEMPLATES / template).read_text(encoding="utf-8")
    try:
        return string.Template(text).substitute({k: str(v) for k, v in values.items()})
    except (KeyError, ValueError) as exc:  # a template out of step with its caller
        raise ScaffoldError(f"template {template}: no value for {exc}; nothing was written") from None


def refuse_existing(targets: list[Path], root: Path, command: str) -> None:
    """ScaffoldError naming the first target that exists: a scaffold writes new folders only."""
    for target in targets:
        if os.path.lexists(target):
            raise ScaffoldError(f"{display_path(target, root)} already exists; {command} writes new folders only "
                                f"(nothing was changed)")


class Staging:
    """Folders written beside their targets (.<name>.scaffold-<random>) and renamed into place at commit().
    Leaving the `with` block by an exception removes whatever was written, parents it created included."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._folders: list[tuple[Path, Path]] = []  # (staging folder, target)
        self._made_parents: list[Path] = []
        self._files: list[Path] = []  # relative to their target

    def __enter__(self) -> Staging:
        return self

    def __exit__(self, kind: object, exc: object, traceback: object) -> None:
        if exc is not None:
            self.discard()

    def folder(self, target: Path) -> Path:
        """A new, empty staging folder that becomes `target` at commit()."""
        missing = [p for p in (target.parent, *target.parent.parents) if not p.exists()]
        for parent in reversed(missing):
            parent.mkdir()
            self._made_parents.append(parent)
        staged = target.parent / f".{target.name}.scaffold-{secrets.token_hex(4)}"
        staged.mkdir()
        self._folders.append((staged, target))
        return staged

    def write(self, staged: Path, relative: str, text: str, *, executable: bool = False) -> None:
        path = staged / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        if executable:  # x wherever r is, as the umask left it
            mode = path.stat().st_mode
            path.chmod(mode | (mode & 0o444) >> 2)
        target = next(t for s, t in self._folders if s == staged)
        self._files.append(target / relative)

    def commit(self) -> list[Path]:
        """Rename every staged folder into place; the files written, as paths under their targets."""
        moved: list[Path] = []
        try:
            for staged, target in self._folders:
                if os.path.lexists(target):  # made meanwhile by someone else: theirs, keep it
                    raise ScaffoldError(f"{display_path(target, self.root)} appeared while writing; nothing was "
                                        f"changed")
                os.rename(staged, target)
                moved.append(target)
        except BaseException:
            for target in moved:
                shutil.rmtree(target, ignore_errors=True)
            raise
        self._folders = []
        return list(self._files)

    def discard(self) -> None:
        for staged, _ in self._folders:
            shutil.rmtree(staged, ignore_errors=True)
        for parent in reversed(self._made_parents):
            with contextlib.suppress(OSError):
                parent.rmdir()
        self._folders, self._made_parents, self._files = [], [], []

