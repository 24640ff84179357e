"""Where a round stands on a node, from its first rank's events: what a long poll reports while the round runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from case_runners.rank.driver import events as ev

TAIL_BYTES = 1 << 15  # the last events are enough; the file grows with the round


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
    found = ev.events_files(log_dir)
    state: dict[str, Any] = {"phase": "starting"}
    if not found:
        return state
    state["rank"] = min(found)  # the node's first rank
    for doc in last_events(found[state["rank"]]):
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
        elif name in (ev.INFERENCE_STEP_BEGIN, ev.INFERENCE_STEP):  # the step running, or the last one done
            state["phase"] = "inference"
            said = "running" if name == ev.INFERENCE_STEP_BEGIN else "done"
            state["inference_step"] = f"{value.get('step')} ({value.get('name')}) {said}"
        elif name == ev.BASE_MEASUREMENT:
            state["phase"] = "measuring"
            state["measured"] = f"{value.get('benchmark')} {value.get('kind')} {value.get('size')}"
        elif name == ev.GENERATE_MEASUREMENT:
            state["phase"] = "generating"
            state["measured"] = f"batch {value.get('batch')} prompt {value.get('prompt_len')} output " \
                                f"{value.get('output_len')}"
        elif name == ev.OPERATION_MEASUREMENT:
            state["phase"] = "measuring"
            state["measured"] = f"{value.get('op')} {value.get('dtype')} {value.get('oplib')}"
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
    if state.get("measured"):
        parts.append(f"{state['measured']} done")
    rank = f" (rank {state['rank']})" if parts and state.get("rank") is not None else ""
    return state["phase"] + (": " + ", ".join(parts) if parts else "") + rank
