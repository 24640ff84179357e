"""Training FLOPs per sample counted at the run's shape (a case's config.yaml `flops_per_sample: counted`).

After training (no timed step is touched), rank 0 builds the case's model again on the meta device (shapes, no
memory, no arithmetic) and runs the case's train_step once on a meta copy of the first batch it trained on, under
torch's FlopCounterMode; training FLOPs per sample = 3 x that forward's FLOPs / the samples of the batch.

The figure is cached per shape in a small JSON file ($PERFPLAY_FLOPS_CACHE_FILE, else FLOPS_CACHE_FILE in this
Python's venv, as the host's runtime probe is: core/paths.py), keyed by the case, the params its shape depends on
(flops_depend_on), a digest of the case's sources (its package, its base classes' modules) and the versions of torch
and transformers.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode

from case_runners.core import files
from case_runners.core.errors import PerfplayError
from case_runners.core.paths import FLOPS_CACHE_ENV, FLOPS_CACHE_FILE
from case_runners.records.rank import FlopsCount
from case_runners.tasks.training.case_api import TrainingCase

CONVENTION = ("counted by torch.utils.flop_counter.FlopCounterMode on one forward at the run's shape (1 multiply-add "
              "= 2 FLOPs; matmuls, convolutions and attention); training FLOPs per sample = 3 x forward "
              "(forward + backward)")


def meta_like(batch: Any) -> Any:
    """The batch with each tensor replaced by an empty one of its shape and dtype on the meta device."""
    if isinstance(batch, torch.Tensor):
        return torch.empty_like(batch, device="meta")
    if isinstance(batch, dict):
        return {k: meta_like(v) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(meta_like(v) for v in batch)
    return batch


def count_per_sample(case: TrainingCase, batch: Any) -> float:
    """Training FLOPs per sample of the case's standard model and train_step on `batch` (meta_like's)."""
    with torch.random.fork_rng(devices=[]), torch.device("meta"):
        model = case.build_model()
    with FlopCounterMode(display=False) as counter:
        _, samples = case.train_step(model, batch)
    if not samples:
        raise ValueError("train_step counted no samples in the batch")
    return 3.0 * counter.get_total_flops() / samples


def cache_file() -> Path | None:
    """$PERFPLAY_FLOPS_CACHE_FILE, else FLOPS_CACHE_FILE in this Python's venv; None (count every time) outside a
    venv."""
    if os.environ.get(FLOPS_CACHE_ENV):
        return Path(os.environ[FLOPS_CACHE_ENV])
    return Path(sys.prefix) / FLOPS_CACHE_FILE if sys.prefix != sys.base_prefix else None


def case_sources(case: TrainingCase) -> list[Path]:
    """The sources the case's model and step come from: its package's, and the modules of the classes it derives
    from (a shared base such as cases/imagenet's classifier)."""
    package = Path(str(sys.modules[type(case).__module__].__file__)).parent
    bases = {Path(str(sys.modules[cls.__module__].__file__)) for cls in type(case).__mro__
             if cls.__module__.startswith("case_runners.")}
    return sorted({*package.rglob("*.py"), *bases})


def cache_key(case_name: str, case: TrainingCase, params: dict[str, Any], depend_on: list[str]) -> str:
    """A digest of what the count depends on: the case, its shape params, its sources, and the versions of torch and
    of the model library it built on (transformers, when imported)."""
    versions = {name: str(getattr(sys.modules[name], "__version__", "")) for name in ("torch", "transformers")
                if name in sys.modules}
    parts = [case_name, json.dumps({k: params.get(k) for k in sorted(depend_on)}, sort_keys=True),
             json.dumps(versions, sort_keys=True),
             *(f"{path}\0{path.read_text(encoding='utf-8')}" for path in case_sources(case))]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _cached(path: Path | None) -> dict[str, Any]:
    try:
        entries = json.loads(files.read_text_nofollow(path, limit=1 << 20)) if path else {}
    except (OSError, ValueError):
        return {}  # none yet, or unreadable: count
    return entries if isinstance(entries, dict) else {}


def flops_count(case_name: str, case: TrainingCase, params: dict[str, Any], depend_on: list[str],
                batch: Any) -> FlopsCount:
    """The case's training FLOPs per sample at this run's shape: from the cache, else counted on `batch` (the first
    batch the trainer saw, meta_like) and remembered. A count that fails gives a null figure with its reason."""
    if batch is None:
        return FlopsCount(per_sample=None, convention=CONVENTION, cached=False, note="no batch was trained on")
    path, key = cache_file(), cache_key(case_name, case, params, depend_on)
    entries = _cached(path)
    known = entries.get(key)
    if isinstance(known, dict) and isinstance(known.get("per_sample"), (int, float)):
        return FlopsCount(per_sample=float(known["per_sample"]), convention=CONVENTION, cached=True, note=None)
    try:
        per_sample = count_per_sample(case, batch)
    except Exception as exc:  # noqa: BLE001 - any failure of the case's code on meta tensors: no MFU, the round stands
        return FlopsCount(per_sample=None, convention=CONVENTION, cached=False,
                          note=f"counting the FLOPs on the meta device failed: {type(exc).__name__}: {exc}")
    if path is not None:
        entries[key] = {"case": case_name, "params": {k: params.get(k) for k in sorted(depend_on)},
                        "torch": torch.__version__, "per_sample": per_sample}
        try:
            files.atomic_write_json(path, entries)
        except (OSError, PerfplayError):
            pass  # a venv this user cannot write in: the next run counts again
    return FlopsCount(per_sample=per_sample, convention=CONVENTION, cached=False, note=None)
