"""The report's side-by-side section of several runs: each later run against the first as `compare-runs` computes
it (views/compare/runs.py: cases matched by case, task and scale; each figure's ratio and the noise rule's verdict,
shown as its text shows them), and the keys of the recorded environments whose values differ between the runs."""

from __future__ import annotations

from case_runners.core.errors import PerfplayError
from case_runners.views.compare.alignment import differences
from case_runners.views.compare.runs import NOISE_RULE, WORSE, compare_summaries, key_text
from case_runners.views.compare.runs_text import match_header, row_cells, side_text, skipped_text
from case_runners.views.report import html
from case_runners.views.report.data import NONE, RunData, flat


def side_by_side_section(runs: list[RunData]) -> str | html.Omitted:
    if len(runs) < 2:
        return html.Omitted("one run: give the report two runs or more")
    parts = [html.para("Each later run against the first (#1, the baseline), as compare-runs computes it: cases "
                       "matched by case, task and scale whatever the vendor; each figure's mean ± std (number of "
                       "valid rounds), its ratio to the baseline and the verdict. Noise rule: " + NOISE_RULE + "."),
             html.para("; ".join(f"#{i + 1} {run.label}" for i, run in enumerate(runs)), "note")]
    try:
        found = compare_summaries([(run.run_dir, run.summary) for run in runs])
    except PerfplayError as exc:
        parts.append(html.empty(f"No figure to compare: {exc}."))
    else:
        for match in found.matches:
            header, under = match_header(match)
            parts += [html.heading(key_text(match.key)), *(html.para(side_text(side), "note") for side in match.sides),
                      html.table(header, [under, *(row_cells(row) for row in match.rows)], bad_values=(WORSE,))]
        if found.skipped:
            parts += [html.para("Compared with nothing:"),
                      *(html.para(skipped_text(skipped), "note") for skipped in found.skipped)]
    return "".join(parts + _environment_differences(runs))


def _environment(run: RunData) -> dict[str, str] | None:
    """The run's recorded environment as dotted key -> text (the distinct values of its rounds joined with " | "),
    None when none of its rounds recorded one."""
    values: dict[str, list[str]] = {}
    for env, _ in run.environments():
        for key, text in flat(env) if env is not None else []:
            values.setdefault(key, [])
            if text not in values[key]:
                values[key].append(text)
    return {key: " | ".join(texts) for key, texts in values.items()} if values else None


def _environment_differences(runs: list[RunData]) -> list[str]:
    """A table of the environment keys whose values differ between the runs that recorded one (alignment's
    differences of each against the first of them)."""
    parts = [html.heading("Environment differences")]
    recorded = [(index, env) for index, run in enumerate(runs) if (env := _environment(run)) is not None]
    missing = [f"#{index + 1}" for index, run in enumerate(runs) if index not in dict(recorded)]
    if missing:
        parts.append(html.para(f"Environment not recorded: {', '.join(missing)}.", "note"))
    if len(recorded) < 2:
        return parts + [html.empty("Fewer than two runs recorded their environment: nothing to compare.")]
    every = {key for _, env in recorded for key in env}
    envs = [{key: env.get(key, NONE) for key in every} for _, env in recorded]  # a key a run lacks: "-", as null
    keys = sorted({key for env in envs[1:] for key in differences(envs[0], env)})
    if not keys:
        return parts + [html.para("Every recorded key has the same value in every run (the Environment section "
                                  "lists them).")]
    header = ["key", *(f"#{index + 1}" for index, _ in recorded)]
    return parts + [html.table(header, [[key, *(env[key] for env in envs)] for key in keys])]
