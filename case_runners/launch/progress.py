"""Where a round stands on a node, from its first rank's events: what a long poll reports while the round runs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from case_runners.driver import events as ev

TAIL_BYTES = 1 << 15  # the last events are enough; the file grows with the round
_RANK_FILE = re.compile(r"rank(\d+)\.events\.jsonl$")


def first_rank_events(log_dir: Path) -> Path | None:
    """The events file of the node's lowest rank, or None before any rank wrote one."""
    found = [(int(m.group(1)), p) for p in log_dir.glob("rank*.events.jsonl") if (m := _RANK_FILE.search(p.name))]
    return min(found)[1] if found else None


def last_events(path: Path, limit: int = TAIL_BYTES) -> list[dict[str, Any]]:
    """The complete events in the last `limit` bytes of an events file, oldest first."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - limit))
            chunk = handle.read()
    except OSError:
        return []
    lines = chunk.decode("utf-8", "replace").splitlines()
    if size > limit:
        lines = lines[1:]  # the first line may be cut
    found = []
    for line in lines:
        try:
            doc = json.loads(line)
        except ValueError:
            continue  # a line being written
        if isinstance(doc, dict) and isinstance(doc.get("value"), dict):
            found.append(doc)
    return found


def progress(log_dir: Path) -> dict[str, Any]:
    """{phase, rank, epoch, step, loss, samples_per_s, metric, inference_step}: what the first rank last said."""
    path = first_rank_events(log_dir)
    state: dict[str, Any] = {"phase": "starting"}
    if path is None:
        return state
    state["rank"] = int(_RANK_FILE.search(path.name).group(1))  # type: ignore[union-attr]
    for doc in last_events(path):
        name, value = doc.get("event"), doc["value"]
        if name in (ev.INIT_START, ev.LAUNCH_TRAINING, ev.LAUNCH_INFERENCE):
            state["phase"] = "initialising"
        elif name in (ev.TRAIN_START, ev.STEP_END, ev.EPOCH_END):
            state["phase"] = "training"
            state.update({k: value[k] for k in ("epoch", "step") if k in value})
            if name == ev.STEP_END:
                state["loss"] = value.get("loss")
                state["samples_per_s"] = value.get("rank_core_samples_per_s")
        elif name == ev.EVALUATE_BEGIN:
            state["phase"] = "evaluating"
        elif name == ev.EVALUATE:
            state["phase"] = "training"
            metric = {k: v for k, v in value.items() if k not in ("epoch", "step", "eval_time")}
            state["metric"] = metric
        elif name == ev.INFERENCE_STEP:
            state["phase"] = "inference"
            state["inference_step"] = f"{value.get('step')} ({value.get('name')}) done"
        elif name in (ev.TRAIN_END, ev.FINISHED):
            state["phase"] = "finishing"
    return state


def describe(state: dict[str, Any]) -> str:
    """One line: 'training: epoch 2, step 120, loss 0.312, 812.4 samples/s (rank 0)'."""
    parts = []
    if state.get("epoch") is not None:
        parts.append(f"epoch {state['epoch']}")
    if state.get("step") is not None:
        parts.append(f"step {state['step']}")
    if isinstance(state.get("loss"), (int, float)):
        parts.append(f"loss {state['loss']:.4g}")
    if isinstance(state.get("samples_per_s"), (int, float)):
        parts.append(f"{state['samples_per_s']:.1f} samples/s")
    metric = state.get("metric") or {}
    parts += [f"{k} {v:.4g}" for k, v in metric.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if state.get("inference_step"):
        parts.append(f"step {state['inference_step']}")
    rank = f" (rank {state['rank']})" if parts and state.get("rank") is not None else ""
    return state["phase"] + (": " + ", ".join(parts) if parts else "") + rank
