"""`python -m case_runners check-record PATH...`: whether each file is a valid perfplay document, of the kind its
`schema` names (any of KINDS)."""

from __future__ import annotations

from pathlib import Path

from case_runners.records.node import NodeResult
from case_runners.records.rank import RankResult
from case_runners.records.resolved import ResolvedConfig
from case_runners.records.round import RoundRecord
from case_runners.records.schema import Document, Problem, RecordError, problems_of, read_json
from case_runners.records.summary import RunSummary

KINDS: tuple[type[Document], ...] = (ResolvedConfig, RankResult, NodeResult, RoundRecord, RunSummary)


def check_file(path: Path | str) -> tuple[str | None, list[Problem]]:
    """(the schema the file names, when it is a known one; its problems, [] when it is valid)."""
    try:
        doc = read_json(path)
    except RecordError as exc:
        return None, exc.problems
    kind, problems = problems_of(KINDS, doc)
    return (kind.SCHEMA if kind else None), problems


def report(paths: list[str]) -> tuple[list[str], int]:
    """The lines to print and the exit status: one line per valid file, its problems under each other; 1 when
    any file is not valid."""
    lines, code = [], 0
    for path in paths:
        schema, problems = check_file(path)
        if not problems:
            lines.append(f"{path}: ok ({schema})")
            continue
        code = 1
        what = f"not a valid {schema}" if schema else "not a known perfplay document"
        lines += [f"{path}: {what}: {len(problems)} problem{'s' if len(problems) > 1 else ''}",
                  *(f"  {problem}" for problem in problems)]
    return lines, code
