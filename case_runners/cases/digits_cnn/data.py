"""Format check for digits_cnn data (standard library only).

data_dir is optional: null uses the digits shipped with scikit-learn. When set, it is an .npz
file, or a directory holding `digits.npz`, with `images` (N, 8, 8) and `labels` (N,).
"""

from __future__ import annotations

from pathlib import Path

from case_runners.cases.npy_header import npz_arrays

FILE_NAME = "digits.npz"
EXPECTED = "an .npz with arrays 'images' (N, 8, 8) and 'labels' (N,)"


def resolve_npz(data_dir: str) -> Path:
    path = Path(data_dir)
    return path / FILE_NAME if path.is_dir() else path


def check_data_dir(data_dir: str | None, params: dict) -> list[str]:
    if data_dir is None or params.get("synthetic"):
        return []
    path = resolve_npz(data_dir)
    if not path.is_file():
        return [f"{path}: not found; digits_cnn data_dir must be null (use scikit-learn's digits) or {EXPECTED}"]
    try:
        arrays = npz_arrays(path)
    except ValueError as e:
        return [f"{e}; expected {EXPECTED}"]
    problems = [f"{path}: missing array '{name}'; expected {EXPECTED}"
                for name in ("images", "labels") if name not in arrays]
    if problems:
        return problems
    images, labels = arrays["images"].shape, arrays["labels"].shape
    if len(images) != 3 or images[1:] != (8, 8):
        problems.append(f"{path}: 'images' has shape {images}; expected (N, 8, 8)")
    if len(labels) != 1 or (len(images) >= 1 and labels[0] != images[0]):
        problems.append(f"{path}: 'labels' has shape {labels}; expected (N,) with N = {images[0] if images else '?'}")
    return problems
