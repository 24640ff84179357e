"""FlagPerf's (MLPerf's) BERT pretraining shards, written small with h5py for the tests: the datasets and dtypes of
MLPerf's create_pretraining_data.py (ids and positions int32, masks, segments and labels int8), masked when
written as it does, the masked-LM lists zero-padded to max_predictions."""

from __future__ import annotations

from pathlib import Path

import numpy as np

CLS, SEP, MASK = 101, 102, 103


def masked_rows(rows: np.ndarray, max_predictions: int, seed: int = 0) -> dict[str, np.ndarray]:
    """The six datasets for `rows` of unmasked ids ([CLS] a [SEP] b [SEP], 0-padded): 1..max_predictions sorted
    word positions per row replaced by [MASK], their ids in masked_lm_ids."""
    rng = np.random.default_rng(seed)
    n, seq_len = rows.shape
    features = {"input_ids": rows.astype(np.int32), "input_mask": (rows != 0).astype(np.int8),
                "segment_ids": np.zeros((n, seq_len), np.int8),
                "masked_lm_positions": np.zeros((n, max_predictions), np.int32),
                "masked_lm_ids": np.zeros((n, max_predictions), np.int32),
                "next_sentence_labels": rng.integers(0, 2, n).astype(np.int8)}
    for i, row in enumerate(rows):
        seps = np.flatnonzero(row == SEP)
        features["segment_ids"][i, seps[0] + 1:seps[-1] + 1] = 1
        words = np.flatnonzero((row != 0) & (row != CLS) & (row != SEP))
        picked = np.sort(rng.choice(words, size=int(rng.integers(1, max_predictions + 1)), replace=False))
        features["masked_lm_positions"][i, :len(picked)] = picked
        features["masked_lm_ids"][i, :len(picked)] = row[picked]
        features["input_ids"][i, picked] = MASK
    return features


def write_shard(path: Path, features: dict[str, np.ndarray], compressed: bool) -> Path:
    """One .hdf5 shard; compressed as create_pretraining_data.py writes (gzip), else as FlagPerf's
    *_uncompressed shards (contiguous)."""
    import h5py

    path.parent.mkdir(parents=True, exist_ok=True)
    with h5py.File(path, "w") as f:
        for name, data in features.items():
            f.create_dataset(name, data=data, dtype=data.dtype, compression="gzip" if compressed else None)
    return path


def token_rows(n: int, seq_len: int, seed: int = 0) -> np.ndarray:
    """n sequences [CLS] a [SEP] b [SEP] of word ids >= 1000, some 0-padded."""
    rng = np.random.default_rng(seed)
    rows = rng.integers(1000, 1064, size=(n, seq_len)).astype(np.int32)
    for i in range(n):
        end = seq_len - (i % 3) * 2  # every third row full, the others padded
        middle = end // 2
        rows[i, 0], rows[i, middle], rows[i, end - 1], rows[i, end:] = CLS, SEP, SEP, 0
    return rows
