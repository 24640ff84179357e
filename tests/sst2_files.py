"""SST-2 as FlagPerf's distilbert case stores it (training/benchmarks/distilbert/pytorch/data_preprocessing/
create_train_eval_data.py: numpy.savez of the tokenised dataset), written small for the tests: idx, sentence,
label, input_ids and attention_mask, padded to seq_len with 0. The sentences are generated: filler words and one
word of sentiment, positive or negative, which decides the label, so that a tiny model learns them in seconds."""

from __future__ import annotations

from pathlib import Path

import numpy as np

CLS, SEP = 101, 102
FILLER = [f"w{i}" for i in range(200)]
POSITIVE = ["good", "great", "fine", "superb", "charming", "moving", "funny", "smart", "warm", "bright"]
NEGATIVE = ["bad", "dull", "awful", "boring", "weak", "flat", "stale", "messy", "cold", "tedious"]
VOCAB = {word: 1000 + i for i, word in enumerate(POSITIVE + NEGATIVE + FILLER)}  # WordPiece-like ids, 1000 up
VOCAB_SIZE = 1000 + len(VOCAB)


def sentences(n: int, seed: int, max_words: int) -> tuple[list[str], np.ndarray]:
    """n sentences of 2..max_words words, one of them a sentiment word; labels 1 positive, 0 negative."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    texts = []
    for label in labels:
        words = list(rng.choice(FILLER, size=int(rng.integers(1, max_words))))
        words.insert(int(rng.integers(0, len(words) + 1)), str(rng.choice(POSITIVE if label else NEGATIVE)))
        texts.append(" ".join(words))
    return texts, labels


def write_split(path: Path, n: int, seq_len: int, seed: int) -> Path:
    texts, labels = sentences(n, seed, max_words=seq_len - 2)
    input_ids = np.zeros((n, seq_len), np.int64)
    for i, text in enumerate(texts):
        ids = [CLS, *(VOCAB[w] for w in text.split()), SEP]
        input_ids[i, :len(ids)] = ids
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, idx=np.arange(n), sentence=np.array(texts), label=labels, input_ids=input_ids,
             attention_mask=(input_ids != 0).astype(np.int64))
    return path


def write_sst2(root: Path, train: int, evaluated: int, seq_len: int) -> Path:
    """FlagPerf's layout (dataset/train_dataset.npz, dataset/eval_dataset.npz) under root; root."""
    write_split(root / "dataset" / "train_dataset.npz", train, seq_len, seed=0)
    write_split(root / "dataset" / "eval_dataset.npz", evaluated, seq_len, seed=1)
    return root
