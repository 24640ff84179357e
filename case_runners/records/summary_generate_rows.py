"""The generate task in the run summary: each generate case's combinations over its valid rounds (records/summary.py
GenerateRow) and the weights of its last valid round. Their text and Markdown: views/summary/generate_rows.py."""

from __future__ import annotations

from typing import Any

from case_runners.records import names
from case_runners.records.generate import Combination
from case_runners.records.round import RoundRecord
from case_runners.records.summary import GenerateRow, Stat

LATENCY_STATS = ("mean", "p50", "p99")  # records/generate.py Latency's


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
