"""Format check for gpt2 data (standard library only: the host preflight runs it).

FlagPerf's gpt2 layout (training/benchmarks/gpt2/README.md, pytorch/config/_base.py), all at the top of data_dir:
    lambada_train_text_document.bin/.idx  the training text as one Megatron indexed dataset (Megatron's
                                          tools/preprocess_data.py --append-eod with the GPT-2 BPE below; the llama
                                          case's data.py reads the format)
    lambada_test.json                     LAMBADA's test passages, JSON lines {"text": "..."}, the last word the one
                                          to predict
    gpt2-vocab.json, gpt2-merges.txt      the GPT-2 byte-level BPE (a {token: id} object and its merges), with
                                          <|endoftext|> as the end-of-document id
"""

from __future__ import annotations

import json
from pathlib import Path

from case_runners.cases.llama.data import (
    INDEX_BIN_SUFFIX,
    INDEX_SUFFIX,
    bin_tokens,
    read_index_header,
)

TRAIN_PREFIX = "lambada_train_text_document"  # FlagPerf's train_data_prefix
TEST_FILE = "lambada_test.json"  # FlagPerf's test_data_prefix
VOCAB_FILE, MERGES_FILE = "gpt2-vocab.json", "gpt2-merges.txt"  # FlagPerf's vocab_file, merge_file
EOD = "<|endoftext|>"  # the end-of-document token (Megatron's GPT2BPETokenizer eod): pads the test passages
LAYOUT = (f"{TRAIN_PREFIX}{INDEX_BIN_SUFFIX} + {TRAIN_PREFIX}{INDEX_SUFFIX} (a Megatron indexed dataset of GPT-2 "
          f"BPE ids), {TEST_FILE} (JSON lines with a 'text' string) and the tokenizer {VOCAB_FILE} + {MERGES_FILE} "
          f"(with {EOD})")


def train_problems(root: Path, seq_len: int) -> list[str]:
    """The training index: its header, its .bin's size, and at least one sequence of seq_len + 1 tokens."""
    header, problems = read_index_header(root / TRAIN_PREFIX)
    if header is None:
        return problems
    tokens, problems = bin_tokens(header, LAYOUT)
    if problems:
        return problems
    if tokens < seq_len + 1:
        return [f"{header.bin_path}: {tokens} tokens, fewer than one sequence of seq_len {seq_len} + 1"]
    return []


def passage_problems(path: Path) -> list[str]:
    """Each line of the test file a JSON object with a non-empty 'text' string; at least one line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return [f"{path}: missing; expected {LAYOUT}"]
    except (OSError, UnicodeDecodeError) as exc:
        return [f"{path}: not readable UTF-8 text ({exc})"]
    passages = 0
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            text = json.loads(line).get("text")
        except (ValueError, AttributeError):
            return [f"{path}: line {number} is not a JSON object; expected one {{\"text\": \"...\"}} a line"]
        if not isinstance(text, str) or not text.split():
            return [f"{path}: line {number} has no 'text' string with a word; expected {{\"text\": \"...\"}}"]
        passages += 1
    return [] if passages else [f"{path}: no passage; expected one {{\"text\": \"...\"}} a line"]


def tokenizer_problems(root: Path, vocab_size: int) -> list[str]:
    """The vocab a {token: id} object holding EOD, every id below the model's vocab_size; the merges present."""
    vocab_path, problems = root / VOCAB_FILE, []
    if not (root / MERGES_FILE).is_file():
        problems.append(f"{root / MERGES_FILE}: missing; expected {LAYOUT}")
    try:
        vocab = json.loads(vocab_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return problems + [f"{vocab_path}: missing; expected {LAYOUT}"]
    except (OSError, ValueError) as exc:
        return problems + [f"{vocab_path}: not readable JSON ({exc}); expected a {{token: id}} object"]
    if not isinstance(vocab, dict) or not vocab or not all(isinstance(i, int) for i in vocab.values()):
        return problems + [f"{vocab_path}: not a {{token: id}} object of integer ids"]
    if EOD not in vocab:
        problems.append(f"{vocab_path}: no {EOD} token (the end-of-document id the test passages are padded with)")
    top = max(vocab.values())
    if top >= vocab_size:
        problems.append(f"{vocab_path}: holds id {top}, not below the model's vocab_size {vocab_size}; set "
                        f"vocab_size above {top}")
    return problems


def check_data_dir(data_dir: str | None, params: dict) -> list[str]:
    """Problems with a gpt2 data dir, each naming the file and the expected layout; [] when fine."""
    if params.get("synthetic"):
        return []
    if not data_dir:
        return [f"gpt2 needs data_dir with {LAYOUT}, or synthetic: true"]
    root = Path(data_dir)
    if not root.is_dir():
        return [f"{data_dir}: not a directory; expected {LAYOUT}"]
    return (train_problems(root, int(params.get("seq_len", 1024))) + passage_problems(root / TEST_FILE)
            + tokenizer_problems(root, int(params.get("vocab_size", 50304))))
