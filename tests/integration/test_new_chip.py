"""A new chip is a folder: the test chip (tests/vendor_testchip/, not shipped) is scaffolded with new-vendor, filled in
as a vendor engineer fills the TODO(vendor) lines, passes check-vendor --functional, trains digits_cnn 1x2 to
convergence through ansible-playbook run_case.yml on its own backend (testccl), device probe and extern adapter, and
runs its base suite (its base.yaml) through the playbook with no code, each figure against its vendor.yaml peak; and
trains the llama case on its own training stack (stacks/tinytrain) through the playbook."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from case_runners.cases.llama.prepare import prepare_text
from case_runners.plan.config.benchmarks import peak_for
from case_runners.plan.config.resolved import BASE
from case_runners.plan.config.selection import parse_selections
from case_runners.plan.config.yaml_io import load_mapping
from case_runners.rank.driver.dllogger import metric_series, read_dllogger
from playbook_run import REPO, checkout_copy, flat, launched_anything, run_playbook
from process_helpers import SHORT_S
from testchip import PEAK_BF16, fill_hardware

OVERLAY = REPO / "tests" / "vendor_testchip"
ADAPTED = ["backward", "convert_model", "create_optimizer", "model_to_fp16"]


def case_runners(checkout: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "case_runners", *args], cwd=checkout, capture_output=True, text=True,
                          timeout=timeout, check=False)


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """A checkout with vendor/testchip: the scaffold (every case's configs), the overlay's files, peaks filled in."""
    path = checkout_copy(tmp_path_factory.mktemp("new_chip") / "checkout")
    made = case_runners(path, "new-vendor", "testchip", "--device", "cpu", "--backend", "testccl", "--hardware", "TC1")
    assert made.returncode == 0, made.stderr
    vendor = path / "vendor" / "testchip"
    for item in OVERLAY.iterdir():
        if item.is_dir():
            shutil.copytree(item, vendor / item.name, dirs_exist_ok=True)
        elif item.name != "ABOUT.md":
            shutil.copy(item, vendor / item.name)
    fill_hardware(vendor)
    return path


def test_the_scaffolded_and_filled_chip_passes_check_vendor_functional(checkout):
    # every case's scaffolded configs pass the structural check; the functional rounds run digits_cnn's only (the
    # other cases' pass too, in minutes: not here)
    done = case_runners(checkout, "check-vendor", "testchip", "--functional", "--case", "digits_cnn")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == "check-vendor testchip: 0 error(s), 0 warning(s)"
    assert any(line.startswith("ok: digits_cnn TC1x1x2: 5 steps, 2 ranks on testccl")
               and "adapted: " + ", ".join(ADAPTED) in line for line in lines), \
        "the board has two devices: the functional run exercises testccl on two ranks\n" + done.stdout
    assert any("functional shape: eval_max_batches=2, " in line for line in lines), \
        "the round ran digits_cnn's declared functional shape (its record's params say so)\n" + done.stdout
    assert any("monitor.py: start, status and stop work" in line for line in lines), done.stdout
    assert any(line.startswith("ok: digits_cnn inference: steps a-g, compiler testrt")
               and "functional shape: train_epochs=2, " in line for line in lines), done.stdout


def test_it_trains_digits_1x2_to_convergence_on_its_own_backend(checkout, results_dir):
    run = run_playbook(checkout, "run_case.yml", "-e", json.dumps({
        "perfplay_vendor": "testchip", "perfplay_results_dir": str(results_dir), "perfplay_run_id": "newchip-1x2",
        "perfplay_cases": [{"case": "digits_cnn", "nproc": 2}]}))
    assert run.rc == 0, run.output[-3000:]
    round_dir = results_dir / "newchip-1x2" / "digits_cnn_TC1x1x2" / "round1"
    record = json.loads((round_dir / "round_record.json").read_text())
    assert record["status"] == "success" and record["metrics"]["converged"], record["reason"]
    assert record["standard"] is True and record["adapted"] == ADAPTED
    assert record["metrics"]["precision"] == "bf16", "amp autocasts to the vendor's dtype"
    assert (record["mfu"]["precision"], record["mfu"]["peak_flops_per_device"]) == ("bf16", PEAK_BF16)
    assert record["versions"]["testchip_sdk"] == "1.0.0"
    (node,) = [p for p in round_dir.iterdir() if p.is_dir()]
    events = [json.loads(line) for line in (node / "rank0.events.jsonl").read_text().splitlines()]
    submit = next(e["value"] for e in events if e["event"] == "SUBMIT_INFO")
    assert (submit["dist_backend"], submit["world_size"]) == ("testccl", 2)
    log = (node / "rank1.out.log").read_text()
    assert "testchip adapter: backward" in log and "replaces: " + ", ".join(ADAPTED) in log
    assert "kernel cache /tmp/testchip-kernels" in log, "its environment_variables.sh applies in the host runtime"
    assert record["monitors"][node.name]["testchip"]["samples"] > 0, "the chip's own monitor ran"


def test_its_own_training_stack_runs_through_the_playbook_with_monitors_and_cleanup(checkout, results_dir, tmp_path):
    """The chip's own stack (stacks/tinytrain: its program trains the llama tiny shape from perfplay's inputs and
    writes the stream) on two ranks, as any case: the monitors sample, the round is recorded from the stream, no
    pid file or program is left. In the same run, its Megatron-style stack (stacks/tinymega: the same training,
    printing Megatron-LM's log only, on its last rank: `log_parser: megatron`, `log_rank: last`) is recorded from
    that rank's log."""
    src = tmp_path / "text"
    src.mkdir()
    for i in range(8):
        (src / f"doc{i}.py").write_text("".join(f"def f{i}_{k}(x):\n    return x * {k} + {i}\n" for k in range(40)))
    prepare_text(src, tmp_path / "data", "bytes", held_out=0.25, log=lambda line: None)
    case = {"case": "llama", "nproc": 2, "data_dir": str(tmp_path / "data"),
            "overrides": {"seq_len": 32, "max_steps": 6, "log_freq": 1, "eval_every_steps": 0, "eval_samples": 8,
                          "warmup_steps": 1}}
    reference = checkout / "vendor/testchip/cases/llama/config_TC1x1x2.yaml"  # the pytorch stack's, this test's
    reference.write_text("batch_size: 4\n")
    try:
        run = run_playbook(checkout, "run_case.yml", "-e", json.dumps({
            "perfplay_vendor": "testchip", "perfplay_results_dir": str(results_dir),
            "perfplay_run_id": "newchip-stack",
            "perfplay_cases": [{**case, "framework": "tinytrain"}, {**case, "framework": "tinymega"}, case]}),
            env={"OMP_NUM_THREADS": "1"})
    finally:
        reference.unlink()
    assert run.rc == 0, run.output[-3000:]
    _megatron_style_stack_is_recorded_from_its_log(results_dir / "newchip-stack" / "llama_tinymega_TC1x1x2" / "round1")
    # The inputs' init and data order: the stack trains the pytorch stack's weights on its batches, step by step.
    compared = case_runners(checkout, "compare", str(results_dir / "newchip-stack" / "llama_TC1x1x2"),
                            str(results_dir / "newchip-stack" / "llama_tinytrain_TC1x1x2"), "--tolerance", "0.001",
                            "--json")  # the stack's param `omit` is its own: not the workload's
    assert compared.returncode == 0, compared.stdout + compared.stderr
    found = json.loads(compared.stdout)
    assert (found["verdict"], found["aligned_steps"], found["reference"]["framework"]) == ("PASS", 6, "pytorch")
    assert found["loss_max_relative_error"] < 1e-3 and found["loss"][0]["reference"] > 5.0  # untrained at step 1
    round_dir = results_dir / "newchip-stack" / "llama_tinytrain_TC1x1x2" / "round1"
    record = json.loads((round_dir / "round_record.json").read_text())
    assert record["framework"] == "tinytrain" and record["status"] in ("success", "not_converged")
    assert record["throughput"]["unit"] == "tokens/s" and record["metrics"]["samples"] == 6 * 2 * 4 * 32
    assert record["mfu"]["basis"] == "p_core" and record["mfu"]["flops_per_sample"] > 0
    (node,) = [p for p in round_dir.iterdir() if p.is_dir()]
    assert record["monitors"][node.name]["testchip"]["samples"] > 0, "the chip's monitor sampled the round"
    rank0 = json.loads((node / "rank0.result.json").read_text())
    assert rank0["steps"] == 6 and 0 < rank0["final_metric"] < 5.6  # the program's held-out loss: below a uniform
    assert rank0["optimizer"] == "tinytrain (the stack's own)" and rank0["standard_optimizer"] == "AdamW"  # guess
    stack_lines = [e for e in read_dllogger(node / "rank0.stack.dllogger.json") if "train.loss" in e.data]
    assert rank0["core_time"] == pytest.approx(sum(e.data["step_time"] for e in stack_lines))  # p_core: its steps
    assert rank0["p_core"] == pytest.approx(6 * 8 * 32 / rank0["core_time"])
    own = metric_series(read_dllogger(node / "rank0.dllogger.json"), "train.loss")  # perfplay's own stream
    assert own == [((1, e.step[1]), e.data["train.loss"]) for e in stack_lines]
    inputs = json.loads((node / "rank1.stack_inputs.json").read_text())
    assert inputs["model"]["hidden"] == 256 and inputs["seq_len"] == 32 and inputs["rank"] == 1
    assert (inputs["global_batch"], inputs["batch_per_rank"], inputs["max_steps"]) == (8, 4, 6)
    assert inputs["stack_params"] == {"omit": ""} and inputs["stream"] == str(node / "rank1.stack.dllogger.json")
    order = json.loads(Path(inputs["data"]["order"]).read_text())  # the pytorch stack's batches of rank 1
    assert order["schema"] == "perfplay.stack_order/1" and [len(s) for s in order["steps"]] == [4] * 6
    assert inputs["init"]["seed"] == inputs["seed"] and inputs["log_file"] is None
    assert inputs["schedule"] == {"lr": 0.003, "warmup_steps": 1, "decay": "cosine", "min_lr": 0.0,
                                  "decay_steps": 6}
    assert list(results_dir.rglob("*.pid")) == []
    left = subprocess.run(["pgrep", "-f", str(checkout / "vendor/testchip/stacks")], capture_output=True,
                          text=True, check=False, timeout=SHORT_S)
    assert left.stdout == "", "no program of the stacks outlives its round"


def _megatron_style_stack_is_recorded_from_its_log(round_dir: Path) -> None:
    """tinymega's round: a record with tokens/s and the loss from its last rank (rank 0 prints no step: it only
    ran), its stream written by that rank from the program's Megatron lines (kept raw beside it), each step's loss
    and time as the lines said."""
    record = json.loads((round_dir / "round_record.json").read_text())
    assert record["framework"] == "tinymega" and record["status"] in ("success", "not_converged"), record["reason"]
    assert record["throughput"]["unit"] == "tokens/s" and record["throughput"]["total_p_core"] > 0
    assert record["metrics"]["samples"] == 6 * 2 * 4 * 32 and record["metrics_rank"] == 1
    (node,) = [p for p in round_dir.iterdir() if p.is_dir()]
    rank0 = json.loads((node / "rank0.result.json").read_text())
    assert (rank0["status"], rank0["logged_by"]) == ("success", 1) and not (node / "rank0.stack.log").exists()
    rank1 = json.loads((node / "rank1.result.json").read_text())
    assert rank1["steps"] == 6 and 0 < rank1["final_metric"] < 5.6
    raw = (node / "rank1.stack.log").read_text().splitlines()
    printed = [line for line in raw if " iteration " in line and "lm loss: " in line]
    assert len(printed) == 6
    steps = [e for e in read_dllogger(node / "rank1.stack.dllogger.json") if "train.loss" in e.data]
    assert [e.step for e in steps] == [(1, s) for s in range(1, 7)]
    assert [e.data["train.loss"] for e in steps] == [float(line.split("lm loss: ")[1].split(" |")[0])
                                                     for line in printed]
    assert rank1["core_time"] == pytest.approx(sum(e.data["step_time"] for e in steps))
    assert {e.data["samples"] for e in steps} == {8 * 32}, "the global batch size x seq_len"
    assert metric_series(read_dllogger(node / "rank1.dllogger.json"), "train.loss") == \
        [((1, e.step[1]), e.data["train.loss"]) for e in steps]
    assert "perfplay: the tinymega stack's log parser megatron: 7 event(s) from" in \
        (node / "rank1.out.log").read_text()


def test_the_device_probe_bounds_nproc_before_any_rank_starts(checkout, results_dir):
    configs = checkout / "vendor" / "testchip" / "cases" / "digits_cnn"
    shutil.copy(configs / "config_TC1x1x2.yaml", configs / "config_TC1x1x4.yaml")  # more than the board has
    try:
        run = run_playbook(checkout, "run_case.yml", "-e", json.dumps({
            "perfplay_vendor": "testchip", "perfplay_results_dir": str(results_dir),
            "perfplay_cases": [{"case": "digits_cnn", "nproc": 4}]}))
    finally:
        (configs / "config_TC1x1x4.yaml").unlink()
    assert run.rc != 0
    assert "a round needs nproc=4 testchip devices, the host has 2 (discovered)" in " ".join(run.output.split())
    assert launched_anything(results_dir) == [] and list(results_dir.iterdir()) == []


def test_a_hook_that_raises_stops_the_run_at_the_host_preflight(checkout, results_dir):
    made = case_runners(checkout, "new-vendor", "brokenchip", "--device", "cpu", "--backend", "gloo")
    assert made.returncode == 0, made.stderr
    (checkout / "vendor" / "brokenchip" / "runtime.py").write_text(textwrap.dedent("""\
        def setup():
            raise RuntimeError("brokenchip driver 0.9 is older than the SDK needs")
        """))
    run = run_playbook(checkout, "run_case.yml", "-e", json.dumps({
        "perfplay_vendor": "brokenchip", "perfplay_results_dir": str(results_dir),
        "perfplay_cases": ["digits_cnn"]}))
    assert run.rc != 0
    assert ("vendor/brokenchip/runtime.py: setup() raised RuntimeError: brokenchip driver 0.9 is older than the "
            "SDK needs") in " ".join(run.output.split())
    assert launched_anything(results_dir) == [] and list(results_dir.iterdir()) == []


def test_the_host_check_answers_the_case_s_pins_and_pip_runs_only_for_a_file_it_names(checkout, results_dir,
                                                                                     monkeypatch):
    """The chip's digits_cnn requirements.txt is checked in the host check's one module run. A line pip has to see
    (not a pin) has pip install the file and the host checked again; a pin the venv lacks stops the run before any
    round, pip's error naming the package. pip is offline here (PIP_NO_INDEX): what is installed already satisfies
    it, nothing else is fetched."""
    pins = checkout / "vendor" / "testchip" / "cases" / "digits_cnn" / "requirements.txt"
    kept = pins.read_text()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    run_vars = json.dumps({"perfplay_vendor": "testchip", "perfplay_results_dir": str(results_dir),
                           "perfplay_cases": [{"case": "digits_cnn", "nproc": 2}]})
    try:
        pins.write_text(kept + "numpy\n")
        unpinned = run_playbook(checkout, "playbooks/preflight.yml", "-e", run_vars)
        pins.write_text(kept + "perfplay-absent-package==1.0\n")
        missing = run_playbook(checkout, "run_case.yml", "-e", run_vars)
    finally:
        pins.write_text(kept)
    assert unpinned.rc == 0, unpinned.output[-5000:]
    statuses = unpinned.task_statuses()
    check = "host_preflight : Check the venv's pins, the Python, devices, data dirs, network interface and master port"
    assert statuses[check] == ["ok", "ok"], "checked, then checked again after pip"
    assert statuses["runtime_host : Install the requirements into the venv"] == ["ok"], "numpy was there already"
    assert "vendor/testchip/cases/digits_cnn/requirements.txt: numpy not a name==version pin" in flat(unpinned.output)

    assert missing.rc != 0
    assert missing.task_statuses()["runtime_host : Install the requirements into the venv"] == ["failed"]
    assert "perfplay-absent-package==1.0" in flat(missing.output), missing.output[-5000:]
    assert launched_anything(results_dir) == []


def test_its_base_suite_runs_through_the_playbook_with_no_code(checkout, results_dir):
    """Every benchmark of testchip's base.yaml suite: each round a success, each figure positive and finite, against
    the peak of its vendor.yaml key where the engineer gave one (a fraction in (0, 1.5]), withheld with the reason
    naming the key where not; memory bandwidth by torch and by the chip's own C toolkit, side by side in the summary,
    summary.md and the report."""
    run = run_playbook(checkout, "run_case.yml", "-e", json.dumps({
        "perfplay_vendor": "testchip", "perfplay_task": "base", "perfplay_results_dir": str(results_dir),
        "perfplay_run_id": "newchip-base"}))
    assert run.rc == 0, run.output[-5000:]
    vendor = checkout / "vendor" / "testchip"
    suite, errors = parse_selections(load_mapping(vendor / "base.yaml")["suite"], source="suite", task=BASE)
    assert errors == [] and suite
    hardware = load_mapping(vendor / "vendor.yaml")["hardware"]["TC1"]
    summary = json.loads((results_dir / "newchip-base" / "summary.json").read_text())
    assert summary["ok"] and sorted((c["case"], c["nproc"]) for c in summary["cases"]) == \
        sorted((sel.case, sel.nproc) for sel in suite)
    peaks_used = set()
    for case in summary["cases"]:
        assert case["task"] == "base" and case["status"] == "success", case
        assert [r["status"] for r in case["rounds"]] == ["success"]
        assert case["measurements"] and case["base"], case["case_id"]
        for m in case["measurements"]:
            where = f"{case['case_id']} {m['kind']} {m['size']}"
            assert math.isfinite(m["achieved"]) and m["achieved"] > 0, where
            peak = peak_for(m["benchmark"], "TC1", hardware, precision=m["kind"], nnodes=case["nnodes"])
            assert (m["peak"], m["peak_key"]) == (peak.value, peak.key), where
            if peak.value is None:
                assert m["fraction_of_peak"] is None and peak.key in m["reason"], where
            else:
                assert 0 < m["fraction_of_peak"] <= 1.5, where
                peaks_used.add(peak.key)
    assert "hardware.TC1.peak_flops.fp32" in peaks_used, "gemm fp32 ran against the peak the engineer wrote"
    # memory_bandwidth in mode both: the chip's C toolkit (base/toolkits/memory_bandwidth), built with cc, beside torch
    (bandwidth,) = [c for c in summary["cases"] if c["case"] == "memory_bandwidth"]
    assert sorted((m["kind"], m["size"]) for m in bandwidth["measurements"] if m.get("source") == "toolkit") == \
        [("copy", "128 MiB"), ("copy", "64 MiB"), ("triad", "128 MiB"), ("triad", "64 MiB")]
    assert [(r["kind"], r.get("source", "torch")) for r in bandwidth["base"]] == \
        [("copy", "torch"), ("copy", "toolkit"), ("triad", "torch"), ("triad", "toolkit")]
    assert "hardware.TC1.memory_bandwidth_bytes_s" in peaks_used
    case_id = bandwidth["case_id"]
    markdown = (results_dir / "newchip-base" / "summary.md").read_text()
    assert f"| {case_id} | 1 | 1/1 | memory_bandwidth | copy | toolkit | best |" in markdown, markdown
    report = (results_dir / "newchip-base" / "report.html").read_text()
    assert f"<td>{case_id}</td><td>1</td><td>1/1</td><td>memory_bandwidth</td><td>triad</td><td>toolkit</td>" \
        in report
    assert f"{case_id} " in flat(run.output) and " toolkit " in flat(run.output), "the play's base table"


def test_its_operator_suite_runs_natively_and_with_its_library_and_a_broken_kernel_is_reported(checkout, results_dir):
    """`perfplay_task: operation` on testchip (its operation.yaml: all 52 operators at small shapes, each of their
    dtypes, native and testlib): every native row correct; with testlib's relu made deliberately wrong, its relu rows
    are not, the round says so (not_converged, naming them) and so does the summary; every library row has its
    speed-up, every row its roofline against the chip's peaks."""
    lib = checkout / "vendor" / "testchip" / "testlib.py"
    kept = lib.read_text()
    assert kept.count("BROKEN: tuple[str, ...] = ()") == 1
    lib.write_text(kept.replace("BROKEN: tuple[str, ...] = ()", 'BROKEN: tuple[str, ...] = ("relu",)'))
    try:
        run = run_playbook(checkout, "run_case.yml", "-e", json.dumps({
            "perfplay_vendor": "testchip", "perfplay_task": "operation", "perfplay_results_dir": str(results_dir),
            "perfplay_run_id": "newchip-operation"}))
    finally:
        lib.write_text(kept)
    assert run.rc == 0, run.output[-5000:]
    summary = json.loads((results_dir / "newchip-operation" / "summary.json").read_text())
    (case,) = summary["cases"]
    assert case["task"] == "operation" and case["status"] == "not_converged"
    (round_,) = case["rounds"]
    assert round_["reason"] == "not correct: relu FP32 testlib, relu FP16 testlib, relu BF16 testlib"
    rows = case["operation"]
    assert len({r["op"] for r in rows}) == 52 and len(rows) == 2 * (49 * 3 + 3 * 2)
    assert all(r["correct"] for r in rows if r["oplib"] == "native" or r["op"] != "relu"), \
        [(r["op"], r["dtype"], r["oplib"], r["max_error"]) for r in rows if not r["correct"]]
    assert {(r["dtype"], r["correct"]) for r in rows if r["oplib"] == "testlib" and r["op"] == "relu"} == \
        {("FP32", False), ("FP16", False), ("BF16", False)}
    assert all(r["speedup"] > 0 for r in rows if r["oplib"] == "testlib")
    assert all(r["speedup"] is None for r in rows if r["oplib"] == "native")
    assert all(r["bound"] in ("compute", "memory") and r["roofline_fraction"] > 0 for r in rows
               if r["dtype"] in ("FP32", "BF16")), "TC1 has fp32 and bf16 peaks and a memory bandwidth"
    said = flat(run.output)
    assert "NOT CORRECT: relu FP32 testlib" in said and "testlib ok" in said, run.output[-5000:]
    markdown = (results_dir / "newchip-operation" / "summary.md").read_text()
    relu = next(line.split(" | ") for line in markdown.splitlines() if "| relu | FP32 |" in line)
    assert relu[3] == "yes" and relu[7] == "NO" and relu[-1].endswith("x |"), "native and testlib side by side"
    assert "- operators_operation_TC1x1x1: NOT CORRECT: relu FP32 testlib" in markdown
