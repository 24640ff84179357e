"""module_utils/_perfplay_cli.py: argv building and JSON parsing."""

from __future__ import annotations

import pytest

from module_utils._perfplay_cli import CliResult, cli_argv, parse_json_document


def test_cli_argv_flags():
    assert cli_argv("/py", "record", round_dir="/r", round=2, run_id=None, check=False, write=True) == [
        "/py", "-m", "case_runners", "record", "--round-dir", "/r", "--round", "2", "--write"]


def test_cli_argv_positional_and_default_python(monkeypatch):
    monkeypatch.setattr("sys.executable", "/usr/bin/python3")
    assert cli_argv(None, "summary", "/res/run1") == ["/usr/bin/python3", "-m", "case_runners", "summary",
                                                      "/res/run1"]


@pytest.mark.parametrize("text, expected", [
    ('{"ok": true}', {"ok": True}),
    ('{\n  "ok": true\n}\n', {"ok": True}),
    ('warming up\n{"ok": false, "errors": []}\n', {"ok": False, "errors": []}),
    ("", None),
    ("[1, 2]", None),
    ("not json", None),
    ("{broken", None),
])
def test_parse_json_document(text, expected):
    assert parse_json_document(text) == expected


def test_failure_fields():
    result = CliResult(["/py", "-m", "case_runners", "plan", "--request", "r"], 1, "x" * 5000, "boom")
    failure = result.failure("case_runners plan")
    assert failure["msg"] == \
        "case_runners plan: `-m case_runners plan` exited 1 without a JSON document on stdout: boom"
    assert len(failure["stdout"]) == 4000
    assert failure["stderr"] == "boom"


def test_a_failure_message_carries_the_last_lines_of_stderr_cut_short():
    trace = "Traceback (most recent call last):\n" + "".join(f'  File "x.py", line {n}\n' for n in range(200)) + \
        "\nModuleNotFoundError: No module named 'yaml'\n"
    failure = CliResult(["/py", "-m", "case_runners", "plan"], 1, "", trace).failure("case_runners plan")
    assert failure["msg"].endswith("| ModuleNotFoundError: No module named 'yaml'"), failure["msg"]
    assert 'File "x.py", line 199' in failure["msg"] and 'line 195' not in failure["msg"], "the last lines only"
    assert len(failure["msg"]) < 800
    huge = CliResult(["/py", "-m", "case_runners", "plan"], 1, "", "E" * 10**6).failure("case_runners plan")
    assert len(huge["msg"]) < 800 and huge["msg"].endswith("EEE")
    assert CliResult(["/py", "-m", "case_runners", "plan"], 1, "", "").failure("p")["msg"].endswith("stdout")
