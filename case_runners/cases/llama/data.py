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
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from case_runners.cases.llama.shapes import shape_of

FORMAT_NAME = "perfplay.tokens/1"
SPLITS = ("train", "val")
DTYPES = {"uint16": 2, "uint32": 4}  # name -> bytes per token; little-endian
TOKENIZERS = ("bytes", "bpe")
TOKENIZER_FILE = "tokenizer.json"
HEADER_KEYS = ("format", "dtype", "tokens", "vocab_size", "max_token_id", "tokenizer", "source")
FORMAT = (f"train.bin and val.bin (little-endian {' or '.join(DTYPES)} token ids) with sidecars train.json and "
          f"val.json {{\"format\": \"{FORMAT_NAME}\", \"dtype\", \"tokens\", \"vocab_size\", \"max_token_id\", "
          f"\"tokenizer\": {' or '.join(TOKENIZERS)}, \"source\"}}, and {TOKENIZER_FILE} for bpe "
          f"(python -m case_runners prepare-text writes them)")


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
    """Problems with a llama data dir, each naming the file and the expected format; [] when fine."""
    if params.get("synthetic"):
        return []
    if not data_dir:
        return [f"llama needs data_dir with {FORMAT}, or synthetic: true"]
    if not Path(data_dir).is_dir():
        return [f"{data_dir}: not a directory; expected {FORMAT}"]
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
