"""The run summary's files in the run directory: summary.json (the aggregation) and summary.md (its Markdown)."""

from __future__ import annotations

from pathlib import Path

from case_runners.core import files
from case_runners.core.errors import PerfplayError
from case_runners.records.summary import SUMMARY_JSON, SUMMARY_MD, RunSummary
from case_runners.records.summary_build import summarize_run
from case_runners.views.summary.markdown import render_markdown


def write_run_summary(run_dir: Path) -> tuple[RunSummary, list[str]]:
    """Write summary.json and summary.md into the run directory (atomically, each only when its content changed);
    (the summary, the paths written: none when the files held it already). One that cannot be written is still
    returned, with the reason in write_error."""
    run_dir = Path(run_dir)
    summary = summarize_run(run_dir)
    written = []
    try:
        for name, text in ((SUMMARY_JSON, files.json_text(summary.to_json())), (SUMMARY_MD, render_markdown(summary))):
            if files.atomic_update_text(run_dir / name, text):
                written.append(str(run_dir / name))
    except PerfplayError as exc:
        summary.write_error = str(exc)
    return summary, written
