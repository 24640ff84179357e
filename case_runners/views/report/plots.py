"""The report's figures, drawn with matplotlib's Agg canvas (no display, no pyplot state) as SVG and returned as
data: URIs for an <img>. The same data gives the same bytes (fixed SVG ids, no date), so a report rewritten from
the same runs is unchanged."""

from __future__ import annotations

import base64
import dataclasses
import io
from collections.abc import Sequence
from typing import Any

from case_runners.views.compare.plot import draw
from case_runners.views.compare.report import Comparison
from case_runners.views.report.data import PHASE_NAMES, Phase

WIDTH = 10.5  # inches: 756 SVG points, 1008 CSS pixels
# training: init, training, evaluation; inference: its steps (init shared with training), summary last
PHASE_COLOURS = dict(zip(PHASE_NAMES, ("tab:gray", "tab:green", "tab:orange", "tab:olive", "tab:purple",
                                       "tab:brown", "tab:pink", "tab:cyan", "tab:red"), strict=True))
STYLES = ("-", "--", ":", "-.")
ROUND_LABELS = 12  # the most rounds named above a monitor figure and in a curves figure's legend
MARKERS = ("o", "s", "^", "D")
_RC: dict[Any, Any] = {"svg.hashsalt": "perfplay-report", "svg.fonttype": "path", "font.size": 9.0, "axes.grid": True,
       "grid.alpha": 0.3}


@dataclasses.dataclass(frozen=True)
class Bars:
    """One series of a bar chart: its label, and a mean and std (None: no bar) per group; `missing`: what a group
    without a bar says (default "-")."""
    label: str
    means: Sequence[float | None]
    stds: Sequence[float | None]
    missing: Sequence[str] | None = None


@dataclasses.dataclass(frozen=True)
class Line:
    label: str
    x: Sequence[float]
    y: Sequence[float | None]


@dataclasses.dataclass(frozen=True)
class Panel:
    """A monitor panel: its y label and its lines, on the same time axis as the others."""
    ylabel: str
    lines: list[Line]
    ylim: tuple[float, float] | None = None


def _figure(height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    figure = Figure(figsize=(WIDTH, height), layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _style() -> Any:
    """The report's matplotlib settings, for the drawing and the saving of a figure."""
    import matplotlib
    return matplotlib.rc_context(_RC)


def _uri(figure: Any) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    return "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def bar_chart(groups: Sequence[str], series: Sequence[Bars], ylabel: str, title: str, percent: bool = False,
              reference: float | None = None, number: str = ",.1f") -> str:
    """Grouped bars with error bars (mean ± std), a group per label, each labelled with its mean in the format
    `number`; `reference` draws a dashed line (100 %)."""
    with _style():
        figure = _figure(max(3.0, 1.2 + 0.35 * len(groups) * len(series)))
        axes = figure.subplots()
        height = 0.8 / max(1, len(series))
        scale = 100.0 if percent else 1.0
        for at, bars in enumerate(series):
            ys = [i + (at - (len(series) - 1) / 2) * height for i in range(len(groups))]
            means = [(m or 0.0) * scale for m in bars.means]
            errors = [(s or 0.0) * scale if m is not None else 0.0 for m, s in zip(bars.means, bars.stds, strict=True)]
            drawn = axes.barh(ys, means, height=height * 0.9, xerr=errors, capsize=3, label=bars.label)
            missing = bars.missing or ["-"] * len(bars.means)
            axes.bar_label(drawn, labels=[gone if m is None else f"{m * scale:{number}}" + ("%" if percent else "")
                                          for m, gone in zip(bars.means, missing, strict=True)], padding=4, fontsize=8)
        if reference is not None:
            axes.axvline(reference * scale, linestyle="--", color="gray", label=f"{reference * scale:g}" +
                         ("%" if percent else ""))
        axes.set_yticks(range(len(groups)), list(groups))
        axes.invert_yaxis()
        axes.set_xlabel(ylabel)
        ends = [(m + (d or 0.0)) * scale for bars in series for m, d in zip(bars.means, bars.stds) if m is not None]
        axes.set_xlim(0, max([*ends, reference * scale if reference else 0.0, 1e-9]) * 1.2)  # room for the labels
        axes.set_title(title)
        if len(series) > 1 or reference is not None:
            axes.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
        return _uri(figure)


def line_chart(lines: Sequence[Line], xlabel: str, ylabel: str, title: str, percent: bool = False,
               reference: float | None = None, reference_label: str = "") -> str:
    """Lines with markers against a numeric x; `reference` draws a dashed horizontal line."""
    with _style():
        figure = _figure(3.6)
        axes = figure.subplots()
        for line in lines:
            axes.plot(line.x, [None if y is None else y * (100.0 if percent else 1.0) for y in line.y], marker=".",
                      label=line.label)
        if reference is not None:
            axes.axhline(reference * (100.0 if percent else 1.0), linestyle="--", color="gray", label=reference_label)
        axes.set_xlabel(xlabel)
        axes.set_ylabel(ylabel)
        axes.set_title(title)
        axes.legend(fontsize=8)
        return _uri(figure)


def curves_chart(loss: Sequence[Line], evals: Sequence[Line], metric: str | None, target: float | None,
                 title: str) -> str:
    """The loss curve of each round (rank 0's, against the step) above its eval metric with the target."""
    with _style():
        panels = 2 if evals else 1
        figure = _figure(3.2 * panels)
        axes = figure.subplots(panels, 1, sharex=True, squeeze=False)[:, 0]
        for at, line in enumerate(loss):  # rounds of the same seed overlap: a style each keeps them apart
            axes[0].plot(line.x, line.y, label=_legend_label(line, at, loss), linestyle=STYLES[at % len(STYLES)])
        axes[0].set_ylabel("loss (rank 0)")
        axes[0].set_title(title)
        axes[0].legend(fontsize=8)
        if evals:
            for at, line in enumerate(evals):
                axes[1].plot(line.x, line.y, marker=MARKERS[at % len(MARKERS)], linestyle=STYLES[at % len(STYLES)],
                             label=_legend_label(line, at, evals))
            if target is not None:
                axes[1].axhline(target, linestyle="--", color="gray", label=f"target {target:g}")
            axes[1].set_ylabel(f"eval {metric or 'metric'}")
            axes[1].legend(fontsize=8)
        axes[-1].set_xlabel("step")
        return _uri(figure)


def _legend_label(line: Line, at: int, lines: Sequence[Line]) -> str | None:
    """A line's legend entry: every line's up to ROUND_LABELS lines, else the first's and the last's (a legend of
    every round of a long run would take the figure's place)."""
    if len(lines) <= ROUND_LABELS or at in (0, len(lines) - 1):
        return line.label
    return None


def monitor_chart(panels: Sequence[Panel], phases: Sequence[Phase], t0: float, title: str,
                  starts: Sequence[tuple[float, int]] = ()) -> str:
    """Stacked panels against seconds from t0, each with the phases shaded (one collection per phase name, their
    legend on the first) and a dotted line at each of `starts` (x, round), the rounds named above the first panel
    (at most ROUND_LABELS of them)."""
    with _style():
        figure = _figure(1.2 + 1.7 * len(panels))
        axes = figure.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
        spans: dict[str, list[tuple[float, float]]] = {}
        for phase in phases:
            spans.setdefault(phase.name, []).append((phase.start - t0, max(phase.end - phase.start, 0.0)))
        for at, (panel, ax) in enumerate(zip(panels, axes, strict=True)):
            for name, ranges in spans.items():
                ax.broken_barh(ranges, (0, 1), transform=ax.get_xaxis_transform(), color=PHASE_COLOURS[name],
                               alpha=0.18, linewidth=0, label=name if at == 0 else None)
            if len(starts) > 1:
                ax.vlines([x - t0 for x, _ in starts[1:]], 0, 1, transform=ax.get_xaxis_transform(), colors="gray",
                          linestyles=":", linewidth=0.8)
            for line in panel.lines:
                ax.plot(line.x, line.y, label=line.label, linewidth=1.2)
            if panel.ylim:
                ax.set_ylim(*panel.ylim)
            ax.set_ylabel(panel.ylabel)
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        if len(starts) > 1:
            step = -(-len(starts) // ROUND_LABELS)  # every step-th round named: the names never overlap
            top = axes[0].secondary_xaxis("top")
            top.set_xticks([x - t0 for x, _ in starts[::step]], [f"r{number}" for _, number in starts[::step]],
                           fontsize=7)
        axes[0].set_title(title)
        axes[-1].set_xlabel("seconds since the round's first sample" if len(starts) < 2 else
                            "seconds since each round's first sample, the rounds one after the other")
        return _uri(figure)


def alignment_chart(found: Comparison) -> str:
    """An accuracy alignment (views/compare/report.py Comparison) as `compare --plot` draws it: both loss curves above
    their relative error with the tolerance."""
    with _style():
        figure = _figure(5.0)
        draw(found, figure)
        return _uri(figure)


@dataclasses.dataclass(frozen=True)
class Point:
    """A roofline point: an operator row's arithmetic intensity (FLOP/byte) and achieved FLOP/s."""
    series: str  # its oplib: a marker each
    dtype: str  # a colour each, as its compute roof
    intensity: float
    flops_per_s: float
    correct: bool


def roofline_chart(points: Sequence[Point], peaks: dict[str, float], bandwidth: float | None, title: str) -> str:
    """Achieved FLOP/s against arithmetic intensity, both log: a marker per series, a colour per dtype; each dtype's
    roof is min(its peak, intensity x bandwidth), dashed, and without a bandwidth its peak alone, dotted; a red
    cross on each incorrect point."""
    with _style():
        figure = _figure(4.2)
        axes = figure.subplots()
        dtypes = list(dict.fromkeys([*(p.dtype.lower() for p in points), *peaks]))
        colours = {dtype: f"C{at % 10}" for at, dtype in enumerate(dtypes)}
        for at, series in enumerate(dict.fromkeys(p.series for p in points)):
            for dtype in dtypes:
                mine = [p for p in points if p.series == series and p.dtype.lower() == dtype]
                if mine:
                    axes.scatter([p.intensity for p in mine], [p.flops_per_s for p in mine], s=22, alpha=0.8,
                                 marker=MARKERS[at % len(MARKERS)], color=colours[dtype], label=f"{series} {dtype}")
        wrong = [p for p in points if not p.correct]
        if wrong:
            axes.scatter([p.intensity for p in wrong], [p.flops_per_s for p in wrong], s=70, marker="x",
                         color="red", label="incorrect")
        xs = [p.intensity for p in points] or [1.0]
        low, high = min(xs) / 4, max(xs) * 4
        if bandwidth is not None:
            for dtype, peak in peaks.items():
                ridge = peak / bandwidth  # where the memory slope meets the compute roof
                x = [low, *([ridge] if low < ridge < high else []), high]
                axes.plot(x, [min(peak, v * bandwidth) for v in x], linestyle="--", color=colours[dtype],
                          label=f"roof {dtype}")
            if not peaks:
                axes.plot([low, high], [low * bandwidth, high * bandwidth], linestyle="--", color="gray",
                          label="memory bandwidth")
        else:
            for dtype, peak in peaks.items():
                axes.axhline(peak, linestyle=":", color=colours[dtype], label=f"peak {dtype}")
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.set_xlabel("arithmetic intensity (FLOP/byte)")
        axes.set_ylabel("achieved FLOP/s")
        axes.set_title(title)
        axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        return _uri(figure)
