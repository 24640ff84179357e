"""Format check for transformer data (standard library): FlagPerf's WMT14 en-de dir, as its
training/benchmarks/transformer/pytorch/scripts/run_preprocessing.sh writes it (fairseq's preprocess.py with a joined
dictionary, then sacrebleu's references):

    <data_dir>/dict.en.txt, dict.de.txt               the joined BPE dictionary: "<symbol> <count>" a line
    <data_dir>/train.en-de.en.idx/.bin, .de.idx/.bin   the training pairs, fairseq's binarised (TorchNet) format
    <data_dir>/test.en-de.en.idx/.bin, .de.idx/.bin    newstest2014, the evaluation's sources (and targets)
    <data_dir>/test.raw.de                            its references, raw text (`sacrebleu -t wmt14/full -l en-de
                                                      --echo ref`), one a line in the test split's order

An .idx holds b"TNTIDX\\0\\0", version 1, the element type's code and size, the sentence count and the offsets; each
sentence is its dictionary ids + 1 (Lua's indexing) ending with </s>.
"""

from __future__ import annotations

import struct
from pathlib import Path

SOURCE, TARGET = "en", "de"
TRAIN, TEST = "train", "test"
REFERENCES = "test.raw.de"
SPECIALS = ("<Lua heritage>", "<pad>", "</s>", "<unk>")  # fairseq's Dictionary: the ids 0 to 3, before the file's
IDX_MAGIC, IDX_VERSION = b"TNTIDX\x00\x00", 1
IDX_HEADER_BYTES = 48  # the magic, then version, element code and size, sentence and size counts (8 bytes each)
IDX_TYPES = {1: "B", 2: "b", 3: "h", 4: "i", 5: "q"}  # fairseq's integer codes, as struct letters
FORMAT = (f"FlagPerf's WMT14 en-de dir (fairseq's preprocess.py, joined dictionary): dict.{SOURCE}.txt, "
          f"dict.{TARGET}.txt, {{{TRAIN},{TEST}}}.{SOURCE}-{TARGET}.{{{SOURCE},{TARGET}}}.idx/.bin and {REFERENCES}")


def split_files(root: Path, split: str, lang: str) -> tuple[Path, Path]:
    """The .idx and .bin of one side of a split."""
    prefix = root / f"{split}.{SOURCE}-{TARGET}.{lang}"
    return Path(f"{prefix}.idx"), Path(f"{prefix}.bin")


def dictionary_size(path: Path) -> int:
    """The ids of a fairseq dictionary file: its lines after the four specials."""
    with open(path, encoding="utf-8") as f:
        return len(SPECIALS) + sum(1 for line in f if line.strip())


def read_idx_header(path: Path) -> tuple[str, int, int]:
    """(struct letter of the elements, element size, sentences) of a fairseq .idx; ValueError naming the file."""
    with open(path, "rb") as f:
        head = f.read(IDX_HEADER_BYTES)
    if len(head) < IDX_HEADER_BYTES or head[:8] != IDX_MAGIC:
        raise ValueError(f"{path}: not a fairseq .idx (no {IDX_MAGIC!r} header); expected {FORMAT}")
    version, code, size, count, _ = struct.unpack("<QQQQQ", head[8:])
    if version != IDX_VERSION or code not in IDX_TYPES or struct.calcsize(IDX_TYPES[code]) != size:
        raise ValueError(f"{path}: fairseq .idx version {version}, element type {code} of {size} bytes; expected "
                         f"version 1 and an integer type ({', '.join(map(str, IDX_TYPES))})")
    return IDX_TYPES[code], size, count


def check_split(root: Path, split: str) -> tuple[list[str], int]:
    """The split's problems, and its sentence count (0 when unreadable)."""
    counts = []
    for lang in (SOURCE, TARGET):
        idx, data = split_files(root, split, lang)
        missing = [p for p in (idx, data) if not p.is_file()]
        if missing:
            return [f"{', '.join(map(str, missing))}: missing; expected {FORMAT}"], 0
        try:
            counts.append(read_idx_header(idx)[2])
        except ValueError as e:
            return [str(e)], 0
    if counts[0] != counts[1]:
        return [f"{root}: the {split} split has {counts[0]} {SOURCE} and {counts[1]} {TARGET} sentences; a pair "
                f"is one of each"], 0
    return [], counts[0]


def check_data_dir(data_dir: str | None, params: dict) -> list[str]:
    if params.get("synthetic"):
        return []
    if not data_dir:
        return [f"transformer needs data_dir with {FORMAT}, or synthetic: true"]
    root = Path(data_dir)
    if not root.is_dir():
        return [f"{data_dir}: not a directory; expected {FORMAT}"]
    problems = []
    vocab_size = int(params.get("vocab_size", 33712))
    for lang in (SOURCE, TARGET):
        path = root / f"dict.{lang}.txt"
        if not path.is_file():
            problems.append(f"{path}: missing; expected {FORMAT}")
        elif dictionary_size(path) > vocab_size:
            problems.append(f"{path}: {dictionary_size(path)} ids (with fairseq's 4 specials), more than the key "
                            f"vocab_size {vocab_size}")
    train_problems, _ = check_split(root, TRAIN)
    test_problems, sentences = check_split(root, TEST)
    problems += train_problems + test_problems
    references = root / REFERENCES
    if not references.is_file():
        problems.append(f"{references}: missing: the test split's references, raw text; expected {FORMAT}")
    elif sentences:
        with open(references, encoding="utf-8") as f:
            lines = sum(1 for _ in f)
        if lines != sentences:
            problems.append(f"{references}: {lines} lines for the test split's {sentences} sentences")
    return problems
