"""The generate task in the run summary: each generate case's combinations over its valid rounds (records/summary.py
GenerateRow), as the text table the play prints and the Markdown of summary.md: TTFT and TPOT (mean, p50, p99, in
ms), tokens/s and the engine's agreement, per batch size, prompt length and output length."""

from __future__ import annotations

from typing import Any

from case_runners.core.text import number_text, text_columns
from case_runners.records import names
from case_runners.records.generate import Combination
from case_runners.records.round import RoundRecord
from case_runners.records.summary import GenerateRow, RunSummary, Stat, SummaryCase

LATENCY_STATS = ("mean", "p50", "p99")  # records/generate.py Latency's
COLUMNS = ("case", "batch", "prompt", "output", "TTFT ms mean", "p50", "p99", "TPOT ms mean", "p50", "p99",
           "tokens/s", "agreement")
TITLE = ("generate (greedy decoding with a KV cache; TTFT = prefill + first token, TPOT = each next token, ms; "
         "tokens/s = batch x output / generation time; mean ± std over rounds)")
NOTE = ("Greedy decoding with a KV cache, each token timed after synchronizing the device. TTFT: the prefill and "
        "the first token; TPOT: each next token; both in ms, their mean, median and 99th percentile over every "
        "sample of the round (all ranks pooled), then the mean over valid rounds. tokens/s = batch x output length "
        "/ the mean generation time, summed over the ranks. Agreement: the share of output tokens on which the "
        "engine path agrees with eager torch.")


def _valid(records: list[Any]) -> list[RoundRecord]:
    return sorted((r for r in records if isinstance(r, RoundRecord) and r.status in names.VALID_STATUSES),
                  key=lambda r: r.round)


def generate_rows(records: list[Any]) -> list[GenerateRow]:
    """A generate case's combinations over its valid rounds (records: its rounds, any status), in the order
    measured."""
    found: dict[tuple[int, int, int], list[Combination]] = {}
    for record in _valid(records):
        for doc in record.metrics.get("combinations") or []:
            c = Combination.from_json(doc)
            found.setdefault((c.batch, c.prompt_len, c.output_len), []).append(c)
    rows = []
    for (batch, prompt_len, output_len), group in found.items():
        rows.append(GenerateRow(
            batch=batch, prompt_len=prompt_len, output_len=output_len, ttft_ms=_latency_stats(group, "ttft_ms"),
            tpot_ms=_latency_stats(group, "tpot_ms"), tokens_per_s=Stat.of([c.tokens_per_s for c in group]),
            agreement=Stat.of([c.agreement for c in group if c.agreement is not None]),
            agreement_note=group[-1].agreement_note,
            prompt_digests=list(dict.fromkeys(c.prompt_digest for c in group)),
            output_digests=list(dict.fromkeys(c.output_digest for c in group))))
    return rows


def _latency_stats(group: list[Combination], figure: str) -> dict[str, Stat]:
    """Each of a latency's figures (mean, p50, p99) over the rounds."""
    return {s: Stat.of([v for c in group if (v := getattr(getattr(c, figure), s)) is not None])
            for s in LATENCY_STATS}


def last_checkpoint(records: list[Any]) -> str | None:
    """The weights of a generate case's last valid round: a checkpoint directory or "random weights"."""
    valid = _valid(records)
    return valid[-1].metrics.get("checkpoint") if valid else None


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
