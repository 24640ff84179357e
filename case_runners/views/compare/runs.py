"""`compare-runs`: two runs or more, the first the baseline, side by side per case and scale.

Each run is read through its summary (records/summary_build.py summarize_run: mean, std and n of each figure over the
valid rounds). Cases are matched across runs by case, task and scale (nnodes x nproc), not by vendor or hardware,
so two vendors' runs of a case compare in the same table. Each figure of a matched case gets the ratio to the
baseline and a verdict from the noise rule (NOISE_RULE, `noise`); which way is better is FIGURES'. The result is one
document (`perfplay.run_comparison/1`, what --json prints); runs_cli.py renders it as text.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from case_runners.core.errors import PerfplayError
from case_runners.core.paths import RESOLVED_NAME
from case_runners.plan.config.benchmarks import BYTES
from case_runners.records import names
from case_runners.records.resolved import ResolvedConfig
from case_runners.records.run_dir import check_run_dir
from case_runners.records.schema import Document, RecordError, choices
from case_runners.records.summary import RunSummary, Stat, SummaryCase, stat_keys
from case_runners.records.summary_build import case_unit, summarize_run
from case_runners.views.compare.alignment import differences, workload_params
from case_runners.views.compare.operators import case_rows, rate, roofline_geomean, row_name

HIGHER, LOWER = "higher", "lower"
ROOFLINE_GEOMEAN = "roofline fraction (geometric mean)"  # an operation case's correct rows' (operators.py)
FRACTION = "fraction"  # the unit of a figure between 0 and 1 (MFU, agreement, fraction of peak): shown as %
# Each figure compare-runs shows, the one place that says which way is better and its unit: the summary's statistics
# of every task (records/summary.py stat_keys), and each base headline's achieved figure and fraction of peak.
# better None: the case's target says (final_metric: its higher_is_better); unit None: the case's own (a training
# throughput's samples/s or tokens/s, the final metric's name, a base headline's unit).
FIGURES: dict[str, tuple[str | None, str | None]] = {
    **{key: (HIGHER, None) for key in names.THROUGHPUTS},
    "e2e_time": (LOWER, "s"),
    "init_time": (LOWER, "s"),
    "final_metric": (None, None),
    "mfu": (HIGHER, FRACTION),
    **{key: (HIGHER, "items/s") for key in names.INFERENCE_THROUGHPUTS},
    **{key: (HIGHER, "") for key in names.INFERENCE_ACCURACIES},
    "agreement": (HIGHER, FRACTION),
    "compile_s": (LOWER, "s"),
    names.DEVICE_MEMORY_PEAK: (LOWER, BYTES),
    "ttft_ms": (LOWER, "ms"),
    "tpot_ms": (LOWER, "ms"),
    "tokens_per_s": (HIGHER, "tokens/s"),
    "achieved": (HIGHER, None),  # a base headline's FLOP/s, B/s or B
    "fraction_of_peak": (HIGHER, FRACTION),
    "operator": (HIGHER, None),  # an operator row's achieved FLOP/s or B/s: its ratio is the speed-up between runs
    ROOFLINE_GEOMEAN: (HIGHER, FRACTION),
}
NOISE_SIGMAS = 2.0
NOISE_RULE = (f"a difference is beyond the noise when |mean B - mean A| > {NOISE_SIGMAS:g} x sqrt(sA^2/nA + sB^2/nB) "
              "(s: the standard deviation over a run's valid rounds, n: their number); with one round on either "
              "side the noise is unknown: no verdict, never a regression")
BETTER, WORSE, WITHIN, ONE_ROUND, DIFFERENT, NO_VALUE = (
    "better", "worse", "within noise", "one round: noise unknown", "different", "no value")
VERDICTS = (BETTER, WORSE, WITHIN, ONE_ROUND, DIFFERENT, NO_VALUE)
Key = tuple[str, str, int, int]  # what matches cases across runs: case, task, nnodes, nproc


# -- the runs ---------------------------------------------------------------------------------------------------------

def resolve_runs(refs: list[str], db: Path | None = None) -> list[Path]:
    """The run directories the command line names (a directory, or a run id of the history database `db`), each
    checked to be one (PerfplayError naming the first that is not)."""
    from case_runners.views.history.lookup import run_dirs
    return [check_run_dir(path) for path in run_dirs(refs, db)]


# -- the document -----------------------------------------------------------------------------------------------------

@dataclasses.dataclass(kw_only=True)
class RunRef(Document):
    run_id: str | None
    path: str


@dataclasses.dataclass(kw_only=True)
class CaseSide(Document):
    """A run's case in a match."""
    run: int  # its run's index in `runs` (0: the baseline)
    run_id: str | None
    case_id: str
    vendor: str | None
    hardware: str | None
    framework: str | None
    standard: bool
    status: str  # the summary case's
    valid_rounds: int
    differences: dict[str, list[Any]]  # param -> [the baseline's value, this run's]; {} for the baseline


@dataclasses.dataclass(kw_only=True)
class Cell(Document):
    """A figure of a later run against the baseline's."""
    run: int
    stat: Stat
    ratio: float | None  # this run's mean / the baseline's; null where either is null or the baseline's is 0
    difference: float | None  # this run's mean - the baseline's
    noise: float | None  # the noise rule's bound on the difference; null when unknown (one round)
    worse_by: float | None  # percent by which this run is worse than the baseline (negative: better); null: unknown
    verdict: str = dataclasses.field(metadata=choices(*VERDICTS))


@dataclasses.dataclass(kw_only=True)
class Row(Document):
    figure: str
    unit: str  # of the values (a fraction is 0..1, bytes are bytes)
    better: str | None = dataclasses.field(metadata=choices(HIGHER, LOWER, None))  # null: not known
    baseline: Stat
    others: list[Cell]


@dataclasses.dataclass(kw_only=True)
class Match(Document):
    """A case and scale the baseline and later runs have: their figures side by side."""
    case: str
    task: str
    nnodes: int
    nproc: int
    sides: list[CaseSide]  # the baseline's first
    rows: list[Row]

    @property
    def key(self) -> Key:
        return self.case, self.task, self.nnodes, self.nproc


@dataclasses.dataclass(kw_only=True)
class Skipped(Document):
    run: int
    run_id: str | None
    case_id: str
    reason: str


@dataclasses.dataclass(kw_only=True)
class RunComparison(Document):
    SCHEMA = "perfplay.run_comparison/1"

    runs: list[RunRef]  # the baseline first
    noise_rule: str
    fail_on_regression: float | None  # the percentage --fail-on-regression gave
    matches: list[Match]
    skipped: list[Skipped]  # each case of a run that has nothing to be compared with, and why
    regressions: list[str]  # with fail_on_regression: each figure worse by more than it, beyond the noise
    noise_unknown: list[str]  # with fail_on_regression: each figure worse by more than it with one round on a side

    @property
    def exit_code(self) -> int:
        return 1 if self.regressions else 0


# -- the arithmetic ---------------------------------------------------------------------------------------------------

def noise(a: Stat, b: Stat) -> float | None:
    """NOISE_RULE's bound on |b.mean - a.mean|; None when either side has fewer than two rounds."""
    if a.n < 2 or b.n < 2:
        return None
    return NOISE_SIGMAS * math.sqrt((a.std or 0.0) ** 2 / a.n + (b.std or 0.0) ** 2 / b.n)


def compare_stat(run: int, a: Stat, b: Stat, better: str | None) -> Cell:
    """Stat b (a later run's) against a (the baseline's): ratio, difference, noise and verdict."""
    if a.mean is None or b.mean is None:
        return Cell(run=run, stat=b, ratio=None, difference=None, noise=None, worse_by=None, verdict=NO_VALUE)
    difference = b.mean - a.mean
    bound = noise(a, b)
    worse_by = None
    if better is not None and a.mean != 0:
        worse_by = (-difference if better == HIGHER else difference) / abs(a.mean) * 100
    if bound is None:
        verdict = ONE_ROUND
    elif abs(difference) <= bound:
        verdict = WITHIN
    elif better is None:
        verdict = DIFFERENT
    else:
        verdict = BETTER if (difference > 0) == (better == HIGHER) else WORSE
    return Cell(run=run, stat=b, ratio=b.mean / a.mean if a.mean else None, difference=difference, noise=bound,
                worse_by=worse_by, verdict=verdict)


def worse_than(cell: Cell, percent: float) -> bool:
    """Worse than the baseline by more than `percent`, whatever the noise."""
    return cell.worse_by is not None and cell.worse_by > percent


def is_regression(cell: Cell, percent: float) -> bool:
    """Worse than the baseline by more than `percent` and beyond the noise. With one round on a side the noise is
    unknown: no verdict, not a regression (`noise_unknown` lists it)."""
    return worse_than(cell, percent) and cell.verdict == WORSE


# -- the figures of a case --------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Figure:
    unit: str
    better: str | None
    stat: Stat


def figures(case: SummaryCase, higher_is_better: bool | None,
            units: Mapping[str, str] | None = None) -> dict[str, Figure]:
    """A summary case's figures, by name, in the summary's order: its statistics, then a base case's headlines (their
    achieved figure and fraction of peak), an operation case's roofline fraction and each operator row's work rate
    (operators.py rate: a ratio of two is the speed-up; in units[name] where given, the baseline's). higher_is_better:
    the case's target's (None: unknown)."""
    units = units or {}
    found = {}
    for key in stat_keys(case.task):
        better, unit = FIGURES[key]
        if key == "final_metric":
            better = None if higher_is_better is None else (HIGHER if higher_is_better else LOWER)
            unit = case.metric or ""
        elif unit is None:
            unit = case_unit(case)
        found[key] = Figure(unit, better, case.stats[key])
    for row in case.base if isinstance(case.base, list) else []:
        name = f"{row.benchmark} {row.kind} {row.stat}"
        found[name] = Figure(row.unit, FIGURES["achieved"][0], row.achieved)
        found[f"{name} fraction of peak"] = Figure(FRACTION, FIGURES["fraction_of_peak"][0],
                                                   row.fraction_of_peak)
    rows = case_rows(case)
    if rows:
        geomean = roofline_geomean(rows)
        found[ROOFLINE_GEOMEAN] = Figure(FRACTION, HIGHER, Stat.of([] if geomean is None else [geomean]))
    for entry in rows:
        value, unit = rate(entry, units.get(row_name(entry)))
        found[row_name(entry)] = Figure(unit, FIGURES["operator"][0], Stat.of([] if value is None else [value]))
    return found


# -- matching ---------------------------------------------------------------------------------------------------------

def case_key(case: SummaryCase) -> Key:
    return case.case, case.task, case.nnodes, case.nproc


def key_text(key: Key) -> str:
    return f"{key[0]} {key[1]} {key[2]}x{key[3]}"


@dataclasses.dataclass(frozen=True)
class _Run:
    index: int
    summary: RunSummary
    path: Path

    def config(self, case: SummaryCase) -> ResolvedConfig | None:
        try:
            return ResolvedConfig.load(self.path / case.case_id / RESOLVED_NAME)
        except RecordError:
            return None


def _valid_rounds(case: SummaryCase) -> int:
    return sum(1 for r in case.rounds if r["status"] in names.VALID_STATUSES)


def _side(run: _Run, case: SummaryCase, params: dict[str, list[Any]]) -> CaseSide:
    return CaseSide(run=run.index, run_id=run.summary.run_id, case_id=case.case_id, vendor=case.vendor,
                    hardware=case.hardware, framework=case.framework, standard=bool(case.standard_fields()["standard"]),
                    status=case.status, valid_rounds=_valid_rounds(case), differences=params)


def _workload(config: ResolvedConfig | None) -> dict[str, Any]:
    return {} if config is None else workload_params(config)


def _partner(case: SummaryCase, candidates: list[SummaryCase]) -> SummaryCase | None:
    """The case of a later run a baseline case is compared with: the only one of its key, or the one of its id."""
    if len(candidates) == 1:
        return candidates[0]
    return next((c for c in candidates if c.case_id == case.case_id), None)


def _match(base_run: _Run, case: SummaryCase, others: list[tuple[_Run, SummaryCase]]) -> Match:
    config = base_run.config(case)
    target = config.target if config is not None else None
    base_figures = figures(case, target.higher_is_better if target else None)
    sides = [_side(base_run, case, {})]
    cells: dict[str, list[Cell]] = {name: [] for name in base_figures}
    for run, other in others:
        sides.append(_side(run, other, {key: list(values) for key, values in
                                        differences(_workload(config), _workload(run.config(other))).items()}))
        theirs = figures(other, target.higher_is_better if target else None,
                         {name: figure.unit for name, figure in base_figures.items()})
        for name, figure in base_figures.items():
            mine = theirs.get(name)
            cells[name].append(compare_stat(run.index, figure.stat, mine.stat if mine else Stat.of([]),
                                            figure.better))
    rows = [Row(figure=name, unit=figure.unit, better=figure.better, baseline=figure.stat, others=cells[name])
            for name, figure in base_figures.items()
            if figure.stat.mean is not None or any(c.stat.mean is not None for c in cells[name])]
    key = case_key(case)
    return Match(case=key[0], task=key[1], nnodes=key[2], nproc=key[3], sides=sides, rows=rows)


def regressions(matches: list[Match], percent: float) -> list[str]:
    """Each figure of a later run worse than the baseline's by more than `percent` and beyond the noise, and each case
    of a later run without a valid round."""
    found = []
    for match in matches:
        where = key_text(match.key)
        for side in match.sides[1:]:
            if side.valid_rounds == 0:
                found.append(f"{where}: {side.case_id} of run #{side.run + 1} ({side.run_id}) has no valid round "
                             f"({side.status})")
        found += [_worse_line(match, row, cell, f"beyond the noise ({_g(abs(cell.difference or 0.0))} > "
                                                f"{_g(cell.noise)})")
                  for row, cell in _worse_cells(match, percent) if cell.verdict == WORSE]
    return found


def noise_unknown(matches: list[Match], percent: float) -> list[str]:
    """Each figure of a later run worse than the baseline's by more than `percent` where either side has one valid
    round: the noise is unknown, so it is no regression; the line says so."""
    return [_worse_line(match, row, cell, f"noise unknown: one round ({_rounds(row, cell)}); not a "
                                          "regression: run --repeat 2 or more on both sides for a verdict")
            for match in matches for row, cell in _worse_cells(match, percent) if cell.verdict == ONE_ROUND]


def _worse_cells(match: Match, percent: float) -> list[tuple[Row, Cell]]:
    """The cells of a match worse than the baseline by more than `percent`, of runs with a valid round."""
    failed = {side.run for side in match.sides if side.valid_rounds == 0}
    return [(row, cell) for row in match.rows for cell in row.others
            if cell.run not in failed and cell.ratio is not None and worse_than(cell, percent)]


def _rounds(row: Row, cell: Cell) -> str:
    return f"#1 has {row.baseline.n} value(s) of it, #{cell.run + 1} {cell.stat.n}"


def _worse_line(match: Match, row: Row, cell: Cell, how: str) -> str:
    return (f"{key_text(match.key)}: {row.figure} of run #{cell.run + 1} is {cell.worse_by or 0.0:.1f}% worse than "
            f"the baseline's (ratio {cell.ratio or 0.0:.3f}, {row.better} is better; {how})")


def _unpaired(key: Key, by_key: list[dict[Key, list[SummaryCase]]], index: int) -> str:
    """Why a case of run `index` is compared with nothing: no other side has its case and scale, or several cases of
    it (of several hardware models) do not pair (one case on each side pairs, or two of the same case id)."""
    sides = [0] if index else range(1, len(by_key))
    having = [i for i in sides if key in by_key[i]]
    if not having:
        if index:
            listed = ", ".join(dict.fromkeys(key_text(k) for k in by_key[0])) or "no case"
            return f"the baseline has no {key_text(key)} (it has: {listed})"
        return f"no later run has {key_text(key)}"
    listed = "; ".join(f"run #{i + 1}: {', '.join(c.case_id for c in by_key[i][key])}" for i in (index, *having))
    return f"several cases of {key_text(key)} and none of the same case id on the other side ({listed})"


def _g(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def compare_runs(paths: list[Path], fail_on_regression: float | None = None) -> RunComparison:
    """The comparison of the runs at `paths` (run directories, the baseline first). PerfplayError when no case of
    the baseline can be compared with a later run's, naming each case and why."""
    if len(paths) < 2:
        raise PerfplayError(f"compare-runs wants two runs or more (the first is the baseline), got {len(paths)}")
    return compare_summaries([(path, summarize_run(path)) for path in paths], fail_on_regression)


def compare_summaries(summaries: list[tuple[Path, RunSummary]],
                      fail_on_regression: float | None = None) -> RunComparison:
    """compare_runs of runs already summarized: (run directory, its summary), the baseline first (the report's
    side-by-side section gives the summaries it has read)."""
    runs = [_Run(index, summary, path) for index, (path, summary) in enumerate(summaries)]
    base, later = runs[0], runs[1:]
    by_key: list[dict[Key, list[SummaryCase]]] = [{} for _ in runs]  # per run: key -> its cases
    for run in runs:
        for case in run.summary.cases:
            by_key[run.index].setdefault(case_key(case), []).append(case)
    matches, skipped, used = [], [], set()
    for case in base.summary.cases:
        key = case_key(case)
        others = []
        for run in later:
            partner = _partner(case, by_key[run.index].get(key, []))
            if partner is not None:
                others.append((run, partner))
                used.add((run.index, partner.case_id))
        if others:
            matches.append(_match(base, case, others))
        else:
            skipped.append(Skipped(run=0, run_id=base.summary.run_id, case_id=case.case_id,
                                   reason=_unpaired(key, by_key, 0)))
    for run in later:
        skipped += [Skipped(run=run.index, run_id=run.summary.run_id, case_id=case.case_id,
                            reason=_unpaired(case_key(case), by_key, run.index))
                    for case in run.summary.cases if (run.index, case.case_id) not in used]
    if not matches:
        listed = "; ".join(f"run #{s.run + 1} ({s.run_id}) {s.case_id}: {s.reason}" for s in skipped) or "no cases"
        raise PerfplayError(f"nothing to compare: no case and scale of the baseline is in a later run ({listed})")
    found = regressions(matches, fail_on_regression) if fail_on_regression is not None else []
    unknown = noise_unknown(matches, fail_on_regression) if fail_on_regression is not None else []
    return RunComparison(runs=[RunRef(run_id=run.summary.run_id, path=str(run.path)) for run in runs],
                         noise_rule=NOISE_RULE, fail_on_regression=fail_on_regression, matches=matches,
                         skipped=skipped, regressions=found, noise_unknown=unknown)
