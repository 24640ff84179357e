"""The same glibc malloc settings on both sides of a fidelity pair: a measurement control, not a product setting.

By default glibc gives the free top of its heap back to the OS once it passes M_TRIM_THRESHOLD (128 KiB, then twice
a dynamic mmap threshold) and serves a block above M_MMAP_THRESHOLD (dynamic: it rises to the size of the last
mmapped block freed) from a fresh mmap, unmapped again on free. A training step frees most of its activations after
backward, so the next forward takes those pages back, each a minor page fault the kernel zero-fills: 0-38k a step
for mobilenetv2 at 96 px, a number set by each process's own allocation history, ~13 % of a step's CPU. FIXED
removes that from both sides alike (bench/process_watch.py shows it per step):
- MALLOC_MMAP_THRESHOLD_ 1 GiB: every activation and gradient of a bench shape comes from the heap, never a fresh
  mapping; a fixed value also turns the dynamic threshold off, so no process's history moves it;
- MALLOC_TRIM_THRESHOLD_ 1 GiB: the heap's free top stays mapped between steps, so after the first steps have grown
  the heap to its peak no step faults it back in;
- MALLOC_TOP_PAD_ 64 MiB: the heap grows in 64 MiB steps while it reaches that peak, not one brk per block.
glibc reads them at a process's start; the bench sets them in each side's environment, which the harness passes on
to its ranks (`case_runners run` -> launcher -> rank inherit it; the watched process's environment is checked).
DEFAULT: none of them set on either side, glibc's own behaviour.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping

GIB = 1 << 30
FIXED = "fixed"
DEFAULT = "default"
MODES = (FIXED, DEFAULT)
SETTINGS = {"MALLOC_MMAP_THRESHOLD_": str(GIB), "MALLOC_TRIM_THRESHOLD_": str(GIB),
            "MALLOC_TOP_PAD_": str(64 << 20)}
MODE_SHOWN = {FIXED: " ".join(f"{k}={v}" for k, v in SETTINGS.items()), DEFAULT: f"none of {', '.join(SETTINGS)} set"}


def add_malloc_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--malloc", choices=MODES, default=FIXED,
                        help=f"glibc malloc on both sides: {FIXED} (default) sets {MODE_SHOWN[FIXED]} so that "
                             f"neither side's steps page-fault freed heap back in; {DEFAULT} leaves glibc's own "
                             f"({MODE_SHOWN[DEFAULT]})")


def malloc_env(mode: str, base: Mapping[str, str] = os.environ) -> dict[str, str]:
    """base with the mode's malloc settings: SETTINGS (fixed) or none of them (default)."""
    if mode not in MODES:
        raise ValueError(f"malloc mode {mode!r}: one of {', '.join(MODES)}")
    env = {k: v for k, v in base.items() if k not in SETTINGS}
    return {**env, **SETTINGS} if mode == FIXED else env


def unmet(mode: str, environ: Mapping[str, str]) -> str | None:
    """What a process's environment lacks (or has) of the mode's settings, or None when it holds exactly them."""
    wanted = SETTINGS if mode == FIXED else {}
    seen = {k: environ[k] for k in SETTINGS if k in environ}
    return None if seen == wanted else f"{seen or 'none of them'}, not {wanted or 'none of them'}"
