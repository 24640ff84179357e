"""Format check for distilbert data (standard library only): FlagPerf's layout for its distilbert case
(training/benchmarks/distilbert/README.md), SST-2 tokenised by create_train_eval_data.py:

    <data_dir>/dataset/train_dataset.npz    SST-2 train
    <data_dir>/dataset/eval_dataset.npz     SST-2 validation
    <data_dir>/model/pytorch_model.bin      distilbert-base-uncased's weights (init_checkpoint)

Each .npz has `input_ids` and `attention_mask` (N, seq_len) integers (padded to seq_len with 0; 1 marks a token)
and `label` (N,) integers in [0, num_classes); FlagPerf's files also hold `idx` and `sentence`, which are not read.
"""

from __future__ import annotations

from pathlib import Path

from case_runners.cases.bert.data import INTEGER_KINDS, checkpoint_path
from case_runners.cases.npy_header import npz_with

SPLITS = {"train": "dataset/train_dataset.npz", "eval": "dataset/eval_dataset.npz"}
FORMAT = ("FlagPerf's distilbert layout: dataset/train_dataset.npz and dataset/eval_dataset.npz, each with "
          "'input_ids' and 'attention_mask' (N, seq_len) and 'label' (N,) integers")


def check_split(path: Path, seq_len: int) -> list[str]:
    try:
        arrays = npz_with(path, ("input_ids", "attention_mask", "label"), FORMAT)
    except ValueError as e:
        return [str(e)]
    ids, rows = arrays["input_ids"].shape, arrays["label"].shape
    wanted = {"input_ids": (rows[0] if rows else None, seq_len), "attention_mask": ids, "label": ids[:1]}
    problems = []
    for name, shape in wanted.items():
        info = arrays[name]
        if info.shape != shape:
            problems.append(f"{path}: '{name}' has shape {info.shape}; expected {shape}"
                            + (f" for seq_len {seq_len}" if name == "input_ids" else ""))
        if info.kind not in INTEGER_KINDS:
            problems.append(f"{path}: '{name}' has dtype {info.dtype}; expected integers")
    return problems


def check_data_dir(data_dir: str | None, params: dict) -> list[str]:
    if params.get("synthetic"):
        return []  # random sequences, and no checkpoint to start from
    if not data_dir:
        return [f"distilbert needs data_dir with {FORMAT}, or synthetic: true"]
    if not Path(data_dir).is_dir():
        return [f"{data_dir}: not a directory; expected {FORMAT}"]
    problems = []
    checkpoint = params.get("init_checkpoint") or ""
    if checkpoint and not checkpoint_path(data_dir, checkpoint).is_file():
        problems.append(f"{checkpoint_path(data_dir, checkpoint)}: init_checkpoint not found (FlagPerf's "
                        f"model/pytorch_model.bin: distilbert-base-uncased); set init_checkpoint \"\" to train "
                        f"from scratch")
    seq_len = int(params.get("seq_len", 512))
    for split in SPLITS.values():
        path = Path(data_dir) / split
        problems += check_split(path, seq_len) if path.is_file() else [f"{path}: missing; expected {FORMAT}"]
    return problems
