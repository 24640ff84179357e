"""The llama case's token files, and their check (standard library only: the host preflight runs it).

A data dir holds one flat token file per split, nanoGPT's layout:
    <data_dir>/train.bin, <data_dir>/val.bin    token ids back to back, little-endian uint16 or uint32, no header
    <data_dir>/train.json, <data_dir>/val.json  the sidecar of each .bin:
        {"format": "perfplay.tokens/1", "dtype": "uint16" | "uint32", "tokens": N, "vocab_size": V,
         "max_token_id": M, "tokenizer": "bytes" | "bpe", "source": "...", "eot_id": E}
        (eot_id, the end-of-text id, is optional: prepare-text writes it)
    <data_dir>/tokenizer.json                   with "tokenizer": "bpe": the `tokenizers` package's file
Documents are concatenated, each followed by the end-of-text token eot_id (packing: no padding). A .bin is
N x itemsize bytes; every id is below V. "bytes": ids 0-255 are UTF-8 bytes, 256 is end-of-text (V = 257).
`python -m case_runners prepare-text SRC OUT` writes such a dir from a tree of text files (prepare.py).

Or, instead, one Megatron-LM indexed dataset (megatron-core's megatron/core/datasets/indexed_dataset.py), the
format vendors' LLM data is in (FlagPerf's Megatron cases pass one such prefix to --data-path):
    <data_dir>/<prefix>.bin   the token ids of every sequence back to back (the .idx's dtype, little-endian)
    <data_dir>/<prefix>.idx   INDEX_HEADER: the magic b"MMIDIDX\x00\x00", uint64 version 1, uint8 dtype code
                              (INDEX_DTYPES), uint64 sequence count S, uint64 document-index count D; then int32
                              sequence lengths [S], int64 sequence byte offsets into the .bin [S], int64 document
                              indices [D] (each document's first sequence, then S: D is the documents + 1)
The sequences are split as Megatron's --split splits them (the param data_split; split_ranges): the first share
is trained on, the second held out (Megatron's validation set), the third (test) unused; each part's tokens are
packed as a .bin's are. A .bin's ids have no sidecar to vouch for them: the rank checks them against the model's
vocab when it opens the file (dataset.py).
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from case_runners.cases.llama.shapes import shape_of

FORMAT_NAME = "perfplay.tokens/1"
SPLITS = ("train", "val")
ITEM_SIZES = {"uint8": 1, "int8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4, "int64": 8,
              "float32": 4, "float64": 8}  # numpy's dtype names -> bytes per item
DTYPES = {name: ITEM_SIZES[name] for name in ("uint16", "uint32")}  # name -> bytes per token; little-endian
TOKENIZERS = ("bytes", "bpe")
TOKENIZER_FILE = "tokenizer.json"
HEADER_KEYS = ("format", "dtype", "tokens", "vocab_size", "max_token_id", "tokenizer", "source")
FORMAT = (f"train.bin and val.bin (little-endian {' or '.join(DTYPES)} token ids) with sidecars train.json and "
          f"val.json {{\"format\": \"{FORMAT_NAME}\", \"dtype\", \"tokens\", \"vocab_size\", \"max_token_id\", "
          f"\"tokenizer\": {' or '.join(TOKENIZERS)}, \"source\"}}, and {TOKENIZER_FILE} for bpe "
          f"(python -m case_runners prepare-text writes them)")


# Megatron's indexed dataset (the module docstring).
INDEX_SUFFIX, INDEX_BIN_SUFFIX = ".idx", ".bin"
INDEX_MAGIC = b"MMIDIDX\x00\x00"
INDEX_VERSION = 1
INDEX_HEADER = struct.Struct("<9sQBQQ")  # magic, version, dtype code, sequence count, document-index count: 34 bytes
LENGTH, POINTER, DOCUMENT = struct.Struct("<i"), struct.Struct("<q"), struct.Struct("<q")  # an entry of each array
INDEX_DTYPES = {1: "uint8", 2: "int8", 3: "int16", 4: "int32", 5: "int64", 6: "float64", 7: "float32", 8: "uint16"}
TOKEN_CODES = {code: name for code, name in INDEX_DTYPES.items() if "int" in name}  # ids are integers
DATA_SPLIT = "data_split"  # the param: Megatron's --split weights (train, valid, test) of an indexed dataset
MEGATRON_SPLIT = (969, 30, 1)  # Megatron's own when --split is not given (megatron/training/arguments.py)
SPLIT_PARTS = 3  # train, valid (perfplay's held-out), test (unused)
INDEX_FORMAT = (f"one Megatron indexed dataset <prefix>.bin + <prefix>.idx (MMIDIDX version {INDEX_VERSION}, "
                f"integer token ids), its sequences split per {DATA_SPLIT}")
FORMATS = f"{FORMAT}; or {INDEX_FORMAT}"


def indexed_file(prefix: Path, suffix: str) -> Path:
    """<prefix>.idx or <prefix>.bin (a prefix may hold dots of its own)."""
    return prefix.with_name(prefix.name + suffix)


@dataclass(frozen=True)
class IndexHeader:
    """The header of a <prefix>.idx: the tokens' dtype, the sequence count and the document-index count."""

    prefix: Path
    dtype: str
    sequences: int
    documents: int

    @property
    def idx_path(self) -> Path:
        return indexed_file(self.prefix, INDEX_SUFFIX)

    @property
    def bin_path(self) -> Path:
        return indexed_file(self.prefix, INDEX_BIN_SUFFIX)

    @property
    def itemsize(self) -> int:
        return ITEM_SIZES[self.dtype]

    def index_size(self) -> int:
        """The .idx's bytes: the header, then the lengths, the pointers and the document indices."""
        return (INDEX_HEADER.size + self.sequences * (LENGTH.size + POINTER.size)
                + self.documents * DOCUMENT.size)

    def pointers_offset(self) -> int:
        return INDEX_HEADER.size + self.sequences * LENGTH.size


def index_prefixes(data_dir: str | Path) -> list[Path]:
    """The prefixes of the .idx files at the top of a data dir, sorted."""
    return sorted(p.with_suffix("") for p in Path(data_dir).glob(f"*{INDEX_SUFFIX}") if p.is_file())


def read_index_header(prefix: Path) -> tuple[IndexHeader | None, list[str]]:
    """(the header of <prefix>.idx, []) or (None, its problems): the magic, the version, a dtype code of token ids,
    and the file's size against the counts (a multimodal index, which adds a mode per sequence, is named)."""
    path = indexed_file(prefix, INDEX_SUFFIX)
    try:
        with path.open("rb") as handle:
            raw = handle.read(INDEX_HEADER.size)
            size = handle.seek(0, 2)
    except FileNotFoundError:
        return None, [f"{path}: missing; expected {INDEX_FORMAT}"]
    except OSError as exc:
        return None, [f"{path}: not readable ({exc}); expected {INDEX_FORMAT}"]
    if len(raw) < INDEX_HEADER.size:
        return None, [f"{path}: {size} bytes, shorter than the {INDEX_HEADER.size}-byte header of a Megatron index "
                      f"(truncated?); expected {INDEX_FORMAT}"]
    magic, version, code, sequences, documents = INDEX_HEADER.unpack(raw)
    if magic != INDEX_MAGIC:
        return None, [f"{path}: starts with {magic!r}, not {INDEX_MAGIC!r}: not a Megatron indexed dataset's index; "
                      f"expected {INDEX_FORMAT}"]
    if version != INDEX_VERSION:
        return None, [f"{path}: version {version}; allowed: {INDEX_VERSION}"]
    if code not in TOKEN_CODES:
        name = f" ({INDEX_DTYPES[code]}: not token ids)" if code in INDEX_DTYPES else ""
        return None, [f"{path}: dtype code {code}{name}; allowed: "
                      f"{', '.join(f'{c} ({n})' for c, n in TOKEN_CODES.items())}"]
    header = IndexHeader(prefix, TOKEN_CODES[code], sequences, documents)
    if documents < 1:
        return None, [f"{path}: document-index count 0; expected at least 1 (the indices start with 0)"]
    if size != header.index_size():
        multimodal = " (a mode per sequence follows: a multimodal dataset, not text)" if (
            size == header.index_size() + sequences) else " (truncated?)"
        return None, [f"{path}: {size} bytes, but its header says {sequences} sequences and {documents} document "
                      f"indices ({header.index_size()} bytes){multimodal}"]
    return header, []


def bin_tokens(header: IndexHeader, expected: str) -> tuple[int, list[str]]:
    """(the tokens the index says its .bin holds, []), or the problem with the .bin: missing (`expected`: the layout
    wanted) or of another size."""
    try:
        size = header.bin_path.stat().st_size
    except FileNotFoundError:
        return 0, [f"{header.bin_path}: missing; expected {expected}"]
    with header.idx_path.open("rb") as handle:
        tokens = sequence_start(header, handle, header.sequences) if header.sequences else 0
    if size != tokens * header.itemsize:
        return tokens, [f"{header.bin_path}: {size} bytes, but its index {header.idx_path.name} says {tokens} "
                        f"{header.dtype} tokens ({tokens * header.itemsize} bytes)"]
    return tokens, []


def split_weights(params: dict) -> tuple[float, float, float]:
    """The param data_split as (train, valid, test) shares summing to 1 (Megatron's parse_and_normalize_split: a
    missing weight is 0); [] is Megatron's default. ValueError naming the key when it cannot hold a held-out part."""
    given = [float(w) for w in params.get(DATA_SPLIT) or MEGATRON_SPLIT]
    if len(given) > SPLIT_PARTS or any(w < 0 for w in given) or len(given) < 2 or given[1] <= 0:
        raise ValueError(f"key '{DATA_SPLIT}' is {params.get(DATA_SPLIT)!r}; expected Megatron's --split weights "
                         f"[train, valid] or [train, valid, test], none negative, valid above 0 (the held-out "
                         f"part), e.g. [99, 1, 0]; [] for Megatron's default {list(MEGATRON_SPLIT)}")
    weights = given + [0.0] * (SPLIT_PARTS - len(given))
    total = sum(weights)
    return weights[0] / total, weights[1] / total, weights[2] / total


def split_ranges(sequences: int, params: dict) -> dict[str, tuple[int, int]]:
    """{"train": (first, end), "val": (first, end)}: the sequence indices of each part, as Megatron's
    _build_megatron_dataset_splits cuts them (each bound is round(cumulative share x sequences))."""
    train, valid, _ = split_weights(params)
    bounds = [int(round(share * float(sequences))) for share in (0.0, train, train + valid)]
    return {"train": (bounds[0], bounds[1]), "val": (bounds[1], bounds[2])}


def sequence_start(header: IndexHeader, handle: Any, index: int) -> int:
    """The token offset in the .bin where sequence `index` starts (its byte pointer / itemsize); for index ==
    sequences, where the last one ends: what the .bin must hold."""
    last = index == header.sequences
    entry = index - 1 if last else index
    handle.seek(header.pointers_offset() + entry * POINTER.size)
    start = POINTER.unpack(handle.read(POINTER.size))[0]
    if last:
        handle.seek(INDEX_HEADER.size + entry * LENGTH.size)
        start += LENGTH.unpack(handle.read(LENGTH.size))[0] * header.itemsize
    return start // header.itemsize


def split_token_ranges(header: IndexHeader, params: dict) -> dict[str, tuple[int, int]]:
    """{"train": (first token, end), "val": (...)}: each part's tokens in the .bin, its sequences lying back to back
    (as megatron-core's IndexedDatasetBuilder writes them; dataset.py checks every pointer)."""
    with header.idx_path.open("rb") as handle:
        return {split: (sequence_start(header, handle, first), sequence_start(header, handle, end))
                if end > first else (0, 0) for split, (first, end) in split_ranges(header.sequences, params).items()}


def indexed_problems(data_dir: str | Path, params: dict) -> list[str]:
    """A data dir of one Megatron indexed dataset: its .idx, its .bin's size, and each part one sequence long."""
    prefixes = index_prefixes(data_dir)
    if len(prefixes) > 1:
        return [f"{data_dir}: holds {len(prefixes)} Megatron indexed datasets "
                f"({', '.join(p.name + INDEX_SUFFIX for p in prefixes)}); expected {INDEX_FORMAT} (point data_dir at "
                f"a folder with one)"]
    header, problems = read_index_header(prefixes[0])
    if header is None:
        return problems
    _, problems = bin_tokens(header, INDEX_FORMAT)
    if problems:
        return problems
    try:
        ranges = split_token_ranges(header, params)
    except ValueError as exc:
        return [str(exc)]
    seq_len = int(params.get("seq_len", 1))
    for split, (first, end) in ranges.items():
        if end - first < seq_len + 1:
            problems.append(f"{header.bin_path}: its {split} part ({DATA_SPLIT} "
                            f"{list(params.get(DATA_SPLIT) or MEGATRON_SPLIT)}) holds {end - first} tokens, fewer "
                            f"than one sequence of seq_len {seq_len} + 1 ({seq_len + 1})")
    return problems


def bin_path(data_dir: str | Path, split: str) -> Path:
    return Path(data_dir) / f"{split}.bin"


def header_path(data_dir: str | Path, split: str) -> Path:
    return Path(data_dir) / f"{split}.json"


def header_problems(path: Path, header: Any) -> list[str]:
    """What is wrong with a sidecar's content, each naming the file, the key and the allowed values."""
    if not isinstance(header, dict):
        return [f"{path}: not a JSON object; expected {FORMAT}"]
    missing = [key for key in HEADER_KEYS if key not in header]
    if missing:
        return [f"{path}: no key {', '.join(missing)}; expected {FORMAT}"]
    problems = []
    if header["format"] != FORMAT_NAME:
        problems.append(f"{path}: key 'format' is {header['format']!r}; expected {FORMAT_NAME!r}")
    if header["dtype"] not in DTYPES:
        problems.append(f"{path}: key 'dtype' is {header['dtype']!r}; allowed: {', '.join(DTYPES)}")
    if header["tokenizer"] not in TOKENIZERS:
        problems.append(f"{path}: key 'tokenizer' is {header['tokenizer']!r}; allowed: {', '.join(TOKENIZERS)}")
    for key in ("tokens", "vocab_size", "max_token_id"):
        value = header[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < (1 if key == "vocab_size" else 0):
            problems.append(f"{path}: key {key!r} is {value!r}; expected a{' positive' if key == 'vocab_size' else ''}"
                            f" integer")
    return problems


def read_header(data_dir: str | Path, split: str) -> tuple[dict[str, Any] | None, list[str]]:
    """(the split's sidecar, []) or (None, its problems)."""
    path = header_path(data_dir, split)
    try:
        header = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, [f"{path}: missing; expected {FORMAT}"]
    except (OSError, ValueError) as exc:
        return None, [f"{path}: not readable JSON ({exc}); expected {FORMAT}"]
    problems = header_problems(path, header)
    return (None, problems) if problems else (header, [])


def size_problem(data_dir: str | Path, split: str, header: dict[str, Any], size: int) -> str | None:
    """Why a split's .bin of `size` bytes does not hold what its sidecar says, or None."""
    tokens, dtype = header["tokens"], header["dtype"]
    expected = tokens * DTYPES[dtype]
    if size == expected:
        return None
    return (f"{bin_path(data_dir, split)}: {size} bytes, but its header {header_path(data_dir, split).name} says "
            f"{tokens} {dtype} tokens ({expected} bytes)")


def model_vocab_size(params: dict, default: int) -> int:
    """The model's vocab: the params' vocab_size, or with a `model` shape and vocab_size 0, the shape's own;
    `default` without either."""
    if "model" in params:
        return shape_of(params).vocab
    return int(params.get("vocab_size", default))


def split_problems(data_dir: str | Path, split: str, header: dict[str, Any], params: dict) -> list[str]:
    """A split's .bin against its sidecar and the model: size, ids below the vocab, one sequence's worth."""
    path, sidecar, tokens = bin_path(data_dir, split), header_path(data_dir, split), header["tokens"]
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return [f"{path}: missing; expected {FORMAT}"]
    problems = [p for p in [size_problem(data_dir, split, header, size)] if p]
    vocab = header["vocab_size"]
    if header["max_token_id"] >= vocab:
        problems.append(f"{sidecar}: max_token_id {header['max_token_id']} is not below its vocab_size {vocab}")
    model_vocab = model_vocab_size(params, vocab)
    if vocab > model_vocab:
        problems.append(f"{sidecar}: the data's vocab_size {vocab} is larger than the model's vocab_size "
                        f"{model_vocab}; set vocab_size >= {vocab}")
    seq_len = int(params.get("seq_len", 1))
    if tokens < seq_len + 1:
        problems.append(f"{path}: {tokens} tokens, fewer than one sequence of seq_len {seq_len} + 1 "
                        f"({seq_len + 1})")
    return problems


def check_data_dir(data_dir: str | None, params: dict) -> list[str]:
    """Problems with a llama data dir (perfplay's token files or a Megatron indexed dataset), each naming the file
    and the expected format; [] when fine."""
    if params.get("synthetic"):
        return []
    if not data_dir:
        return [f"llama needs data_dir with {FORMATS}, or synthetic: true"]
    if not Path(data_dir).is_dir():
        return [f"{data_dir}: not a directory; expected {FORMATS}"]
    if index_prefixes(data_dir):
        mixed = [header_path(data_dir, s) for s in SPLITS if header_path(data_dir, s).exists()]
        if mixed:
            return [f"{data_dir}: holds both {', '.join(p.name for p in mixed)} and a Megatron index "
                    f"({index_prefixes(data_dir)[0].name}{INDEX_SUFFIX}); use one: {FORMATS}"]
        return indexed_problems(data_dir, params)
    problems, headers = [], {}
    for split in SPLITS:
        header, found = read_header(data_dir, split)
        problems += found
        if header is not None:
            headers[split] = header
            problems += split_problems(data_dir, split, header, params)
    if len(headers) == len(SPLITS):
        train, val = (headers[s] for s in SPLITS)
        for key in ("tokenizer", "vocab_size"):
            if train[key] != val[key]:
                problems.append(f"{header_path(data_dir, 'val')}: {key} {val[key]!r} differs from "
                                f"{header_path(data_dir, 'train')}'s {train[key]!r}; both splits come from one "
                                f"tokenizer")
        if train["tokenizer"] == "bpe" and not (Path(data_dir) / TOKENIZER_FILE).is_file():
            problems.append(f"{Path(data_dir) / TOKENIZER_FILE}: missing; a bpe data dir has the tokenizer's file")
    return problems
