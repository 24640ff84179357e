"""As a user would: real `case_runners run digits_cnn` runs (two rounds; a round that fails), the report each one
writes and the two side by side, rendered in a real headless Chromium: no console error, every section present,
every image decoded, a screenshot kept in test-artifacts/report/."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from browser import Browser
from case_runners.cli import main
from case_runners.netutil import free_port
from case_runners.report import REPORT_NAME
from case_runners.report.sections import SECTION_IDS

REPO = Path(__file__).resolve().parents[2]
PAGE_FACTS = """JSON.stringify({
  sections: [...document.querySelectorAll("section")].map(s => s.id),
  images: [...document.images].map(i => [i.naturalWidth, i.naturalHeight, i.complete]),
  links: [...document.querySelectorAll("[src], [href]")].map(e => e.getAttribute("src") || e.getAttribute("href"))
    .filter(u => !u.startsWith("data:image/") && !u.startsWith("#")),
  alert: (document.getElementById("no-results") || {}).textContent || null,
  failures: document.getElementById("failures").textContent,
})"""


def run_case(results: Path, *argv: str) -> tuple[subprocess.CompletedProcess, Path]:
    done = subprocess.run([sys.executable, "-m", "case_runners", "run", "digits_cnn", "--results-dir", str(results),
                           *argv], cwd=REPO, capture_output=True, text=True, timeout=600, check=False)
    (run_dir,) = results.glob("run*")
    return done, run_dir


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("report")
    # Two rounds of a few steps, the monitors sampling often enough to draw the phases.
    ok, ok_dir = run_case(root / "ok", "--repeat", "2", "--step", "40", "--monitor-interval", "0.2")
    assert ok.returncode in (0, 1), ok.stderr[-3000:]  # 1: not converged in 40 steps, a valid result
    # Node 0 of two, alone: node 1 never joins, the round fails with its reason (a bound on a hang, not on speed).
    failed, failed_dir = run_case(root / "failed", "--nnode", "2", "--node-rank", "0", "--run-id", "run-report-failed",
                                  "--master-port", str(free_port()), "--rdzv-timeout-s", "3", "--step", "5")
    assert failed.returncode == 1, failed.stderr[-3000:]
    for done, run_dir in ((ok, ok_dir), (failed, failed_dir)):
        assert done.stdout.splitlines()[-1] == f"report: {run_dir / REPORT_NAME}", "the run ends with its path"
    both = root / "both.html"
    assert main(["report", str(ok_dir), str(failed_dir), "-o", str(both)]) == 0
    return {"ok": ok_dir / REPORT_NAME, "failed": failed_dir / REPORT_NAME, "both": both}


def test_the_reports_render_in_chromium(runs, chromium, artifacts, capsys):
    browser = Browser(chromium)
    try:
        for name, page in runs.items():
            browser.events.clear()
            browser.load(page)
            facts = json.loads(browser.evaluate(PAGE_FACTS))
            assert browser.errors() == [], f"{page}: console errors"
            assert facts["sections"] == list(SECTION_IDS), page
            assert facts["images"] and all(w > 0 and h > 0 and done for w, h, done in facts["images"]), page
            assert facts["links"] == [], f"{page}: a URL outside the page"
            shot = browser.screenshot(artifacts / f"report-{name}.png")
            with capsys.disabled():
                print(f"\nscreenshot of {page}: {shot}")
            if name == "ok":
                assert facts["alert"] is None
                # throughput, loss and eval metric, one monitor figure per round
                assert len(facts["images"]) == 4
            if name == "failed":
                assert "No successful round" in facts["alert"]
                assert "rendezvous: node(s) 1 did not join" in facts["failures"]
            if name == "both":
                assert facts["alert"] is None and "rendezvous: node(s) 1 did not join" in facts["failures"]
    finally:
        browser.close()


def test_the_report_of_a_run_is_up_to_date(runs, capsys):
    run_dir = runs["ok"].parent
    assert main(["report", str(run_dir), "--json", "--check"]) == 0
    assert '"changed": false' in capsys.readouterr().out
