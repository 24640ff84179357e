"""`python -m case_runners compare`: the alignment arithmetic on small synthetic curves, then real digits_cnn runs
of 60 steps on the cpu vendor compared as a user would (same seed: PASS; another lr: refused, then FAIL on the loss;
bf16 autocast: its measured error reported), and the inputs that cannot be compared, each named."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from case_runners.cli.main import main
from case_runners.core.errors import PerfplayError
from case_runners.records.round import OLD_RECORD_NAME, RECORD_NAME
from case_runners.records.summary_build import summarize_run
from case_runners.views.compare.alignment import (
    ABSENT_TEXT,
    align,
    check_same_workload,
    differences,
    relative_error,
)
from case_runners.views.compare.report import FAIL, PASS, Comparison, FinalMetric, LossPoint, reasons, table_steps
from case_runners.views.history.index import index_run
from case_runners.views.report import REPORT_NAME
from case_runners.views.report.data import read_run
from process_helpers import communicate_or_kill

REPO = Path(__file__).resolve().parents[2]
STEPS = 60
SEED = 7

# -- the arithmetic ---------------------------------------------------------------------------------------------------


def test_relative_error_is_against_the_reference():
    assert relative_error(1.1, 1.0) == pytest.approx(0.1)
    assert relative_error(0.9, -1.0) == pytest.approx(1.9)
    assert relative_error(0.0, 0.0) == 0.0
    assert relative_error(0.1, 0.0) == math.inf
    assert math.isnan(relative_error(math.nan, 1.0))


def test_curves_align_on_the_steps_both_logged():
    found = align({1: 2.0, 10: 1.0, 20: 0.5, 30: 0.25}, {10: 1.1, 20: 0.5, 30: 0.2, 40: 0.1})
    assert found.steps == [10, 20, 30]
    assert found.reference == [1.0, 0.5, 0.25] and found.candidate == [1.1, 0.5, 0.2]
    assert found.errors == pytest.approx([0.1, 0.0, 0.2])
    assert found.mean_error == pytest.approx(0.1)
    assert found.max_error == pytest.approx(0.2) and found.max_error_step == 30


def test_curves_align_from_a_step_on():
    found = align({1: 9.0, 20: 2.0, 21: 1.0, 30: 0.5}, {1: 1.0, 20: 1.0, 21: 1.01, 30: 0.5}, from_step=21)
    assert found.steps == [21, 30] and found.mean_error == pytest.approx(0.005)


def test_curves_without_a_common_step_align_on_nothing():
    found = align({1: 1.0, 2: 1.0}, {3: 1.0})
    assert found.steps == [] and math.isnan(found.mean_error) and found.max_error_step is None


def test_a_nan_loss_is_the_worst_step_and_fails():
    found = align({1: 1.0, 2: 1.0}, {1: 1.0, 2: math.nan})
    assert math.isnan(found.mean_error) and math.isnan(found.max_error) and found.max_error_step == 2
    final = FinalMetric(metric="accuracy", reference=0.9, candidate=0.9, relative_error=0.0)
    (why,) = reasons(final, found, 0.01)
    assert why.startswith("loss: mean relative error nan over 2 steps > tolerance 1 %")


def test_reasons_name_each_value_over_the_tolerance():
    loss = align({1: 1.0, 2: 1.0}, {1: 1.0, 2: 1.03})  # mean 1.5 %, max 3 % at step 2
    final = FinalMetric(metric="accuracy", reference=0.9, candidate=0.891, relative_error=relative_error(0.891, 0.9))
    assert reasons(final, loss, 0.02) == []
    found = reasons(final, loss, 0.005)
    assert found == ["final metric accuracy: relative error 1.000% > tolerance 0.5 % (reference 0.9, candidate "
                     "0.891)",
                     "loss: mean relative error 1.500% over 2 steps > tolerance 0.5 % (max 3.000% at step 2)"]


def test_differences_compare_values_not_spellings():
    ref = {"lr": 0.1, "batch_size": 32, "amp": False, "seed": 1}
    cand = {"lr": 0.1, "batch_size": 32.0, "amp": 0, "warmup_steps": 5, "seed": 1}
    assert differences(ref, cand) == {"amp": (False, 0), "warmup_steps": (ABSENT_TEXT, 5)}


def test_the_workload_check_refuses_each_difference_not_allowed():
    ref = {"case": "digits_cnn", "lr": 0.05, "seed": 1, "precision": "fp32"}
    cand = {"case": "digits_cnn", "lr": 0.1, "seed": 2, "precision": "fp32"}
    with pytest.raises(PerfplayError) as exc:
        check_same_workload(ref, cand, ["seed"])
    assert "lr: reference 0.05, candidate 0.1;" in str(exc.value) and "--allow-diff lr" in str(exc.value)
    assert "seed" not in str(exc.value)
    assert check_same_workload(ref, cand, ["lr", "seed"]) == {"lr": (0.05, 0.1), "seed": (1, 2)}
    with pytest.raises(PerfplayError, match=r"--allow-diff sede: no such key \(keys: case, lr, precision, seed\)"):
        check_same_workload(ref, cand, ["sede"])
    with pytest.raises(PerfplayError, match=r"different cases \(digits_cnn and bert\)"):
        check_same_workload(ref, {**ref, "case": "bert"}, ["case"])


def test_the_table_shows_a_spread_of_steps_and_the_worst():
    points = [LossPoint(step=s, reference=1.0, candidate=1.0, relative_error=0.0) for s in range(1, 101)]
    shown = [p.step for p in table_steps(points, worst=42)]
    assert shown[0] == 1 and shown[-1] == 100 and 42 in shown and len(shown) == 10
    assert [p.step for p in table_steps(points[:5], worst=3)] == [1, 2, 3, 4, 5]


# -- real runs --------------------------------------------------------------------------------------------------------


def _start(results: Path, *sets: str) -> subprocess.Popen:
    """`run digits_cnn` for STEPS steps with seed SEED and a loss at every step, and `--set` each of `sets`, into
    `results`; one thread (the runs go side by side: on two cores, each mostly starts Python and imports torch)."""
    argv = [f"max_steps={STEPS}", f"seed={SEED}", "log_freq=1", *sets]
    return subprocess.Popen([sys.executable, "-m", "case_runners", "run", "digits_cnn", "--results-dir", str(results),
                             "--no-monitors", *(arg for s in argv for arg in ("--set", s))], cwd=REPO,
                            env={**os.environ, "OMP_NUM_THREADS": "1"}, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """The four runs' directories, each run in its own results dir."""
    root = tmp_path_factory.mktemp("compare")
    sets = {"reference": (), "same": (), "lr": ("lr=0.1",), "bf16": ("amp=true",)}
    procs = [_start(root / name, *extra) for name, extra in sets.items()]
    for proc, output in zip(procs, communicate_or_kill(procs), strict=True):
        assert proc.returncode in (0, 1), output[-3000:]  # 1: not converged in 60 steps
    return {name: _run_dir(root / name) for name in sets}


def _run_dir(results: Path) -> Path:
    (run_dir,) = results.glob("run*")
    return run_dir


def compare(capsys, *argv: str | Path) -> tuple[int, str, str]:
    code = main(["compare", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def compare_json(capsys, *argv: str | Path) -> tuple[int, Comparison]:
    code, out, err = compare(capsys, *argv, "--json")
    assert code in (0, 1), err
    return code, Comparison.from_json(json.loads(out), "compare --json")


def test_two_runs_with_the_same_seed_pass(runs, capsys, tmp_path):
    plot = tmp_path / "loss.png"
    code, found = compare_json(capsys, runs["reference"], runs["same"], "--plot", plot)
    assert code == 0 and found.verdict == PASS and found.reasons == []
    assert found.aligned_steps == STEPS and [p.step for p in found.loss] == list(range(1, STEPS + 1))
    assert found.loss_mean_relative_error < 1e-6 and found.loss_max_relative_error < 1e-6
    assert found.final_metric.metric == "accuracy" and found.final_metric.relative_error < 1e-6
    assert set(found.performance) == {"p_whole", "p_train", "p_core", "mfu"}
    assert found.performance["p_train"].ratio == pytest.approx(
        found.performance["p_train"].candidate / found.performance["p_train"].reference)
    assert found.performance["mfu"].ratio is None  # the cpu vendor has no peak FLOP/s
    assert plot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_the_table_says_pass_and_takes_round_case_or_run_directories(runs, capsys):
    case_dir = next(runs["same"].glob("digits_cnn_*"))
    for candidate in (runs["same"], case_dir, case_dir / "round1"):
        code, out, _ = compare(capsys, runs["reference"], candidate)
        assert code == 0
        assert f"loss of rank 0: {STEPS} aligned steps (1..{STEPS}), mean relative error 0.000%" in out
        assert out.rstrip().splitlines()[-1].startswith("PASS: ")
        assert "p_core" in out and "candidate/reference" in out


def test_another_lr_is_refused_then_fails_on_the_loss(runs, capsys):
    code, _, err = compare(capsys, runs["reference"], runs["lr"])
    assert code == 2
    assert "lr: reference 0.05, candidate 0.1" in err and "--allow-diff lr" in err
    code, found = compare_json(capsys, runs["reference"], runs["lr"], "--allow-diff", "lr")
    assert code == 1 and found.verdict == FAIL
    assert found.allowed_differences == {"lr": [0.05, 0.1]}
    assert found.loss_mean_relative_error > 0.01
    assert any(reason.startswith("loss: mean relative error") for reason in found.reasons)


def test_a_bf16_autocast_run_is_reported_with_its_measured_error(runs, capsys):
    code, _, err = compare(capsys, runs["reference"], runs["bf16"])
    assert code == 2 and "amp: reference False, candidate True" in err
    assert "precision: reference 'fp32', candidate 'bf16'" in err
    code, found = compare_json(capsys, runs["reference"], runs["bf16"], "--allow-diff", "amp",
                               "--allow-diff", "precision")
    numbers = (found.loss_mean_relative_error, found.loss_max_relative_error, found.final_metric.relative_error)
    assert all(math.isfinite(n) for n in numbers)
    assert code == (0 if found.verdict == PASS else 1)
    assert (found.verdict == PASS) == (found.final_metric.relative_error <= 0.01
                                       and found.loss_mean_relative_error <= 0.01)
    print(f"bf16 autocast vs fp32, {found.aligned_steps} steps: loss mean {numbers[0]:.4%}, max {numbers[1]:.4%} "
          f"(step {found.loss_max_error_step}); final {found.final_metric.metric} {found.final_metric.reference:.4f}"
          f" -> {found.final_metric.candidate:.4f} ({numbers[2]:.4%}): {found.verdict}")


# -- what cannot be compared ------------------------------------------------------------------------------------------


def _copy(run_dir: Path, where: Path) -> Path:
    """A copy of a run's only round directory."""
    shutil.copytree(run_dir, where)
    return next(where.glob("digits_cnn_*/round1"))


def _edit(path: Path, change) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    change(doc)
    path.write_text(json.dumps(doc), encoding="utf-8")


def test_from_step_leaves_out_the_early_steps(runs, capsys, tmp_path):
    """FlagPerf's LLM rule compares the loss from step 21: a candidate off by 10 % before it fails without
    --from-step and passes with it."""
    round_dir = _copy(runs["same"], tmp_path / "run")
    (events,) = round_dir.glob("*_noderank0/rank0.events.jsonl")
    lines = [json.loads(line) for line in events.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        if line["value"].get("step", 99) < 21 and "loss" in line["value"]:
            line["value"]["loss"] *= 1.1
    events.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    code, found = compare_json(capsys, runs["reference"], round_dir)
    assert code == 1 and found.loss_max_relative_error == pytest.approx(0.1) and found.from_step == 0
    code, found = compare_json(capsys, runs["reference"], round_dir, "--from-step", "21")
    assert code == 0 and found.from_step == 21 and found.aligned_steps == STEPS - 20
    assert found.loss[0].step == 21 and found.loss_max_relative_error < 1e-6
    code, out, _ = compare(capsys, runs["reference"], round_dir, "--from-step", "21")
    assert code == 0 and f"loss of rank 0 from step 21: {STEPS - 20} aligned steps (21..{STEPS})" in out
    code, _, err = compare(capsys, runs["reference"], round_dir, "--from-step", str(STEPS + 1))
    assert code == 2 and f"no step logged in both from step {STEPS + 1} (--from-step)" in err


def test_mfu_is_shown_as_the_summary_shows_it(runs, capsys, tmp_path):
    round_dir = _copy(runs["same"], tmp_path / "run")
    _edit(round_dir / "round_record.json", lambda doc: doc["mfu"].update(value=0.0027))
    code, out, _ = compare(capsys, runs["reference"], round_dir)
    (row,) = [line.split() for line in out.splitlines() if line.split()[:1] == ["mfu"]]
    assert row[:3] == ["mfu", "-", "0.27%"]  # the reference's cpu vendor has no peak FLOP/s


def test_a_round_without_a_record_is_named(runs, capsys, tmp_path):
    round_dir = _copy(runs["same"], tmp_path / "run")
    (round_dir / "round_record.json").unlink()
    code, _, err = compare(capsys, runs["reference"], round_dir)
    assert code == 2 and f"{round_dir / 'round_record.json'}: missing: the round has no record" in err


def test_a_failed_round_has_no_final_metric_to_compare(runs, capsys, tmp_path):
    round_dir = _copy(runs["same"], tmp_path / "run")

    def failed(doc):
        doc.update(status="failed", reason="rank 0 exited 1")
        doc["metrics"]["final_metric"] = None
    _edit(round_dir / "round_record.json", failed)
    code, _, err = compare(capsys, runs["reference"], round_dir)
    assert code == 2
    assert f"{round_dir / 'round_record.json'}: the round failed (rank 0 exited 1) and has no final metric" in err


def test_curves_without_a_common_step_are_named(runs, capsys, tmp_path):
    round_dir = _copy(runs["same"], tmp_path / "run")
    (events,) = round_dir.glob("*_noderank0/rank0.events.jsonl")
    lines = [json.loads(line) for line in events.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        if "step" in line["value"]:
            line["value"]["step"] += 1000
    events.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    code, _, err = compare(capsys, runs["reference"], round_dir)
    assert code == 2
    assert f"{events} (steps 1001..{1000 + STEPS}, {STEPS} logged)" in err and "no step logged in both" in err


def test_a_missing_events_file_is_named(runs, capsys, tmp_path):
    round_dir = _copy(runs["same"], tmp_path / "run")
    (events,) = round_dir.glob("*_noderank0/rank0.events.jsonl")
    events.unlink()
    code, _, err = compare(capsys, runs["reference"], round_dir)
    assert code == 2 and f"{events}: missing: no events of rank 0, no loss curve" in err


def test_a_run_of_several_cases_asks_for_the_case(runs, capsys, tmp_path):
    run_dir = tmp_path / "run"
    case_dir = _copy(runs["same"], run_dir).parent
    shutil.copytree(case_dir, run_dir / "digits_cnn_CPUx1x2")
    code, _, err = compare(capsys, runs["reference"], run_dir)
    assert code == 2
    assert f"{run_dir}: a run of 2 cases (digits_cnn_CPUx1x1, digits_cnn_CPUx1x2): give the case directory" in err


def test_a_missing_round_lists_the_rounds(runs, capsys):
    code, _, err = compare(capsys, runs["reference"], runs["same"], "--round", "2")
    assert code == 2 and "round2: no such round (rounds: round1; --round N picks one)" in err


def test_different_cases_are_never_compared(runs, capsys, tmp_path):
    round_dir = _copy(runs["same"], tmp_path / "run")
    _edit(round_dir.parent / "resolved_config.json", lambda doc: doc.update(case="other_case"))
    code, _, err = compare(capsys, runs["reference"], round_dir, "--allow-diff", "case")
    assert code == 2 and "different cases (digits_cnn and other_case)" in err


def test_a_bad_tolerance_is_refused(runs, capsys):
    code, _, err = compare(capsys, runs["reference"], runs["same"], "--tolerance", "nan")
    assert code == 2 and "--tolerance nan: expected a number >= 0" in err


def test_a_run_from_before_the_rename_is_read_by_every_command(runs, capsys, tmp_path):
    """A run directory whose round records are still named result.json (written before round_record.json) is
    summarized, reported, compared, compared as a run and indexed in the history as the same run renamed is."""
    old = tmp_path / runs["same"].name
    shutil.copytree(runs["same"], old)
    for path in old.glob(f"*/round*/{RECORD_NAME}"):
        path.rename(path.with_name(OLD_RECORD_NAME))
    assert not list(old.glob(f"*/round*/{RECORD_NAME}")) and list(old.glob(f"*/round*/{OLD_RECORD_NAME}"))
    summary = summarize_run(old)
    assert {**summary.to_json(), "run_dir": None} == {**summarize_run(runs["same"]).to_json(), "run_dir": None}
    assert [entry.valid for entry in read_run(old).rounds] == [True]
    assert main(["report", str(old)]) == 0 and (old / REPORT_NAME).is_file()
    code, out, _ = compare(capsys, runs["reference"], old)
    assert code == 0 and out.rstrip().splitlines()[-1].startswith("PASS: ")
    code, out, err = compare(capsys, old, runs["reference"])
    assert code == 0, err
    assert main(["compare-runs", str(runs["reference"]), str(old), "--json"]) == 0
    (match,) = json.loads(capsys.readouterr().out)["matches"]
    assert [side["valid_rounds"] for side in match["sides"]] == [1, 1]
    _, rows, problems = index_run(old)
    _, same_rows, _ = index_run(runs["same"])
    assert problems == [] and [r["status"] for r in rows] == [summary.cases[0].rounds[0]["status"]]
    assert [{**r, "run_dir": None} for r in rows] == [{**r, "run_dir": None} for r in same_rows]
