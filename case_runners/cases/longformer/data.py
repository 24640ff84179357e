"""Format check for longformer data (standard library only): FlagPerf's layout for its longformer case
(training/benchmarks/longformer/README.md), wikitext-2 tokenised by data_preprocessing/create_train_eval_data.py
(longformer-base-4096's RoBERTa BPE, the text cut into sequences of 1024 tokens):

    <data_dir>/dataset/train_dataset.npz
    <data_dir>/dataset/eval_dataset.npz

each with `input_ids`, `attention_mask` and `special_tokens_mask` (N, seq_len) integers. FlagPerf's model/ folder
(config.json and the tokenizer) is not read: the model is built from config.yaml, from random weights as FlagPerf's.
"""

from __future__ import annotations

from pathlib import Path

from case_runners.cases.bert.data import INTEGER_KINDS
from case_runners.cases.npy_header import npz_with

SPLITS = {"train": "dataset/train_dataset.npz", "eval": "dataset/eval_dataset.npz"}
ARRAYS = ("input_ids", "attention_mask", "special_tokens_mask")
FORMAT = ("FlagPerf's longformer layout: dataset/train_dataset.npz and dataset/eval_dataset.npz, each with "
          "'input_ids', 'attention_mask' and 'special_tokens_mask' (N, seq_len) integers")


def check_split(path: Path, seq_len: int) -> list[str]:
    try:
        arrays = npz_with(path, ARRAYS, FORMAT)
    except ValueError as e:
        return [str(e)]
    rows = arrays["input_ids"].shape[0] if arrays["input_ids"].shape else None
    problems = []
    for name in ARRAYS:
        info = arrays[name]
        if info.shape != (rows, seq_len):
            problems.append(f"{path}: '{name}' has shape {info.shape}; expected ({rows}, {seq_len}) for seq_len "
                            f"{seq_len}")
        if info.kind not in INTEGER_KINDS:
            problems.append(f"{path}: '{name}' has dtype {info.dtype}; expected integers")
    return problems


def check_data_dir(data_dir: str | None, params: dict) -> list[str]:
    if params.get("synthetic"):
        return []
    if not data_dir:
        return [f"longformer needs data_dir with {FORMAT}, or synthetic: true"]
    if not Path(data_dir).is_dir():
        return [f"{data_dir}: not a directory; expected {FORMAT}"]
    problems = []
    for split in SPLITS.values():
        path = Path(data_dir) / split
        problems += (check_split(path, int(params.get("seq_len", 1024))) if path.is_file()
                     else [f"{path}: missing; expected {FORMAT}"])
    return problems
