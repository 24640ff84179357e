"""playbooks/callback_plugins/perfplay_summary.py fed fake task results."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from case_runners.views.summary.files import write_run_summary
from case_runners.views.summary.text import render_table
from record_helpers import resolved, round_record

REPO = Path(__file__).resolve().parents[2]
CALLBACK_DIR = REPO / "playbooks" / "callback_plugins"


class FakeDisplay:
    verbosity = 0

    def __init__(self):
        self.lines = []
        self.warnings = []

    def display(self, msg, *args, **kwargs):
        self.lines.append(msg)

    def banner(self, msg, *args, **kwargs):
        self.lines.append(f"== {msg}")

    def warning(self, msg, *args, **kwargs):
        self.warnings.append(msg)


def result(action, data):
    return SimpleNamespace(task=SimpleNamespace(action=action), result=data)


def summary_result(summary, written=(), table=None):
    """What the run_summary task returns."""
    return result("run_summary", {"summary": summary, "table": table or f"TABLE {summary['run_id']}",
                                  "failed_rounds": [], "written": list(written), "changed": bool(written)})


@pytest.fixture
def callback_module():
    spec = importlib.util.spec_from_file_location("perfplay_summary_cb", CALLBACK_DIR / "perfplay_summary.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def make_callback(callback_module):
    def make(**options):
        callback = callback_module.CallbackModule(display=FakeDisplay())
        values = {"show_table": True, **options}
        callback.get_option = values.__getitem__
        return callback

    return make


def test_prints_the_table_of_the_run_summary_task(make_callback, tmp_path):
    callback = make_callback()
    run_dir = tmp_path / "run1"
    callback.v2_runner_on_ok(result("case_plan", {"run_dir": str(run_dir), "changed": True}))
    callback.v2_runner_on_ok(result("ansible.builtin.debug", {"msg": "x"}))
    callback.v2_runner_on_failed(result("round_record", {"failed": True}))
    callback.v2_runner_on_ok(summary_result({"run_id": "run1", "cases": []}, [str(run_dir / "summary.json")]))
    callback.v2_playbook_on_stats(SimpleNamespace())
    assert callback._display.lines == ["== PERFPLAY SUMMARY", "TABLE run1", f"summary: {run_dir / 'summary.json'}"]


def test_the_report_path_is_the_last_line(make_callback, tmp_path):
    callback = make_callback()
    report = str(tmp_path / "run1" / "report.html")
    callback.v2_runner_on_ok(summary_result({"run_id": "run1", "cases": []}))
    callback.v2_runner_on_ok(result("run_report", {"path": report, "changed": True, "write_error": None}))
    callback.v2_playbook_on_stats(SimpleNamespace())
    assert callback._display.lines == ["== PERFPLAY SUMMARY", "TABLE run1", f"report: {report}"]


def test_the_report_path_from_the_summary_task_that_wrote_it(make_callback, tmp_path):
    """The playbook's run_summary task writes the report too (its report option): its answer gives the path."""
    callback = make_callback()
    report = str(tmp_path / "run1" / "report.html")
    done = summary_result({"run_id": "run1", "cases": []})
    done.result["report"] = {"path": report, "changed": True, "written": True, "write_error": None}
    callback.v2_runner_on_ok(done)
    callback.v2_playbook_on_stats(SimpleNamespace())
    assert callback._display.lines == ["== PERFPLAY SUMMARY", "TABLE run1", f"report: {report}"]
    unwritten = summary_result({"run_id": "run1", "cases": []})
    unwritten.result["report"] = {"path": report, "changed": False, "written": False,
                                  "write_error": f"{report}: no space left on device"}
    callback = make_callback()
    callback.v2_runner_on_ok(unwritten)
    callback.v2_playbook_on_stats(SimpleNamespace())
    assert callback._display.lines == ["== PERFPLAY SUMMARY", "TABLE run1"]


def test_no_report_line_when_it_was_not_written(make_callback):
    callback = make_callback()
    callback.v2_runner_on_ok(summary_result({"run_id": "run1", "cases": []}))
    callback.v2_runner_on_ok(result("run_report", {"path": "/r/run1/report.html", "changed": False,
                                                   "write_error": "/r/run1/report.html: no space left on device"}))
    callback.v2_playbook_on_stats(SimpleNamespace())
    assert callback._display.lines == ["== PERFPLAY SUMMARY", "TABLE run1"]


def test_the_task_named_by_its_full_name(make_callback):
    callback = make_callback()
    callback.v2_runner_on_ok(result("perfplay.local.run_summary",
                                    {"summary": {"run_id": "run1"}, "table": "TABLE run1"}))
    callback.v2_playbook_on_stats(SimpleNamespace())
    assert callback._display.lines == ["== PERFPLAY SUMMARY", "TABLE run1"]


def test_nothing_when_preflight_failed(make_callback):
    callback = make_callback()
    callback.v2_runner_on_failed(result("case_plan", {"failed": True, "errors": ["bad"]}))
    callback.v2_playbook_on_stats(SimpleNamespace())
    assert callback._display.lines == []


def test_nothing_without_a_summary(make_callback, tmp_path):
    """No round reached, check mode (the summary task is skipped), or a failed summary task."""
    callback = make_callback()
    callback.v2_runner_on_ok(result("case_plan", {"run_dir": str(tmp_path)}))
    callback.v2_runner_on_ok(result("round_record", {"record": {}}))
    callback.v2_runner_on_failed(result("run_summary", {"failed": True, "msg": "boom"}))
    callback.v2_playbook_on_stats(SimpleNamespace())
    assert callback._display.lines == []


def test_results_of_ansible_core_before_2_19_are_read_too(make_callback):
    """Only private names there: the version check's failure must not bring callback errors with it."""
    callback = make_callback()
    old = SimpleNamespace(_task=SimpleNamespace(action="ansible.builtin.assert"), _result={"failed": True})
    callback.v2_runner_on_failed(old)
    callback.v2_playbook_on_stats(SimpleNamespace())
    assert callback._display.lines == [] and callback._display.warnings == []


def test_a_run_whose_hosts_failed_preflight_leaves_no_run_directory(make_callback, tmp_path):
    from case_runners.plan.run_plan import make_plan

    plan = make_plan({"vendor": "cpu", "results_dir": str(tmp_path), "cases": ["digits_cnn"], "bundle": True})
    callback = make_callback()
    callback.v2_runner_on_ok(result("case_plan", {"run_dir": plan["run_dir"]}))
    callback.v2_runner_on_failed(result("host_check_info", {"failed": True}))
    callback.v2_playbook_on_stats(SimpleNamespace())
    assert list(tmp_path.iterdir()) == []
    assert callback._display.lines == [f"perfplay: no round was started; removed {plan['run_dir']}"]


def test_a_run_that_launched_keeps_its_directory(make_callback, tmp_path):
    """Interrupted during its first launch: nothing recorded yet on the controller, but the run exists."""
    from case_runners.plan.run_plan import make_plan

    plan = make_plan({"vendor": "cpu", "results_dir": str(tmp_path), "cases": ["digits_cnn"]})
    callback = make_callback()
    callback.v2_runner_on_ok(result("case_plan", {"run_dir": plan["run_dir"]}))
    callback.v2_runner_on_ok(result("case_launch", {"started": True}))
    callback.v2_playbook_on_stats(SimpleNamespace())
    assert Path(plan["run_dir"]).is_dir()


def test_show_table_off_prints_nothing(make_callback):
    callback = make_callback(show_table=False)
    callback.v2_runner_on_ok(summary_result({"run_id": "run1", "cases": []}))
    callback.v2_playbook_on_stats(SimpleNamespace())
    assert callback._display.lines == []


def test_a_summary_without_its_table_is_a_warning(make_callback):
    callback = make_callback()
    callback.v2_runner_on_ok(result("run_summary", {"summary": {"run_id": "run1", "run_dir": "/r/run1"}}))
    callback.v2_playbook_on_stats(SimpleNamespace())
    assert callback._display.warnings == ["perfplay_summary: no table for /r/run1"]
    assert callback._display.lines == []


def test_real_table_of_an_empty_run(make_callback, tmp_path):
    """Against the checkout's case_runners.records.summary_build: an empty run still summarises."""
    run_dir = tmp_path / "run20250101000000"
    run_dir.mkdir()
    summary, written = write_run_summary(run_dir)
    callback = make_callback()
    callback.v2_runner_on_ok(summary_result(summary.to_json(), written, render_table(summary)))
    callback.v2_playbook_on_stats(SimpleNamespace())
    assert callback._display.warnings == []
    assert "perfplay summary: run20250101000000" in callback._display.lines[1]


def test_options_come_from_documentation(monkeypatch):
    """Loaded the way ansible-playbook loads it: needs no enabling; defaults, and the env toggle, from
    DOCUMENTATION."""
    from ansible.plugins.loader import callback_loader

    callback_loader.add_directory(str(CALLBACK_DIR))
    callback = callback_loader.get("perfplay_summary")
    assert callback.CALLBACK_NEEDS_ENABLED is False
    callback.set_options()
    assert callback.get_option("show_table") is True
    monkeypatch.setenv("PERFPLAY_SUMMARY_SHOW_TABLE", "false")
    callback.set_options()
    assert callback.get_option("show_table") is False


def _record(nnodes, nproc, round_no, p_train, node_p_train, status="success"):
    """A round record of digits_cnn at nnodes x nproc, with its nodes' p_train."""
    config = resolved(selection={"nproc": 1 if nproc == 1 else 2}, nnodes=nnodes, nproc=nproc,
                      case_id=f"digits_cnn_CPUx{nnodes}x{nproc}")
    nodes = [{"host": f"host{i + 1}", "node_rank": i, "status": "success", "reason": None, "duration_s": 1.0,
              "dir": f"host{i + 1}_noderank{i}", "ranks": nproc, "samples": 1000 * nproc, "p_whole": value / 2,
              "p_train": value, "p_core": value * 1.25} for i, value in enumerate(node_p_train)]
    return round_record(config, round_no, status, None if status == "success" else "boom",
                        {"p_train": p_train, "p_core": p_train * 1.25, "p_whole": p_train / 2, "metric": "accuracy",
                         "target": 0.95, "converged": True}, per_node=nodes,
                        throughput={"basis": "p_train", "unit": "samples/s", "total": p_train,
                                    "per_node": {n["host"]: n["p_train"] for n in nodes},
                                    "total_p_core": p_train * 1.25,
                                    "per_node_p_core": {n["host"]: n["p_core"] for n in nodes}})


def test_real_table_prints_per_node_and_scaling(make_callback, tmp_path):
    """A run at 1x1, 1x2 and 2x2: the printed table has the per-node line and the scaling table."""
    run_dir = tmp_path / "run20250101000000"
    records = [_record(1, 1, 1, 14000.0, [14000.0]), _record(1, 2, 1, 20000.0, [20000.0]),
               _record(2, 2, 1, 33000.0, [16600.0, 16400.0]),
               _record(2, 2, 2, 99000.0, [50000.0, 49000.0], status="failed")]
    for record in records:
        path = run_dir / record["case_id"] / f"round{record['round']}"
        path.mkdir(parents=True)
        (path / "round_record.json").write_text(json.dumps(record))
    summary, written = write_run_summary(run_dir)  # as the run_summary task does
    callback = make_callback()
    callback.v2_runner_on_ok(summary_result(summary.to_json(), written, render_table(summary)))
    callback.v2_playbook_on_stats(SimpleNamespace())
    assert callback._display.warnings == []
    lines = callback._display.lines[1].splitlines()
    assert "  digits_cnn_CPUx2x2  node0 host1: 16600.0  node1 host2: 16400.0" in lines
    start = lines.index("scaling (p_train, samples/s; base: digits_cnn_CPUx1x1)")
    assert lines[start + 1:start + 5] == ["case                devices  p_train  speed-up  efficiency",
                                          "digits_cnn_CPUx1x1  1        14000.0  1.00      100%",
                                          "digits_cnn_CPUx1x2  2        20000.0  1.43      71%",
                                          "digits_cnn_CPUx2x2  4        33000.0  2.36      59%"]
    saved = json.loads((run_dir / "summary.json").read_text())
    assert [r["efficiency"] for r in saved["scaling"][0]["rows"]] == pytest.approx([1.0, 20 / 14 / 2, 33 / 14 / 4])
    markdown = (run_dir / "summary.md").read_text()
    assert "## Scaling" in markdown and "| 1 | host2 | 2 | 16400.0 | 20500.0 |" in markdown
