"""Valid perfplay documents for tests: resolved by the plan or built from the record classes (case_runners/records),
never written by hand, so a test's document is always one perfplay could have written."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from case_runners.plan.run_plan import make_plan
from case_runners.records.node import NODE_RESULT, NodeResult, RankExit
from case_runners.records.rank import InferenceRankResult, TrainingRankResult, result_name
from case_runners.records.resolved import ResolvedConfig
from case_runners.records.round import TrainingRoundRecord


def resolved(case: str = "digits_cnn", vendor: str = "cpu", *, selection: dict[str, Any] | None = None,
             overrides: dict[str, Any] | None = None, params: dict[str, Any] | None = None,
             **fields: Any) -> dict[str, Any]:
    """The resolved config (JSON) of a selection the vendor has a config for (`selection`: its hardware, nnodes,
    nproc, ...; `overrides`: its run overrides), then with `params` set in its params whatever the case allows (as a
    test's rank needs them) and `fields` replaced (nnodes, nproc and case_id of a layout without a vendor file)."""
    request = {"case": case, "overrides": overrides or {}, **(selection or {})}
    plan = make_plan({"vendor": vendor, "cases": [request]}, check=True)
    assert plan["ok"], plan["errors"]
    config = copy.deepcopy(plan["cases"][0])
    config["params"].update(params or {})
    config.update(fields)
    return ResolvedConfig.from_json(config).to_json()


def write_resolved(path: Path, config: dict[str, Any]) -> Path:
    path.write_text(json.dumps(config))
    return path


def rank_result(rank: int = 0, world_size: int = 1, status: str = "success", **fields: Any) -> dict[str, Any]:
    """A training rank's result (JSON): plausible figures, with `fields` replaced."""
    doc = TrainingRankResult(
        rank=rank, world_size=world_size, status=status, stop_reason="target_reached", converged=status == "success",
        metric="acc1", final_metric=76.0, target=75.5, samples=1000, steps=10, epochs=1, init_time=5.0,
        train_time=1.2, train_no_eval_time=1.1, core_time=1.0, eval_time=0.1, p_whole=900.0, p_train=950.0,
        p_core=1000.0, rank_samples=1000 // world_size, rank_core_time=1.0, rank_p_whole=900.0 / world_size,
        rank_p_train=950.0 / world_size, rank_p_core=1000.0 / world_size, device="cpu", amp=False, precision="fp32",
        peak_memory_bytes=None, metrics_history=[], adapted=[], adapter=None, optimizer="SGD",
        standard_optimizer="SGD", versions={"torch": "test"}, e2e_time=100.0).to_json()
    doc.update(fields)
    return doc


def inference_rank_result(**fields: Any) -> dict[str, Any]:
    """An inference rank's result (JSON): plausible figures, with `fields` replaced."""
    doc = InferenceRankResult(
        rank=0, world_size=1, status="success", task="inference", device="cpu", steps=list("abcdefg"),
        compiler="onnxruntime", precision="fp32", batch_size=64, p_validation_whole=100.0, p_validation_core=200.0,
        p_inference_whole=300.0, p_inference_core=400.0, validation_items=1000, inference_items=1000,
        validation_accuracy=0.98, inference_accuracy=0.97, agreement=0.99, foo_time_s=0.0, compile_s=1.0,
        onnx_path="model.onnx", pipeline_time_s=8.0, flops_per_item=1.0, flops_per_s=400.0,
        compiled_path="model.ort.onnx", monitor_devices=None, torch_peak_memory_bytes=None,
        versions={"torch": "test"}, e2e_time=9.0).to_json()
    doc.update(fields)
    return doc


def node_result(host: str = "gpu1", node_rank: int = 0, status: str = "success", reason: str | None = None,
                ranks: tuple[int, ...] | range = (0,), **fields: Any) -> dict[str, Any]:
    """A node's result (JSON), its ranks having exited 0 (or 1, on a failed node)."""
    exits = {str(r): RankExit(exit_code=0 if status == "success" else 1, log=f"rank{r}.out.log") for r in ranks}
    doc = NodeResult(host=host, node_name=host, hostname=host, node_rank=node_rank, run_id="run1", status=status,
                     reason=reason, duration_s=1.0, master="10.0.0.1:29500", torch_port=29501, nic=None,
                     ranks=exits).to_json()
    doc.update(fields)
    return doc


def write_node(node_dir: Path, node: dict[str, Any], ranks: list[dict[str, Any]]) -> Path:
    """A node directory holding `node` as its node result and `ranks` as its rank results."""
    node_dir.mkdir(parents=True, exist_ok=True)
    (node_dir / NODE_RESULT).write_text(json.dumps(node))
    for rank in ranks:
        (node_dir / result_name(rank["rank"])).write_text(json.dumps(rank))
    return node_dir


def round_record(config: dict[str, Any], round_no: int = 1, status: str = "success", reason: str | None = None,
                 metrics: dict[str, Any] | None = None, mfu: float | None = None, **fields: Any) -> dict[str, Any]:
    """A training round record (JSON) of `config`, rank 0's metrics being rank_result()'s with `metrics` replaced."""
    rank0 = rank_result(world_size=config["nnodes"] * config["nproc"])
    values = {key: rank0.get(key) for key in ("p_whole", "p_train", "p_core", "init_time", "e2e_time", "train_time",
                                              "train_no_eval_time", "core_time", "converged", "final_metric",
                                              "target", "metric", "samples", "steps", "epochs", "stop_reason",
                                              "precision", "amp", "device", "peak_memory_bytes")}
    values.update(metrics or {})
    values["device_memory"] = {"peak_used_bytes": None, "total_bytes": None, "devices": None, "source": None,
                               "samples": 0}
    doc = TrainingRoundRecord.from_json({
        "schema": TrainingRoundRecord.SCHEMA, "run_id": "run1", "case_id": config["case_id"], "case": config["case"],
        "vendor": config["vendor"], "hardware": config["hardware"], "framework": config["framework"],
        "nnodes": config["nnodes"], "nproc": config["nproc"], "round": round_no, "status": status, "reason": reason,
        "task": "training", "adapted": [], "versions": None, "standard": True, "non_standard": [],
        "metrics": values,
        "mfu": {"value": mfu, "basis": "p_core", "flops_per_sample": 1.0, "precision": "fp32",
                "peak_flops_per_device": None, "devices": config["nnodes"] * config["nproc"], "convention": "test"},
        "throughput": {"basis": "p_train", "unit": "samples/s", "total": values["p_train"], "per_node": {},
                       "total_p_core": values["p_core"], "per_node_p_core": {}},
        "per_node": [], "per_rank": [], "monitors": {}, "params": config["params"]}).to_json()
    doc.update(fields)
    return doc
