"""The llama case's data on a rank: token files memory-mapped per their sidecars (data.py), or a Megatron indexed
dataset's .bin per its .idx, packed into sequences, sampled rank by rank; or synthetic tokens.

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

from case_runners.cases.llama.data import (
    INDEX_HEADER,
    IndexHeader,
    bin_path,
    check_data_dir,
    index_prefixes,
    indexed_problems,
    read_header,
    read_index_header,
    size_problem,
    split_token_ranges,
)
from case_runners.tasks.training.dist import eval_loader

CHUNK_TOKENS = 1 << 24  # tokens read at a time when a file's ids are checked at open
SYNTHETIC_SEED_OFFSET = 1  # the synthetic held-out set's seed is seed + this


def map_tokens(path: str | Path, dtype: str, first: int, count: int) -> np.ndarray:
    """`count` little-endian ids of a file from token `first` on, memory-mapped read-only (none: an empty array,
    numpy cannot map an empty range)."""
    little = np.dtype(dtype).newbyteorder("<")
    if count == 0:
        return np.zeros(0, little)
    return np.memmap(path, dtype=little, mode="r", offset=first * little.itemsize, shape=(count,))


def check_ids(tokens: np.ndarray, path: Path, vocab_size: int) -> None:
    """ValueError naming the file for an id below 0 or not below vocab_size, read CHUNK_TOKENS at a time."""
    chunks = [tokens[i:i + CHUNK_TOKENS] for i in range(0, len(tokens), CHUNK_TOKENS)]
    low = min((int(chunk.min()) for chunk in chunks), default=0) if tokens.dtype.kind == "i" else 0
    if low < 0:
        raise ValueError(f"{path}: holds token id {low}, below 0")
    top = max((int(chunk.max()) for chunk in chunks), default=-1)
    if top >= vocab_size:
        raise ValueError(f"{path}: holds token id {top}, not below the vocab_size {vocab_size}")


class TokenFile:
    """One split's .bin, memory-mapped read-only per its sidecar. Opening checks the file's size against the
    header and every id against `vocab_size` (the model's; default the header's), in chunks: a second line of
    defence behind check_data_dir, naming the file."""

    def __init__(self, data_dir: str | Path, split: str, vocab_size: int | None = None) -> None:
        header, problems = read_header(data_dir, split)
        if header is None:
            raise ValueError("; ".join(problems))
        self.path, self.header = bin_path(data_dir, split), header
        wrong_size = size_problem(data_dir, split, header, self.path.stat().st_size)
        if wrong_size:
            raise ValueError(wrong_size)
        self.tokens = map_tokens(self.path, header["dtype"], 0, header["tokens"])
        self.vocab_size = int(vocab_size if vocab_size is not None else header["vocab_size"])
        check_ids(self.tokens, self.path, self.vocab_size)

    def __len__(self) -> int:
        return len(self.tokens)


class IndexedDataset:
    """A data dir's Megatron indexed dataset: `parts`, the training and held-out tokens of data.py's split
    (split_token_ranges), memory-mapped from the .bin. Opening checks the .idx and the .bin's size (data.py), that
    the sequences lie back to back from byte 0 as the .idx's pointers say, and every id of both parts against
    `vocab_size`, naming the file."""

    def __init__(self, data_dir: str | Path, params: dict, vocab_size: int) -> None:
        problems = indexed_problems(data_dir, params)
        header = read_index_header(index_prefixes(data_dir)[0])[0] if not problems else None
        if header is None:
            raise ValueError("; ".join(problems))
        self.header = header
        self.check_pointers(header)
        self.parts = {split: map_tokens(header.bin_path, header.dtype, first, end - first)
                      for split, (first, end) in split_token_ranges(header, params).items()}
        for tokens in self.parts.values():
            check_ids(tokens, header.bin_path, vocab_size)

    @staticmethod
    def check_pointers(header: IndexHeader) -> None:
        """ValueError unless every sequence's byte pointer is the sum of the lengths before it x itemsize."""
        if not header.sequences:
            return
        index = np.memmap(header.idx_path, dtype=np.uint8, mode="r")
        lengths = np.frombuffer(index, dtype="<i4", count=header.sequences, offset=INDEX_HEADER.size)
        pointers = np.frombuffer(index, dtype="<i8", count=header.sequences, offset=header.pointers_offset())
        if (lengths < 0).any():
            first = int(np.flatnonzero(lengths < 0)[0])
            raise ValueError(f"{header.idx_path}: sequence {first} has length {int(lengths[first])}")
        expected = np.concatenate(([0], np.cumsum(lengths[:-1], dtype=np.int64))) * header.itemsize
        wrong = np.flatnonzero(pointers != expected)
        if wrong.size:
            first = int(wrong[0])
            raise ValueError(f"{header.idx_path}: sequence {first} starts at byte {int(pointers[first])} of "
                             f"{header.bin_path.name}, not {int(expected[first])}: its sequences do not lie back to "
                             f"back (as megatron-core's IndexedDatasetBuilder writes them)")


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
        """A memory map travels to data loader workers as its file and range, mapped again there (not as a copy): one
        of map_tokens (a slice of a memory map would keep its parent's offset)."""
        state = dict(self.__dict__)
        tokens = self.tokens
        if isinstance(tokens, np.memmap):
            assert tokens.filename is not None
            state["tokens"] = (tokens.filename, tokens.dtype.str, tokens.offset // tokens.itemsize, len(tokens))
        return state

    def __setstate__(self, state: dict) -> None:
        if isinstance(state["tokens"], tuple):
            state["tokens"] = map_tokens(*state["tokens"])
        self.__dict__.update(state)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        if not 0 <= index < self.count:
            raise IndexError(f"sample {index} of {self.count}")
        start = index * self.seq_len
        window = torch.from_numpy(np.array(self.tokens[start:start + self.seq_len + 1], dtype=np.int64))
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


def step_order(train: PackedSequences, batch_size: int, rank: int, world_size: int, seed: int,
               steps: int) -> list[list[int]]:
    """The training sequences (indices of `train`) of each of a rank's first `steps` steps, as train_loader yields
    them to the trainer: its ShardedSampler set to epoch 1, 2, ... (trainer.py counts epochs from 1), each epoch's
    indices in batches of batch_size, the last one short."""
    sampler = ShardedSampler(len(train), rank, world_size, seed)
    order: list[list[int]] = []
    epoch = 0
    while len(order) < steps:
        epoch += 1
        sampler.set_epoch(epoch)
        indices = list(sampler)
        if not indices:
            raise ValueError(f"{len(train)} training sequences are fewer than the ranks ({world_size})")
        order += [indices[i:i + batch_size] for i in range(0, len(indices), batch_size)]
    return order[:steps]


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
    """(training, held-out) sequences: the data dir's train.bin and val.bin, or its Megatron indexed dataset's parts
    per data_split, checked first; or with synthetic, random ids of vocab_size (synthetic_samples training sequences,
    eval_samples held-out, seeded by seed)."""
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
    if index_prefixes(data_dir):
        parts = IndexedDataset(data_dir, params, vocab).parts
        return PackedSequences(parts["train"], seq_len), PackedSequences(parts["val"], seq_len)
    return (PackedSequences(TokenFile(data_dir, "train", vocab).tokens, seq_len),
            PackedSequences(TokenFile(data_dir, "val", vocab).tokens, seq_len))
