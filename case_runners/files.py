"""Files a run writes: in directories safe to write in, never through a symlink, JSON artifacts atomically.

- secure_dir: a directory perfplay writes into is created with mode 0700 where missing, and refused when it (or
  an ancestor) could be changed by another user: it must belong to the running user, its ancestors to that
  user or root, and none may be writable by group or others (a sticky ancestor such as /tmp is fine), as
  OpenSSH's StrictModes checks a home directory.
- Log and pid files are opened with O_NOFOLLOW (and O_EXCL where they must be new).
- atomic_write_*: a temporary file in the same directory, fsync, rename: an artifact is whole or absent, never
  empty or cut short, also when the disk fills up.
- A failed write is a WriteError whose message is one line naming the cause and the path, e.g.
  "no space left on device: /results/run.../result.json".

Stdlib only: the launcher and the monitors import it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from case_runners.errors import PerfplayError

NEW_DIR_MODE = 0o700
FILE_MODE = 0o644
_CAUSES = {errno.ENOSPC: "no space left on device", errno.EDQUOT: "disk quota exceeded",
           errno.EROFS: "read-only file system", errno.EACCES: "permission denied", errno.EPERM: "not permitted",
           errno.ELOOP: "refusing to follow a symlink", errno.EEXIST: "already exists"}


class UnsafeDirError(PerfplayError):
    """A directory another user could change: perfplay does not write there."""


class WriteError(PerfplayError):
    """A file could not be written; the message names the cause and the path."""

    def __init__(self, message: str, path: Path | str) -> None:
        super().__init__(message)
        self.path = str(path)


def describe_os_error(exc: OSError, path: Path | str) -> str:
    """One line for a failed file operation: '<cause>: <path>'."""
    cause = _CAUSES.get(exc.errno or 0) or (exc.strerror or str(exc)).lower()
    return f"{cause}: {path}"


def write_error(exc: OSError, path: Path | str) -> WriteError:
    return WriteError(describe_os_error(exc, path), path)


# -- directories ---------------------------------------------------------------------------------------------


def secure_dir(path: Path | str) -> Path:
    """`path`, created with mode 0700 where missing, after checking that no other user can change it."""
    path = Path(os.path.abspath(path))
    missing = []
    for candidate in (path, *path.parents):
        if os.path.lexists(candidate):
            break
        missing.append(candidate)
    for directory in reversed(missing):
        try:
            os.mkdir(directory, NEW_DIR_MODE)
        except FileExistsError:
            pass  # made meanwhile: checked below like any existing directory
        except OSError as exc:
            raise WriteError(f"cannot create directory {directory}: {describe_os_error(exc, directory)}",
                             directory) from None
    problem = unsafe_reason(path)
    if problem:
        raise UnsafeDirError(problem)
    return path


def unsafe_reason(path: Path | str) -> str | None:
    """Why `path` is not safe for this user to write in, or None."""
    euid = os.geteuid()
    real = Path(os.path.realpath(path))
    for directory in (real, *real.parents):
        try:
            info = os.stat(directory)
        except OSError as exc:
            return describe_os_error(exc, directory)
        if not stat.S_ISDIR(info.st_mode):
            return f"{directory} is not a directory"
        shown = f"{path}" if directory == real else f"{directory} (above {path})"
        if directory == real and info.st_uid != euid:
            return (f"{shown} belongs to uid {info.st_uid}, not to the user running perfplay (uid {euid}): "
                    "refusing to write there; use a directory of your own")
        if info.st_uid not in (0, euid):
            return f"{shown} belongs to uid {info.st_uid}, who could swap what is inside it: refusing to write below it"
        writable = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        if writable and not (directory != real and info.st_mode & stat.S_ISVTX):
            return (f"{shown} is writable by group or others (mode {stat.S_IMODE(info.st_mode):04o}): "
                    "refusing to write there; chmod go-w it or use another directory")
    return None


# -- logs and pid files --------------------------------------------------------------------------------------


def open_fd(path: Path | str, *, append: bool = False, new: bool = False, mode: int = FILE_MODE) -> int:
    """A write descriptor on `path`, never through a symlink: truncated, appended to, or (new) created only."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    flags |= os.O_EXCL if new else (os.O_APPEND if append else os.O_TRUNC)
    try:
        return os.open(path, flags, mode)
    except OSError as exc:
        raise write_error(exc, path) from None


def open_text(path: Path | str, *, append: bool = False, new: bool = False) -> IO[str]:
    """A text file for writing, opened as open_fd opens it (line-buffered, UTF-8)."""
    return os.fdopen(open_fd(path, append=append, new=new), "w", buffering=1, encoding="utf-8")


def read_text_nofollow(path: Path | str, limit: int = 1 << 16) -> str:
    """At most `limit` bytes of `path` as text; OSError (ELOOP for a symlink) when it cannot be read."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        return os.read(fd, limit).decode("utf-8", "replace")
    finally:
        os.close(fd)


# -- artifacts -----------------------------------------------------------------------------------------------


@contextlib.contextmanager
def replacing(path: Path | str) -> Iterator[IO[bytes]]:
    """A binary file that becomes `path` when the block ends without an exception (fsync, rename); else it
    is removed and a failed write raises WriteError."""
    path = Path(path)
    temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    handle = os.fdopen(open_fd(temp, new=True), "wb")
    try:
        try:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        finally:
            handle.close()
        os.replace(temp, path)
    except OSError as exc:
        _unlink(temp)
        raise write_error(exc, path) from None
    except BaseException:
        _unlink(temp)
        raise
    _sync_dir(path.parent)


def atomic_write_bytes(path: Path | str, data: bytes) -> None:
    with replacing(path) as handle:
        handle.write(data)


def atomic_write_text(path: Path | str, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def json_text(data: Any, **dump: Any) -> str:
    """`data` as JSON: indent 2 and a final newline unless `dump` says otherwise."""
    dump.setdefault("indent", 2)
    return json.dumps(data, **dump) + "\n"


def atomic_write_json(path: Path | str, data: Any, **dump: Any) -> None:
    """`data` as json_text, written atomically."""
    atomic_write_text(path, json_text(data, **dump))


def atomic_update_text(path: Path | str, text: str) -> bool:
    """Write `text` atomically unless `path` holds it already (read without following a symlink); True when
    written."""
    data = text.encode("utf-8")
    try:
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC), "rb") as handle:
            same = handle.read(len(data) + 1) == data
    except OSError:
        same = False
    if not same:
        atomic_write_bytes(path, data)
    return not same


def _unlink(path: Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def _sync_dir(directory: Path) -> None:
    """Make the rename durable; best effort (not every file system lets a directory be opened)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# -- space ---------------------------------------------------------------------------------------------------


def free_bytes(path: Path | str) -> int:
    """Bytes an unprivileged user may still write on the file system of `path` (or of its nearest ancestor)."""
    path = Path(os.path.abspath(path))
    for candidate in (path, *path.parents):
        if candidate.exists():
            info = os.statvfs(candidate)
            return info.f_bavail * info.f_frsize
    return 0


def low_space_reason(path: Path | str, minimum: int, key: str = "perfplay_min_free_bytes") -> str | None:
    """Why a run cannot start writing under `path` (fewer than `minimum` bytes free), or None."""
    free = free_bytes(path)
    if free >= minimum:
        return None
    return (f"only {free / 2**20:.1f} MiB free in {path}, less than key '{key}' ({minimum / 2**20:.1f} MiB): "
            "free some space or lower the run var")


def disk_full_reason(path: Path | str, below: int = 1 << 16) -> str | None:
    """'no space left on device: <path>' when the file system of `path` has (nearly) nothing left, else None."""
    return f"{_CAUSES[errno.ENOSPC]}: {path}" if free_bytes(path) < below else None
