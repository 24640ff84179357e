"""The round record: one per case and round, built from what every node of the round left behind.
An inference round (task: inference) has its own metrics (the inference pipeline's four throughputs, both
accuracies), and so has a base round (task: base: its benchmark's measurements, each against the vendor's peak) and a
generate round (task: generate: its combinations' latencies and tokens/s, pooled over the ranks).
Whether the round ran the case's standard workload is copied from the resolved config (plan/config/standard.py).

Rank 0 is authoritative for the metrics; every rank's and node's data is kept alongside.
Each node's throughput is the sum of its ranks' own throughputs (rank_p_train, ... in the rank
results); the record's "throughput" block puts the global figure beside the per-node ones.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

from case_runners.core import files
from case_runners.core.errors import PerfplayError
from case_runners.monitors.summary import summarize_monitor_log
from case_runners.plan.config.benchmarks import BENCHMARKS
from case_runners.records import names
from case_runners.records.environment_build import build_environment
from case_runners.records.generate import combine, headline
from case_runners.records.node import NODE_RESULT, NodeResult
from case_runners.records.rank import RESULT_PATTERN, FlopsCount, OperationRankResult, RankResult, SilentRankResult
from case_runners.records.resolved import ResolvedConfig
from case_runners.records.round import (
    RECORD_NAME,
    BaseRoundRecord,
    DeviceMemory,
    GenerateRoundRecord,
    InferenceRoundRecord,
    InferenceThroughput,
    Mfu,
    NodeEntry,
    OperationRoundRecord,
    RoundRecord,
    TrainingNodeEntry,
    TrainingRoundRecord,
    TrainingThroughput,
)
from case_runners.records.schema import ABSENT, RecordError

FLOPS_CONVENTION = "1 multiply-add = 2 FLOPs; training FLOPs per sample = 3 x forward (forward + backward)"
NO_NODE_RESULT = f"the node's launcher wrote no {NODE_RESULT}"
_NODE_DIR = re.compile(r"^(?P<host>.+)_noderank(?P<node_rank>\d+)$")


def node_dirs(round_dir: Path) -> list[tuple[str, int, Path]]:
    found = []
    for path in sorted(round_dir.iterdir()) if round_dir.is_dir() else []:
        match = _NODE_DIR.match(path.name)
        if path.is_dir() and match:
            found.append((match["host"], int(match["node_rank"]), path))
    return sorted(found, key=lambda item: item[1])


def mfu(metrics: dict[str, Any], config: ResolvedConfig, basis: str = names.MFU_BASIS,
        counted: FlopsCount | None = None) -> Mfu:
    """Model FLOPs utilisation from the throughput `basis`, with the convention and the peak it used; of a case whose
    FLOPs are counted (config.flops_counted), rank 0's count (`counted`) and its convention."""
    peaks = config.vendor_info.hardware.get("peak_flops") or {}
    precision = metrics.get("precision") or "fp32"
    peak = peaks.get(precision)
    devices = config.nnodes * config.nproc
    flops = config.flops_per_sample or 0.0
    convention = FLOPS_CONVENTION if config.flops_convention is ABSENT else config.flops_convention
    note = config.flops_note
    if config.flops_counted is not ABSENT:
        flops = (counted.per_sample or 0.0) if counted else 0.0
        convention = counted.convention if counted else convention
        note = (counted.note if counted else "rank 0 reported no FLOPs count") if not flops else None
    info = Mfu(value=None, basis=basis, flops_per_sample=flops, precision=precision, peak_flops_per_device=peak,
               devices=devices, convention=convention or FLOPS_CONVENTION)
    if peak and flops and metrics.get(basis):
        info.value = metrics[basis] * flops / (peak * devices)
    else:
        info.reason = (f"no peak FLOP/s for {precision} on {config.hardware} (vendor.yaml hardware."
                       f"{config.hardware}.peak_flops)" if not peak
                       else note or f"no {basis} or FLOPs per sample")
    return info


def device_memory(monitors: dict[str, dict[str, Any]], nodes: list[NodeEntry], vendor: str,
                  devices: list[int] | None = None) -> DeviceMemory:
    """Peak device memory used and the total, from node 0's vendor monitor (the cpu vendor's: its ranks' RAM):
    of `devices` (the rank's, in the monitor's numbering) when given, else the node's figure (max over devices)."""
    summary = (monitors.get(nodes[0].dir, {}) if nodes else {}).get(vendor) or {}
    used = [d for d in summary.get("devices") or [] if devices is not None and d.get("index") in devices]
    source = summary if not used else {
        "mem_used_max_bytes": max((d["mem_used_max_bytes"] for d in used if d.get("mem_used_max_bytes") is not None),
                                  default=None),
        "mem_total_bytes": max((d["mem_total_bytes"] for d in used if d.get("mem_total_bytes") is not None),
                               default=None)}
    return DeviceMemory(peak_used_bytes=source.get("mem_used_max_bytes"), total_bytes=source.get("mem_total_bytes"),
                        devices=[d["index"] for d in used] if used else None,
                        source=f"{vendor} monitor of {nodes[0].host}" if summary else None,
                        samples=summary.get("samples", 0))


def node_throughput(node_ranks: list[RankResult], nproc: int) -> dict[str, Any]:
    """A node's samples and throughputs (TrainingNodeEntry's): sums over its ranks of rank_samples and rank_p_*.

    A figure is null (with "throughput_reason") unless all nproc ranks of the node reported it.
    """
    out: dict[str, Any] = {"ranks": len(node_ranks)}
    for key, source in (("samples", "rank_samples"), *((k, f"rank_{k}") for k in names.NODE_THROUGHPUTS)):
        values = [getattr(r, source, None) for r in node_ranks]
        complete = len(values) == nproc and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                for v in values)
        out[key] = sum(values) if complete else None
    basis = names.THROUGHPUT_BASIS
    if out[basis] is None:
        missing = [r.rank for r in node_ranks if not isinstance(getattr(r, f"rank_{basis}", None), (int, float))]
        silent = [r for r in node_ranks if isinstance(r, SilentRankResult)]
        if len(node_ranks) != nproc:
            out["throughput_reason"] = f"{len(node_ranks)} of {nproc} ranks left a result"
        elif silent:  # a vendor stack's log_rank
            out["throughput_reason"] = (f"rank(s) {', '.join(str(r.rank) for r in silent)} do not log the steps (the "
                                        f"stack logs them on rank {silent[0].logged_by}): the round's throughput is "
                                        f"that rank's")
        else:
            out["throughput_reason"] = f"rank(s) {', '.join(map(str, missing))} reported no rank_{basis}"
    return out


def throughput_block(nodes: list[TrainingNodeEntry], metrics: dict[str, Any], unit: str) -> TrainingThroughput:
    """Global throughput (rank 0's, authoritative) beside each node's, keyed by host
    (by node directory where two nodes share a host name); in the case's unit (ResolvedConfig.throughput_unit)."""
    hosts = [n.host for n in nodes]
    labels = [n.host if hosts.count(n.host) == 1 else n.dir for n in nodes]
    return TrainingThroughput(
        basis=names.THROUGHPUT_BASIS, unit=unit, total=metrics.get(names.THROUGHPUT_BASIS),
        per_node={name: getattr(n, names.THROUGHPUT_BASIS) for name, n in zip(labels, nodes)},
        total_p_core=metrics.get(names.MFU_BASIS),
        per_node_p_core={name: getattr(n, names.MFU_BASIS) for name, n in zip(labels, nodes)})


def read_node_result(path: Path) -> tuple[str, str | None, float | None]:
    """(status, reason, duration_s) of a node directory's node result; failed, naming why, without a valid one."""
    if not (path / NODE_RESULT).exists():
        return names.FAILED, NO_NODE_RESULT, None
    try:
        node = NodeResult.load(path / NODE_RESULT)
    except RecordError as exc:
        return names.FAILED, f"the node's {NODE_RESULT} is not valid: {exc}", None
    return node.status, node.reason, node.duration_s


def _rank_results(path: Path) -> tuple[list[RankResult], dict[int, str]]:
    """A node directory's rank results, and why each that is not valid is not (by rank)."""
    results, invalid = [], {}
    for file in sorted(path.glob("rank*.result.json")):
        match = RESULT_PATTERN.match(file.name)
        if match:
            try:
                results.append(RankResult.load(file))
            except RecordError as exc:
                invalid[int(match["rank"])] = str(exc)
    return results, invalid


def build_round_record(round_dir: Path, config: ResolvedConfig, round_no: int, run_id: str | None = None,
                       nodes_elsewhere: list[int] | tuple[int, ...] = ()) -> RoundRecord:
    """The round's record from its node directories. `nodes_elsewhere`: the node ranks whose directories stay on
    their hosts (`case_runners run --nnode` on each host): not counted missing; node 0's launcher, which watched
    them to the end, speaks for them (a node that failed anywhere fails node 0 too)."""
    nodes: list[NodeEntry] = []
    ranks: list[tuple[str, int, RankResult]] = []
    invalid: dict[int, str] = {}
    monitors: dict[str, dict[str, Any]] = {}
    inference = config.task_name == names.INFERENCE  # one rank: no per-node throughputs
    per_node_throughput = config.task_name == names.TRAINING
    for host, node_rank, path in node_dirs(round_dir):
        status, reason, duration_s = read_node_result(path)
        node_ranks, node_invalid = _rank_results(path)
        invalid.update(node_invalid)
        ranks += [(host, node_rank, r) for r in node_ranks]
        entry: dict[str, Any] = dict(host=host, node_rank=node_rank, status=status, reason=reason,
                                     duration_s=duration_s, dir=path.name)
        nodes.append(TrainingNodeEntry(**entry, **node_throughput(node_ranks, config.nproc)) if per_node_throughput
                     else NodeEntry(**entry))
        monitors[path.name] = {log.name.removesuffix("_monitor.jsonl"): summarize_monitor_log(log)
                               for log in sorted(path.glob("*_monitor.jsonl"))}
    ranks.sort(key=lambda item: item[2].rank)
    rank0 = next((r for _, _, r in ranks if r.rank == 0), None)
    reporter = rank0.logged_by if isinstance(rank0, SilentRankResult) else 0  # a vendor stack's log_rank
    if reporter:
        rank0 = next((r for _, _, r in ranks if r.rank == reporter), None)
    elsewhere = sorted(set(nodes_elsewhere) - {n.node_rank for n in nodes})
    status, reason = _status(nodes, rank0, invalid.get(reporter), config.nnodes - len(elsewhere), reporter)
    rank0_doc = rank0.to_json() if rank0 is not None else {}  # JSON values, as a record read from its file has
    metrics = {key: rank0_doc.get(key) for key in names.metric_keys(config.task_name)}
    metrics[names.DEVICE_MEMORY] = device_memory(monitors, nodes, config.vendor,
                                                 getattr(rank0, "monitor_devices", None)).to_json()
    common: dict[str, Any] = dict(
        run_id=run_id or round_dir.parent.parent.name, case_id=config.case_id, case=config.case, vendor=config.vendor,
        hardware=config.hardware, framework=config.framework, nnodes=config.nnodes, nproc=config.nproc,
        framework_version=config.framework_version,
        round=round_no, status=status, reason=reason, task=config.task_name,
        adapted=list(getattr(rank0, "adapted", None) or []),  # trainer points rank 0 ran from the vendor's adapter
        versions=getattr(rank0, "versions", None),  # the software stack of rank 0 (torch, and the vendor hook's)
        environment=build_environment(getattr(rank0, "versions", None), round_dir / nodes[0].dir if nodes else None,
                                      config.vendor, threads=getattr(rank0, "threads", ABSENT)),
        **config.standard_fields(), metrics=metrics,
        per_rank=[{"host": host, "node_rank": node, **r.to_json()} for host, node, r in ranks], monitors=monitors,
        params=config.params, **({"nodes_elsewhere": elsewhere} if elsewhere else {}),
        **({"metrics_rank": reporter} if reporter else {}))
    if config.task_name == names.BASE:  # each measurement has its fraction of peak: no MFU, no throughput
        return BaseRoundRecord(**common, throughput=None, per_node=nodes, mfu=Mfu(
            value=None, basis="fraction_of_peak", flops_per_sample=0.0, precision="-", peak_flops_per_device=None,
            devices=config.nnodes * config.nproc, convention=BENCHMARKS[config.case].convention,
            reason="a base benchmark: each measurement has its fraction_of_peak"))
    if config.task_name == names.GENERATE:
        return generate_record(common, nodes, [r for _, _, r in ranks], config)
    if config.task_name == names.OPERATION:  # each row has its FLOP/s and roofline fraction: no MFU, no throughput
        return OperationRoundRecord(**common, throughput=None, per_node=nodes, mfu=Mfu(
            value=None, basis="roofline_fraction", flops_per_sample=0.0, precision="-", peak_flops_per_device=None,
            devices=config.nnodes * config.nproc, convention=str(config.flops_convention),
            reason="the operation task: each operator row has its roofline_fraction"))
    if inference:  # MFU and throughput on the engine's core throughput, or the framework's without one
        side = "inference" if metrics.get("p_inference_core") is not None or metrics.get("compiler") else "validation"
        basis = f"p_{side}_core"
        return InferenceRoundRecord(
            **common, mfu=mfu(metrics, config, basis), per_node=nodes,
            throughput=InferenceThroughput(basis=basis, unit="items/s", total=metrics.get(basis),
                                           whole=metrics.get(f"p_{side}_whole")))
    training_nodes = [n for n in nodes if isinstance(n, TrainingNodeEntry)]
    counted = getattr(rank0, "flops", ABSENT)
    return TrainingRoundRecord(**common, mfu=mfu(metrics, config, counted=None if counted is ABSENT else counted),
                               per_node=training_nodes,
                               throughput=throughput_block(training_nodes, metrics,
                                                                           config.throughput_unit))


def generate_record(common: dict[str, Any], nodes: list[NodeEntry], ranks: list[RankResult],
                    config: ResolvedConfig) -> GenerateRoundRecord:
    """A generate round: every rank's measurements pooled per combination (records/generate.py) and their headline;
    latencies and tokens/s, no MFU."""
    measured = [r.measurements for r in ranks if hasattr(r, "measurements")]
    combinations = combine(measured) if len(measured) == len(ranks) and ranks else []
    metrics = {**common["metrics"], "combinations": [c.to_json() for c in combinations], **headline(combinations)}
    return GenerateRoundRecord(**{**common, "metrics": metrics}, throughput=None, per_node=nodes, mfu=Mfu(
        value=None, basis="tokens_per_s", flops_per_sample=0.0, precision=str(config.params.get("dtype", "-")),
        peak_flops_per_device=None, devices=config.nnodes * config.nproc, convention=str(config.flops_convention),
        reason="generate: latencies and tokens/s, no MFU"))


def _status(nodes: list[NodeEntry], rank0: RankResult | None, rank0_invalid: str | None,
            expected: int, reporter: int = 0) -> tuple[str, str | None]:
    """The round's (status, reason); `expected`: how many node directories the round should have here; `rank0` the
    result of the rank that reports (`reporter`: 0, or the rank a silent rank 0 names)."""
    if not nodes:
        return names.FAILED, "no node of this round left any output"
    for wanted in (names.TIMEOUT, names.INTERRUPTED, names.FAILED):
        bad = [n for n in nodes if n.status == wanted]
        if bad:
            return (names.FAILED if wanted == names.INTERRUPTED else wanted), \
                f"{bad[0].host} (node {bad[0].node_rank}): {bad[0].reason}"
    if len(nodes) < expected:
        return names.FAILED, f"only {len(nodes)} of {expected} nodes left output"
    if rank0 is None:
        return names.FAILED, f"rank {reporter}'s result is not valid: {rank0_invalid}" if rank0_invalid else \
            f"rank {reporter} wrote no result" + (" (the rank whose log carries the steps)" if reporter else "")
    if isinstance(rank0, OperationRankResult) and rank0.incorrect:  # a valid run whose operators are not all correct
        return names.NOT_CONVERGED, f"not correct: {', '.join(rank0.incorrect)}"
    if rank0.status == names.NOT_CONVERGED:
        return names.NOT_CONVERGED, (f"{getattr(rank0, 'metric', None)} {getattr(rank0, 'final_metric', None)} did "
                                     f"not reach {getattr(rank0, 'target', None)} "
                                     f"(stopped: {getattr(rank0, 'stop_reason', None)})")
    if rank0.status != names.SUCCESS:
        return names.FAILED, getattr(rank0, "reason", None) or f"rank {reporter} status {rank0.status}"
    return names.SUCCESS, None


def write_round_record(round_dir: Path, config: ResolvedConfig, round_no: int, run_id: str | None = None,
                       errors: list[str] | tuple[str, ...] = (),
                       nodes_elsewhere: list[int] | tuple[int, ...] = ()) -> RoundRecord:
    """Build the record (build_round_record), fail it for the `errors` the orchestration met in the round (a host
    that failed a task), and write it as round_record.json. A record that cannot be written is returned failed, naming
    why, and not raised: one round's lost record never costs the run."""
    record = build_round_record(round_dir, config, round_no, run_id, nodes_elsewhere)
    if errors:
        record.orchestration_errors = list(errors)
        said = "; ".join(errors)
        if record.status in names.VALID_STATUSES:
            record.status, record.reason = names.FAILED, said
        elif not record.per_node or any(n.reason == NO_NODE_RESULT for n in record.per_node):
            record.reason = f"{record.reason}; {said}"  # what the launcher could not write, Ansible heard
    try:
        files.secure_dir(round_dir)
        files.atomic_write_json(round_dir / RECORD_NAME, record.to_json())
    except PerfplayError as exc:
        return dataclasses.replace(record, status=names.FAILED, write_error=str(exc),
                                   reason=f"the round record could not be written: {exc}")
    return record


def compact_record(record: RoundRecord, errors: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """The few fields of a round record a dashboard or a downstream AWX node needs (the play publishes it with
    set_stats as perfplay_rounds): which round, its status, whether it was standard, its main figures, MFU and the
    orchestration's errors."""
    compact: dict[str, Any] = {"case_id": record.case_id, "round": record.round, "status": record.status,
                               "reason": record.reason, **record.standard_fields()}
    shown: tuple[str, ...] = names.COMPACT_TRAINING
    if record.task == names.INFERENCE:
        compact["task"], shown = names.INFERENCE, names.COMPACT_INFERENCE
    if record.task == names.BASE:
        compact["task"], shown = names.BASE, names.COMPACT_BASE
    if record.task == names.GENERATE:
        compact["task"], shown = names.GENERATE, names.COMPACT_GENERATE
    if record.task == names.OPERATION:
        compact["task"], shown = names.OPERATION, names.COMPACT_OPERATION
    compact.update((key, record.metrics.get(key)) for key in shown)
    compact["mfu"] = record.mfu.value
    compact["errors"] = list(errors)
    return compact
