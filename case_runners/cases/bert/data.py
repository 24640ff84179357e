"""Format check for bert data (standard library only).

data_dir holds pre-tokenised shards (bert-large-uncased WordPiece ids):
    <data_dir>/*.npz        training shards
    <data_dir>/eval/*.npz   held-out shards (optional; else the last training shard is held out)
Each shard has `input_ids` (N, seq_len) integers and optionally `attention_mask` (N, seq_len),
1 for tokens and 0 for padding. Sequences start with [CLS] (101) and separate/end segments with
[SEP] (102); padding is 0. Write shards with numpy.savez (uncompressed) so they can be memory-mapped.
"""

from __future__ import annotations

from pathlib import Path

from case_runners.cases.npy_header import npz_arrays

FORMAT = "*.npz shards with 'input_ids' (N, seq_len) integers and optional 'attention_mask' (N, seq_len)"
INTEGER_KINDS = ("i", "u", "b")


def shard_files(data_dir: str) -> tuple[list[Path], list[Path]]:
    """(training shards, eval shards): eval/*.npz when present, else the last training shard."""
    root = Path(data_dir)
    train = sorted(root.glob("*.npz"))
    held_out = sorted((root / "eval").glob("*.npz"))
    if not held_out and len(train) > 1:
        train, held_out = train[:-1], train[-1:]
    return train, held_out


def check_shard(path: Path, seq_len: int) -> list[str]:
    try:
        arrays = npz_arrays(path)
    except ValueError as e:
        return [f"{e}; expected {FORMAT}"]
    ids = arrays.get("input_ids")
    if ids is None:
        return [f"{path}: no 'input_ids' array (has: {', '.join(sorted(arrays)) or 'nothing'}); expected {FORMAT}"]
    problems = []
    if len(ids.shape) != 2 or ids.shape[1] != seq_len:
        problems.append(f"{path}: 'input_ids' has shape {ids.shape}; expected (N, {seq_len}) for seq_len {seq_len}")
    if ids.dtype.lstrip("<>|=")[:1] not in INTEGER_KINDS:
        problems.append(f"{path}: 'input_ids' has dtype {ids.dtype}; expected integers (int32)")
    mask = arrays.get("attention_mask")
    if mask is not None and mask.shape != ids.shape:
        problems.append(f"{path}: 'attention_mask' has shape {mask.shape}; "
                        f"expected the shape of 'input_ids' {ids.shape}")
    return problems


def checkpoint_path(data_dir: str | None, init_checkpoint: str) -> Path:
    path = Path(init_checkpoint)
    return path if path.is_absolute() or not data_dir else Path(data_dir) / path


def check_data_dir(data_dir: str | None, params: dict) -> list[str]:
    problems = []
    checkpoint = params.get("init_checkpoint") or ""
    if checkpoint and not checkpoint_path(data_dir, checkpoint).is_file():
        problems.append(f"{checkpoint_path(data_dir, checkpoint)}: init_checkpoint not found")
    if params.get("synthetic"):
        return problems
    if not data_dir:
        return problems + [f"bert needs data_dir with {FORMAT}, or synthetic: true"]
    if not Path(data_dir).is_dir():
        return problems + [f"{data_dir}: not a directory; expected {FORMAT}"]
    train, held_out = shard_files(data_dir)
    if not train or not held_out:
        return problems + [f"{data_dir}: needs at least one training shard and one held-out shard "
                           f"(eval/*.npz, or two shards at the top); found {len(train)} and {len(held_out)}; "
                           f"expected {FORMAT}"]
    seq_len = int(params.get("seq_len", 512))
    for shard in train + held_out:
        problems += check_shard(shard, seq_len)
    return problems


def check_inference_data_dir(data_dir: str, params: dict) -> list[str]:
    """The inference case's data dir: the held-out shards (eval/*.npz, else the last of two or more shards)."""
    if not Path(data_dir).is_dir():
        return [f"{data_dir}: not a directory; expected {FORMAT}"]
    _, held_out = shard_files(data_dir)
    if not held_out:
        return [f"{data_dir}: no held-out shard to evaluate (eval/*.npz, or the last of two or more *.npz at the "
                f"top); expected {FORMAT}"]
    problems = []
    for shard in held_out:
        problems += check_shard(shard, int(params.get("seq_len", 512)))
    return problems
