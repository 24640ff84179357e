"""Run ids: what names one run everywhere (results directory, pid files, the environment of its processes).

A generated id is `run<YYYYmmddHHMMSS>-<6 random hex digits>`, so two runs started in the same second differ.
A given id must match RUN_ID_PATTERN: at least 8 characters, so that ids like `0` or `run` are refused.
Stdlib only: the launcher and the monitors import it.
"""

from __future__ import annotations

import re
import secrets
import time

from case_runners.core.errors import RUN_VARS_FILE, ConfigError, shown

RUN_ID_ENV = "PERFPLAY_RUN_ID"  # every process of a run carries its id here
RUN_ID_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9_-]{7,63}")
RUN_ID_RULE = "8 to 64 characters: a letter, then letters, digits, '_' or '-'"
MANUAL_RUN_ID = "perfplay-manual"  # the default of the standalone launcher and monitor commands
STAMP_FORMAT = "%Y%m%d%H%M%S"  # a generated id's local start time
_GENERATED = re.compile(r"run(?P<stamp>\d{14})-")


def new_run_id(now: float | None = None) -> str:
    """`run<YYYYmmddHHMMSS>-<hex>` for the local time `now` (default: now)."""
    stamp = time.strftime(STAMP_FORMAT, time.localtime(time.time() if now is None else now))
    return f"run{stamp}-{secrets.token_hex(3)}"


def started(run_id: str) -> time.struct_time | None:
    """The local start time a generated run id carries; None for another id."""
    match = _GENERATED.match(run_id)
    if not match:
        return None
    try:
        return time.strptime(match["stamp"], STAMP_FORMAT)
    except ValueError:
        return None


def is_run_id(value: object) -> bool:
    return isinstance(value, str) and RUN_ID_PATTERN.fullmatch(value) is not None


def check_run_id(value: object, key: str = "perfplay_run_id", file: str | None = RUN_VARS_FILE) -> str:
    """`value` if it is a run id, else a ConfigError naming the key and the rule."""
    if not is_run_id(value):
        raise ConfigError(f"{shown(value)} is not a run id ({RUN_ID_RULE})", key=key, file=file)
    return str(value)
