"""Files a run writes: in directories safe to write in, never through a symlink, JSON artifacts atomically.

- secure_dir: a directory perfplay writes into is created with mode 0700 where missing, and refused when it (or
  an ancestor) could be changed by another user: it must belong to the running user, its ancestors to that
  user or root, and none may be writable by group or others (a sticky ancestor such as /tmp is fine), as
  OpenSSH's StrictModes checks a home directory.
- Log and pid files are opened with O_NOFOLLOW (and O_EXCL where they must be new).
- atomic_write_*: a temporary file in the same directory, fsync, rename: an artifact is whole or absent, never
  empty or cut short, also when the disk fills up. The directory is checked first (check_writable_dir).
- A symlink on the way to a directory is followed only when it belongs to the user or to the owner of the
  directory holding it, as the kernel's protected_symlinks rule has it (link_reason).
- A failed write is a WriteError whose message is one line naming the cause and the path, e.g.
  "no space left on device: /results/run.../round_record.json".

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

from case_runners.core.errors import PerfplayError

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
    """`path`, created with mode 0700 where missing, after checking that no other user can change it (also
    before creating anything: nothing is made through a foreign link or in another user's directory)."""
    path = Path(os.path.abspath(path))
    missing = []
    for candidate in (path, *path.parents):
        if os.path.lexists(candidate):
            break
        missing.append(candidate)
    problem = link_reason(path) or (_above_reason(missing[-1].parent, path) if missing else None)
    if problem:
        raise UnsafeDirError(problem)
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


def unsafe_reason(path: Path | str, sticky_ok: bool = False) -> str | None:
    """Why `path` is not safe for this user to write in, or None. sticky_ok: a sticky directory of root's such as
    /tmp is fine too (for a file written as a new temporary file and renamed: others cannot redirect or take it)."""
    problem = link_reason(path)
    if problem:
        return problem
    euid = os.geteuid()
    real = Path(os.path.realpath(path))
    try:
        info = os.stat(real)
    except OSError as exc:
        return describe_os_error(exc, real)
    if not stat.S_ISDIR(info.st_mode):
        return f"{real} is not a directory"
    shared = sticky_ok and info.st_uid == 0 and info.st_mode & stat.S_ISVTX
    if info.st_uid != euid and not shared:
        return (f"{path} belongs to uid {info.st_uid}, not to the user running perfplay (uid {euid}): "
                "refusing to write there; use a directory of your own")
    return _changeable(f"{path}", info, euid, sticky_ok=sticky_ok) or _above_reason(real.parent, path)


def _above_reason(directory: Path, path: Path | str) -> str | None:
    """Why `directory` (resolved) or one of its ancestors lets another user change what lies below it (`path`)."""
    euid = os.geteuid()
    real = Path(os.path.realpath(directory))
    for above in (real, *real.parents):
        try:
            info = os.stat(above)
        except OSError as exc:
            return describe_os_error(exc, above)
        if not stat.S_ISDIR(info.st_mode):
            return f"{above} is not a directory"
        problem = _changeable(f"{above} (above {path})", info, euid, sticky_ok=True)
        if problem:
            return problem
    return None


def _changeable(shown: str, info: os.stat_result, euid: int, sticky_ok: bool) -> str | None:
    """Why a directory (`shown`, `info` its stat) lets another user change what is inside it, or None. sticky_ok:
    a sticky one such as /tmp is fine (above a path, or holding a link: others cannot take ours away)."""
    if info.st_uid not in (0, euid):
        return f"{shown} belongs to uid {info.st_uid}, who could swap what is inside it: refusing to write below it"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not (sticky_ok and info.st_mode & stat.S_ISVTX):
        return (f"{shown} is writable by group or others (mode {stat.S_IMODE(info.st_mode):04o}): "
                "refusing to write there; chmod go-w it or use another directory")
    return None


def link_reason(path: Path | str) -> str | None:
    """Why a symlink on the way to `path` (as far as it exists) cannot be trusted, or None. A link is followed only
    when it belongs to this user or to the owner of its directory (the kernel's protected_symlinks rule, applied
    in every directory) and that directory is one no other user can change (sticky like /tmp is fine)."""
    euid = os.geteuid()
    parts = list(Path(os.path.abspath(path)).parts[1:])
    current, hops = Path("/"), 0
    while parts:
        name = parts.pop(0)
        if name == "..":
            current = current.parent
            continue
        link = current / name
        try:
            info = os.lstat(link)
        except OSError:
            return None  # missing from here on (made later, by us) or unreadable (the writer says why)
        if not stat.S_ISLNK(info.st_mode):
            current = link
            continue
        hops += 1
        try:
            holder = os.stat(current)
            target = Path(os.readlink(link))
        except OSError as exc:
            return describe_os_error(exc, link)
        if hops > _MAX_LINKS:
            return f"{path}: too many levels of symlinks (at {link})"
        problem = _changeable(f"{current} (holding the symlink {link})", holder, euid, sticky_ok=True)
        if problem:
            return problem
        if info.st_uid not in (euid, holder.st_uid):
            return (f"{path}: the symlink {link} belongs to uid {info.st_uid}, neither the user running perfplay "
                    f"(uid {euid}) nor the owner of {current} (uid {holder.st_uid}): refusing to follow it")
        if target.is_absolute():
            current = Path("/")
        parts = [part for part in target.parts if part not in ("/", ".", "")] + parts
    return None


_MAX_LINKS = 40  # the kernel's limit on symlinks followed in one path


def check_writable_dir(directory: Path | str, *, renamed: bool = False) -> None:
    """UnsafeDirError unless perfplay may write files into `directory` (unsafe_reason); for a file written into a
    directory that perfplay did not make itself (report -o, summary --write, the history database, ...). renamed:
    the file is written as a new temporary file and renamed into place (replacing_path), so a sticky directory
    such as /tmp is fine too."""
    problem = unsafe_reason(directory, sticky_ok=renamed)
    if problem:
        raise UnsafeDirError(problem)


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


_pending: set[Path] = set()  # temporary files of writes in progress (remove_pending)


@contextlib.contextmanager
def replacing_path(path: Path | str) -> Iterator[Path]:
    """A new, empty temporary file in the same directory as `path`, for a writer that opens a path itself
    (safetensors); it becomes `path` when the block ends without an exception (fsync, rename), else it is removed
    and a failed write raises WriteError. UnsafeDirError when the directory is not safe to write in."""
    path = Path(path)
    check_writable_dir(path.parent, renamed=True)
    temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    os.close(open_fd(temp, new=True))
    _pending.add(temp)
    try:
        try:
            yield temp
            fd = os.open(temp, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temp, path)
        except OSError as exc:
            _unlink(temp)
            raise write_error(exc, path) from None
        except BaseException:
            _unlink(temp)
            raise
    finally:
        _pending.discard(temp)
    _sync_dir(path.parent)


@contextlib.contextmanager
def replacing(path: Path | str) -> Iterator[IO[bytes]]:
    """A binary file that becomes `path` when the block ends without an exception (fsync, rename); else it
    is removed and a failed write raises WriteError; UnsafeDirError when its directory is not safe to write in."""
    with replacing_path(path) as temp:
        with os.fdopen(open_fd(temp), "wb") as handle:
            yield handle
            handle.flush()


def remove_pending() -> None:
    """Remove the temporary files of the writes in progress: for a process about to end without unwinding
    (os._exit after a stop request), so that no half-written temporary is left behind."""
    for temp in list(_pending):
        _unlink(temp)


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


def unwritable_reason(path: Path | str) -> str | None:
    """Why nothing can be written in the directory `path` now, e.g. 'read-only file system: <path>' or
    disk_full_reason's; None when it can be (or cannot be looked at)."""
    try:
        info = os.statvfs(path)
    except OSError:
        return None
    if info.f_flag & os.ST_RDONLY:
        return f"{_CAUSES[errno.EROFS]}: {path}"
    if not os.access(path, os.W_OK | os.X_OK):
        return f"{_CAUSES[errno.EACCES]}: {path}"
    return disk_full_reason(path)
