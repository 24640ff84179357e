"""The run vars of a plan request, each checked once, in one pass.

A request key is the run var's name less `perfplay_` (`case_timeout_s` is `perfplay_case_timeout_s`); `hosts` is
what `perfplay_host_pattern` matched, `nic` the hosts' `perfplay_nic`, `run_var_names` the names of the vars set
for the controller that match QUERIED_NAMES (`perfplay_*` and upper-case names) and `host_var_names` those of each
host of the run, so that no var is silently ignored: a `perfplay_*` name that is not one of KNOWN_RUN_VARS (a
typo, a renamed run var) and a FlagPerf setting (`VENDOR`, `CASES`, ...) are errors naming the var. Every
problem is a ConfigError naming the run var, the "run vars" file label and the allowed values; the plan reports
them together with its other errors. A run var left unset takes its default here (SCALARS), or none
when a later one applies (the case's own timeout, the launcher's rendezvous timeout from the host's environment).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import Any, TypedDict

from case_runners.core import defaults
from case_runners.core.cli_io import RENAMED, RUN_VAR_PREFIX
from case_runners.core.errors import RUN_VARS_FILE, ConfigError, path_too_long, shown
from case_runners.plan.config.constraints import Constraint, make_constraint
from case_runners.plan.config.flagperf_names import COMMAND, run_setting
from case_runners.plan.config.resolved import TASKS, TRAINING
from case_runners.plan.config.selection import BOUNDS
from case_runners.records.resolved import RUNTIMES

# A network interface name as Linux takes it: at most 15 characters (IFNAMSIZ - 1), no '/', ':' or space.
NIC_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,14}")
NIC_RULE = "1 to 15 letters, digits, '_', '.' or '-', not starting with '.' or '-'"
# An inventory host name names its node directories (<host>_noderank<N>): a host name or an IP address, not a path.
HOST_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,252}")
HOST_RULE = ("1 to 253 letters, digits, '_', '.', ':' or '-' (a host name or an IP address), not starting with "
             "'.' or '-'")
# The names preflight queries (ansible.builtin.varnames) for the controller's and the hosts' vars: perfplay's
# and upper-case ones, where FlagPerf's settings are.
QUERIED_NAMES = r"^(perfplay_|[A-Z][A-Z0-9_]*$)"
# The perfplay_* vars a user may set: the documented run and host vars (docs/run-vars.md) ...
DOCUMENTED_RUN_VARS = frozenset(RUN_VAR_PREFIX + name for name in (
    "cases", "vendor", "task", "runtime", "image", "case_timeout_s", "results_dir", "run_id", "min_free_bytes",
    "clear_caches", "monitor_interval_s", "progress_interval_s", "master_port", "rdzv_timeout_s",
    "heartbeat_timeout_s", "host_pattern", "project_dir", "venv", "host_results_dir", "node_addr", "nic",
    "device_count", "history_db"))
# ... and the names the plays define themselves (play vars, vars files, set_fact, register), seen while they run.
PLAY_VARS = frozenset(RUN_VAR_PREFIX + name for name in (
    "ansible_core", "cleanup", "host_is_local", "host_needs", "host_requirements", "host_run_dir", "master", "node_dir",
    "node_rank", "plan", "plan_hosts", "preflight_only", "python", "queried_names", "remote", "round", "round_error",
    "round_record", "run", "summary"))
KNOWN_RUN_VARS = DOCUMENTED_RUN_VARS | PLAY_VARS  # tests/unit/test_docs_run_vars.py keeps both in step


def _var(spec: dict[str, Any], default: Any) -> tuple[Constraint, Any]:
    return make_constraint(spec, default, key="run var", file=__name__), default


# The run vars with a set of values: request key -> (the values, the default when unset).
CHOICES: dict[str, tuple[tuple[str, ...], str]] = {"runtime": (RUNTIMES, RUNTIMES[0]), "task": (TASKS, TRAINING)}
# The other scalar run vars: request key -> (range, default when unset; None: no default here).
SCALARS: dict[str, tuple[Constraint, Any]] = {
    "vendor": _var({"type": "str", "min_length": 1, "max_length": 64}, defaults.VENDOR),  # plan: a vendor/ folder
    "case_timeout_s": (BOUNDS["timeout_s"], None),  # unset: each case's own timeout_s
    "clear_caches": _var({"type": "bool"}, False),
    "monitor_interval_s": _var({"type": "float", "min": defaults.MONITOR_INTERVAL_RANGE[0],
                                "max": defaults.MONITOR_INTERVAL_RANGE[1]}, defaults.MONITOR_INTERVAL_S),
    "progress_interval_s": _var({"type": "float", "min": 1, "max": 3600}, defaults.PROGRESS_INTERVAL_S),
    "rdzv_timeout_s": _var({"type": "float", "min": 1, "max": 86400}, None),  # unset: the launcher's
    "heartbeat_timeout_s": _var({"type": "float", "min": 1, "max": 3600}, defaults.HEARTBEAT_TIMEOUT_S),
    "master_port": _var({"type": "int", "min": 0, "max": 65535}, 0),  # 0: node 0 picks a free port
    "min_free_bytes": _var({"type": "int", "min": 0, "max": 1 << 50}, defaults.MIN_FREE_BYTES),
}
# Request keys whose values other parts of the plan check: the selection, the image settings, the results dir,
# the run id, the history database, and whether to write the checkout bundle (not a run var).
PASSED_ON = ("cases", "image", "results_dir", "run_id", "history_db", "bundle")
PATH_VARS = ("results_dir", "history_db")  # paths the plan looks at: too long ones refused unread (path_too_long)
REQUEST_KEYS = (*CHOICES, *SCALARS, "hosts", "nic", "run_var_names", "host_var_names", *PASSED_ON)


class RunRequest(TypedDict, total=False):
    """A plan request (`python -m case_runners plan REQUEST.json`, the single-host runner's): REQUEST_KEYS, each
    optional. Values are checked, not trusted: the playbook passes the run vars as the user set them."""
    vendor: str
    task: str                           # CHOICES
    runtime: str                        # CHOICES
    image: dict[str, Any] | None        # perfplay_image: launch/container/image.py BUILD_KEYS
    case_timeout_s: float | None
    clear_caches: bool
    monitor_interval_s: float
    progress_interval_s: float
    rdzv_timeout_s: float | None
    heartbeat_timeout_s: float
    master_port: int
    min_free_bytes: int
    hosts: list[str] | None             # what perfplay_host_pattern matched, in node order
    nic: str | dict[str, str] | None    # one interface for every host, or per host
    run_var_names: list[str]            # the controller's vars matching QUERIED_NAMES
    host_var_names: dict[str, list[str]]
    cases: Any                          # perfplay_cases: plan/config/selection.py parse_selections takes every form
    results_dir: str
    run_id: str | None
    history_db: str | None
    bundle: bool                        # write the checkout remote hosts run into the run directory


def error(name: str, message: str, allowed: list[str] | tuple[str, ...] | None = None) -> ConfigError:
    return ConfigError(message, key=RUN_VAR_PREFIX + name, file=RUN_VARS_FILE, allowed=allowed)


def check_run_vars(request: Mapping[str, Any]) -> tuple[dict[str, Any], list[ConfigError]]:
    """The run vars of `request`, converted to their types with their defaults applied (an invalid one: its
    default), and every problem: an unknown request key, a renamed run var, a value of the wrong type or out of
    range, no host, a NIC that cannot be an interface name."""
    errors = [ConfigError("unknown request key", key=key, allowed=REQUEST_KEYS)
              for key in sorted(set(request) - set(REQUEST_KEYS))]
    errors += var_name_errors(request.get("run_var_names"), request.get("host_var_names"))
    values: dict[str, Any] = {}
    for name, (choices, default) in CHOICES.items():
        value = request.get(name)
        values[name] = default if value is None or value == "" else value
        if values[name] not in choices:
            errors.append(error(name, f"unknown {name} {shown(value)}", choices))
            values[name] = default
    for name, (constraint, default) in SCALARS.items():
        value = request.get(name)
        values[name] = default
        if value is None or value == "":
            continue
        try:
            values[name] = constraint.check(value, key=RUN_VAR_PREFIX + name, file=RUN_VARS_FILE)
        except ConfigError as exc:  # a wrong type names the range too
            errors.append(exc if exc.allowed is not None else error(name, exc.message, [constraint.describe(
                RUN_VAR_PREFIX + name)]))
    for name in PATH_VARS:
        long = path_too_long(request.get(name), key=RUN_VAR_PREFIX + name, file=RUN_VARS_FILE)
        errors += [long] if long else []
    values["hosts"], host_errors = _hosts(request.get("hosts"))
    values["nic"], nic_errors = _nics(request.get("nic"), values["hosts"])
    return values, errors + host_errors + nic_errors


def var_name_errors(run_var_names: Any, host_var_names: Any) -> list[ConfigError]:
    """The vars set for the controller (run_var_names: a list of names) or for a host of the run (host_var_names:
    {host: names}) that would be ignored: a renamed run var, another unknown `perfplay_*` name, a FlagPerf setting.
    Each name once, with the hosts that set it when the controller does not."""
    errors: list[ConfigError] = []
    names = run_var_names or []
    if not _names(names):
        errors.append(ConfigError("must be a list of var names", key="run_var_names"))
        names = []
    by_host = host_var_names or {}
    if not isinstance(by_host, Mapping) or not all(_names(v) for v in by_host.values()):
        errors.append(ConfigError("must map each host to a list of var names", key="host_var_names"))
        by_host = {}
    hosts: dict[str, list[str]] = {}
    for host, host_names in by_host.items():
        for name in host_names:
            if name not in names:
                hosts.setdefault(name, []).append(str(host))
    for name in sorted({*names, *hosts}):
        message = _unknown_var(name)
        if message:
            where = f"host vars of {', '.join(sorted(hosts[name]))}" if name in hosts else RUN_VARS_FILE
            errors.append(ConfigError(message, key=name, file=where))
    return errors


def _names(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(n, str) for n in value)


def _unknown_var(name: str) -> str | None:
    """Why a var set for the run would be ignored, or None when perfplay reads it (or it is not perfplay's)."""
    if name in RENAMED:
        return f"renamed to {RENAMED[name]}: set that instead"
    if name.startswith(RUN_VAR_PREFIX) and name not in KNOWN_RUN_VARS:
        close = difflib.get_close_matches(name, sorted(DOCUMENTED_RUN_VARS), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        return f"unknown perfplay var{hint}: perfplay would ignore it; docs/run-vars.md lists the run vars"
    setting = run_setting(name)
    if setting is not None:
        instead = f"perfplay's is {setting.perfplay}" if setting.perfplay else f"no counterpart: {setting.note}"
        return (f"is a FlagPerf setting, which perfplay does not read ({instead}); "
                f"{COMMAND} PATH converts a FlagPerf checkout's configs (docs/flagperf-migration.md)")
    return None


def _hosts(hosts: Any) -> tuple[list[str] | None, list[ConfigError]]:
    """The run's hosts in node order; None when the request names none (a plan without Ansible)."""
    if hosts is None:
        return None, []
    if not isinstance(hosts, list) or not all(isinstance(h, str) and h for h in hosts):
        return None, [error("host_pattern", f"expected a list of inventory host names, got {shown(hosts)}")]
    if not hosts:
        return [], [error("host_pattern", "matches no inventory host (add hosts to the inventory group "
                                          "perfplay_hosts)")]
    bad = [host for host in hosts if not HOST_NAME.fullmatch(host)]
    if bad:
        return None, [error("host_pattern", f"inventory host {shown(host)} cannot name a node directory", [HOST_RULE])
                      for host in bad]
    return list(hosts), []


def _nics(nic: Any, hosts: list[str] | None) -> tuple[dict[str, str], list[ConfigError]]:
    """{host: interface} of the hosts that set perfplay_nic, from a mapping of hosts or one name for every host.
    Whether the interface exists is the host preflight's to check."""
    if nic is None or nic == "":
        return {}, []
    pairs: list[tuple[str | None, Any]]
    if isinstance(nic, str):
        pairs = [(host, nic) for host in hosts] if hosts else [(None, nic)]
    elif isinstance(nic, Mapping):
        pairs = [(str(host), name) for host, name in nic.items()]
    else:
        return {}, [error("nic", f"expected an interface name or a mapping of hosts to one, got {shown(nic)}")]
    found: dict[str, str] = {}
    errors: list[ConfigError] = []
    for host, name in pairs:
        if name is None or name == "":
            continue
        if not isinstance(name, str) or not NIC_NAME.fullmatch(name):
            where = f" (host {host})" if host is not None else ""
            errors.append(error("nic", f"{shown(name)}{where} is not a network interface name", [NIC_RULE]))
        elif host is not None:
            found[host] = name
    return found, errors
