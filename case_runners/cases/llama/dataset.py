"""The llama case's data on a rank: token files memory-mapped per their sidecars (data.py), packed into sequences,
sampled rank by rank; or synthetic tokens.

Sample i of a split is tokens[i*seq_len : i*seq_len + seq_len + 1]: input_ids its first seq_len tokens, labels its
last seq_len (shifted already: compare logits with labels directly; transformers' LlamaForCausalLM(labels=...)
would shift them again). Documents run on across samples (packing); nothing is padded.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from case_runners.cases.llama.data import bin_path, check_data_dir, read_header, size_problem
from case_runners.tasks.training.dist import eval_loader

CHUNK_TOKENS = 1 << 24  # tokens read at a time when a file's ids are checked at open
SYNTHETIC_SEED_OFFSET = 1  # the synthetic held-out set's seed is seed + this


class TokenFile:
    """One split's .bin, memory-mapped read-only per its sidecar. Opening checks the file's size against the
    header and every id against `vocab_size` (the model's; default the header's), in chunks: a second line of
    defence behind check_data_dir, naming the file."""

    def __init__(self, data_dir: str | Path, split: str, vocab_size: int | None = None) -> None:
        header, problems = read_header(data_dir, split)
        if header is None:
            raise ValueError("; ".join(problems))
        self.path, self.header = bin_path(data_dir, split), header
        dtype = np.dtype(header["dtype"]).newbyteorder("<")
        wrong_size = size_problem(data_dir, split, header, self.path.stat().st_size)
        if wrong_size:
            raise ValueError(wrong_size)
        self.tokens = (np.memmap(self.path, dtype=dtype, mode="r") if header["tokens"]
                       else np.zeros(0, dtype))  # numpy cannot map an empty file
        self.vocab_size = int(vocab_size if vocab_size is not None else header["vocab_size"])
        top = self.max_token_id()
        if top >= self.vocab_size:
            raise ValueError(f"{self.path}: holds token id {top}, not below the vocab_size {self.vocab_size}")

    def max_token_id(self) -> int:
        """The largest id in the file, read CHUNK_TOKENS at a time (-1 when empty)."""
        return max((int(self.tokens[i:i + CHUNK_TOKENS].max()) for i in range(0, len(self.tokens), CHUNK_TOKENS)),
                   default=-1)

    def __len__(self) -> int:
        return len(self.tokens)


def synthetic_tokens(count: int, vocab_size: int, seed: int) -> np.ndarray:
    """`count` uniformly random ids below vocab_size, the same for a seed."""
    return np.random.default_rng(seed).integers(0, vocab_size, size=count, dtype=np.int64)


class PackedSequences(Dataset):
    """Sequences of seq_len + 1 tokens cut back to back (one token shared) from a flat array of ids: a sample is
    (input_ids, labels), int64 tensors of seq_len."""

    def __init__(self, tokens: np.ndarray, seq_len: int) -> None:
        if seq_len < 1:
            raise ValueError(f"seq_len {seq_len}: expected a positive integer")
        self.tokens, self.seq_len = tokens, seq_len
        self.count = max(0, (len(tokens) - 1) // seq_len)

    def __len__(self) -> int:
        return self.count

    def __getstate__(self) -> dict:
        """A memory map travels to data loader workers as its file, mapped again there (not as a copy)."""
        state = dict(self.__dict__)
        if isinstance(self.tokens, np.memmap):
            state["tokens"] = (self.tokens.filename, self.tokens.dtype.str)
        return state

    def __setstate__(self, state: dict) -> None:
        if isinstance(state["tokens"], tuple):
            filename, dtype = state["tokens"]
            state["tokens"] = np.memmap(filename, dtype=np.dtype(dtype), mode="r")
        self.__dict__.update(state)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        if not 0 <= index < self.count:
            raise IndexError(f"sample {index} of {self.count}")
        start = index * self.seq_len
        window = torch.from_numpy(np.asarray(self.tokens[start:start + self.seq_len + 1], dtype=np.int64))
        return window[:-1], window[1:]


class ShardedSampler(Sampler[int]):
    """A rank's training samples: a permutation seeded by (seed, epoch), cut to a multiple of world_size, the rank
    taking every world_size-th. Ranks get disjoint samples and equal counts (len(dataset) // world_size each); the
    remainder left out changes with the epoch."""

    def __init__(self, length: int, rank: int, world_size: int, seed: int) -> None:
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} of world_size {world_size}")
        self.length, self.rank, self.world_size, self.seed = length, rank, world_size, seed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return self.length // self.world_size

    def __iter__(self) -> Iterator[int]:
        order = torch.randperm(self.length, generator=torch.Generator().manual_seed(self.seed + self.epoch))
        return iter(order[:len(self) * self.world_size][self.rank::self.world_size].tolist())


def train_loader(dataset: PackedSequences, batch_size: int, rank: int, world_size: int, seed: int,
                 num_workers: int = 0, pin_memory: bool = False) -> DataLoader:
    """Batches of this rank's ShardedSampler (set_epoch reshuffles: training.dist.set_sampler_epoch)."""
    return DataLoader(dataset, batch_size=batch_size, sampler=ShardedSampler(len(dataset), rank, world_size, seed),
                      num_workers=num_workers, pin_memory=pin_memory, persistent_workers=num_workers > 0)


def held_out_loader(dataset: Dataset, batch_size: int, rank: int, world_size: int,
                    num_workers: int = 0, pin_memory: bool = False) -> DataLoader:
    """The held-out samples in order, this rank's unpadded share (every sample counted once over the ranks)."""
    return eval_loader(dataset, batch_size, rank, world_size, num_workers=num_workers, pin_memory=pin_memory)


def unigram_entropy(tokens: np.ndarray) -> float:
    """The entropy in nats per token of the ids' own frequencies: the loss of a model that knows only them."""
    counts = np.bincount(np.asarray(tokens, dtype=np.int64))
    p = counts[counts > 0] / max(1, len(tokens))
    return float(-(p * np.log(p)).sum())


def build_datasets(data_dir: str | None, params: dict) -> tuple[PackedSequences, PackedSequences]:
    """(training, held-out) sequences: the data dir's train.bin and val.bin, checked first; or with synthetic,
    random ids of vocab_size (synthetic_samples training sequences, eval_samples held-out, seeded by seed)."""
    seq_len, vocab = int(params["seq_len"]), int(params["vocab_size"])
    if params.get("synthetic"):
        seed = int(params["seed"])
        return (PackedSequences(synthetic_tokens(int(params["synthetic_samples"]) * seq_len + 1, vocab, seed),
                                seq_len),
                PackedSequences(synthetic_tokens(int(params["eval_samples"]) * seq_len + 1, vocab,
                                                 seed + SYNTHETIC_SEED_OFFSET), seq_len))
    problems = check_data_dir(data_dir, params)
    if problems:
        raise ValueError("; ".join(problems))
    assert data_dir is not None  # without synthetic, check_data_dir names a missing data_dir
    return (PackedSequences(TokenFile(data_dir, "train", vocab).tokens, seq_len),
            PackedSequences(TokenFile(data_dir, "val", vocab).tokens, seq_len))
