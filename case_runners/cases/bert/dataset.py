"""Pre-tokenised .npz shards (memory-mapped) masked on the fly, FlagPerf's pre-masked .hdf5 shards, synthetic
sequences; masked for MLM on the fly (case_runners/cases/mlm.py)."""

from __future__ import annotations

import bisect
import struct
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset, TensorDataset

from case_runners.cases.bert.data import check_data_dir, is_hdf5, shard_files
from case_runners.cases.mlm import CLS_ID, FIRST_WORD_ID, IGNORE, PAD_ID, SEP_ID, mask_tokens
from case_runners.cases.npy_header import npz_arrays, read_npy_header


def load_npz_array(path: Path, name: str) -> np.ndarray:
    """An array of an .npz, memory-mapped when stored uncompressed (numpy.savez), else read whole."""
    with zipfile.ZipFile(path) as z:
        info = z.getinfo(f"{name}.npy")
    if info.compress_type != zipfile.ZIP_STORED:
        with np.load(path) as npz:
            return npz[name]
    with open(path, "rb") as f:
        f.seek(info.header_offset + 26)
        name_len, extra_len = struct.unpack("<HH", f.read(4))
        f.seek(info.header_offset + 30 + name_len + extra_len)
        header = read_npy_header(f)
        offset = f.tell()
    return np.memmap(path, dtype=np.dtype(header.dtype), mode="r", offset=offset, shape=header.shape,
                     order="F" if header.fortran_order else "C")


class _Shards(Dataset):
    """Rows of several shard files, indexed as one sequence; each process (data loader workers included) opens the
    files itself, lazily, through _open_arrays."""

    def __init__(self, shards: list[Path], rows: list[int]) -> None:
        self.shards = shards
        self.ends = [int(e) for e in np.cumsum(rows)]
        self._arrays: list | None = None

    def __len__(self) -> int:
        return self.ends[-1] if self.ends else 0

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_arrays": None}

    def _open_arrays(self) -> list:
        raise NotImplementedError

    def _row(self, index: int) -> tuple[list | tuple, int]:
        """The arrays of the shard that holds row `index`, and the row's index in that shard."""
        if self._arrays is None:
            self._arrays = self._open_arrays()
        shard = bisect.bisect_right(self.ends, index)
        return self._arrays[shard], index - (self.ends[shard - 1] if shard else 0)


class TokenShards(_Shards):
    """Sequences of several .npz shards."""

    def __init__(self, shards: list[Path]) -> None:
        headers = [npz_arrays(s) for s in shards]
        super().__init__(shards, [h["input_ids"].shape[0] for h in headers])
        self.has_mask = ["attention_mask" in h for h in headers]

    def _open_arrays(self) -> list:
        return [(load_npz_array(s, "input_ids"), load_npz_array(s, "attention_mask") if m else None)
                for s, m in zip(self.shards, self.has_mask)]

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        (ids, mask), row = self._row(index)
        input_ids = torch.from_numpy(np.array(ids[row], dtype=np.int64))
        attention = (torch.from_numpy(np.array(mask[row], dtype=np.int64)) if mask is not None
                     else (input_ids != PAD_ID).long())
        return input_ids, attention


def load_hdf5_array(handle: Any, name: str) -> Any:
    """A dataset of an open h5py file, memory-mapped when stored contiguous and unfiltered (FlagPerf's
    *_uncompressed shards), else the h5py dataset itself, read row by row through its chunk cache."""
    data = handle[name]
    offset = data.id.get_offset() if data.chunks is None and data.compression is None else None
    if offset is None:
        return data
    return np.memmap(handle.filename, dtype=data.dtype, mode="r", offset=offset, shape=data.shape)


class MaskedShards(_Shards):
    """FlagPerf's (MLPerf's) .hdf5 shards, masked when written: the static masks FlagPerf trains and evaluates
    on. A sample is the model's inputs: input_ids (masked), attention_mask, token_type_ids (segment_ids), positions
    and labels (IGNORE where masked_lm_positions is 0: the lists are zero-padded and [CLS] is never masked).
    next_sentence_labels are not read (the case trains the masked-LM head only). Files open lazily in each process."""

    FIELDS = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids")

    def __init__(self, shards: list[Path]) -> None:
        import h5py

        rows = []
        for shard in shards:
            with h5py.File(shard, "r") as f:
                rows.append(f["input_ids"].shape[0])
        super().__init__(shards, rows)

    def _open_arrays(self) -> list:
        import h5py

        handles = [h5py.File(s, "r") for s in self.shards]
        return [[load_hdf5_array(h, name) for name in self.FIELDS] for h in handles]

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        arrays, row = self._row(index)
        ids, mask, segments, positions, words = (torch.from_numpy(np.asarray(a[row], dtype=np.int64))
                                                 for a in arrays)
        used = positions != 0
        return {"input_ids": ids, "attention_mask": mask, "token_type_ids": segments,
                "positions": torch.where(used, positions, 0), "labels": torch.where(used, words, IGNORE)}


class SyntheticTokens(Dataset):
    """`length` sequences cycling over a pool of random word ids framed by [CLS] ... [SEP]."""

    def __init__(self, length: int, seq_len: int, vocab_size: int, seed: int, pool: int = 256) -> None:
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(FIRST_WORD_ID, vocab_size, (pool, seq_len), generator=g)
        self.ids[:, 0], self.ids[:, -1] = CLS_ID, SEP_ID
        self.length = length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        ids = self.ids[index % len(self.ids)]
        return ids, torch.ones_like(ids)


def stack(samples: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    return {key: torch.stack([s[key] for s in samples]) for key in samples[0]}


class MaskingCollator:
    """Stacks (input_ids, attention_mask) samples and masks them anew every time (training); samples masked
    already (MaskedShards: dicts) are stacked as they are."""

    def __init__(self, params: dict) -> None:
        self.mask_prob, self.max_predictions = float(params["mask_prob"]), int(params["max_predictions_per_seq"])
        self.vocab_size = int(params["vocab_size"])

    def __call__(self, samples: list) -> dict[str, torch.Tensor]:
        if isinstance(samples[0], dict):
            return stack(samples)
        ids, attention = (torch.stack(x) for x in zip(*samples))
        return mask_tokens(ids, attention, self.mask_prob, self.max_predictions, self.vocab_size)


EVAL_FIELDS = ("input_ids", "attention_mask", "positions", "labels", "token_type_ids")  # token_type_ids: .hdf5


def fixed_eval_set(dataset: TokenShards | SyntheticTokens | MaskedShards, params: dict) -> TensorDataset:
    """The first eval_samples held-out sequences, masked once with a fixed seed (comparable evals), or with the
    masks they were written with (MaskedShards); tensors in the order of EVAL_FIELDS."""
    n = min(len(dataset), int(params["eval_samples"]))
    if isinstance(dataset, MaskedShards):
        batch = stack([dataset[i] for i in range(n)])
    else:
        ids, attention = (torch.stack(x) for x in zip(*(dataset[i] for i in range(n))))
        batch = mask_tokens(ids, attention, float(params["mask_prob"]), int(params["max_predictions_per_seq"]),
                            int(params["vocab_size"]), torch.Generator().manual_seed(int(params["seed"])))
    return TensorDataset(*(batch[key] for key in EVAL_FIELDS if key in batch))


def build_datasets(data_dir: str | None, params: dict) -> tuple[Dataset, TensorDataset]:
    """(training set, fixed eval set): synthetic, .npz shards (masked here) or .hdf5 shards (masked already)."""
    seq_len, vocab, seed = int(params["seq_len"]), int(params["vocab_size"]), int(params["seed"])
    if params["synthetic"]:
        n = int(params["synthetic_samples"])
        synthetic_held_out = SyntheticTokens(min(n, int(params["eval_samples"])), seq_len, vocab, seed + 1)
        return SyntheticTokens(n, seq_len, vocab, seed), fixed_eval_set(synthetic_held_out, params)
    problems = check_data_dir(data_dir, params)
    if problems:
        raise ValueError("; ".join(problems))
    assert data_dir is not None  # without synthetic, check_data_dir names a missing data_dir
    train, held_out = shard_files(data_dir)
    shards = MaskedShards if is_hdf5(train) else TokenShards
    return shards(train), fixed_eval_set(shards(held_out), params)
