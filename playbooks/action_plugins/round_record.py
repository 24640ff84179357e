# perfplay: the action round_record (documented in library/round_record.py). A round's record is the controller's
# work: this runs `python -m case_runners record` on the controller itself, without a module process per round.

from __future__ import annotations

import json
import subprocess
import sys

from ansible.plugins.action import ActionBase

TAIL_CHARS = 4000

ARGUMENT_SPEC = dict(
    project_dir=dict(type="path", required=True),
    python=dict(type="str"),
    round_dir=dict(type="path", required=True),
    config=dict(type="path", required=True),
    round=dict(type="int", required=True),
    run_id=dict(type="str"),
    errors=dict(type="list", elements="str", default=[]),
)


def record_argv(args):
    """`python -m case_runners record ...` for the validated args."""
    argv = [args["python"] or sys.executable, "-m", "case_runners", "record", "--round-dir", args["round_dir"],
            "--config", args["config"], "--round", str(args["round"])]
    if args["run_id"]:
        argv += ["--run-id", args["run_id"]]
    for error in args["errors"]:
        argv += ["--error", error]
    return argv


def record(args, check_mode, run=subprocess.run):
    """The task result: the record and its digest, as `case_runners record` prints them."""
    argv = record_argv(args)
    if check_mode:
        return dict(changed=True, record={}, compact={}, cmd=argv)
    done = run(argv, cwd=args["project_dir"], capture_output=True, text=True, check=False)
    try:
        doc = json.loads(done.stdout)
    except ValueError:
        doc = None
    if done.returncode != 0 or not isinstance(doc, dict):
        return dict(failed=True, changed=False, cmd=argv, rc=done.returncode, stdout=done.stdout[-TAIL_CHARS:],
                    stderr=done.stderr[-TAIL_CHARS:],
                    msg="case_runners record: `-m case_runners record` exited %s%s" % (
                        done.returncode, "" if isinstance(doc, dict) else " without a JSON document on stdout"))
    return dict(changed=True, record=doc.get("record"), compact=doc.get("compact"))


class ActionModule(ActionBase):
    _supports_check_mode = True
    _supports_async = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        _, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        result.update(record(args, self._task.check_mode))
        return result
