"""Format check for t5_small data (standard library): FlagPerf's t5_small_train layout, as its preprocessing script
(training/benchmarks/t5_small/pytorch/data_preprocessing/create_train_eval_data.py) writes it:

    <data_dir>/dataset/train_dataset.npz   CNN/DailyMail 3.0.0 train, t5-small's SentencePiece ids
    <data_dir>/dataset/eval_dataset.npz    its validation split
    <data_dir>/model/tokenizer.json        the tokenizer the ids are from (decodes the summaries for ROUGE)
    <data_dir>/model/model.safetensors     t5-small's pretrained weights, the fine-tuning's start (init_checkpoint)

Each .npz has `input_ids` and `attention_mask` (N, source_len) ("summarize: " + article, padded with 0) and
`labels` (N, target_len) (the highlights, then </s> = 1, padded with -100). FlagPerf's metrics/ and nltk_data/
folders are not read (rouge-score computes ROUGE here).
"""

from __future__ import annotations

from pathlib import Path

from case_runners.cases.npy_header import npz_with

TRAIN_FILE, EVAL_FILE = "dataset/train_dataset.npz", "dataset/eval_dataset.npz"
TOKENIZER_FILE = "model/tokenizer.json"
FORMAT = (f"FlagPerf's t5_small_train layout: {TRAIN_FILE} and {EVAL_FILE} with 'input_ids', 'attention_mask' "
          f"(N, source_len) and 'labels' (N, target_len) integers, and {TOKENIZER_FILE}")
INTEGER_KINDS = ("i", "u")


def checkpoint_path(data_dir: str | None, init_checkpoint: str) -> Path:
    path = Path(init_checkpoint)
    return path if path.is_absolute() or not data_dir else Path(data_dir) / path


def check_split(path: Path, source_len: int, target_len: int) -> list[str]:
    try:
        arrays = npz_with(path, ("input_ids", "attention_mask", "labels"), FORMAT)
    except ValueError as e:
        return [str(e)]
    problems = []
    rows = arrays["input_ids"].shape[0] if arrays["input_ids"].shape else None
    widths = {"input_ids": ("source_len", source_len), "attention_mask": ("source_len", source_len),
              "labels": ("target_len", target_len)}
    for name, (key, width) in widths.items():
        info = arrays[name]
        if info.shape != (rows, width):
            problems.append(f"{path}: '{name}' has shape {info.shape}; expected (N, {width}) for {key} {width}"
                            + (f", N = {rows} as 'input_ids'" if name != "input_ids" else ""))
        if info.kind not in INTEGER_KINDS:
            problems.append(f"{path}: '{name}' has dtype {info.dtype}; expected integers")
    return problems


def check_data_dir(data_dir: str | None, params: dict) -> list[str]:
    if params.get("synthetic"):
        return []
    if not data_dir:
        return [f"t5_small needs data_dir with {FORMAT}, or synthetic: true"]
    root = Path(data_dir)
    if not root.is_dir():
        return [f"{data_dir}: not a directory; expected {FORMAT}"]
    problems = []
    checkpoint = params.get("init_checkpoint") or ""
    if checkpoint and not checkpoint_path(data_dir, checkpoint).is_file():
        problems.append(f"{checkpoint_path(data_dir, checkpoint)}: init_checkpoint not found (t5-small's weights, "
                        f"FlagPerf's model/model.safetensors; init_checkpoint \"\" trains from scratch)")
    if not (root / TOKENIZER_FILE).is_file():
        problems.append(f"{root / TOKENIZER_FILE}: missing: the tokenizer that decodes the summaries; "
                        f"expected {FORMAT}")
    source_len, target_len = int(params.get("source_len", 1024)), int(params.get("target_len", 128))
    for name in (TRAIN_FILE, EVAL_FILE):
        path = root / name
        problems += check_split(path, source_len, target_len) if path.is_file() else [
            f"{path}: missing; expected {FORMAT}"]
    return problems
