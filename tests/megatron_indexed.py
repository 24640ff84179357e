"""Megatron-LM's indexed datasets (<prefix>.bin + <prefix>.idx), written small for the tests byte for byte as
megatron-core's IndexedDatasetBuilder writes them (megatron/core/datasets/indexed_dataset.py; the llama case's
data.py reads them)."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

CODES = {"uint8": 1, "int8": 2, "int16": 3, "int32": 4, "int64": 5, "float64": 6, "float32": 7, "uint16": 8}


def write_indexed(prefix: Path, sequences: list[list[int]], dtype: str = "uint16", code: int | None = None,
                  document_starts: list[int] | None = None) -> None:
    """<prefix>.bin and <prefix>.idx as megatron-core's IndexedDatasetBuilder writes them: the ids back to back;
    b"MMIDIDX\\x00\\x00", <Q version 1, <B dtype code, <Q sequence count, <Q document-index count, <i4 lengths,
    <i8 byte pointers, <i8 document indices (each document's first sequence, then the sequence count). Each
    sequence is a document by default. Written from the format, not from data.py's constants, to check them."""
    itemsize = np.dtype(dtype).itemsize
    lengths = [len(s) for s in sequences]
    pointers = np.concatenate(([0], np.cumsum(lengths[:-1]))).astype("<i8") * itemsize
    documents = [*(range(len(sequences)) if document_starts is None else document_starts), len(sequences)]
    prefix.with_name(prefix.name + ".bin").write_bytes(
        np.concatenate([np.asarray(s, dtype=np.dtype(dtype).newbyteorder("<")) for s in sequences]).tobytes())
    index = (b"MMIDIDX\x00\x00" + struct.pack("<Q", 1) + struct.pack("<B", CODES[dtype] if code is None else code)
             + struct.pack("<Q", len(sequences)) + struct.pack("<Q", len(documents))
             + np.asarray(lengths, "<i4").tobytes() + pointers.tobytes() + np.asarray(documents, "<i8").tobytes())
    prefix.with_name(prefix.name + ".idx").write_bytes(index)


def documents(tokens: np.ndarray, eot: int) -> list[list[int]]:
    """The documents of packed ids, each with the end-of-text id that ends it."""
    ends = np.flatnonzero(tokens == eot)
    return [tokens[start:end + 1].tolist() for start, end in zip(np.r_[0, ends[:-1] + 1], ends)]
