"""The generate task in the run summary as text: the table the play prints and the Markdown of summary.md (TTFT and
TPOT: mean, p50, p99, in ms; tokens/s and the engine's agreement, per batch size, prompt length and output length),
from each generate case's rows (records/summary_generate_rows.py)."""

from __future__ import annotations

from case_runners.core.text import number_text, text_columns
from case_runners.records import names
from case_runners.records.summary import GenerateRow, RunSummary, Stat, SummaryCase
from case_runners.records.summary_generate_rows import LATENCY_STATS

COLUMNS = ("case", "batch", "prompt", "output", "TTFT ms mean", "p50", "p99", "TPOT ms mean", "p50", "p99",
           "tokens/s", "agreement")
TITLE = ("generate (greedy decoding with a KV cache; TTFT = prefill + first token, TPOT = each next token, ms; "
         "tokens/s = batch x output / generation time; mean ± std over rounds)")
NOTE = ("Greedy decoding with a KV cache, each token timed after synchronizing the device. TTFT: the prefill and "
        "the first token; TPOT: each next token; both in ms, their mean, median and 99th percentile over every "
        "sample of the round (all ranks pooled), then the mean over valid rounds. tokens/s = batch x output length "
        "/ the mean generation time, summed over the ranks. Agreement: the share of output tokens on which the "
        "engine path agrees with eager torch.")


def _ms(stat: Stat) -> str:
    return "-" if stat.mean is None else f"{stat.mean:.2f}"


def _mean_std(stat: Stat, digits: int = 1) -> str:
    if stat.mean is None:
        return "-"
    return f"{stat.mean:.{digits}f}" + (f" ±{stat.std or 0.0:.{digits}f}" if stat.n > 1 else "")


def _agreement(row: GenerateRow) -> str:
    if row.agreement.mean is None:
        return row.agreement_note
    return f"{row.agreement.mean * 100:.2f}%"


def table_rows(summary: RunSummary) -> list[list[str]]:
    """One row per combination of every generate case."""
    rows = []
    for case in summary.cases:
        if case.task != names.GENERATE or not isinstance(case.generate, list):
            continue
        if not case.generate:
            rows.append([case.case_id, "-", "-", "-", *["-"] * 7, case.status])
        for row in case.generate:
            rows.append([case.case_id, str(row.batch), str(row.prompt_len), str(row.output_len),
                         *(_ms(row.ttft_ms[s]) for s in LATENCY_STATS), *(_ms(row.tpot_ms[s]) for s in LATENCY_STATS),
                         _mean_std(row.tokens_per_s), _agreement(row)])
    return rows


def _notes(summary: RunSummary) -> list[str]:
    """Per generate case: its weights, and a combination whose prompts or outputs changed between rounds."""
    notes = []
    for case in summary.cases:
        if case.task != names.GENERATE or not isinstance(case.generate, list):
            continue
        notes.append(f"{case.case_id}: weights: {case.checkpoint or '-'}")
        for row in case.generate:
            what = [name for name, digests in (("prompts", row.prompt_digests), ("outputs", row.output_digests))
                    if len(digests) > 1]
            if what:
                notes.append(f"{case.case_id} batch {row.batch} prompt {row.prompt_len} output {row.output_len}: "
                             f"the {' and '.join(what)} differ between rounds")
    return notes


def render_text(summary: RunSummary) -> list[str]:
    """The generate table for the play's output."""
    rows = table_rows(summary)
    if not rows:
        return []
    line, *body = text_columns(list(COLUMNS), rows)
    return [TITLE, line, "-" * len(line), *body, *(f"  {note}" for note in _notes(summary))]


def render_markdown(summary: RunSummary) -> list[str]:
    rows = table_rows(summary)
    if not rows:
        return []
    return ["", "## Generate", "", NOTE, "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS),
            *("| " + " | ".join(row) + " |" for row in rows), "", *(f"- {note}" for note in _notes(summary))]


def case_markdown(case: SummaryCase) -> list[str]:
    """A generate case's section of summary.md: its rounds and their headline figures."""
    lines = [f"Weights: {case.checkpoint or '-'}. Headline per round: the first combination's TTFT and TPOT "
             "medians, the highest tokens/s.", "",
             "| round | status | TTFT ms | TPOT ms | tokens/s | e2e s | reason |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['round']} | {r['status']} | {number_text(r.get('ttft_ms'), 2)} | "
              f"{number_text(r.get('tpot_ms'), 2)} | {number_text(r.get('tokens_per_s'))} | "
              f"{number_text(r.get('e2e_time'), 2)} | {r['reason'] or ''} |" for r in case.rounds]
    return lines
