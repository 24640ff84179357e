"""The operation task's real rows through every view: the test chip's suite run for real (`case_runners run --task
operation --vendor testchip`, a few operators at its small shapes, native and testlib, testlib's relu made wrong in
the second run) read by the HTML report, compare-runs and history as the task writes them (tolerance {atol, rtol},
null roofline without a peak)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from case_runners.cli import main as cli
from case_runners.core.paths import PROJECT_ENV, project_root
from testchip import chip_project

REPO = project_root()
# mm (compute-bound), relu (memory-bound, the kernel testlib breaks), bitwise_and (INT32: no peak, no roofline)
SUITE = ("--set", "suite=[mm,relu,bitwise_and]", "--set", "dtypes=[FP32,FP16,INT32]", "--set", "iterations=3",
         "--set", "warmup=1")
BROKEN = 'BROKEN: tuple[str, ...] = ("relu",)'


def _run(project: Path, results: Path) -> Path:
    done = subprocess.run([sys.executable, "-m", "case_runners", "run", "--task", "operation", "--vendor", "testchip",
                           "--no-monitors", *SUITE, "--results-dir", str(results)], cwd=REPO, capture_output=True,
                          text=True, timeout=600, check=False,
                          env={**os.environ, "OMP_NUM_THREADS": "1", PROJECT_ENV: str(project)})
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]  # 1: an incorrect row
    (run_dir,) = results.glob("run*")
    return run_dir


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path]:
    """(a clean run, a run with testlib's relu broken)."""
    root = tmp_path_factory.mktemp("operation_views")
    project = chip_project(root / "project")
    clean = _run(project, root / "clean")
    lib = project / "vendor" / "testchip" / "testlib.py"
    lib.write_text(lib.read_text().replace("BROKEN: tuple[str, ...] = ()", BROKEN))
    assert BROKEN in lib.read_text()
    return clean, _run(project, root / "broken")


def test_the_report_shows_real_rows_with_the_roofline_and_the_incorrect_row_in_red(runs, tmp_path, capsys):
    _, broken = runs
    out = tmp_path / "report.html"
    assert cli.main(["report", str(broken), "-o", str(out)]) == 0
    capsys.readouterr()
    page = out.read_text()
    summary = re.search(r'<section id="summary">(.*?)</section>', page, re.S).group(1)
    assert "No case in this run" not in summary and "<td>relu</td><td>FP32</td><td>yes</td>" in summary
    assert summary.count('<td class="bad">NO</td>') == 2, "testlib's relu FP32 and FP16 in the Summary"
    body = re.search(r'<section id="operation">(.*?)</section>', page, re.S).group(1)
    assert re.search(r'<img src="data:image/svg\+xml;base64,[^"]+" alt="roofline of operators 1x1">', body)
    bad = re.findall(r'<td class="bad">(.*?)</td>', body)
    assert len(bad) == 2 and all(re.fullmatch(r"INCORRECT \(max error 0\.5\d*, atol 0\.0+1, rtol 0\.0+1\)", b)
                                 for b in bad), bad
    assert '<p class="warn">relu FP32 testlib: max error 0.5' in body
    assert re.search(r"<td>ok \(max error 0, atol 0.0, rtol 0.0\)</td>", body), "an integer row: compared exactly"
    assert "{'atol'" not in page and "None" not in body


def test_compare_runs_and_history_read_the_real_rows(runs, tmp_path, capsys):
    clean, broken = runs
    assert cli.main(["compare-runs", str(clean), str(broken)]) == 0
    text = capsys.readouterr().out
    assert "roofline fraction (geometric mean)" in text
    for figure in ("mm FP32 native", "relu FP32 testlib", "bitwise_and INT32 testlib"):
        assert re.search(rf"^  {figure} +(GFLOP/s|GB/s) +[\d.]+ \(1\) +[\d.]+ \(1\)", text, re.M), (figure, text)
    db = tmp_path / "history.sqlite"
    assert cli.main(["history", "add", "--db", str(db), str(clean), str(broken)]) == 0
    capsys.readouterr()
    assert cli.main(["history", "list", "--db", str(db), "--task", "operation", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert [(r["run_id"], r["status"]) for r in found] == [(clean.name, "success"), (broken.name, "not_converged")]
    rows = found[1]["metrics"]["operation"]
    assert {(r["op"], r["dtype"]) for r in rows if not r["correct"]} == {("relu", "FP32"), ("relu", "FP16")}
    assert all(isinstance(r["tolerance"], dict) and r["check_shape"] for r in rows)
    assert cli.main(["history", "list", "--db", str(db), "--task", "operation"]) == 0
    listing = capsys.readouterr().out.splitlines()
    assert re.search(r"operators_operation_TC1x1x1 .* success .* \d+\.\d+%$", listing[1]), listing
    assert re.search(r"operators_operation_TC1x1x1 .* not_converged .* -$", listing[2]), "a broken relu: no figure"
