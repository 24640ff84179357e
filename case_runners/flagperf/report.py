"""import-flagperf's report: one item per setting, case, param and file, and the files it writes (rendered as
commented YAML; an existing file is kept unless forced)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from case_runners import files
from case_runners.config.flagperf_names import COMMAND

MAPPED, NONE, SKIPPED, WROTE, KEPT = "mapped", "no counterpart", "skipped", "wrote", "kept"


@dataclass
class Item:
    status: str
    source: str  # file[:line] and the FlagPerf name
    detail: str

    def __str__(self) -> str:
        return f"{self.status:<14}  {self.source}: {self.detail}"


@dataclass
class Output:
    path: str  # relative to OUT
    header: str
    data: dict[str, Any]


@dataclass
class Report:
    items: list[Item] = field(default_factory=list)
    outputs: list[Output] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)

    def add(self, status: str, source: str, detail: str) -> None:
        self.items.append(Item(status, source, detail))


def render(output: Output) -> str:
    header = "".join(f"# {line}\n" for line in [*_wrap(output.header), f"Written by {COMMAND}."])
    body = yaml.safe_dump(output.data, sort_keys=False, default_flow_style=False, allow_unicode=True, width=116) \
        if output.data else "{}\n"
    return f"---\n{header}{body}"


def _wrap(text: str, width: int = 116) -> list[str]:
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return lines + ([line] if line else [])


def write(report: Report, out: Path, *, force: bool) -> None:
    """Write every output under `out`; an existing file is kept (reported) unless `force`."""
    for output in report.outputs:
        target = out / output.path
        existed = target.exists()
        if existed and not force:
            report.add(KEPT, str(target), "exists already (--force replaces it)")
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        files.atomic_write_text(target, render(output))
        report.written.append(target)
        report.add(WROTE, str(target), "replaced" if existed else "new")
