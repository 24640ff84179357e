"""`python -m case_runners compare-runs`: the noise rule and the directions on small synthetic statistics, then real
runs compared as a user would: digits_cnn on the cpu vendor (two rounds), the same with half its batch, the same on
the test chip (tests/vendor_testchip, another vendor), and a gemm base run (another case)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from case_runners.cli import main as cli
from case_runners.core.paths import PROJECT_ENV, project_root
from case_runners.records.names import TASKS
from case_runners.records.summary import Stat, stat_keys
from case_runners.views.compare.runs import (
    BETTER,
    FIGURES,
    HIGHER,
    LOWER,
    NO_VALUE,
    ONE_ROUND,
    WITHIN,
    WORSE,
    CaseSide,
    Match,
    Row,
    RunComparison,
    compare_stat,
    is_regression,
    noise,
    noise_unknown,
    regressions,
)
from case_runners.views.compare.runs_cli import OPTION
from testchip import chip_project

REPO = project_root()
# Half the batch where the per-step overhead (bf16 autocast's casts, a logged step) outweighs the compute: the
# smallest sizes, where it is about half the samples/s (measured on two cores), a direction a loaded machine does not
# turn round. lr 0.002: steps of one or two samples diverge at the case's 0.05.
BATCH = 2
STEPS = 1500
DIGITS = ("digits_cnn", "--lr", "0.002", "--autocast", "--set", "log_freq=1", "--set", "seed=3")
THROUGHPUTS = ("p_train", "p_core")
# One thread per rank: on a loaded two-core machine, two threads of a rank wait on each other and its throughput
# swings several-fold from round to round.
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


# -- the arithmetic ---------------------------------------------------------------------------------------------------


def test_every_figure_of_every_task_says_which_way_is_better():
    for task in TASKS:
        for key in stat_keys(task):
            assert key in FIGURES, (task, key)
    assert FIGURES["p_core"][0] == HIGHER and FIGURES["e2e_time"][0] == LOWER and FIGURES["ttft_ms"][0] == LOWER


def test_the_noise_is_two_standard_errors_of_the_difference():
    a, b = Stat(mean=100.0, std=3.0, n=9), Stat(mean=90.0, std=4.0, n=4)
    assert noise(a, b) == pytest.approx(2 * (1 + 4) ** 0.5)
    assert noise(Stat(mean=1.0, std=0.0, n=1), b) is None


@pytest.mark.parametrize("b, better, verdict, ratio, worse_by", [
    (Stat(mean=90.0, std=1.0, n=4), HIGHER, WORSE, 0.9, 10.0),  # 10 > 2 x sqrt(1/4 + 1/4)
    (Stat(mean=90.0, std=1.0, n=4), LOWER, BETTER, 0.9, -10.0),
    (Stat(mean=99.0, std=1.0, n=4), HIGHER, WITHIN, 0.99, 1.0),  # 1 <= 1.41
    (Stat(mean=90.0, std=0.0, n=1), HIGHER, ONE_ROUND, 0.9, 10.0),
    (Stat(mean=None, std=None, n=0), HIGHER, NO_VALUE, None, None),
])
def test_a_verdict_follows_the_noise_and_the_direction(b, better, verdict, ratio, worse_by):
    cell = compare_stat(1, Stat(mean=100.0, std=1.0, n=4), b, better)
    assert cell.verdict == verdict
    assert cell.ratio == (None if ratio is None else pytest.approx(ratio))
    assert cell.worse_by == (None if worse_by is None else pytest.approx(worse_by))


def test_a_regression_is_worse_than_the_percentage_and_beyond_the_noise():
    base = Stat(mean=100.0, std=10.0, n=2)
    noisy = compare_stat(1, base, Stat(mean=80.0, std=10.0, n=2), HIGHER)  # 20 <= 2 x 10: within noise
    assert noisy.verdict == WITHIN and not is_regression(noisy, 5)
    beyond = compare_stat(1, base, Stat(mean=50.0, std=10.0, n=2), HIGHER)  # 50 > 2 x 10
    assert beyond.verdict == WORSE and is_regression(beyond, 5) and not is_regression(beyond, 60)
    single = compare_stat(1, base, Stat(mean=58.0, std=0.0, n=1), HIGHER)  # one round: the noise is unknown
    assert single.verdict == ONE_ROUND and not is_regression(single, 5)
    faster = compare_stat(1, base, Stat(mean=50.0, std=0.0, n=1), LOWER)
    assert not is_regression(faster, 0)


def _match(*cells: tuple[str, Stat, Stat]) -> Match:
    """digits_cnn at 1x1 in two runs of two valid rounds each: a p_train row per (figure, baseline, later run)."""
    sides = [CaseSide(run=i, run_id=f"run{i}", case_id="digits_cnn_CPUx1x1", vendor="cpu", hardware="CPU",
                      framework="pytorch", standard=True, status="success", valid_rounds=2, differences={})
             for i in (0, 1)]
    rows = [Row(figure=name, unit="samples/s", better=HIGHER, baseline=a, others=[compare_stat(1, a, b, HIGHER)])
            for name, a, b in cells]
    return Match(case="digits_cnn", task="training", nnodes=1, nproc=1, sides=sides, rows=rows)


def test_one_round_a_side_is_no_regression_and_says_why():
    """Two one-round runs 42 % apart (what two identical runs a minute apart gave on a loaded machine) do not fail
    --fail-on-regression; a figure beyond a known noise does."""
    one = _match(("p_train", Stat(mean=100.0, std=0.0, n=1), Stat(mean=58.0, std=0.0, n=1)))
    assert regressions([one], 5) == []
    assert noise_unknown([one], 5) == [
        "digits_cnn training 1x1: p_train of run #2 is 42.0% worse than the baseline's (ratio 0.580, higher is "
        "better; noise unknown: one round (#1 has 1 value(s) of it, #2 1); not a regression: run --repeat 2 or more "
        "on both sides for a verdict)"]
    assert noise_unknown([one], 50) == []
    known = _match(("p_train", Stat(mean=100.0, std=1.0, n=3), Stat(mean=58.0, std=1.0, n=3)))
    assert noise_unknown([known], 5) == [] and len(regressions([known], 5)) == 1


# -- real runs --------------------------------------------------------------------------------------------------------


def _run(results: Path, *args: str, env: dict[str, str] = ENV) -> Path:
    """`case_runners run ARGS` into `results`: its run directory."""
    done = subprocess.run([sys.executable, "-m", "case_runners", "run", *args, "--results-dir", str(results),
                           "--no-monitors"], cwd=REPO, capture_output=True, text=True, timeout=600, check=False,
                          env=env)
    assert done.returncode in (0, 1), done.stderr[-3000:]  # 1: a round did not converge
    (run_dir,) = results.glob("run*")
    return run_dir


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("compare_runs")
    project = chip_project(root / "project")
    return {
        "full": _run(root / "full", *DIGITS, "--step", str(STEPS), "--batch-size", str(BATCH), "--repeat", "2"),
        "half": _run(root / "half", *DIGITS, "--step", str(STEPS), "--batch-size", str(BATCH // 2)),
        "testchip": _run(root / "testchip", *DIGITS, "--step", "100", "--batch-size", str(BATCH),
                         "--vendor", "testchip", env={**ENV, PROJECT_ENV: str(project)}),
        "gemm": _run(root / "gemm", "gemm", "--task", "base", "--set", "shapes=[[128,128,128]]",
                     "--set", "precisions=[fp32]"),
    }


def compare(capsys, *args: str | Path) -> tuple[int, str, str]:
    code = cli.main(["compare-runs", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def compare_json(capsys, *args: str | Path) -> tuple[int, dict]:
    code, out, _ = compare(capsys, *args, "--json")
    doc = json.loads(out)
    assert doc["schema"] == "perfplay.run_comparison/1"
    assert RunComparison.from_json(doc).to_json() == doc  # a valid document of its schema
    return code, doc


def rows(doc: dict, match: int = 0) -> dict[str, dict]:
    return {row["figure"]: row for row in doc["matches"][match]["rows"]}


def test_a_run_against_itself_shows_no_difference(runs, capsys):
    code, doc = compare_json(capsys, runs["full"], runs["full"], OPTION, "0")
    assert code == 0 and doc["regressions"] == [] and doc["skipped"] == []
    (match,) = doc["matches"]
    assert (match["case"], match["task"], match["nnodes"], match["nproc"]) == ("digits_cnn", "training", 1, 1)
    assert match["sides"][1]["differences"] == {} and match["sides"][1]["valid_rounds"] == 2
    found = rows(doc)
    assert {"p_whole", "p_train", "p_core", "e2e_time", "init_time", "final_metric"} <= set(found)
    for row in found.values():
        (cell,) = row["others"]
        assert cell["ratio"] == 1.0 and cell["difference"] == 0.0 and cell["verdict"] == WITHIN, row
    code, out, _ = compare(capsys, runs["full"], runs["full"], OPTION, "0")
    assert code == 0 and "no regression" in out
    assert out.count("within noise") == len(found)


def test_half_the_batch_gives_fewer_samples_per_second(runs, capsys):
    code, doc = compare_json(capsys, runs["full"], runs["half"])
    assert code == 0  # no --fail-on-regression: a comparison, no verdict on the exit status
    (match,) = doc["matches"]
    assert match["sides"][1]["differences"] == {"batch_size": [BATCH, BATCH // 2]}
    found = rows(doc)
    for key in THROUGHPUTS:
        (cell,) = found[key]["others"]
        assert found[key]["better"] == HIGHER and found[key]["unit"] == "samples/s"
        assert cell["ratio"] < 1 and cell["worse_by"] > 0, found[key]
        assert cell["verdict"] == ONE_ROUND  # its one round: the noise is unknown
        assert (cell["stat"]["n"], cell["stat"]["std"]) == (1, None)  # unknown, not 0 (no noise)
        assert found[key]["baseline"]["n"] == 2 and found[key]["baseline"]["std"] is not None
    code, out, _ = compare(capsys, runs["full"], runs["half"])
    assert "params that differ: batch_size 2 -> 1" in out and "one round: noise unknown" in out
    p_train = next(line for line in out.splitlines() if line.lstrip().startswith("p_train "))
    assert p_train.count("±") == 1 and p_train.count("(1)") == 1, p_train  # the one-round side shows no ±


def test_one_round_worse_by_more_than_pct_is_said_and_not_failed(runs, capsys):
    """Two round against one (half the batch): with one round the noise is unknown, so every figure worse than the
    baseline's by more than PCT is listed with why, and --fail-on-regression exits 0. Each way round, so that every
    throughput is worse in one of them whatever a loaded machine did to the rounds."""
    listed = []
    for base, other in ((runs["full"], runs["half"]), (runs["half"], runs["full"])):
        code, doc = compare_json(capsys, base, other, OPTION, "0")
        worse = [row["figure"] for row in doc["matches"][0]["rows"] for cell in row["others"]
                 if cell["worse_by"] is not None and cell["worse_by"] > 0]
        assert code == 0 and doc["regressions"] == [], doc
        assert [line.split(": ")[1].split(" of run")[0] for line in doc["noise_unknown"]] == worse
        listed += worse
        code, out, _ = compare(capsys, base, other, OPTION, "0")
        assert code == 0 and "REGRESSION" not in out
        if worse:
            unknown = out[out.index("noise unknown: worse than the baseline by more than 0 %, with one round on a "
                                    "side (not failed):"):]
            assert f"digits_cnn training 1x1: {worse[0]} of run #2 is " in unknown
            assert "noise unknown: one round (#1 has " in unknown and "not a regression: run --repeat 2" in unknown
            assert out.endswith("no regression: no figure worse than the baseline by more than 0 % beyond the "
                                "noise; the figures above were not judged (noise unknown: one round)\n")
    assert set(THROUGHPUTS) <= set(listed), "each throughput is worse one way round"


@pytest.mark.parametrize("value", ["-1", "five", "nan", "inf"])
def test_a_bad_percentage_is_refused_before_any_run_is_read(value, capsys, tmp_path):
    code, out, err = compare(capsys, tmp_path / "absent", tmp_path / "absent", OPTION, value)
    assert code == 2 and out == ""
    assert err == f"error: {OPTION} {value!r}: expected a percentage, a number >= 0 (5 for 5 %)\n"


def test_a_run_without_a_valid_round_is_a_regression(runs, capsys, tmp_path):
    interrupted = tmp_path / runs["half"].name
    shutil.copytree(runs["half"], interrupted)
    (record,) = interrupted.glob("*/round1/round_record.json")
    record.unlink()  # the round started and left no record: interrupted
    code, out, _ = compare(capsys, runs["full"], interrupted, OPTION, "5")
    assert code == 1
    assert f"digits_cnn training 1x1: digits_cnn_CPUx1x1 of run #2 ({interrupted.name}) has no valid round " \
           f"(interrupted)" in out


def test_two_vendors_compare_in_one_table(runs, capsys):
    code, doc = compare_json(capsys, runs["full"], runs["testchip"])
    assert code == 0
    (match,) = doc["matches"]
    sides = [(s["case_id"], s["vendor"], s["hardware"]) for s in match["sides"]]
    assert sides == [("digits_cnn_CPUx1x1", "cpu", "CPU"), ("digits_cnn_TC1x1x1", "testchip", "TC1")]
    assert match["sides"][1]["differences"] == {"max_steps": [STEPS, 100]}  # the chip's own config set the others
    assert all(row["others"][0]["stat"]["n"] == 1 for row in match["rows"] if row["others"][0]["stat"]["mean"])
    code, out, _ = compare(capsys, runs["full"], runs["testchip"])
    header = out.splitlines()[out.splitlines().index("digits_cnn training 1x1") + 3:][:2]
    assert runs["full"].name in header[0] and runs["testchip"].name in header[0]
    assert "cpu CPU" in header[1] and "testchip TC1" in header[1]


def test_different_cases_are_skipped_by_name(runs, capsys):
    code, out, err = compare(capsys, runs["full"], runs["gemm"])
    assert code == 2 and out == ""
    assert err.startswith("error: nothing to compare: ")
    assert f"run #1 ({runs['full'].name}) digits_cnn_CPUx1x1: no later run has digits_cnn training 1x1" in err
    assert f"run #2 ({runs['gemm'].name}) gemm_base_CPUx1x1: the baseline has no gemm base 1x1 (it has: digits_cnn " \
           f"training 1x1)" in err
    code, doc = compare_json(capsys, runs["full"], runs["half"], runs["gemm"])
    assert code == 0 and len(doc["matches"]) == 1 and [c["run"] for c in doc["matches"][0]["sides"]] == [0, 1]
    (skipped,) = doc["skipped"]
    assert (skipped["run"], skipped["case_id"]) == (2, "gemm_base_CPUx1x1")
    code, out, _ = compare(capsys, runs["full"], runs["half"], runs["gemm"])
    assert "skipped (nothing to compare with):\n" \
           f"  #3 {runs['gemm'].name} gemm_base_CPUx1x1: the baseline has no gemm base 1x1" in out


def test_a_base_case_compares_its_headlines(runs, capsys):
    code, doc = compare_json(capsys, runs["gemm"], runs["gemm"])
    assert code == 0
    found = rows(doc)
    for name in ("gemm fp32 best", "gemm fp32 median"):
        assert found[name]["unit"] == "FLOP/s" and found[name]["better"] == HIGHER
        assert found[name]["others"][0]["ratio"] == 1.0 and found[name]["others"][0]["verdict"] == ONE_ROUND


def test_what_is_not_a_run_directory_is_refused_by_name(runs, capsys, tmp_path):
    case_dir = runs["full"] / "digits_cnn_CPUx1x1"
    for path, why in ((tmp_path, f"{tmp_path}: not a run directory (no <case_id>/resolved_config.json and no "
                                 "<case_id>/round<N>/round_record.json in it)"),
                      (case_dir, f"{case_dir}: not a run directory: a case directory; its run directory is "
                                 f"{runs['full']}"),
                      (case_dir / "round1", f"{case_dir / 'round1'}: not a run directory: a round directory; its "
                                            f"run directory is {runs['full']}"),
                      (tmp_path / "absent", f"{tmp_path / 'absent'}: no such directory")):
        code, out, err = compare(capsys, runs["full"], path)
        assert code == 2 and out == "" and err.startswith(f"error: {why}"), err


def test_a_run_id_of_the_history_database_is_a_run(runs, capsys, tmp_path):
    db = tmp_path / "perfplay.sqlite"
    assert cli.main(["history", "add", str(runs["full"]), "--db", str(db)]) == 0
    capsys.readouterr()
    code, out, _ = compare(capsys, runs["full"].name, runs["full"], "--db", db)
    assert code == 0 and f"#1 {runs['full'].name}" in out and "within noise" in out


def test_one_run_is_not_a_comparison(runs, capsys):
    code, _, err = compare(capsys, runs["full"])
    assert code == 2 and "compare-runs wants two runs or more (the first is the baseline), got 1" in err
