"""gpt2's data on a rank: the training index packed into sequences (the llama case's reader), and LAMBADA's test
passages tokenised with the data dir's GPT-2 BPE (`tokenizers`), each to be completed by its last token.

LAMBADA as FlagPerf scores it (training/benchmarks/gpt2/pytorch/dataloaders/gpt_dataset.py _LambadaDataset with
strict=False, train/evaluator.py): a passage is tokenised whole; its last BPE token is the label, the tokens before
it the context. A passage counts as correct when the model's most likely next token after the context is the label.
That is the last *token*, not the last word (a word of several tokens is scored on its final piece, its other pieces
given in the context), so the figure is higher than the usual whole-word LAMBADA accuracy.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch.utils.data import Dataset

from case_runners.cases.gpt2.data import EOD, MERGES_FILE, TEST_FILE, TRAIN_PREFIX, VOCAB_FILE, check_data_dir
from case_runners.cases.llama.data import read_index_header
from case_runners.cases.llama.dataset import IndexedDataset, PackedSequences, check_ids, map_tokens, synthetic_tokens

if TYPE_CHECKING:
    from tokenizers.implementations import BaseTokenizer

SYNTHETIC_EVAL_SEED_OFFSET = 1


def load_tokenizer(data_dir: str | Path) -> BaseTokenizer:
    """The data dir's GPT-2 byte-level BPE (no prefix space, as GPT-2's own encoder)."""
    from tokenizers import ByteLevelBPETokenizer

    root = Path(data_dir)
    return ByteLevelBPETokenizer.from_file(str(root / VOCAB_FILE), str(root / MERGES_FILE))


def read_passages(path: Path, tokenizer: BaseTokenizer) -> list[list[int]]:
    """Each passage of a LAMBADA JSON-lines file, tokenised whole (FlagPerf's non-strict reading)."""
    texts = [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [encoding.ids for encoding in tokenizer.encode_batch(texts)]


class LambadaPassages(Dataset):
    """Passages to complete: a sample is (input_ids, position, label): the context padded with `pad_id` to seq_len,
    the index of its last token (whose next-token prediction is scored) and the label, the passage's last token. A
    passage longer than seq_len + 1 tokens keeps its last seq_len + 1 (FlagPerf's would not fit its batch)."""

    def __init__(self, passages: list[list[int]], seq_len: int, pad_id: int) -> None:
        kept = [p[-(seq_len + 1):] for p in passages if len(p) >= 2]
        self.inputs = torch.full((len(kept), seq_len), pad_id, dtype=torch.long)
        self.positions = torch.tensor([len(p) - 2 for p in kept], dtype=torch.long)
        self.labels = torch.tensor([p[-1] for p in kept], dtype=torch.long)
        for row, passage in enumerate(kept):
            self.inputs[row, :len(passage) - 1] = torch.tensor(passage[:-1])

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return self.inputs[index], self.positions[index], self.labels[index]


def synthetic_passages(count: int, seq_len: int, vocab_size: int, seed: int) -> list[list[int]]:
    """`count` passages of random ids, 2 to seq_len + 1 tokens long."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(2, seq_len + 2, size=count)
    return [rng.integers(0, vocab_size, size=int(n)).tolist() for n in lengths]


def training_tokens(data_dir: str, vocab_size: int) -> np.ndarray:
    """Every token of the training index, memory-mapped, checked against vocab_size; its sequences are documents
    back to back (each ends with the end-of-document id: preprocess_data.py --append-eod)."""
    header, problems = read_index_header(Path(data_dir) / TRAIN_PREFIX)
    if header is None:
        raise ValueError("; ".join(problems))
    IndexedDataset.check_pointers(header)
    tokens = map_tokens(header.bin_path, header.dtype, 0, header.bin_path.stat().st_size // header.itemsize)
    check_ids(tokens, header.bin_path, vocab_size)
    return tokens


def build_datasets(data_dir: str | None, params: dict) -> tuple[PackedSequences, LambadaPassages]:
    """(training sequences, LAMBADA passages): the data dir's, checked first; or with synthetic, random ids
    (synthetic_samples sequences, eval_samples passages, seeded by seed). At most eval_samples passages are kept."""
    seq_len, vocab, seed = int(params["seq_len"]), int(params["vocab_size"]), int(params["seed"])
    limit = int(params["eval_samples"])
    if params.get("synthetic"):
        train = synthetic_tokens(int(params["synthetic_samples"]) * seq_len + 1, vocab, seed)
        passages = synthetic_passages(limit, seq_len, vocab, seed + SYNTHETIC_EVAL_SEED_OFFSET)
        return PackedSequences(train, seq_len), LambadaPassages(passages, seq_len, pad_id=0)
    problems = check_data_dir(data_dir, params)
    if problems:
        raise ValueError("; ".join(problems))
    assert data_dir is not None  # without synthetic, check_data_dir names a missing data_dir
    tokenizer = load_tokenizer(data_dir)
    passages = read_passages(Path(data_dir) / TEST_FILE, tokenizer)[:limit]
    top = max((max(p) for p in passages if p), default=0)
    if top >= vocab:
        raise ValueError(f"{Path(data_dir) / VOCAB_FILE}: tokenises {TEST_FILE} to id {top}, not below the "
                         f"vocab_size {vocab}")
    pad = tokenizer.token_to_id(EOD)
    assert pad is not None  # check_data_dir found EOD in the vocab
    return (PackedSequences(training_tokens(data_dir, vocab), seq_len),
            LambadaPassages(passages, seq_len, pad_id=pad))
