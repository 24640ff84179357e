"""Format check for bert_hf data (standard library only): FlagPerf's layout for its bert_hf case
(training/benchmarks/bert_hf/README.md, config/_base.py):

    <data_dir>/openwebtext_bert_100M.npy    training tokens (datafilename)
    <data_dir>/openwebtext_bert_10M.npy     held-out tokens (valdatafilename)
    <data_dir>/weights/                     bert-large-uncased, BertForMaskedLM.save_pretrained's folder (weight_dir)

Each .npy is one flat stream of bert-uncased WordPiece ids (integers), cut into sequences of seq_len tokens (the
remainder dropped); the weights folder holds model.safetensors or pytorch_model.bin.
"""

from __future__ import annotations

from pathlib import Path

from case_runners.cases.bert.data import INTEGER_KINDS
from case_runners.cases.npy_header import read_npy_header

FORMAT = ("FlagPerf's bert_hf layout: datafilename and valdatafilename, each a .npy of one flat stream of token ids "
          "(integers)")
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def weights_file(data_dir: str | None, weight_dir: str) -> Path | None:
    """The state dict in weight_dir (relative to data_dir): model.safetensors, else pytorch_model.bin; None."""
    folder = Path(weight_dir) if Path(weight_dir).is_absolute() or not data_dir else Path(data_dir) / weight_dir
    return next((folder / name for name in WEIGHT_FILES if (folder / name).is_file()), None)


def check_stream(path: Path, seq_len: int) -> list[str]:
    try:
        with open(path, "rb") as f:
            header = read_npy_header(f)
    except (OSError, ValueError, SyntaxError) as e:
        return [f"{path}: not a readable .npy array ({e}); expected {FORMAT}"]
    if len(header.shape) != 1:
        return [f"{path}: shape {header.shape}; expected one flat stream (N,) of token ids"]
    problems = []
    if header.kind not in INTEGER_KINDS:
        problems.append(f"{path}: dtype {header.dtype}; expected integers (token ids)")
    if header.shape[0] < seq_len:
        problems.append(f"{path}: {header.shape[0]} tokens, fewer than one sequence of seq_len {seq_len}")
    return problems


def check_data_dir(data_dir: str | None, params: dict) -> list[str]:
    if params.get("synthetic"):
        return []  # a random stream, and no weights to start from
    if not data_dir:
        return [f"bert_hf needs data_dir with {FORMAT}, or synthetic: true"]
    if not Path(data_dir).is_dir():
        return [f"{data_dir}: not a directory; expected {FORMAT}"]
    problems = []
    weight_dir = params.get("weight_dir") or ""
    if weight_dir and weights_file(data_dir, weight_dir) is None:
        problems.append(f"{Path(data_dir) / weight_dir}: no {' or '.join(WEIGHT_FILES)} (weight_dir: "
                        f"bert-large-uncased's save_pretrained folder); set weight_dir \"\" to train from scratch")
    for key in ("datafilename", "valdatafilename"):
        path = Path(data_dir) / str(params.get(key, ""))
        problems += (check_stream(path, int(params.get("seq_len", 512))) if path.is_file()
                     else [f"{path}: missing ({key}); expected {FORMAT}"])
    return problems
