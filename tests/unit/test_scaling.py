"""Per-rank, per-node and total throughput, and the scaling table, from round directories on disk.

The rounds are laid out as a run leaves them (<run>/<case_id>/round<N>/<host>_noderank<X>/ with
node_result.json and rank<R>.result.json); the last tests train for real and check the trainer writes
the per-rank fields these rank results assume.
"""

import html
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from case_runners.rank.worker import main as worker_main
from case_runners.records.resolved import ResolvedConfig
from case_runners.records.round_build import build_round_record, write_round_record
from case_runners.records.summary_build import summarize_run
from case_runners.views.report.data import read_run
from case_runners.views.report.sections import render_report
from case_runners.views.summary.files import write_run_summary
from case_runners.views.summary.markdown import render_markdown
from case_runners.views.summary.text import render_table
from process_helpers import communicate_or_kill
from record_helpers import node_result, rank_result, resolved, write_node, write_resolved

REPO = Path(__file__).resolve().parents[2]
DIST_ENV = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT")
RANK_SAMPLES = 1000  # each rank's own samples in these fixtures


def cpu_config(nnodes, nproc, **fields):
    """The resolved config of digits_cnn on the cpu vendor; 2x2 is derived from 1x2 (no vendor file)."""
    fields = {"nnodes": nnodes, "nproc": nproc, "case_id": f"digits_cnn_CPUx{nnodes}x{nproc}", **fields}
    return ResolvedConfig.from_json(resolved(selection={"nproc": 1 if nproc == 1 else 2}, **fields))


def trainer_rank_result(rank, world_size, rank_rate, global_rate, status="success"):
    """A rank result with the arithmetic of Trainer.run + worker.main (times in s, throughputs in samples/s): p_*
    global, rank_p_* this rank's own samples over its own times."""
    train_no_eval = RANK_SAMPLES / rank_rate
    eval_time, core_time = 0.5, 0.8 * train_no_eval
    train_time = train_no_eval + eval_time
    global_samples = RANK_SAMPLES * world_size
    return rank_result(rank, world_size, status, stop_reason="target_reached" if status == "success" else "max_epochs",
                       metric="accuracy", final_metric=0.96, target=0.95, samples=global_samples, steps=40, epochs=2,
                       init_time=0.3, train_time=train_time, train_no_eval_time=train_no_eval, core_time=core_time,
                       eval_time=eval_time, p_whole=global_samples / train_time, p_train=global_rate,
                       p_core=global_rate / 0.8, rank_samples=RANK_SAMPLES, rank_core_time=core_time,
                       rank_p_whole=RANK_SAMPLES / train_time, rank_p_train=rank_rate, rank_p_core=rank_rate / 0.8,
                       peak_memory_bytes=1 << 28, threads={"intra_op": 1, "omp_num_threads": "1"},
                       e2e_time=train_time + 1.0)


def write_round(run_dir, config, round_no, rank_rates, global_rate=None, failed_node=None, status="success"):
    """One round of `config` on disk: rank_rates[node][local rank] = that rank's own p_train.

    global_rate defaults to the sum of all rank rates (rank 0's p_train). failed_node: that node's
    launcher reports a failure and leaves no rank result.
    """
    world = config.nnodes * config.nproc
    global_rate = sum(map(sum, rank_rates)) if global_rate is None else global_rate
    round_dir = run_dir / config.case_id / f"round{round_no}"
    for node_rank, rates in enumerate(rank_rates):
        failed = node_rank == failed_node
        ranks = [node_rank * config.nproc + local_rank for local_rank in range(len(rates))]
        write_node(round_dir / f"host{node_rank + 1}_noderank{node_rank}",
                   node_result(f"host{node_rank + 1}", node_rank, "failed" if failed else "success",
                               f"rank {ranks[0]} exited with code 1" if failed else None, ranks=ranks, duration_s=5.0),
                   [] if failed else [trainer_rank_result(rank, world, rate, global_rate, status)
                                      for rank, rate in zip(ranks, rates)])
    return write_round_record(round_dir, config, round_no, run_dir.name)


@pytest.fixture
def scaling_run(tmp_path):
    """digits_cnn at 1x1, 1x2 and 2x2, two valid rounds each, plus a failed 2x2 round."""
    run_dir = tmp_path / "run20260101000000"
    c11, c12, c22 = cpu_config(1, 1), cpu_config(1, 2), cpu_config(2, 2)
    write_round(run_dir, c11, 1, [[13900.0]])
    write_round(run_dir, c11, 2, [[14100.0]])
    write_round(run_dir, c12, 1, [[9900.0, 10000.0]])
    write_round(run_dir, c12, 2, [[10100.0, 10000.0]], status="not_converged")  # valid, counts
    write_round(run_dir, c22, 1, [[8200.0, 8300.0], [8250.0, 8250.0]])
    write_round(run_dir, c22, 2, [[8300.0, 8300.0], [8200.0, 8200.0]])
    # A failed round with a wild throughput on rank 0: must not count anywhere.
    write_round(run_dir, c22, 3, [[90000.0, 90000.0], [90000.0, 90000.0]], failed_node=1)
    return run_dir


def test_round_record_has_per_node_sums_and_the_global_total(scaling_run):
    record = json.loads((scaling_run / "digits_cnn_CPUx2x2" / "round1" / "round_record.json").read_text())
    assert record["schema"] == "perfplay.round_record/1" and record["status"] == "success"
    assert record["framework"] == "pytorch"
    node0, node1 = record["per_node"]
    assert (node0["host"], node0["ranks"], node0["samples"]) == ("host1", 2, 2 * RANK_SAMPLES)
    assert node0["p_train"] == pytest.approx(16500.0) and node1["p_train"] == pytest.approx(16500.0)
    assert node0["p_core"] == pytest.approx(16500.0 / 0.8)
    assert node0["p_whole"] == pytest.approx(sum(RANK_SAMPLES / (RANK_SAMPLES / r + 0.5) for r in (8200, 8300)))
    assert record["throughput"] == {
        "basis": "p_train", "unit": "samples/s", "total": 33000.0,
        "per_node": {"host1": pytest.approx(16500.0), "host2": pytest.approx(16500.0)},
        "total_p_core": pytest.approx(33000.0 / 0.8),
        "per_node_p_core": {"host1": pytest.approx(16500.0 / 0.8), "host2": pytest.approx(16500.0 / 0.8)}}
    assert record["metrics"]["p_train"] == 33000.0  # rank 0 stays authoritative
    assert {r["rank"]: r["rank_p_train"] for r in record["per_rank"]} == {0: 8200.0, 1: 8300.0,
                                                                           2: 8250.0, 3: 8250.0}


def test_a_node_without_its_rank_results_has_no_throughput(scaling_run):
    record = json.loads((scaling_run / "digits_cnn_CPUx2x2" / "round3" / "round_record.json").read_text())
    assert record["status"] == "failed"
    assert record["per_node"][1]["ranks"] == 0 and record["per_node"][1]["p_train"] is None
    assert record["per_node"][1]["throughput_reason"] == "0 of 2 ranks left a result"
    assert record["throughput"]["per_node"]["host2"] is None


def test_a_rank_without_its_own_figures_gives_null_node_figures(tmp_path):
    """Rank 1 failed (its result has no rank_p_train) though its node said success: the node has no sum."""
    config = cpu_config(1, 2)
    round_dir = tmp_path / "run1" / config.case_id / "round1"
    failed = {"schema": "perfplay.rank_result/1", "rank": 1, "world_size": 2, "status": "failed", "reason": "boom",
              "e2e_time": 1.0}
    write_node(round_dir / "host1_noderank0", node_result("host1", ranks=(0, 1)),
               [trainer_rank_result(0, 2, 10000.0, 20000.0), failed])
    record = write_round_record(round_dir, config, 1).to_json()
    assert record["status"] == "success" and record["throughput"]["total"] == 20000.0
    assert record["per_node"][0]["p_train"] is None
    assert record["per_node"][0]["throughput_reason"] == "rank(s) 1 reported no rank_p_train"
    (case,) = summarize_run(tmp_path / "run1").cases
    assert case.stats["p_train"].mean == 20000.0 and case.per_node[0].stats["p_train"].n == 0


def test_two_nodes_on_one_host_are_keyed_by_node_directory(tmp_path):
    config = cpu_config(2, 1)
    round_dir = tmp_path / "run1" / config.case_id / "round1"
    for node_rank in range(2):
        write_node(round_dir / f"localhost_noderank{node_rank}",
                   node_result("localhost", node_rank, ranks=(node_rank,)),
                   [trainer_rank_result(node_rank, 2, 5000.0 + node_rank, 10001.0)])
    record = build_round_record(round_dir, config, 1)
    assert record.throughput.per_node == {"localhost_noderank0": 5000.0, "localhost_noderank1": 5001.0}


def test_summary_per_node_mean_and_std_over_valid_rounds(scaling_run):
    summary = summarize_run(scaling_run).to_json()
    cases = {c["case_id"]: c for c in summary["cases"]}
    big = cases["digits_cnn_CPUx2x2"]
    assert big["status"] == "failed,success" and big["stats"]["p_train"]["n"] == 2
    assert big["stats"]["p_train"]["mean"] == pytest.approx(33000.0)  # round 3 excluded
    node0, node1 = big["per_node"]
    assert (node0["node_rank"], node0["host"], node0["ranks"]) == (0, "host1", 2)
    assert node0["stats"]["p_train"]["mean"] == pytest.approx(16550.0)  # 16500 and 16600
    assert node0["stats"]["p_train"]["std"] == pytest.approx(70.710678, rel=1e-6)
    assert node1["stats"]["p_train"]["mean"] == pytest.approx(16450.0)  # 16500 and 16400
    assert node1["stats"]["p_train"]["n"] == 2
    assert node1["stats"]["p_core"]["mean"] == pytest.approx(16450.0 / 0.8)
    assert cases["digits_cnn_CPUx1x2"]["per_node"][0]["stats"]["p_train"]["mean"] == pytest.approx(20000.0)


def test_scaling_speedup_and_efficiency_against_the_smallest_scale(scaling_run):
    summary = summarize_run(scaling_run).to_json()
    (group,) = summary["scaling"]
    assert (group["case"], group["vendor"], group["hardware"], group["framework"]) == \
        ("digits_cnn", "cpu", "CPU", "pytorch")
    assert (group["basis"], group["base"], group["base_devices"], group["reason"]) == \
        ("p_train", "digits_cnn_CPUx1x1", 1, None)
    rows = group["rows"]
    assert [(r["case_id"], r["nnodes"], r["nproc"], r["devices"]) for r in rows] == [
        ("digits_cnn_CPUx1x1", 1, 1, 1), ("digits_cnn_CPUx1x2", 1, 2, 2), ("digits_cnn_CPUx2x2", 2, 2, 4)]
    assert [r["throughput"]["mean"] for r in rows] == pytest.approx([14000.0, 20000.0, 33000.0])
    assert [r["speedup"] for r in rows] == pytest.approx([1.0, 20000 / 14000, 33000 / 14000])
    assert [r["efficiency"] for r in rows] == pytest.approx([1.0, 20000 / 14000 / 2, 33000 / 14000 / 4])
    assert all(r["reason"] is None for r in rows)


def test_rendered_table_shows_per_node_line_and_scaling(scaling_run):
    text = render_table(summarize_run(scaling_run))
    lines = text.splitlines()
    assert "per node (p_train, samples/s; sum of the node's ranks):" in lines
    assert "  digits_cnn_CPUx2x2  node0 host1: 16550.0 ±70.7  node1 host2: 16450.0 ±70.7" in lines
    assert not any(line.startswith("  digits_cnn_CPUx1x2  node0") for line in lines)  # one node: no line
    start = lines.index("scaling (p_train, samples/s; base: digits_cnn_CPUx1x1)")
    assert lines[start + 1:start + 5] == [
        "case                devices  p_train         speed-up  efficiency",
        "digits_cnn_CPUx1x1  1        14000.0 ±141.4  1.00      100%",
        "digits_cnn_CPUx1x2  2        20000.0 ±141.4  1.43      71%",
        "digits_cnn_CPUx2x2  4        33000.0 ±0.0    2.36      59%"]
    assert "  digits_cnn_CPUx2x2 round 3: failed: host2 (node 1): rank 2 exited with code 1" in lines


def test_markdown_has_scaling_and_per_node_sections(scaling_run):
    summary, _ = write_run_summary(scaling_run)
    markdown = (scaling_run / "summary.md").read_text()
    assert markdown == render_markdown(summary)
    assert "## Scaling" in markdown
    assert "### digits_cnn on CPU (cpu, pytorch); base digits_cnn_CPUx1x1" in markdown
    assert "| case | nnodes | nproc | devices | p_train | speed-up | efficiency |" in markdown
    assert "| digits_cnn_CPUx2x2 | 2 | 2 | 4 | 33000.0 ±0.0 | 2.36 | 59% |" in markdown
    section = markdown.split("## digits_cnn_CPUx2x2")[1]
    assert "| node | host | ranks | p_train | p_core |" in section
    assert "| 0 | host1 | 2 | 16550.0 ±70.7 | 20687.5 ±88.4 |" in section
    assert "| total | | 4 | 33000.0 ±0.0 | 41250.0 ±0.0 |" in section
    assert "| node | host |" not in markdown.split("## digits_cnn_CPUx1x2")[1].split("## ")[0]
    saved = json.loads((scaling_run / "summary.json").read_text())
    assert saved["scaling"][0]["rows"][2]["efficiency"] == pytest.approx(33000 / 14000 / 4)


def test_an_efficiency_above_100_percent_says_why_it_is_implausible(tmp_path, scaling_run):
    """A 1x2 round against a 1x1 round slowed by its threads (874 %, as on a busy host): the summary's text and
    markdown and the report say why the figure cannot be taken as measured, under the table that shows it."""
    run_dir = tmp_path / "run20260102000000"
    write_round(run_dir, cpu_config(1, 1), 1, [[1000.0]])
    write_round(run_dir, cpu_config(1, 2), 1, [[4370.0, 4370.0]])
    summary = summarize_run(run_dir)
    (group,) = summary.scaling
    assert group.rows[1].efficiency == pytest.approx(4.37)
    note = ("digits_cnn_CPUx1x2: efficiency 437% is above 100 %, which more devices cannot give: the smaller scale "
            "was slowed (its rounds had more threads than free cores, or a busy host); check the thread settings "
            "(OMP_NUM_THREADS, torch's threads) and the host's load during the rounds")
    lines = render_table(summary).splitlines()
    row = next(i for i, line in enumerate(lines) if line.startswith("digits_cnn_CPUx1x2  2 "))
    assert lines[row].split()[-2:] == ["8.74", "437%"] and lines[row + 1] == f"  {note}"
    assert f"- {note}" in render_markdown(summary).splitlines()
    scaling = render_report([read_run(run_dir)]).split('<section id="scaling">')[1].split("</section>")[0]
    assert f'<p class="warn">{html.escape(note)}</p>' in scaling
    assert "above 100 %" not in render_table(summarize_run(scaling_run)), "71 % and 59 % need no note"


def test_one_scale_gives_no_scaling(tmp_path):
    run_dir = tmp_path / "run1"
    write_round(run_dir, cpu_config(1, 2), 1, [[10000.0, 10000.0]])
    summary = summarize_run(run_dir)
    assert summary.scaling == []
    assert "scaling" not in render_table(summary) and "## Scaling" not in render_markdown(summary)


def test_other_hardware_is_another_group(tmp_path):
    run_dir = tmp_path / "run1"
    write_round(run_dir, cpu_config(1, 1), 1, [[14000.0]])
    other = cpu_config(1, 2, hardware="CPU2", case_id="digits_cnn_CPU2x1x2")
    write_round(run_dir, other, 1, [[10000.0, 10000.0]])
    assert summarize_run(run_dir).scaling == []


def test_a_base_without_valid_rounds_withholds_speedup_with_a_reason(tmp_path):
    run_dir = tmp_path / "run1"
    write_round(run_dir, cpu_config(1, 1), 1, [[14000.0]], failed_node=0)
    write_round(run_dir, cpu_config(1, 2), 1, [[10000.0, 10000.0]])
    summary = summarize_run(run_dir)
    (group,) = summary.to_json()["scaling"]
    assert "digits_cnn_CPUx1x1 has no valid p_train" in group["reason"]
    assert all(r["speedup"] is None and r["efficiency"] is None and r["reason"] == group["reason"]
               for r in group["rows"])
    assert group["rows"][1]["throughput"]["mean"] == pytest.approx(20000.0)
    text = render_table(summary)
    assert "digits_cnn_CPUx1x2  2        20000.0  -         -" in text
    assert "  speed-up and efficiency withheld: the base digits_cnn_CPUx1x1 has no valid p_train" in text


def test_a_larger_scale_without_valid_rounds_has_a_reason(tmp_path):
    run_dir = tmp_path / "run1"
    write_round(run_dir, cpu_config(1, 1), 1, [[14000.0]])
    write_round(run_dir, cpu_config(1, 2), 1, [[10000.0, 10000.0]], failed_node=0)
    (group,) = summarize_run(run_dir).to_json()["scaling"]
    assert group["reason"] is None and group["rows"][0]["speedup"] == 1.0
    assert group["rows"][1]["speedup"] is None and "no valid p_train" in group["rows"][1]["reason"]


# -- the trainer writes the per-rank fields -----------------------------------------------------------------


def write_worker_config(tmp_path: Path, nproc: int, **params) -> Path:
    return write_resolved(tmp_path / "resolved_config.json", cpu_config(1, nproc, params=params).to_json())


def test_trainer_writes_rank_throughputs_on_one_rank(tmp_path, monkeypatch):
    for name in DIST_ENV:
        monkeypatch.delenv(name, raising=False)
    log_dir = tmp_path / "logs"
    assert worker_main(str(write_worker_config(tmp_path, 1, max_steps=5, batch_size=16)), str(log_dir)) == 0
    result = json.loads((log_dir / "rank0.result.json").read_text())
    # The fixtures above are valid rank results, as the trainer's is: the same keys, but for the FLOPs count rank 0
    # of a case whose FLOPs are counted (digits_cnn's) adds.
    assert set(trainer_rank_result(0, 1, 1.0, 1.0)) | {"flops"} == set(result)
    assert result["flops"]["per_sample"] > 0
    assert result["rank_samples"] == result["samples"] == 5 * 16
    assert result["rank_core_time"] == pytest.approx(result["core_time"])
    for key in ("p_whole", "p_train", "p_core"):
        assert result[f"rank_{key}"] == pytest.approx(result[key]) and result[key] > 0
    finished = [json.loads(line) for line in (log_dir / "rank0.events.jsonl").read_text().splitlines()][-1]
    assert finished["event"] == "FINISHED" and finished["value"]["rank_p_train"] == result["rank_p_train"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_real_ranks_make_a_node_whose_throughput_is_the_sum_of_theirs(tmp_path):
    """Two DDP ranks (a few steps) in a node directory; the round record sums their own figures."""
    config_path = write_worker_config(tmp_path, 2, max_steps=6, log_freq=2)
    round_dir = tmp_path / "run1" / "digits_cnn_CPUx1x2" / "round1"
    node_dir = round_dir / "localhost_noderank0"
    code = f"from case_runners.rank.worker import main; raise SystemExit(main({str(config_path)!r}, {str(node_dir)!r}))"
    port = str(free_port())
    procs = []
    for rank in range(2):
        env = {**os.environ, "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2",
               "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port, "PERFPLAY_DIST_TIMEOUT_S": "60", "OMP_NUM_THREADS": "1"}
        procs.append(subprocess.Popen([sys.executable, "-c", code], env=env, cwd=REPO,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outputs = communicate_or_kill(procs)
    assert [p.returncode for p in procs] == [0, 0], outputs
    (node_dir / "node_result.json").write_text(json.dumps(node_result("localhost", ranks=(0, 1))))

    results = [json.loads((node_dir / f"rank{r}.result.json").read_text()) for r in range(2)]
    assert [r["rank_samples"] for r in results] == [6 * 32, 6 * 32]
    assert sum(r["rank_samples"] for r in results) == results[0]["samples"]  # global = sum of own
    config = cpu_config(1, 2)
    record = build_round_record(round_dir, config, 1).to_json()
    assert record["status"] == "not_converged"
    (node,) = record["per_node"]
    assert (node["ranks"], node["samples"]) == (2, 6 * 32 * 2)
    assert node["p_train"] == pytest.approx(sum(r["rank_p_train"] for r in results))
    assert node["p_core"] == pytest.approx(sum(r["rank_p_core"] for r in results))
    assert record["throughput"]["total"] == results[0]["p_train"]
    # The ranks train in lockstep: the sum of their own rates is the global rate, give or take.
    assert 0.5 < node["p_train"] / record["throughput"]["total"] < 2.0
