"""The report's sections, each with a stable id (SECTIONS), built from the runs' data (data.py): the summary
tables, side by side (side_by_side.py), throughput, scaling efficiency, MFU, base benchmarks and generation
(benchmark_sections.py), loss and eval metric, accuracy alignment (alignment_section.py), monitor series,
environment, failed rounds. A section the runs have nothing of (generation latency of a training run) is left out
(html.Omitted: the header names it and why); one whose figures are missing (no valid round) says so in words. Each
section's text explains the figures of the tasks the runs have."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from case_runners.records import names
from case_runners.records.round import RoundRecord
from case_runners.records.summary import RunSummary, Stat, SummaryCase
from case_runners.records.summary_build import SCALING_BASIS, case_unit, saturated_rounds, training_units
from case_runners.views.report import html, plots
from case_runners.views.report.alignment_section import alignment_section
from case_runners.views.report.benchmark_sections import base_section, generate_section
from case_runners.views.report.data import (
    INFERENCE_PHASES,
    NODE,
    Phase,
    RoundData,
    RunData,
    flat,
    is_number,
    scale_label,
    valid_rounds,
)
from case_runners.views.report.operation_section import operation_section
from case_runners.views.report.side_by_side import side_by_side_section
from case_runners.views.summary import base_rows, generate_rows, operation_rows
from case_runners.views.summary.cells import (
    COLUMNS,
    GIB,
    INFERENCE_COLUMNS,
    SATURATED_NOTE,
    implausible_efficiency,
    inference_rows,
    scaling_notes,
    scaling_rows,
    table_rows,
)

FLOP_S = "FLOP/s"
PERCENT = "%"


def _title(runs: list[RunData]) -> str:
    return "perfplay report: " + ", ".join(run.run_id for run in runs)


def _run_heading(run: RunData, runs: list[RunData]) -> str:
    """A run's sub-heading, where the report has several runs."""
    return html.heading(run.label) if len(runs) > 1 else ""


def _mean_std(stat: Stat, digits: int = 1, scale: float = 1.0, unit: str = "") -> str:
    if stat.mean is None:
        return "-"
    text = f"{stat.mean * scale:,.{digits}f}{unit}"
    return text + (f" ± {(stat.std or 0.0) * scale:,.{digits}f}{unit}" if stat.n > 1 else "")


# -- summary ----------------------------------------------------------------------------------------------------------

def summary_section(runs: list[RunData]) -> str:
    parts = [html.para("Mean ± std over the valid rounds (success or not_converged) of each case, as in the run's "
                       "summary.md; ok: rounds that succeeded / rounds run.")]
    for run in runs:
        parts += [html.heading(run.label), html.para(f"run directory: {run.run_dir}", "note")]
        tables = _summary_tables(run.summary)
        parts += tables or [html.empty("No case in this run.")]
        saturated = saturated_rounds(run.summary)
        if saturated:
            parts += [html.para(f"Warning: {SATURATED_NOTE}:", "warn"),
                      *(html.para(line, "warn") for line in saturated)]
    return "".join(parts)


def _summary_tables(summary: RunSummary) -> list[str]:
    parts = []
    for unit in training_units(summary):
        parts += [html.para(f"Training (throughput in {unit})"),
                  html.table([name for name, _ in COLUMNS], table_rows(summary, unit))]
    for title, header, rows in (("Inference (items/s)", INFERENCE_COLUMNS, inference_rows(summary)),
                                ("Base benchmarks", base_rows.COLUMNS, base_rows.table_rows(summary)),
                                ("Generate", generate_rows.COLUMNS, generate_rows.table_rows(summary))):
        if rows:
            parts += [html.para(title), html.table(header, rows)]
    operators = operation_rows.table_rows(summary)
    if operators:  # an incorrect side's "ok" cell in red
        parts += [html.para(operation_rows.TITLE[0].upper() + operation_rows.TITLE[1:]),
                  html.table(operation_rows.columns(summary), operators, bad_values=[operation_rows.INCORRECT])]
    return parts


# -- throughput -------------------------------------------------------------------------------------------------------

def tasks(runs: list[RunData]) -> set[str]:
    """The tasks of the runs' cases."""
    return {case.task for run in runs for case in run.summary.cases}


THROUGHPUT_TEXT = {
    names.TRAINING: "Training: p_whole, the whole training loop; p_train, without evaluation; p_core, the compute "
                    "steps only.",
    names.INFERENCE: "Inference (items/s): validation (the framework's model) and inference (the vendor's compiled "
                     "engine), each whole (data, compute and evaluation) and core (the forward passes only).",
}


def throughput_section(runs: list[RunData]) -> str | html.Omitted:
    """One chart per unit: a group per case and scale, a bar per throughput (one run) or per run (several, on
    p_train), with error bars of one std over the rounds."""
    present = [task for task in THROUGHPUT_TEXT if task in tasks(runs)]
    if not present:
        return html.Omitted("no training or inference case")
    several = f" Several runs: {SCALING_BASIS} of each run's training cases." if len(runs) > 1 and \
        names.TRAINING in present else ""
    parts = [html.para("Bars: mean over the valid rounds; whiskers: ± one standard deviation (none with one round). " +
                       " ".join(THROUGHPUT_TEXT[task] for task in present) + several)]
    charts = []
    units = sorted({case_unit(c) for run in runs for c in run.summary.cases if c.task == names.TRAINING})
    for unit in units:
        cases = [(run, c) for run in runs for c in run.summary.cases
                 if c.task == names.TRAINING and case_unit(c) == unit]
        keys = names.THROUGHPUTS if len(runs) == 1 else (SCALING_BASIS,)
        charts.append(_bars(runs, cases, keys, f"throughput ({unit})", f"Training throughput, {unit}"))
    cases = [(run, c) for run in runs for c in run.summary.cases if c.task == names.INFERENCE]
    if cases:
        charts.append(_bars(runs, cases, names.INFERENCE_THROUGHPUTS, "throughput (items/s)",
                            "Inference throughput, items/s"))
    drawn = [c for c in charts if c]
    return "".join(parts + drawn) if drawn else "".join(
        parts + [html.empty("No training or inference throughput to show: no case of these runs has a valid "
                            "round with a throughput.")])


def _bars(runs: list[RunData], cases: list[tuple[RunData, SummaryCase]], keys: tuple[str, ...], xlabel: str,
          title: str) -> str:
    groups = list(dict.fromkeys(scale_label(c) for _, c in cases))
    series = []
    for run in runs:
        mine = {scale_label(c): c for r, c in cases if r is run}
        for key in keys:
            stats = [mine[g].stats[key] if g in mine else Stat.of([]) for g in groups]
            label = key if len(runs) == 1 else f"{run.label}"
            missing = ["no valid round" if g in mine else "" for g in groups]  # "": the run did not run it
            series.append(plots.Bars(label, [s.mean for s in stats], [s.std for s in stats], missing))
    if not any(m is not None for bars in series for m in bars.means):
        return ""
    return html.image(plots.bar_chart(groups, series, xlabel, title), title)


# -- scaling ----------------------------------------------------------------------------------------------------------

def scaling_section(runs: list[RunData]) -> str | html.Omitted:
    if not any(run.summary.scaling for run in runs):
        return html.Omitted("no case ran at two scales or more within a run")
    parts = [html.para(f"Efficiency = speed-up / (devices / base devices), on {SCALING_BASIS} against the smallest "
                       "scale the case ran at in the same run (1x1 where it ran); 100 % is linear scaling, and "
                       "above 100 % says the smaller scale was slowed (the note under its table says what to check).")]
    lines, tables = [], []
    for run in runs:
        for group in run.summary.scaling:
            label = f"{group.case} on {group.hardware}" + (f", {run.run_id}" if len(runs) > 1 else "")
            rows = [r for r in group.rows if r.efficiency is not None]
            if rows:
                lines.append(plots.Line(label, [float(r.devices) for r in rows], [r.efficiency for r in rows]))
            implausible = {implausible_efficiency(row) for row in group.rows}
            tables += [html.heading(f"{label} (base {group.base})"),
                       html.table(["case", "nnodes", "nproc", "devices", f"{group.basis} ({group.unit})",
                                   "speed-up", "efficiency"], scaling_rows(group)),
                       *(html.para(note, "warn" if note in implausible else "note") for note in scaling_notes(group))]
    chart = [html.image(plots.line_chart(lines, "devices", "efficiency (%)", "Scaling efficiency", percent=True,
                                         reference=1.0, reference_label="linear (100 %)"),
                        "scaling efficiency")] if lines else [html.empty("No efficiency could be computed (see the "
                                                                         "notes under the tables).")]
    return "".join(parts + chart + tables)


# -- MFU --------------------------------------------------------------------------------------------------------------

def mfu_section(runs: list[RunData]) -> str | html.Omitted:
    if not tasks(runs) & {names.TRAINING, names.INFERENCE}:
        return html.Omitted("no training or inference case: the base and generate tasks have no MFU")
    counted = sorted({flops_unit(c) for run in runs for c in run.summary.cases
                      if c.task in (names.TRAINING, names.INFERENCE)})
    parts = [html.para(f"Model FLOPs utilisation: achieved FLOP/s (the case's FLOPs per {' or '.join(counted)} x its "
                       f"throughput on the basis) over the vendor's peak FLOP/s for the precision the round ran in, "
                       f"times the devices. Mean ± std over the valid rounds.")]
    rows, groups, means, stds = [], [], [], []
    for run in runs:
        for case in run.summary.cases:
            mfu = _case_mfu(run, case)
            if mfu is None:
                continue
            stat = case.stats["mfu"]
            label = scale_label(case) + (f" ({run.run_id})" if len(runs) > 1 else "")
            rows.append([label, _mean_std(stat, 2, 100.0, PERCENT), mfu.basis, mfu.precision,
                         base_rows.human(mfu.peak_flops_per_device, FLOP_S), mfu.devices,
                         f"{mfu.flops_per_sample:.4g} per {flops_unit(case)}", "" if stat.mean is not None else
                         (mfu.reason if isinstance(mfu.reason, str) else "no valid round")])
            if stat.mean is not None:
                groups.append(label)
                means.append(stat.mean)
                stds.append(stat.std)
    if not rows:
        return "".join(parts + [html.empty("No training or inference round left a record: no MFU.")])
    chart = [html.image(plots.bar_chart(groups, [plots.Bars("MFU", means, stds)], "MFU (% of peak)",
                                        "MFU against the vendor's peak", percent=True), "MFU")] if groups else \
        [html.empty("No MFU value: no peak FLOP/s is known for these cases' precision, or no round was valid "
                    "(the reasons are in the table).")]
    header = ["case", "MFU", "basis", "precision", "peak per device", "devices", "FLOPs", "why none"]
    return "".join(parts + chart + [html.table(header, rows)])


def flops_unit(case: SummaryCase) -> str:
    """What the case's FLOPs are counted per: an item (inference), else what its throughput counts (a sample, or
    a language model's token)."""
    return "item" if case.task == names.INFERENCE else case_unit(case).removesuffix("s/s")


def _case_mfu(run: RunData, case: SummaryCase) -> Any:
    """The MFU block of the case's last round record (precision, peak, devices), None for a case without one."""
    if case.task not in (names.TRAINING, names.INFERENCE):
        return None
    found = [e.record.mfu for e in run.rounds if e.record.case_id == case.case_id and isinstance(e.record, RoundRecord)]
    return found[-1] if found else None


# -- loss and eval metric ---------------------------------------------------------------------------------------------

def convergence_section(runs: list[RunData]) -> str | html.Omitted:
    if names.TRAINING not in tasks(runs):
        return html.Omitted("no training case: no loss curve")
    parts = [html.para("Rank 0's training loss at each logged step, and the eval metric at each evaluation with the "
                       "case's target, one line per round.")]
    for run in runs:
        for case in (c for c in run.summary.cases if c.task == names.TRAINING):
            mine = [e for e in run.rounds if e.record.case_id == case.case_id]
            loss = [plots.Line(_round_label(e), list(e.loss), list(e.loss.values())) for e in mine if e.loss]
            evals = [plots.Line(_round_label(e), [float(s) for s, _ in e.evals], [v for _, v in e.evals])
                     for e in mine if e.evals]
            title = case.case_id + (f" ({run.run_id})" if len(runs) > 1 else "")
            if loss or evals:
                parts.append(html.image(plots.curves_chart(loss, evals, case.metric, case.target, title),
                                        f"loss and {case.metric} of {title}"))
            else:
                parts.append(html.empty(f"{title}: no loss curve and no evaluation recorded."))
            parts += [html.para(f"round {e.record.round}: {note}", "note") for e in mine for note in e.notes]
    return "".join(parts)


def _round_label(entry: RoundData) -> str:
    return f"round {entry.record.round} ({entry.record.status})"


# -- monitors ---------------------------------------------------------------------------------------------------------

PHASES_TEXT = {
    names.TRAINING: "a training round's init, training and evaluation",
    names.INFERENCE: f"an inference round's pipeline steps ({', '.join(INFERENCE_PHASES[1:-1])})",
}


def monitors_section(runs: list[RunData]) -> str | html.Omitted:
    if not any(_sampled(entry) for run in runs for entry in run.rounds):
        return html.Omitted("no round has monitor samples: run without --no-monitors" if
                            any(run.rounds for run in runs) else "no round")
    present = tasks(runs)
    shaded = [text for task, text in PHASES_TEXT.items() if task in present]
    unshaded = sorted(present - set(PHASES_TEXT))
    parts = [html.para(f"Node {NODE}'s monitors during each case's rounds, one figure per case with its rounds one "
                       "after the other (each from its first sample; a dotted line where a round starts): device "
                       "utilisation, memory, power and temperature (the vendor's monitor, a line per device) and the "
                       "host's CPU utilisation" +
                       (f"; the shaded spans are rank 0's phases from its events: {' and '.join(shaded)}" if shaded
                        else "") +
                       (f"; {' and '.join(unshaded)} rounds have no phases" if unshaded else "") + ".")]
    for run in runs:
        for case_id in dict.fromkeys(entry.record.case_id for entry in run.rounds):
            entries = [entry for entry in run.rounds if entry.record.case_id == case_id]
            where = f", {run.run_id}" if len(runs) > 1 else ""
            parts += [html.empty(f"{case_id} round {e.record.round} ({e.record.status}){where}: no monitor samples "
                                 "(run with --no-monitors, or the round left no node directory).")
                      for e in entries if not _sampled(e)]
            sampled = [e for e in entries if _sampled(e)]
            if not sampled:
                continue
            rounds = [e.record.round for e in sampled]
            title = f"{case_id} round{'s' if len(rounds) > 1 else ''} {_round_span(rounds)}{where}"
            panels, phases, starts, missing = _rounds_end_to_end(sampled)
            parts.append(html.image(plots.monitor_chart(panels, phases, 0.0, title, starts), f"monitors of {title}"))
            if missing:
                parts.append(html.para(f"not reported by the monitors: {', '.join(missing)}", "note"))
            parts += [html.para(f"round {e.record.round}: {note}", "note")
                      for e in sampled for note in (e.monitors.notes if e.monitors else [])]
    return "".join(parts)


def _sampled(entry: RoundData) -> bool:
    return entry.monitors is not None and any(entry.monitors.samples.values())


def _round_span(rounds: list[int]) -> str:
    """1-3 for rounds 1, 2, 3; 1, 3 otherwise."""
    if len(rounds) > 2 and rounds == list(range(rounds[0], rounds[-1] + 1)):
        return f"{rounds[0]}-{rounds[-1]}"
    return ", ".join(map(str, rounds))


ROUND_GAP_S = 1.0  # the space between two rounds of a monitor figure


def _rounds_end_to_end(entries: list[RoundData]) -> tuple[list[plots.Panel], list[Phase], list[tuple[float, int]],
                                                           list[str]]:
    """The rounds' panels joined into one figure's: each round's samples from its own first sample, placed after the
    round before it (the time between rounds left out), a line broken between rounds; the phases moved alike; where
    each round starts (x, round); the panels no round has."""
    order = [ylabel for ylabel, *_ in DEVICE_PANELS] + [HOST_PANEL]
    joined: dict[str, dict[str, tuple[list[float], list[float | None]]]] = {}
    limits: dict[str, tuple[float, float] | None] = {}
    phases: list[Phase] = []
    starts: list[tuple[float, int]] = []
    missing: list[str] | None = None
    offset = 0.0
    for entry in entries:
        monitors = entry.monitors
        assert monitors is not None  # _sampled
        t0 = min(s["ts"] for samples in monitors.samples.values() for s in samples)
        panels, lacking = _panels(monitors)
        missing = lacking if missing is None else [name for name in missing if name in lacking]
        starts.append((offset, entry.record.round))
        end = offset
        for panel in panels:
            limits[panel.ylabel] = panel.ylim
            lines = joined.setdefault(panel.ylabel, {})
            for line in panel.lines:
                xs, ys = lines.setdefault(line.label, ([], []))
                if xs:  # no line from the previous round's last sample to this one's first
                    xs.append(xs[-1])
                    ys.append(None)
                xs += [x + offset for x in line.x]
                ys += list(line.y)
                end = max([end, *(x + offset for x in line.x)])
        phases += [Phase(p.name, p.start - t0 + offset, p.end - t0 + offset) for p in monitors.phases]
        offset = max([end, *(p.end for p in phases)]) + ROUND_GAP_S
    panels = [plots.Panel(ylabel, [plots.Line(label, xs, ys) for label, (xs, ys) in joined[ylabel].items()],
                          limits[ylabel]) for ylabel in sorted(joined, key=order.index)]
    return panels, phases, starts, missing or []


PERCENT_LIMITS = (0.0, 105.0)
# (panel's y label, the device sample's key, scale, y limits) of the vendor monitors' panels
DEVICE_PANELS = (("device util (%)", "util", 1.0, PERCENT_LIMITS),
                 ("device memory (GiB)", "mem_used_bytes", 1.0 / GIB, None),
                 ("power (W)", "power_w", 1.0, None), ("temperature (°C)", "temp_c", 1.0, None))
HOST_PANEL = "host CPU (%)"


def _panels(monitors: Any) -> tuple[list[plots.Panel], list[str]]:
    """The panels that have data, and the names of those that have none."""
    t0 = min(s["ts"] for samples in monitors.samples.values() for s in samples)
    panels, missing = [], []
    for ylabel, key, scale, ylim in DEVICE_PANELS:
        lines = [_device_line(name, index, samples, key, scale, t0)
                 for name, samples in monitors.devices.items() for index in _indexes(samples)]
        if key == "power_w":  # the host's CPU package power (RAPL), where it reads one
            lines.append(_line("host", monitors.host, lambda s: s.get("power_w"), t0))
        lines = [line for line in lines if any(y is not None for y in line.y)]
        if lines:
            panels.append(plots.Panel(ylabel, lines, ylim))
        else:
            missing.append(ylabel.split(" (")[0])
    host = _line("host", monitors.host, lambda s: s.get("cpu_util"), t0)
    if any(y is not None for y in host.y):
        panels.append(plots.Panel(HOST_PANEL, [host], PERCENT_LIMITS))
    else:
        missing.append("host CPU")
    return panels, missing


def _indexes(samples: list[dict[str, Any]]) -> list[int]:
    return sorted({d["index"] for s in samples for d in s.get("devices") or []
                   if isinstance(d, dict) and isinstance(d.get("index"), int)})


def _device_line(name: str, index: int, samples: list[dict[str, Any]], key: str, scale: float, t0: float) -> Any:
    def value(sample: dict[str, Any]) -> Any:
        device = next((d for d in sample.get("devices") or [] if isinstance(d, dict) and d.get("index") == index), {})
        number = device.get(key)
        return number * scale if is_number(number) else None
    return _line(f"{name} {index}", samples, value, t0)


def _line(label: str, samples: list[dict[str, Any]], value: Callable[[dict[str, Any]], Any], t0: float) -> Any:
    ys = [value(s) for s in samples]
    return plots.Line(label, [s["ts"] - t0 for s in samples], [float(y) if is_number(y) else None for y in ys])


# -- environment ------------------------------------------------------------------------------------------------------

def environment_section(runs: list[RunData]) -> str:
    parts = [html.para("What the rounds ran on, from their records: perfplay's version and commit, Python, torch, "
                       "the vendor's software stack, the host and the devices.")]
    for run in runs:
        parts.append(html.heading(run.label))
        environments = run.environments()
        if not environments:
            parts.append(html.empty("No round record in this run: environment not recorded."))
        for env, rounds in environments:
            where = ", ".join(rounds)
            if env is None:
                parts.append(html.empty(f"Environment not recorded ({where}): these records were written before "
                                        "perfplay recorded it, or the round left none."))
            else:
                if len(environments) > 1:
                    parts.append(html.para(where, "note"))
                parts.append(html.table(["key", "value"], flat(env)))
    return "".join(parts)


# -- failures ---------------------------------------------------------------------------------------------------------

def failures_section(runs: list[RunData]) -> str:
    parts = [html.para("Rounds without a valid result (not success, not not_converged), with the reason their "
                       "record or the run gives; a round that missed its target is a valid result, listed apart.")]
    header = ["case", "round", "status", "reason"]
    for run in runs:
        rounds = [(c.case_id, r) for c in run.summary.cases for r in c.rounds]
        failed = [[case_id, r["round"], r["status"], r["reason"] or "-"] for case_id, r in rounds
                  if r["status"] not in names.VALID_STATUSES]
        missed = [[case_id, r["round"], r["status"], r["reason"] or "-"] for case_id, r in rounds
                  if r["status"] == names.NOT_CONVERGED]
        parts.append(_run_heading(run, runs))
        parts.append(html.table(header, failed, bad_column=2) if failed else
                     html.empty("No failed round: every round succeeded or ran to its end."))
        if missed:
            parts += [html.para("Not converged (valid results, in the means):"), html.table(header, missed)]
    return "".join(parts)


# (id, title, builder): the order of the page; a builder gives the section's body, or why the runs have none of it
SECTIONS: tuple[tuple[str, str, Callable[[list[RunData]], str | html.Omitted]], ...] = (
    ("summary", "Summary", summary_section),
    ("side-by-side", "Side by side", side_by_side_section),
    ("throughput", "Throughput", throughput_section),
    ("scaling", "Scaling efficiency", scaling_section),
    ("mfu", "MFU", mfu_section),
    ("base", "Base benchmarks", base_section),
    ("generate", "Generation latency", generate_section),
    ("operation", "Operators", operation_section),
    ("convergence", "Loss and eval metric", convergence_section),
    ("alignment", "Accuracy alignment", alignment_section),
    ("monitors", "Monitors", monitors_section),
    ("environment", "Environment", environment_section),
    ("failures", "Failed rounds", failures_section),
)
SECTION_IDS = tuple(sid for sid, _, _ in SECTIONS)


def render_report(runs: list[RunData]) -> str:
    """The report's page over the runs."""
    total = sum(len(run.rounds) for run in runs)
    valid = valid_rounds(runs)
    alert = None if valid else (
        f"No successful round: none of the {total} round(s) of these runs produced a valid result (success or "
        "not_converged), so there is no figure to show; the failed rounds are listed at the end." if total else
        "No round: these runs have no round to report.")
    lines = [f"{run.label}: {run.run_dir}" for run in runs] + [
        f"{valid} valid round(s) of {total}; mean ± std over the valid rounds of each case."]
    built = [(sid, title, build(runs)) for sid, title, build in SECTIONS]
    shown = [(sid, title, body) for sid, title, body in built if isinstance(body, str)]
    return html.page(_title(runs), lines, alert, [(sid, title) for sid, title, _ in shown],
                     [html.section(sid, title, body) for sid, title, body in shown],
                     [(title, body.reason) for _, title, body in built if isinstance(body, html.Omitted)])
