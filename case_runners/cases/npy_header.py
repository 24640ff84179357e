"""Read array names, dtypes and shapes from .npz files with the standard library only.

An .npz is a zip of .npy members; a .npy starts with b"\\x93NUMPY", a version, a header length
and a header that is a Python dict literal: {'descr': '<i4', 'fortran_order': False, 'shape': (N, L)}.
"""

from __future__ import annotations

import ast
import struct
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

MAGIC = b"\x93NUMPY"


@dataclass(frozen=True)
class ArrayInfo:
    dtype: str          # numpy descr, e.g. '<i4'
    shape: tuple[int, ...]
    fortran_order: bool = False

    @property
    def kind(self) -> str:
        """numpy's kind character: 'i' signed, 'u' unsigned integers, 'b' booleans, 'f' floats ..."""
        return self.dtype.lstrip("<>|=")[:1]


def read_npy_header(f: IO[bytes]) -> ArrayInfo:
    if f.read(6) != MAGIC:
        raise ValueError("not a .npy array (bad magic)")
    major = f.read(2)[0]
    size_format = "<H" if major == 1 else "<I"
    (length,) = struct.unpack(size_format, f.read(struct.calcsize(size_format)))
    header = ast.literal_eval(f.read(length).decode("latin1"))
    if not isinstance(header, dict) or not {"descr", "shape"} <= header.keys():
        raise ValueError("malformed .npy header")
    return ArrayInfo(dtype=str(header["descr"]), shape=tuple(int(d) for d in header["shape"]),
                     fortran_order=bool(header.get("fortran_order", False)))


def npz_with(path: Path, names: Sequence[str], expected: str) -> dict[str, ArrayInfo]:
    """npz_arrays(path), which holds the arrays `names`; ValueError naming the file and what it lacks (or why it is
    not an .npz), then `expected`, the format wanted."""
    try:
        arrays = npz_arrays(path)
    except ValueError as e:
        raise ValueError(f"{e}; expected {expected}") from None
    missing = [name for name in names if name not in arrays]
    if missing:
        has = ", ".join(sorted(arrays)) or "nothing"
        raise ValueError(f"{path}: no {', '.join(repr(m) for m in missing)} array (has: {has}); expected {expected}")
    return arrays


def npz_arrays(path: Path) -> dict[str, ArrayInfo]:
    """{array name: ArrayInfo} of an .npz file; ValueError with the reason when it is not one."""
    try:
        with zipfile.ZipFile(path) as z:
            arrays = {}
            for member in z.namelist():
                if member.endswith(".npy"):
                    with z.open(member) as f:
                        arrays[member[:-4]] = read_npy_header(f)
            return arrays
    except (zipfile.BadZipFile, OSError, ValueError, SyntaxError, IndexError, struct.error) as e:
        raise ValueError(f"{path}: not a readable .npz archive ({e})") from None
