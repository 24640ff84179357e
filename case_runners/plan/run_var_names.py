"""The run vars' prefix and the run vars renamed, stdlib only: the CLI refuses an old option's name (cli.py) without
importing the plan's checks (run_vars.py, which imports both from here)."""

from __future__ import annotations

PREFIX = "perfplay_"
# Run vars renamed: the old name is an error naming the new one (and so is the old name of the CLI option that
# sets one, cli.py).
RENAMED = {f"{PREFIX}{old}": f"{PREFIX}{old}_s" for old in (
    "case_timeout", "rdzv_timeout", "heartbeat_timeout", "monitor_interval", "progress_interval")}
