"""`compare --plot`: both loss curves against the step, and their relative error beneath with the tolerance, as
a PNG. matplotlib's Agg canvas draws it without pyplot (no display, no global figure state)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from case_runners.core import files
from case_runners.core.errors import PerfplayError
from case_runners.views.compare.report import Comparison, percent, tolerance_text


def plot(found: Comparison, path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8, 6), layout="constrained")
    FigureCanvasAgg(figure)
    draw(found, figure)
    try:
        files.check_writable_dir(Path(path).parent)
        figure.savefig(path, format="png")
    except OSError as exc:
        raise PerfplayError(f"--plot {path}: cannot be written: {exc.strerror or exc}") from None


def draw(found: Comparison, figure: Any) -> None:
    """Both loss curves above their relative error with the tolerance, on a matplotlib Figure (the report's
    alignment section draws the same)."""
    from matplotlib.ticker import PercentFormatter

    steps = [p.step for p in found.loss]
    loss_axes, error_axes = figure.subplots(2, 1, sharex=True, height_ratios=(2, 1))
    for name, side, values in (("reference", found.reference, [p.reference for p in found.loss]),
                               ("candidate", found.candidate, [p.candidate for p in found.loss])):
        loss_axes.plot(steps, values, marker=".", label=f"{name}: {side.vendor} {side.hardware} ({side.run_id})")
    loss_axes.set_ylabel("loss (rank 0)")
    loss_axes.legend()
    loss_axes.set_title(f"{found.case}: {found.verdict} (tolerance {tolerance_text(found.tolerance)}, mean loss error "
                        f"{percent(found.loss_mean_relative_error)})")
    error_axes.plot(steps, [p.relative_error for p in found.loss], marker=".", color="tab:red",
                    label="relative error |c - r| / |r|")
    error_axes.axhline(found.tolerance, linestyle="--", color="gray", label="tolerance")
    error_axes.set_ylim(bottom=0)
    error_axes.yaxis.set_major_formatter(PercentFormatter(1.0))
    error_axes.set_xlabel("step")
    error_axes.set_ylabel("relative error")
    error_axes.legend()
