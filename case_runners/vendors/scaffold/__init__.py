"""Scaffolds: `new-vendor` and `new-case` write a complete, valid folder to start an adaptation or a case from.

A vendor: vendor/<vendor>/ with vendor.yaml, runtime.py, monitor.py, docker_image/pytorch/, a 1x1
config per standard training case and a README. A case: case_runners/cases/<case>/ with case.py,
config.yaml, data.py and a README, plus its configs for the cpu vendor (runs here) and for nvidia at 1x8 (the
reference). What is left to fill is marked `TODO(vendor):` or `TODO(case author):`; the folder is valid as
written: the vendor loads and every case resolves, the monitor runs, the case trains.

The templates are files in templates/ (string.Template: `$name`, `$$` for a literal dollar), never evaluated.
The README headings below are defined here once, for the scaffolds and for the checks of a finished folder.
Stdlib only.
"""

from __future__ import annotations

import re
from typing import Any

from case_runners.plan.config.benchmarks import BENCHMARKS, ONE

# The `## ` sections of vendor/<vendor>/README.md (the chip, the software stack, the results at
# 1x1, 1x8 and 2x8 beside NVIDIA's, what was adapted). Results has a `### <case>` section per case.
README_SECTIONS = ("Chip and server", "Software stack", "How to run", "Monitor", "Results", "Adaptation notes")
# The `## ` sections of case_runners/cases/<case>/README.md: docs/adding-a-case.md's template (the model and its
# source, the dataset and how to prepare it, the environment, how to start, the results per vendor and scale beside the
# reference's), then the FLOPs arithmetic and the params.
CASE_README_SECTIONS = ("Model", "Data", "Environment", "How to start", "Results", "FLOPs per sample", "Parameters")

COLLECTIVE_NPROC = 2  # the ranks of a collective (and p2p) in a scaffolded suite and in check-vendor: one server


def smallest_selection(benchmark: str) -> str | dict[str, Any]:
    """A base benchmark at its smallest scale, as perfplay_cases takes it: its name (one rank), or two ranks of
    one server for a collective and p2p. New-vendor's base.yaml suite; check-vendor resolves params with it."""
    return benchmark if BENCHMARKS[benchmark].ranks == ONE else {"case": benchmark, "nproc": COLLECTIVE_NPROC}


_HEADING = re.compile(r"^(#{2,3}) +(.+?) *#*$")


def headings(text: str, level: int = 2) -> list[str]:
    """The titles of a Markdown text's headings of one level (2: `## `), in order; fenced code is skipped."""
    found, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        match = None if fenced else _HEADING.match(line)
        if match and len(match[1]) == level:
            found.append(match[2])
    return found


def missing_sections(text: str, required: tuple[str, ...] = README_SECTIONS, level: int = 2) -> list[str]:
    """The required headings a README lacks, in the order given."""
    present = set(headings(text, level))
    return [title for title in required if title not in present]
