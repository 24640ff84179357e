"""A vendor case's environment_variables.sh applied in the host runtime (the container's entry shell sources it
there): bash sources it over the launcher's environment, and the ranks start with what it leaves set."""

from __future__ import annotations

import subprocess
from pathlib import Path

from case_runners.errors import PerfplayError

BASH_OWN = ("_", "SHLVL", "PWD", "OLDPWD")  # what bash itself sets, not the file
TIMEOUT_S = 60


def syntax_problem(path: Path) -> str | None:
    """What `bash -n` says of the file (a syntax error, without running it), or None when it parses."""
    try:
        done = subprocess.run(["bash", "-n", str(path)], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bash -n could not check it: {exc}"
    if done.returncode == 0:
        return None
    said = done.stderr.strip().splitlines()
    return f"bash -n: {said[0].removeprefix(f'{path}: ')}" if said else f"bash -n: exit code {done.returncode}"


def sourced(path: Path, base: dict[str, str]) -> dict[str, str]:
    """The environment after `. path` in bash, started with base. PerfplayError naming the file when it fails."""
    try:
        done = subprocess.run(["bash", "-c", '. "$1" >&2 && env -0', "perfplay-env", str(path)], env=base,
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PerfplayError(f"{path}: cannot be sourced: {exc}") from None
    if done.returncode:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        raise PerfplayError(f"{path}: sourcing it failed (exit code {done.returncode})"
                            + (f": {said[-1]}" if said else ""))
    env = dict(entry.split("=", 1) for entry in done.stdout.decode(errors="replace").split("\0") if "=" in entry)
    for name in BASH_OWN:
        env.pop(name, None)
        if name in base:
            env[name] = base[name]
    return env
