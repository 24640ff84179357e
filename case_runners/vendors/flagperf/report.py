"""import-flagperf's report: one item per setting, case, param and file, one outcome per config file of the
checkout (mapped, read as a sibling, no counterpart or skipped, with the reason) and their counts, and the files it
writes (rendered as commented YAML; an existing file is kept unless forced)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from case_runners.core import files
from case_runners.plan.config.flagperf_names import COMMAND

MAPPED, NONE, SKIPPED, WROTE, KEPT, READ = "mapped", "no counterpart", "skipped", "wrote", "kept", "read"
FILE_ORDER = (MAPPED, READ, NONE, SKIPPED)  # a file's outcome: the first of these it had


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
    text: str | None = None  # a file written as it is (a copied FlagPerf file, a vendor folder's): not YAML data
    executable: bool = False


@dataclass
class FileOutcome:
    status: str  # one of FILE_ORDER
    why: str  # the reason's kind, counted (the same for every file of that kind)
    detail: str = ""  # this file's particulars


@dataclass
class Report:
    items: list[Item] = field(default_factory=list)
    outputs: list[Output] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)
    files: dict[str, FileOutcome] = field(default_factory=dict)  # config file (as shown) -> its outcome

    def add(self, status: str, source: str, detail: str) -> None:
        self.items.append(Item(status, source, detail))

    def file(self, shown: str, status: str, why: str, detail: str = "") -> None:
        """Record a config file's outcome; one it had already stands unless this one ranks before it."""
        known = self.files.get(shown)
        if known is None or FILE_ORDER.index(status) < FILE_ORDER.index(known.status):
            self.files[shown] = FileOutcome(status, why, detail)

    def file_items(self) -> None:
        """One item per config file, in path order."""
        for shown in sorted(self.files):
            outcome = self.files[shown]
            self.add(outcome.status, shown, f"{outcome.why}{': ' if outcome.detail else ''}{outcome.detail}")

    def counts(self) -> list[str]:
        """'N config files: a mapped, b read, ...', then one line per status and reason with its count."""
        by_status = {status: [o for o in self.files.values() if o.status == status] for status in FILE_ORDER}
        lines = [f"{len(self.files)} config files: " + ", ".join(f"{len(found)} {status}"
                                                                 for status, found in by_status.items())]
        for status, found in by_status.items():
            reasons: dict[str, int] = {}
            for outcome in found:
                reasons[outcome.why] = reasons.get(outcome.why, 0) + 1
            lines += [f"{count:>5} {status:<14}  {why}" for why, count in sorted(reasons.items(), key=lambda r: -r[1])]
        return lines


def render(output: Output) -> str:
    if output.text is not None:
        return output.text
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
        if output.executable:
            target.chmod(0o755)
        report.written.append(target)
        report.add(WROTE, str(target), "replaced" if existed else "new")
