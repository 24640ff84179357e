"""The round record: one per case and round, built from what every node of the round left behind.
An inference round (task: inference) has its own metrics (the inference pipeline's four throughputs, both
accuracies).
Whether the round ran the case's standard workload is copied from the resolved config (config/standard.py).

Rank 0 is authoritative for the metrics; every rank's and node's data is kept alongside.
Each node's throughput is the sum of its ranks' own throughputs (rank_p_train, ... in the rank
results); the record's "throughput" block puts the global figure beside the per-node ones.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from case_runners import files
from case_runners.config.standard import NON_STANDARD, STANDARD, read_standard
from case_runners.errors import PerfplayError
from case_runners.monitors.summary import summarize_monitor_log
from case_runners.records import names

ROUND_SCHEMA = "perfplay.round_record/1"
RECORD_NAME = "result.json"
FLOPS_CONVENTION = "1 multiply-add = 2 FLOPs; training FLOPs per sample = 3 x forward (forward + backward)"
NO_NODE_RESULT = "the node's launcher wrote no node_result.json"
_NODE_DIR = re.compile(r"^(?P<host>.+)_noderank(?P<node_rank>\d+)$")
_RANK_RESULT = re.compile(r"^rank(?P<rank>\d+)\.result\.json$")


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def node_dirs(round_dir: Path) -> list[tuple[str, int, Path]]:
    found = []
    for path in sorted(round_dir.iterdir()) if round_dir.is_dir() else []:
        match = _NODE_DIR.match(path.name)
        if path.is_dir() and match:
            found.append((match["host"], int(match["node_rank"]), path))
    return sorted(found, key=lambda item: item[1])


def mfu(metrics: dict[str, Any], config: dict[str, Any], basis: str = names.MFU_BASIS) -> dict[str, Any]:
    """Model FLOPs utilisation from the throughput `basis`, with the convention and the peak it used."""
    peaks = config["vendor_info"]["hardware"].get("peak_flops") or {}
    precision = metrics.get("precision") or "fp32"
    peak = peaks.get(precision)
    devices = config["nnodes"] * config["nproc"]
    flops = config.get("flops_per_sample") or 0.0
    info = {"value": None, "basis": basis, "flops_per_sample": flops, "precision": precision,
            "peak_flops_per_device": peak, "devices": devices,
            "convention": config.get("flops_convention") or FLOPS_CONVENTION}
    if peak and flops and metrics.get(basis):
        info["value"] = metrics[basis] * flops / (peak * devices)
    else:
        info["reason"] = (f"no peak FLOP/s for {precision} on {config['hardware']} (vendor.yaml hardware."
                          f"{config['hardware']}.peak_flops)" if not peak
                          else config.get("flops_note") or f"no {basis} or FLOPs per sample")
    return info


def device_memory(monitors: dict[str, dict[str, Any]], nodes: list[dict[str, Any]], vendor: str,
                  devices: list[int] | None = None) -> dict[str, Any]:
    """Peak device memory used and the total, from node 0's vendor monitor (the cpu vendor's: the host's RAM):
    of `devices` (the rank's, in the monitor's numbering) when given, else the node's figure (max over devices)."""
    summary = (monitors.get(nodes[0]["dir"], {}) if nodes else {}).get(vendor) or {}
    used = [d for d in summary.get("devices") or [] if devices is not None and d.get("index") in devices]
    source = summary if not used else {
        "mem_used_max_bytes": max((d["mem_used_max_bytes"] for d in used if d.get("mem_used_max_bytes") is not None),
                                  default=None),
        "mem_total_bytes": max((d["mem_total_bytes"] for d in used if d.get("mem_total_bytes") is not None),
                               default=None)}
    return {"peak_used_bytes": source.get("mem_used_max_bytes"), "total_bytes": source.get("mem_total_bytes"),
            "devices": [d["index"] for d in used] if used else None,
            "source": f"{vendor} monitor of {nodes[0]['host']}" if summary else None,
            "samples": summary.get("samples", 0)}


def node_throughput(node_ranks: list[dict[str, Any]], nproc: int) -> dict[str, Any]:
    """A node's samples and throughputs: sums over its ranks of rank_samples and rank_p_*.

    A figure is null (with "throughput_reason") unless all nproc ranks of the node reported it.
    """
    out: dict[str, Any] = {"ranks": len(node_ranks)}
    for key, source in (("samples", "rank_samples"), *((k, f"rank_{k}") for k in names.NODE_THROUGHPUTS)):
        values = [r.get(source) for r in node_ranks]
        complete = len(values) == nproc and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                for v in values)
        out[key] = sum(values) if complete else None
    basis = names.THROUGHPUT_BASIS
    if out[basis] is None:
        missing = [r.get("rank") for r in node_ranks if not isinstance(r.get(f"rank_{basis}"), (int, float))]
        out["throughput_reason"] = (f"{len(node_ranks)} of {nproc} ranks left a result" if len(node_ranks) != nproc
                                    else f"rank(s) {', '.join(map(str, missing))} reported no rank_{basis}")
    return out


def throughput_block(nodes: list[dict[str, Any]], metrics: dict[str, Any]) -> dict[str, Any]:
    """Global throughput (rank 0's, authoritative) beside each node's, keyed by host
    (by node directory where two nodes share a host name)."""
    hosts = [n["host"] for n in nodes]
    labels = [n["host"] if hosts.count(n["host"]) == 1 else n["dir"] for n in nodes]
    return {"basis": names.THROUGHPUT_BASIS, "unit": "samples/s",
            "total": metrics.get(names.THROUGHPUT_BASIS),
            "per_node": {name: n.get(names.THROUGHPUT_BASIS) for name, n in zip(labels, nodes)},
            "total_p_core": metrics.get(names.MFU_BASIS),
            "per_node_p_core": {name: n.get(names.MFU_BASIS) for name, n in zip(labels, nodes)}}


def build_round_record(round_dir: Path, config: dict[str, Any], round_no: int,
                       run_id: str | None = None) -> dict[str, Any]:
    nodes, ranks, monitors = [], [], {}
    inference = config.get("task") == names.INFERENCE  # one rank: no per-node throughputs
    for host, node_rank, path in node_dirs(round_dir):
        node = _read_json(path / "node_result.json") or {
            "status": names.FAILED, "reason": NO_NODE_RESULT}
        node_ranks = []
        for file in sorted(path.glob("rank*.result.json")):
            rank_result = _read_json(file)
            if rank_result is not None and _RANK_RESULT.match(file.name):
                node_ranks.append({"host": host, "node_rank": node_rank, **rank_result})
        ranks += node_ranks
        nodes.append({"host": host, "node_rank": node_rank, "status": node.get("status"),
                      "reason": node.get("reason"), "duration_s": node.get("duration_s"), "dir": path.name,
                      **({} if inference else node_throughput(node_ranks, config["nproc"]))})
        monitors[path.name] = {log.name.removesuffix("_monitor.jsonl"): summarize_monitor_log(log)
                               for log in sorted(path.glob("*_monitor.jsonl"))}
    ranks.sort(key=lambda r: r.get("rank", 0))
    status, reason = _status(nodes, ranks, config)
    rank0 = next((r for r in ranks if r.get("rank") == 0), {})
    metrics = {key: rank0.get(key) for key in names.metric_keys(config.get("task"))}
    metrics[names.DEVICE_MEMORY] = device_memory(monitors, nodes, config["vendor"], rank0.get("monitor_devices"))
    record = {
        "schema": ROUND_SCHEMA,
        "run_id": run_id or round_dir.parent.parent.name,
        "case_id": config["case_id"],
        "case": config["case"],
        "vendor": config["vendor"],
        "hardware": config["hardware"],
        "framework": config.get("framework"),
        "nnodes": config["nnodes"],
        "nproc": config["nproc"],
        "round": round_no,
        "status": status,
        "reason": reason,
        "task": config.get("task", names.TRAINING),
        "adapted": rank0.get("adapted") or [],  # trainer points rank 0 ran from the vendor's extern/ adapter
        "versions": rank0.get("versions"),  # the software stack of rank 0 (torch, and the vendor hook's)
        **read_standard(config),
        "metrics": metrics,
        **(_inference_blocks(metrics, config) if inference else
           {"mfu": mfu(metrics, config), "throughput": throughput_block(nodes, metrics)}),
        "per_node": nodes,
        "per_rank": ranks,
        "monitors": monitors,
        "params": config["params"],
    }
    return record


def _inference_blocks(metrics: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """MFU and throughput of an inference round: the engine's core throughput, or the framework's without one."""
    path = "inference" if metrics.get("p_inference_core") is not None or metrics.get("compiler") else "validation"
    return {"mfu": mfu(metrics, config, f"p_{path}_core"),
            "throughput": {"basis": f"p_{path}_core", "unit": "items/s", "total": metrics.get(f"p_{path}_core"),
                           "whole": metrics.get(f"p_{path}_whole")}}


def _status(nodes: list[dict], ranks: list[dict], config: dict) -> tuple[str, str | None]:
    expected = config["nnodes"]
    if not nodes:
        return names.FAILED, "no node of this round left any output"
    for wanted in (names.TIMEOUT, names.INTERRUPTED, names.FAILED):
        bad = [n for n in nodes if n["status"] == wanted]
        if bad:
            return (names.FAILED if wanted == names.INTERRUPTED else wanted), \
                f"{bad[0]['host']} (node {bad[0]['node_rank']}): {bad[0]['reason']}"
    if len(nodes) < expected:
        return names.FAILED, f"only {len(nodes)} of {expected} nodes left output"
    rank0 = next((r for r in ranks if r.get("rank") == 0), None)
    if rank0 is None:
        return names.FAILED, "rank 0 wrote no result"
    if rank0.get("status") == names.NOT_CONVERGED:
        return names.NOT_CONVERGED, (f"{rank0.get('metric')} {rank0.get('final_metric')} did not reach "
                                 f"{rank0.get('target')} (stopped: {rank0.get('stop_reason')})")
    if rank0.get("status") != names.SUCCESS:
        return names.FAILED, rank0.get("reason") or f"rank 0 status {rank0.get('status')}"
    return names.SUCCESS, None


def write_round_record(round_dir: Path, config: dict[str, Any], round_no: int, run_id: str | None = None,
                       errors: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """Build the record, fail it for the `errors` the orchestration met in the round (a host that failed a task),
    and write it as result.json. A record that cannot be written is returned failed, naming why, and not raised:
    one round's lost record never costs the run."""
    record = build_round_record(round_dir, config, round_no, run_id)
    if errors:
        record["orchestration_errors"] = list(errors)
        said = "; ".join(errors)
        if record["status"] in names.VALID_STATUSES:
            record.update(status=names.FAILED, reason=said)
        elif not record["per_node"] or any(n["reason"] == NO_NODE_RESULT for n in record["per_node"]):
            record["reason"] = f"{record['reason']}; {said}"  # what the launcher could not write, Ansible heard
    try:
        files.secure_dir(round_dir)
        files.atomic_write_json(round_dir / RECORD_NAME, record)
    except PerfplayError as exc:
        record.update(status=names.FAILED, reason=f"the round record could not be written: {exc}",
                      write_error=str(exc))
    return record


def compact_record(record: dict[str, Any], errors: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """The few fields of a round record a dashboard or a downstream AWX node needs (the play publishes it with
    set_stats as perfplay_rounds): which round, its status, whether it was standard, its main figures, MFU and the
    orchestration's errors."""
    metrics = record.get("metrics") or {}
    fields = read_standard(record)
    compact = {"case_id": record.get("case_id"), "round": record.get("round"), "status": record.get("status"),
               "reason": record.get("reason"), STANDARD: fields[STANDARD], NON_STANDARD: fields[NON_STANDARD]}
    shown = names.COMPACT_TRAINING
    if record.get("task") == names.INFERENCE:
        compact["task"], shown = names.INFERENCE, names.COMPACT_INFERENCE
    compact.update((key, metrics.get(key)) for key in shown)
    compact["mfu"] = (record.get("mfu") or {}).get("value")
    compact["errors"] = list(errors)
    return compact
