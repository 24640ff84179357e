"""Format check for bert data (standard library; h5py, where it is installed, for .hdf5 shards' contents).

data_dir holds pre-tokenised shards (bert-large-uncased WordPiece ids), in one of two formats:
    <data_dir>/*.npz        training shards
    <data_dir>/eval/*.npz   held-out shards (optional; else the last training shard is held out)
Each .npz shard has `input_ids` (N, seq_len) integers and optionally `attention_mask` (N, seq_len),
1 for tokens and 0 for padding. Sequences start with [CLS] (101) and separate/end segments with
[SEP] (102); padding is 0. Write shards with numpy.savez (uncompressed) so they can be memory-mapped.

Or FlagPerf's (MLPerf's) pretraining shards, masked when they were written:
    <data_dir>/2048_shards_uncompressed/*.hdf5   training shards (or <data_dir>/*.hdf5)
    <data_dir>/eval_set_uncompressed/*.hdf5      held-out shards (or <data_dir>/eval/*.hdf5)
with the datasets of HDF5_DATASETS. Without h5py (a docker runtime's host venv) the check reads each file's
HDF5 signature only; the rank, which has h5py, checks the datasets again before it trains.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from case_runners.cases.npy_header import npz_with

NPZ, HDF5 = ".npz", ".hdf5"
# The folders searched for shards, first match wins: perfplay's, then FlagPerf's (its train_dir and eval_dir).
TRAIN_DIRS = (".", "2048_shards_uncompressed")
EVAL_DIRS = ("eval", "eval_set_uncompressed")
EVAL_HINT = " or ".join(f"{folder}/" for folder in EVAL_DIRS)
# The datasets of an .hdf5 shard (create_pretraining_data.py of MLPerf's BERT), by their shape: "seq" (N, seq_len),
# "pred" (N, max_predictions_per_seq; zero-padded), "one" (N,). The written dtypes are int32 for ids and positions,
# int8 for the masks, segments and labels; any integer type is read.
HDF5_DATASETS = {"input_ids": "seq", "input_mask": "seq", "segment_ids": "seq", "masked_lm_positions": "pred",
                 "masked_lm_ids": "pred", "next_sentence_labels": "one"}
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
NPZ_FORMAT = "*.npz shards with 'input_ids' (N, seq_len) integers and optional 'attention_mask' (N, seq_len)"
HDF5_FORMAT = ("FlagPerf's *.hdf5 shards (2048_shards_uncompressed/, eval_set_uncompressed/) with input_ids, "
               "input_mask, segment_ids (N, seq_len), masked_lm_positions, masked_lm_ids "
               "(N, max_predictions_per_seq) and next_sentence_labels (N,)")
FORMAT = f"{NPZ_FORMAT}, or {HDF5_FORMAT}"
INTEGER_KINDS = ("i", "u", "b")


def _shards(root: Path, folders: tuple[str, ...]) -> list[Path]:
    """The sorted .npz and .hdf5 files of the first of `folders` (under root) that has any."""
    for folder in folders:
        found = sorted(p for suffix in (NPZ, HDF5) for p in (root / folder).glob(f"*{suffix}"))
        if found:
            return found
    return []


def shard_files(data_dir: str) -> tuple[list[Path], list[Path]]:
    """(training shards, eval shards): the eval folder's when present, else the last training shard."""
    root = Path(data_dir)
    train, held_out = _shards(root, TRAIN_DIRS), _shards(root, EVAL_DIRS)
    if not held_out and len(train) > 1:
        train, held_out = train[:-1], train[-1:]
    return train, held_out


def is_hdf5(shards: list[Path]) -> bool:
    """Whether the shards are FlagPerf's .hdf5 (check_data_dir refuses a mix of formats)."""
    return bool(shards) and shards[0].suffix == HDF5


def check_shard(path: Path, seq_len: int) -> list[str]:
    try:
        arrays = npz_with(path, ("input_ids",), NPZ_FORMAT)
    except ValueError as e:
        return [str(e)]
    ids = arrays["input_ids"]
    problems = []
    if len(ids.shape) != 2 or ids.shape[1] != seq_len:
        problems.append(f"{path}: 'input_ids' has shape {ids.shape}; expected (N, {seq_len}) for seq_len {seq_len}")
    if ids.kind not in INTEGER_KINDS:
        problems.append(f"{path}: 'input_ids' has dtype {ids.dtype}; expected integers (int32)")
    mask = arrays.get("attention_mask")
    if mask is not None and mask.shape != ids.shape:
        problems.append(f"{path}: 'attention_mask' has shape {mask.shape}; "
                        f"expected the shape of 'input_ids' {ids.shape}")
    return problems


def has_hdf5_signature(path: Path) -> bool:
    """The HDF5 superblock's signature at 0, 512, 1024, ... (a user block may precede it)."""
    try:
        with open(path, "rb") as f:
            size, offset = path.stat().st_size, 0
            while offset + len(HDF5_SIGNATURE) <= size:
                f.seek(offset)
                if f.read(len(HDF5_SIGNATURE)) == HDF5_SIGNATURE:
                    return True
                offset = offset * 2 or 512
    except OSError:
        return False
    return False


def check_hdf5_shard(path: Path, seq_len: int, max_predictions: int) -> list[str]:
    if not has_hdf5_signature(path):
        return [f"{path}: not an HDF5 file (no HDF5 signature); expected {HDF5_FORMAT}"]
    if importlib.util.find_spec("h5py") is None:
        return []
    import h5py

    expected = {"seq": f"(N, {seq_len}) for seq_len {seq_len}",
                "pred": f"(N, {max_predictions}) for max_predictions_per_seq {max_predictions}", "one": "(N,)"}
    try:
        with h5py.File(path, "r") as f:
            missing = [name for name in HDF5_DATASETS if not isinstance(f.get(name), h5py.Dataset)]
            if missing:
                return [f"{path}: no dataset {', '.join(missing)} (has: {', '.join(sorted(f)) or 'nothing'}); "
                        f"expected {HDF5_FORMAT}"]
            shapes = {name: tuple(f[name].shape) for name in HDF5_DATASETS}
            kinds = {name: f[name].dtype.kind for name in HDF5_DATASETS}
    except OSError as e:
        return [f"{path}: not a readable HDF5 file ({e}); expected {HDF5_FORMAT}"]
    rows = shapes["input_ids"][0] if shapes["input_ids"] else None
    widths = {"seq": seq_len, "pred": max_predictions}
    problems = []
    for name, kind in HDF5_DATASETS.items():
        shape = shapes[name]
        wanted = (rows, widths[kind]) if kind in widths else (rows,)
        if shape != wanted:
            problems.append(f"{path}: '{name}' has shape {shape}; expected {expected[kind]}"
                            + (f", N = {rows} as 'input_ids'" if rows is not None and name != "input_ids" else ""))
        if kinds[name] not in INTEGER_KINDS:
            problems.append(f"{path}: '{name}' has dtype kind '{kinds[name]}'; expected integers")
    return problems


def checkpoint_path(data_dir: str | None, init_checkpoint: str) -> Path:
    path = Path(init_checkpoint)
    return path if path.is_absolute() or not data_dir else Path(data_dir) / path


def check_shards(shards: list[Path], params: dict) -> list[str]:
    """Each shard's problems; a mix of .npz and .hdf5 is one."""
    first_of_each: dict[str, Path] = {}
    for shard in shards:
        first_of_each.setdefault(shard.suffix, shard)
    if len(first_of_each) > 1:
        return [f"the shards mix formats ({', '.join(str(p) for p in first_of_each.values())}); use one: {FORMAT}"]
    seq_len = int(params.get("seq_len", 512))
    problems = []
    for shard in shards:
        problems += (check_hdf5_shard(shard, seq_len, int(params.get("max_predictions_per_seq", 76)))
                     if shard.suffix == HDF5 else check_shard(shard, seq_len))
    return problems


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
                           f"({EVAL_HINT}, or two shards at the top); found {len(train)} and {len(held_out)}; "
                           f"expected {FORMAT}"]
    return problems + check_shards(train + held_out, params)


def check_inference_data_dir(data_dir: str, params: dict) -> list[str]:
    """The inference case's data dir: the held-out shards (of an eval folder, else the last of two or more)."""
    if not Path(data_dir).is_dir():
        return [f"{data_dir}: not a directory; expected {FORMAT}"]
    _, held_out = shard_files(data_dir)
    if not held_out:
        return [f"{data_dir}: no held-out shard to evaluate ({EVAL_HINT}, or the last of "
                f"two or more shards at the top); expected {FORMAT}"]
    return check_shards(held_out, params)
