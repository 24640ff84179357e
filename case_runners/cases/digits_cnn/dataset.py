"""digits_cnn data: scikit-learn's digits (or an .npz of the same shape), split 80/20 stratified."""

from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import TensorDataset

from case_runners.cases.digits_cnn.data import check_data_dir, resolve_npz

TEST_FRACTION = 0.2
SPLIT_SEED = 0  # fixed: the held-out set is the same in every run
SYNTHETIC_TRAIN, SYNTHETIC_TEST = 1437, 360


def load_images(data_dir: str | None) -> tuple[np.ndarray, np.ndarray]:
    """(images scaled to [0, 1] as float32 (N, 8, 8), int64 labels (N,))."""
    if data_dir is None:
        from sklearn.datasets import load_digits

        digits = load_digits()
        images, labels = digits.images, digits.target
    else:
        problems = check_data_dir(data_dir, {})
        if problems:
            raise ValueError("; ".join(problems))
        with np.load(resolve_npz(data_dir)) as npz:
            images, labels = npz["images"], npz["labels"]
    images = images.astype(np.float32)
    return images / max(float(images.max()), 1e-6), labels.astype(np.int64)


def split_datasets(data_dir: str | None, synthetic: bool, seed: int) -> tuple[TensorDataset, TensorDataset]:
    """(train, held-out test) datasets of (1, 8, 8) images and labels."""
    if synthetic:
        g = torch.Generator().manual_seed(seed)
        def make(n: int) -> TensorDataset:
            return TensorDataset(torch.rand(n, 1, 8, 8, generator=g), torch.randint(0, 10, (n,), generator=g))
        return make(SYNTHETIC_TRAIN), make(SYNTHETIC_TEST)
    from sklearn.model_selection import train_test_split

    images, labels = load_images(data_dir)
    x_train, x_test, y_train, y_test = train_test_split(
        images, labels, test_size=TEST_FRACTION, stratify=labels, random_state=SPLIT_SEED)
    def make_real(x: np.ndarray, y: np.ndarray) -> TensorDataset:
        return TensorDataset(torch.from_numpy(x).unsqueeze(1), torch.from_numpy(y))
    return make_real(x_train, y_train), make_real(x_test, y_test)
