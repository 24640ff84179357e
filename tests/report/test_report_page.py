"""As a user would: real `case_runners run` runs (digits_cnn: two rounds, a round that fails, another run to align
with the first; a gemm base run on a vendor that states an fp32 peak; llama generate), the report each one writes,
the digits runs side by side and the base and generate runs together, rendered in a real headless Chromium: no
console error, the sections of the runs' tasks (and no other), every image decoded, a screenshot kept in
test-artifacts/report/."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from browser import Browser
from case_runners.cli.main import main
from case_runners.core.netutil import free_port
from case_runners.core.paths import PROJECT_ENV
from case_runners.views.report import REPORT_NAME
from case_runners.views.report.sections import SECTION_IDS

# The sections each page has: those of its runs' tasks (the others are named in the header as not in the report).
TRAINING = ["summary", "throughput", "mfu", "convergence", "monitors", "environment", "failures"]
SECTIONS = {"ok": TRAINING, "both": ["summary", "side-by-side", "throughput", "mfu", "convergence", "alignment",
                                     "monitors", "environment", "failures"],
            "tasks": ["summary", "side-by-side", "base", "generate", "environment", "failures"]}

REPO = Path(__file__).resolve().parents[2]
PAGE_FACTS = """JSON.stringify({
  sections: [...document.querySelectorAll("section")].map(s => s.id),
  nav: [...document.querySelectorAll("nav a")].map(a => a.getAttribute("href").slice(1)),
  omitted: (document.querySelector("p.omitted") || {}).textContent || "",
  images: [...document.images].map(i => [i.naturalWidth, i.naturalHeight, i.complete]),
  links: [...document.querySelectorAll("[src], [href]")].map(e => e.getAttribute("src") || e.getAttribute("href"))
    .filter(u => !u.startsWith("data:image/") && !u.startsWith("#")),
  alert: (document.getElementById("no-results") || {}).textContent || null,
  text: Object.fromEntries([...document.querySelectorAll("section")].map(s => [s.id, s.textContent])),
  drawn: Object.fromEntries([...document.querySelectorAll("section")].map(s => [s.id, s.querySelectorAll("img")
    .length])),
})"""
FP32_PEAK = "peak_flops: {fp32: 1.0e12}"  # what a vendor engineer writes into vendor.yaml for their machine
GENERATE = ("--task", "generate", "--set", "batch_sizes=[1,2]", "--set", "prompt_lens=[16]", "--set", "output_lens=[8]",
            "--set", "iterations=2", "--repeat", "2")


def run_case(results: Path, *argv: str, case: str = "digits_cnn",
             env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess, Path]:
    done = subprocess.run([sys.executable, "-m", "case_runners", "run", case, "--results-dir", str(results), *argv],
                          cwd=REPO, capture_output=True, text=True, timeout=600, check=False, env=env)
    (run_dir,) = results.glob("run*")
    return done, run_dir


def peak_project(root: Path) -> Path:
    """A project copy whose cpu vendor states an fp32 peak for its hardware, as its README says to."""
    for folder in ("case_runners", "vendor"):
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    vendor_yaml = root / "vendor" / "cpu" / "vendor.yaml"
    text = vendor_yaml.read_text()
    assert "peak_flops: {}" in text
    vendor_yaml.write_text(text.replace("peak_flops: {}", FP32_PEAK))
    return root


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("report")
    project = peak_project(root / "project")
    # The runs are independent, each into its own results dir: two at a time (two cores; each mostly starts Python).
    with ThreadPoolExecutor(max_workers=2) as pool:
        # Two rounds of a few steps, the monitors sampling often enough to draw the phases.
        started = [pool.submit(run_case, root / "ok", "--repeat", "2", "--step", "40", "--monitor-interval-s", "0.2"),
                   # Node 0 of two, alone: node 1 never joins, the round fails with its reason (a bound on a hang,
                   # not on speed).
                   pool.submit(run_case, root / "failed", "--nnode", "2", "--node-rank", "0", "--run-id",
                               "run-report-failed", "--master-port", str(free_port()), "--rdzv-timeout-s", "3",
                               "--step", "5"),
                   # The same case and seed again: its loss curve aligns with the first run's.
                   pool.submit(run_case, root / "again", "--step", "40", "--no-monitors"),
                   pool.submit(run_case, root / "gemm", "--task", "base", "--set", "shapes=[[256,256,256]]", "--set",
                               "precisions=[fp32,bf16]", "--set", "iterations=3", "--repeat", "2", "--no-monitors",
                               case="gemm", env={**os.environ, PROJECT_ENV: str(project)}),
                   pool.submit(run_case, root / "generate", *GENERATE, "--no-monitors", case="llama")]
    (ok, ok_dir), (failed, failed_dir), (again, again_dir), (gemm, gemm_dir), (generate, generate_dir) = (
        run.result() for run in started)
    assert ok.returncode in (0, 1), ok.stderr[-3000:]  # 1: not converged in 40 steps, a valid result
    assert failed.returncode == 1, failed.stderr[-3000:]
    for done, run_dir in ((ok, ok_dir), (failed, failed_dir), (again, again_dir), (gemm, gemm_dir),
                          (generate, generate_dir)):
        assert done.returncode in (0, 1) and done.stdout, done.stderr[-3000:]
        assert done.stdout.splitlines()[-1] == f"report: {run_dir / REPORT_NAME}", "the run ends with its path"
    assert gemm.returncode == 0 and generate.returncode == 0, (gemm.stderr[-3000:], generate.stderr[-3000:])
    both, tasks = root / "both.html", root / "tasks.html"
    assert main(["report", str(ok_dir), str(again_dir), str(failed_dir), "-o", str(both)]) == 0
    assert main(["report", str(gemm_dir), str(generate_dir), "-o", str(tasks)]) == 0
    return {"ok": ok_dir / REPORT_NAME, "failed": failed_dir / REPORT_NAME, "both": both, "tasks": tasks}


def test_the_reports_render_in_chromium(runs, chromium, artifacts, capsys):
    browser = Browser(chromium)
    try:
        for name, page in runs.items():
            browser.events.clear()
            browser.load(page)
            facts = json.loads(browser.evaluate(PAGE_FACTS))
            assert browser.errors() == [], f"{page}: console errors"
            assert facts["sections"] == facts["nav"] == [sid for sid in SECTION_IDS if sid in facts["sections"]]
            assert facts["sections"] == SECTIONS.get(name, facts["sections"]), page
            assert facts["images"] and all(w > 0 and h > 0 and done for w, h, done in facts["images"]), page
            assert facts["links"] == [], f"{page}: a URL outside the page"
            shot = browser.screenshot(artifacts / f"report-{name}.png")
            with capsys.disabled():
                print(f"\nscreenshot of {page}: {shot}")
            text, drawn = facts["text"], facts["drawn"]
            if name == "ok":
                assert facts["alert"] is None
                # throughput, loss and eval metric, one monitor figure for both rounds
                assert len(facts["images"]) == 3
                assert "Accuracy alignment (one run: an alignment needs a reference run" in facts["omitted"]
                assert "Base benchmarks (no base benchmark" in facts["omitted"]
                assert "Generation latency (no generate case" in facts["omitted"]
                assert "p_whole, the whole training loop" in text["throughput"]
                assert "a training round's init, training and evaluation" in text["monitors"]
            if name == "failed":
                assert "No successful round" in facts["alert"]
                assert "rendezvous: node(s) 1 did not join" in text["failures"]
                assert "base" not in text and "side-by-side" not in text
            if name == "both":
                assert facts["alert"] is None and "rendezvous: node(s) 1 did not join" in text["failures"]
                # The second run aligns with the first; the failed run ran another scale.
                assert "PASS" in text["alignment"] and drawn["alignment"] == 1
                assert "the reference run has no training case digits_cnn 2x1" in text["alignment"]
                # compare-runs' ratios and verdicts: the second run's one round against the first's two; the failed
                # run compared with nothing; the second run left no host monitor to describe the host
                side = text["side-by-side"]
                assert "digits_cnn training 1x1" in side and "#2/#1" in side and "p_train" in side
                assert side.count("one round: noise unknown") >= 5
                assert "the baseline has no digits_cnn training 2x1" in side
                assert "Environment differences" in side and "host.cpu_model" in side
            if name == "tasks":
                # Achieved TFLOP/s, and the fraction of the fp32 peak; bf16 has none and says why.
                assert drawn["base"] == 2 and "hardware.CPU.peak_flops.bf16" in text["base"]
                assert drawn["generate"] == 3 and "engine agreement, llama_generate_CPUx1x1" in text["generate"]
                assert "Throughput (no training or inference case)" in facts["omitted"]
                assert "Loss and eval metric (no training case: no loss curve)" in facts["omitted"]
                assert "Monitors (no round has monitor samples: run without --no-monitors)" in facts["omitted"]
                # no case of one is in the other; gemm ran from a project copy that is no git checkout
                assert "No figure to compare: nothing to compare" in text["side-by-side"]
                assert "perfplay.commit" in text["side-by-side"]
    finally:
        browser.close()


def test_the_report_of_a_run_is_up_to_date(runs, capsys):
    run_dir = runs["ok"].parent
    assert main(["report", str(run_dir), "--json", "--check"]) == 0
    assert '"changed": false' in capsys.readouterr().out
