# -*- coding: utf-8 -*-
# PRIVATE: helpers shared by perfplay's modules in library/. Not a public API.
#
# Stdlib only and no ``ansible.*`` import, so it runs on any target python and
# plain pytest can import it (library modules fall back to
# ``module_utils._perfplay_cli`` when ``ansible.module_utils`` does not have it).
#
# Every module is a thin wrapper around ``python -m case_runners <subcommand>``:
# it builds an argv list (never a shell string), runs it in the project dir and
# reads the one JSON document the subcommand prints on stdout.

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

TAIL_CHARS = 4000
MESSAGE_LINES = 5  # of stderr, carried into a failure's msg (the whole tail is in its stderr field)
MESSAGE_CHARS = 600

# Options every perfplay module has: which python runs case_runners, and where (their documentation: the doc
# fragment playbooks/doc_fragments/perfplay_cli.py).
COMMON_ARGUMENT_SPEC = dict(
    python=dict(type="str"),
    project_dir=dict(type="path", required=True),
)


def cli_argv(python: str | None, subcommand: str, *args: Any, **flags: Any) -> list[str]:
    """Return ``[python, -m, case_runners, subcommand, *args, --flag value ...]``.

    Keyword flags map ``run_id`` to ``--run-id``; ``None`` values are left out,
    ``True`` adds the bare flag, ``False`` leaves it out, a list repeats the flag.
    """
    argv = [python or sys.executable, "-m", "case_runners", subcommand]
    argv.extend(str(arg) for arg in args)
    for name, value in flags.items():
        if value is None or value is False:
            continue
        flag = "--" + name.replace("_", "-")
        if value is True:
            argv.append(flag)
        elif isinstance(value, (list, tuple)):
            for item in value:
                argv.extend([flag, str(item)])
        else:
            argv.extend([flag, str(value)])
    return argv


def parse_json_document(text: str | None) -> dict[str, Any] | None:
    """Return the JSON object printed on stdout, or ``None``.

    The whole text is tried first; failing that, the last line that parses as a
    JSON object (a subcommand may log a line or two before its document).
    """
    text = (text or "").strip()
    if not text:
        return None
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
        for line in reversed(text.splitlines()):
            line = line.strip()
            if line.startswith("{"):
                try:
                    doc = json.loads(line)
                    break
                except ValueError:
                    continue
    return doc if isinstance(doc, dict) else None


def tail(text: str | None, chars: int = TAIL_CHARS) -> str:
    """Last ``chars`` characters of ``text`` (for error reports)."""
    text = text or ""
    return text[-chars:]


def last_lines(text: str | None, lines: int = MESSAGE_LINES, chars: int = MESSAGE_CHARS) -> str:
    """The last ``lines`` non-empty lines of ``text`` on one line (joined by " | "), at most ``chars`` of it."""
    kept = [line.strip() for line in (text or "").splitlines() if line.strip()][-lines:]
    said = " | ".join(kept)
    return said if len(said) <= chars else "..." + said[-(chars - 3):]


class CliResult:
    """Outcome of one ``case_runners`` subcommand."""

    def __init__(self, argv: list[str], rc: int, stdout: str, stderr: str) -> None:
        self.argv = argv
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr
        self.doc = parse_json_document(stdout)

    def failure(self, what: str) -> dict[str, Any]:
        """Fields for ``fail_json`` when the subcommand gave no usable answer."""
        return dict(
            msg="%s: `%s` exited %s%s%s" % (
                what,
                " ".join(self.argv[1:4]),
                self.rc,
                "" if self.doc is not None else " without a JSON document on stdout",
                (": " + last_lines(self.stderr)) if last_lines(self.stderr) else "",
            ),
            cmd=self.argv,
            rc=self.rc,
            stdout=tail(self.stdout),
            stderr=tail(self.stderr),
        )


def run_cli(module: Any, argv: list[str], project_dir: str, environ_update: dict[str, str] | None = None,
            data: str | None = None) -> CliResult:
    """Run ``argv`` in ``project_dir`` through ``module.run_command``, ``data`` (text) on its stdin; never raises
    on rc."""
    rc, stdout, stderr = module.run_command(
        argv, cwd=project_dir, environ_update=environ_update or None, check_rc=False, data=data
    )
    return CliResult(argv, rc, stdout, stderr)


def run_json(module: Any, argv: list[str], project_dir: str, what: str, environ_update: dict[str, str] | None = None,
             check_rc: bool = False, data: str | None = None) -> CliResult:
    """Run ``argv`` and return its JSON document; ``fail_json`` when there is none.

    A non-zero exit with a JSON document is returned to the caller (several
    subcommands report errors in their document and exit 1), unless
    ``check_rc``: then any non-zero exit fails the module.
    """
    result = run_cli(module, argv, project_dir, environ_update, data)
    if result.doc is None or (check_rc and result.rc != 0):
        module.fail_json(**result.failure(what))
    return result


# Where a node's command may run from the controller's own process (an action plugin) instead of a module: the
# node is this machine (a local connection), as this user (no become), in this environment (no task environment).
LOCAL_TRANSPORTS = ("local", "ansible.builtin.local")


def runs_on_the_controller(transport: str, become: bool, environment: Any) -> bool:
    """Whether what the module would run on the node, the controller can run itself, with the same effect.

    ``environment`` is the task's, a list of one entry per level that has one (``[{}]`` when none has).
    """
    return transport in LOCAL_TRANSPORTS and not become and not any(environment or ())


# host_check_info's options: the module's, and its action's where the host is the controller itself.
HOST_CHECK_ARGUMENT_SPEC = dict(
    COMMON_ARGUMENT_SPEC,
    vendor=dict(type="str", required=True),
    nproc=dict(type="int", default=0),
    device_count=dict(type="int"),
    cases=dict(type="list", elements="dict", default=[]),
    master_port=dict(type="int"),
    master_addr=dict(type="str", default=""),
    results_dir=dict(type="path"),
    min_free_bytes=dict(type="int", default=0),
    nic=dict(type="str", default=""),
    requirements=dict(type="list", elements="str", default=[]),
)
HOST_CHECK_REQUEST_KEYS = ("vendor", "nproc", "device_count", "cases", "master_port", "master_addr", "results_dir",
                           "min_free_bytes", "nic", "requirements")


@contextlib.contextmanager
def host_check_command(params: dict[str, Any]) -> Iterator[list[str]]:
    """``host-check``'s argv for host_check_info's params, its request in a temporary file while the context lasts."""
    request = {key: params[key] for key in HOST_CHECK_REQUEST_KEYS}
    with request_file(request, "perfplay-host-check-") as request_path:
        yield cli_argv(params["python"], "host-check", request=request_path)


def host_check_without_venv(params: dict[str, Any]) -> dict[str, Any] | None:
    """host_check_info's answer when the venv's python does not exist yet (pip makes it): every requirements file is
    unmet; ``None`` when there is a python to ask."""
    if not (params["requirements"] and params["python"] and not os.path.exists(params["python"])):
        return None
    return dict(changed=False, ok=False, problems=["the venv (%s does not exist)" % params["python"]], python=None,
                hostname=None, devices={}, data=[], master_port=None,
                unmet=list(dict.fromkeys(params["requirements"])), checked=False)


def host_check_result(doc: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """(host_check_info's result, its warnings) from ``host-check``'s document; a warning is shown, never fatal."""
    warnings = ["%s: %s" % (doc.get("hostname"), warning) for warning in doc.get("warnings") or []]
    return dict(changed=False, ok=bool(doc.get("ok")), problems=list(doc.get("problems") or []),
                python=doc.get("python"), hostname=doc.get("hostname"), devices=doc.get("devices") or {},
                data=doc.get("data") or [], master_port=doc.get("master_port"), unmet=list(doc.get("unmet") or []),
                checked=bool(doc.get("checked"))), warnings


# case_launch's options: the module's, and its action's where the node is the controller itself.
LAUNCH_ARGUMENT_SPEC = dict(
    COMMON_ARGUMENT_SPEC,
    config=dict(type="path", required=True),
    config_content=dict(type="dict"),
    log_dir=dict(type="path", required=True),
    node_rank=dict(type="int", default=0),
    master_addr=dict(type="str", default="127.0.0.1"),
    master_port=dict(type="int", default=0),
    timeout_s=dict(type="float"),
    run_id=dict(type="str", required=True),
    node_name=dict(type="str"),
    nic=dict(type="str"),
    rdzv_timeout_s=dict(type="float"),
    heartbeat_timeout_s=dict(type="float"),
    monitors=dict(type="bool", default=True),
    monitor_interval_s=dict(type="float"),
    env=dict(type="dict", default={}),
    wait_s=dict(type="float"),
)


def launch_argv(params: dict[str, Any]) -> list[str]:
    """``case_runners launch --detach`` of case_launch's (validated) params."""
    return cli_argv(
        params["python"], "launch",
        config=params["config"],
        log_dir=params["log_dir"],
        node_rank=params["node_rank"],
        master_addr=params["master_addr"],
        master_port=params["master_port"],
        timeout_s=params["timeout_s"],
        run_id=params["run_id"],
        node_name=params["node_name"] or None,
        nic=params["nic"] or None,
        rdzv_timeout_s=params["rdzv_timeout_s"],
        heartbeat_timeout_s=params["heartbeat_timeout_s"],
        no_monitors=not params["monitors"],
        monitor_interval_s=params["monitor_interval_s"],
        detach=True,
        config_stdin=params["config_content"] is not None,
        wait_s=params["wait_s"],
    )


def launch_input(params: dict[str, Any]) -> tuple[dict[str, str], str | None]:
    """(the environment laid over the launch's, its stdin) of case_launch's params."""
    content = params["config_content"]
    return ({str(key): str(value) for key, value in params["env"].items()},
            None if content is None else json.dumps(content))


def launch_result(params: dict[str, Any], argv: list[str], doc: dict[str, Any]) -> dict[str, Any]:
    """case_launch's result from ``launch --detach``'s document: started, with the launcher (and the first poll with
    wait_s), or ``failed`` with ``msg``."""
    if not doc.get("started"):
        return dict(failed=True, msg="node %s: %s" % (params["node_rank"], doc.get("reason")), started=False,
                    launcher=None, log=doc.get("log"), cmd=argv)
    first = {} if "wait" not in doc else dict(wait=wait_outcome(doc["wait"]))
    return dict(changed=True, started=True, launcher=doc["launcher"], log=doc["log"], cmd=argv, **first)


def wait_outcome(doc: dict[str, Any]) -> dict[str, Any]:
    """A wait's answer (``case_runners wait``, or the first poll of ``launch --detach --wait-s``) as case_wait's
    result: still running (progress), ended (the node result, the directory when asked for), or ``failed`` with
    ``msg`` when the node ended without succeeding."""
    node_result = doc.get("node_result")
    outcome: dict[str, Any] = dict(changed=False, finished=bool(doc.get("finished")), status=doc.get("status"),
                                   reason=doc.get("reason"), node_result=node_result)
    if not outcome["finished"]:
        return dict(outcome, progress=doc.get("progress"), line=doc.get("line"), for_s=doc.get("for_s"))
    if outcome["status"] != "success":
        node = (node_result or {}).get("node_rank", "?")
        return dict(outcome, failed=True, msg="node %s: %s: %s" % (node, outcome["status"], outcome["reason"]))
    if "archive_b64" in doc:
        outcome["archive_b64"] = doc["archive_b64"]
    return outcome


@contextlib.contextmanager
def request_file(doc: Any, prefix: str) -> Iterator[str]:
    """A temporary JSON file holding ``doc`` (a subcommand's ``--request``), removed afterwards."""
    fd, path = tempfile.mkstemp(prefix=prefix, suffix=".json")
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(doc, handle)
        yield path
    finally:
        os.unlink(path)


# The end of a run, on the controller: its history index and its HTML report. run_history and run_report each run
# one command; run_summary has `summary` answer both after the summary (one module run and one process for the end).

def history_answer(module: Any, doc: dict[str, Any], db: str) -> dict[str, Any]:
    """The module's answer from ``history add --json``'s (or ``{"index_error": ...}``): a run that could not be
    indexed, and each round whose record could not be read, is a warning, never a failure."""
    if "index_error" in doc:
        module.warn("the run was not indexed into the history database: %s" % doc["index_error"])
        return dict(changed=False, db=db, rounds=0, problems=[], index_error=doc["index_error"])
    for problem in doc.get("problems", []):
        module.warn("history: %s (indexed as unreadable)" % problem)
    return dict(changed=bool(doc.get("changed")), db=doc.get("db", db),
                rounds=sum(run.get("rounds", 0) for run in doc.get("runs", [])), problems=doc.get("problems", []))


def history_outcome(module: Any, result: CliResult, db: str) -> dict[str, Any]:
    """history_answer of a ``history add`` command; its exit 2 (nothing indexed) names the error on stderr."""
    if result.doc is not None:
        return history_answer(module, result.doc, db)
    error = (tail(result.stderr).strip() or "exit status %s" % result.rc).replace("error: ", "", 1)
    return history_answer(module, {"index_error": error}, db)


def report_answer(module: Any, answer: dict[str, Any]) -> dict[str, Any]:
    """The module's answer from ``report --json``'s: a report that could not be written is a warning."""
    write_error = answer.get("write_error")
    if write_error:
        module.warn("report.html not written: %s" % write_error)
    changed = bool(answer.get("changed")) and not write_error
    return dict(changed=changed, path=answer.get("path"), written=changed and not module.check_mode,
                write_error=write_error)


def report_outcome(module: Any, result: CliResult) -> dict[str, Any]:
    """report_answer of a ``report`` command: a directory that is not a run fails the module; a report that could
    not be rendered (a crash) is a warning."""
    if result.rc == 2:  # not a run directory: a bad input, named
        module.fail_json(**result.failure("case_runners report"))
    if result.rc == 0 and result.doc is not None:
        return report_answer(module, result.doc)
    reason = (tail(result.stderr).strip().splitlines() or ["exit status %s" % result.rc])[-1]
    return report_answer(module, dict(path=None, changed=False, write_error="not rendered: %s" % reason))
