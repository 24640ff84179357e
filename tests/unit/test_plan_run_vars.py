"""The run vars and the rounds of a plan (case_runners/plan/run_vars.py, rounds.py): every run var checked in one
pass with the plan's other errors, each naming the run var, the file label and the allowed values; a rejected run
creates nothing; an accepted one returns its rounds, what each host needs and its run vars with their defaults."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from case_runners.core import defaults
from case_runners.plan.config.flagperf_names import FLAGPERF_RUN_VARS
from case_runners.plan.config.resolved import TASKS
from case_runners.plan.run_plan import make_plan
from case_runners.plan.run_vars import (
    CHOICES,
    KNOWN_RUN_VARS,
    NIC_NAME,
    RENAMED,
    REQUEST_KEYS,
    SCALARS,
    RunRequest,
    check_run_vars,
)
from case_runners.records.history_db import DB_NAME, SCHEMA_VERSION

BOOLS = "(allowed: true/false, yes/no, on/off, 1/0)"


def plan(results: Path, check: bool = False, **request):
    return make_plan({"vendor": "cpu", "cases": ["digits_cnn"], "results_dir": str(results), **request}, check=check)


def test_every_problem_at_once_and_nothing_created(tmp_path):
    results = tmp_path / "results"
    result = plan(results, cases=["nosuchcase"], clear_caches="maybe", master_port="abc", monitor_interval_s=0,
                  rdzv_timeout_s=-1, hosts=["a"], nic={"a": "eth0/1"}, run_var_names=["perfplay_case_timeout"])
    assert not result["ok"]
    assert result["errors"] == [
        "run vars: key 'perfplay_case_timeout': renamed to perfplay_case_timeout_s: set that instead",
        f"run vars: key 'perfplay_clear_caches': expected a boolean, got 'maybe' {BOOLS}",
        "run vars: key 'perfplay_monitor_interval_s': 0.0 is out of range "
        "(allowed: 0.01 <= perfplay_monitor_interval_s <= 3600.0)",
        "run vars: key 'perfplay_rdzv_timeout_s': -1.0 is out of range "
        "(allowed: 1 <= perfplay_rdzv_timeout_s <= 86400)",
        "run vars: key 'perfplay_master_port': expected an integer, got 'abc' "
        "(allowed: 0 <= perfplay_master_port <= 65535)",
        "run vars: key 'perfplay_nic': 'eth0/1' (host a) is not a network interface name "
        "(allowed: 1 to 15 letters, digits, '_', '.' or '-', not starting with '.' or '-')",
        *[e for e in result["errors"] if "nosuchcase" in e],
    ]
    assert any("unknown case 'nosuchcase'" in e for e in result["errors"])
    assert result["rounds"] == [] and result["host_needs"] == {}, "a rejected plan expands no rounds"
    assert not results.exists(), "a rejected run leaves nothing"


@pytest.mark.parametrize("old", sorted(RENAMED))
def test_an_old_run_var_name_is_an_error_naming_the_new_one(tmp_path, old):
    result = plan(tmp_path, check=True, run_var_names=["perfplay_vendor", old])
    assert result["errors"] == [f"run vars: key '{old}': renamed to {old}_s: set that instead"]


def test_the_defaults_of_unset_run_vars(tmp_path):
    result = plan(tmp_path, check=True, hosts=["localhost"], clear_caches="", rdzv_timeout_s=None)
    assert result["ok"], result["errors"]
    assert result["run_vars"] == {
        "vendor": defaults.VENDOR, "runtime": "host", "task": "training", "case_timeout_s": None,
        "clear_caches": False, "monitor_interval_s": defaults.MONITOR_INTERVAL_S,
        "progress_interval_s": defaults.PROGRESS_INTERVAL_S, "rdzv_timeout_s": None,
        "heartbeat_timeout_s": defaults.HEARTBEAT_TIMEOUT_S, "master_port": 0,
        "min_free_bytes": defaults.MIN_FREE_BYTES, "hosts": ["localhost"], "nic": {},
        "history_db": str(tmp_path / DB_NAME)}  # beside the results


def test_the_history_database_is_checked_before_the_run_and_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = plan(tmp_path / "results", check=True, history_db="history/runs.sqlite")
    assert result["ok"] and result["run_vars"]["history_db"] == str(tmp_path / "history" / "runs.sqlite")
    newer = tmp_path / "newer.sqlite"
    with sqlite3.connect(newer) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    results = tmp_path / "results"
    for value, message in ((str(tmp_path), f"{tmp_path}: is a directory, not a history database"),
                           (str(newer), f"{newer}: written by a newer perfplay (history schema version "
                                        f"{SCHEMA_VERSION + 1}; this perfplay reads versions up to {SCHEMA_VERSION})"),
                           (3, "expected the path of a file, got 3")):
        result = plan(results, history_db=value)
        assert not result["ok"] and not results.exists()
        (error,) = result["errors"]
        assert error.startswith(f"run vars: key 'perfplay_history_db': {message}")


@pytest.mark.parametrize("given, expected", [("yes", True), ("off", False), ("1", True), (0, False), ("TRUE", True)])
def test_booleans_read_as_ansible_reads_them(tmp_path, given, expected):
    result = plan(tmp_path, check=True, clear_caches=given)
    assert result["ok"], result["errors"]
    assert result["run_vars"]["clear_caches"] is expected


def test_strings_of_numbers_are_converted(tmp_path):
    values = {"case_timeout_s": "900", "monitor_interval_s": "0.5", "progress_interval_s": "5", "rdzv_timeout_s": "60",
              "heartbeat_timeout_s": "20", "master_port": "29500", "min_free_bytes": "2048"}
    result = plan(tmp_path, check=True, **values)
    assert result["ok"], result["errors"]
    assert {key: result["run_vars"][key] for key in values} == {
        "case_timeout_s": 900, "monitor_interval_s": 0.5, "progress_interval_s": 5.0, "rdzv_timeout_s": 60.0,
        "heartbeat_timeout_s": 20.0, "master_port": 29500, "min_free_bytes": 2048}
    assert result["cases"][0]["timeout_s"] == 900


@pytest.mark.parametrize("nic, expected", [
    ({"a": "ib0", "b": None}, {"a": "ib0"}),
    ("enp0s31f6.100", {"a": "enp0s31f6.100", "b": "enp0s31f6.100"}),
    ({}, {}),
])
def test_the_nic_of_each_host(tmp_path, nic, expected):
    result = plan(tmp_path, check=True, hosts=["a", "b"], nic=nic)
    assert result["ok"], result["errors"]
    assert result["run_vars"]["nic"] == expected


@pytest.mark.parametrize("name", ["eth0", "ib0", "enp0s31f6", "br-1a2b3c4d5e6f", "bond0.100", "wlp2s0", "x" * 15])
def test_plausible_interface_names(name):
    assert NIC_NAME.fullmatch(name)


@pytest.mark.parametrize("name", ["x" * 16, "eth/0", "eth0:1", "eth 0", ".", "-eth0", "ib0,ib1", "^docker"])
def test_implausible_interface_names(name):
    _, errors = check_run_vars({"hosts": ["a"], "nic": {"a": name}})
    assert [e.key for e in errors] == ["perfplay_nic"], name


@pytest.mark.parametrize("hosts, message", [
    ([], "run vars: key 'perfplay_host_pattern': matches no inventory host"),
    (["a"], "case digits_cnn_CPUx2x1: key 'nnodes': needs 2 hosts, the run has 1 (a)"),
])
def test_host_errors(tmp_path, hosts, message):
    result = plan(tmp_path, check=True, cases=[{"case": "digits_cnn", "nnodes": 2}], hosts=hosts)
    assert any(e.startswith(message) for e in result["errors"]), result["errors"]


@pytest.mark.parametrize("host", ["../x", "a/b", "..", ".hidden", "-x", "node 1", "x" * 254])
def test_a_host_name_that_cannot_name_a_node_directory_is_refused(tmp_path, host):
    result = plan(tmp_path / "results", hosts=["node1", host])
    assert not result["ok"] and not (tmp_path / "results").exists()
    assert any(e.startswith("run vars: key 'perfplay_host_pattern': ") and "(allowed: 1 to 253 letters" in e
               for e in result["errors"]), result["errors"]


def test_host_names_and_addresses_are_accepted(tmp_path):
    hosts = ["node1", "gpu-07.example.com", "10.0.0.2", "fe80::1", "host_2"]
    result = plan(tmp_path, check=True, cases=[{"case": "digits_cnn", "nnodes": 2}], hosts=hosts)
    assert result["ok"], result["errors"]


def test_an_unknown_request_key_is_an_error(tmp_path):
    result = plan(tmp_path, check=True, rdzv_timeout=30)
    assert result["errors"][0].startswith("key 'rdzv_timeout': unknown request key (allowed: bundle, case_timeout_s,")


def test_every_run_var_has_one_default():
    """The defaults of case_runners/core/defaults.py are the ones the plan applies."""
    assert SCALARS["monitor_interval_s"][1] == defaults.MONITOR_INTERVAL_S
    assert SCALARS["progress_interval_s"][1] == defaults.PROGRESS_INTERVAL_S
    assert SCALARS["heartbeat_timeout_s"][1] == defaults.HEARTBEAT_TIMEOUT_S
    assert SCALARS["rdzv_timeout_s"][1] is None, "unset: the launcher's, which a host's environment may change"
    assert CHOICES["runtime"][1] == "host" and CHOICES["task"][1] == "training"


@pytest.mark.parametrize("port", [29500, 0])
def test_rounds_and_host_needs_of_a_created_run(tmp_path, port):
    result = plan(tmp_path, cases=["digits_cnn:pytorch:CPU:2:1:2", "digits_cnn:pytorch:CPU:1:2:1"],
                  hosts=["a", "b", "c"], master_port=port)
    assert result["ok"], result["errors"]
    run_dir = Path(result["run_dir"])
    assert [(r["case_id"], r["round"], r["rel_dir"], r["hosts"], r["master_port"]) for r in result["rounds"]] == [
        ("digits_cnn_CPUx2x1", 1, "digits_cnn_CPUx2x1/round1", ["a", "b"], port),
        ("digits_cnn_CPUx2x1", 2, "digits_cnn_CPUx2x1/round2", ["a", "b"], port),
        ("digits_cnn_CPUx1x2", 1, "digits_cnn_CPUx1x2/round1", ["a"], 0)]
    assert result["rounds"][0]["config"] == str(run_dir / "digits_cnn_CPUx2x1" / "resolved_config.json")
    assert Path(result["rounds"][0]["config"]).is_file()
    assert result["host_needs"] == {
        "a": {"nproc": 2, "case_ids": ["digits_cnn_CPUx2x1", "digits_cnn_CPUx1x2"], "master": True, "images": [],
              "requirements": [], "no_deps": []},
        "b": {"nproc": 1, "case_ids": ["digits_cnn_CPUx2x1"], "master": False, "images": [], "requirements": [],
              "no_deps": []},
        "c": {"nproc": 0, "case_ids": [], "master": False, "images": [], "requirements": [],
              "no_deps": []}}


def test_check_mode_expands_the_rounds_without_a_config(tmp_path):
    result = plan(tmp_path / "results", check=True, hosts=["localhost"])
    assert result["ok"] and result["run_dir"] is None
    assert [r["config"] for r in result["rounds"]] == [None]
    assert not (tmp_path / "results").exists()


def test_a_docker_run_lists_each_hosts_images(tmp_path):
    result = plan(tmp_path, check=True, runtime="docker", hosts=["a"])
    assert result["ok"], result["errors"]
    assert result["host_needs"]["a"]["images"] == [result["images"][0]["ref"]]


def test_an_unknown_perfplay_var_is_an_error_naming_the_closest_run_var(tmp_path):
    result = plan(tmp_path, check=True, run_var_names=["perfplay_vendor", "perfplay_vendr", "perfplay_plan_hosts"])
    assert result["errors"] == [
        "run vars: key 'perfplay_vendr': unknown perfplay var (did you mean perfplay_vendor?): perfplay would ignore "
        "it; docs/run-vars.md lists the run vars"]


@pytest.mark.parametrize("name", sorted(FLAGPERF_RUN_VARS))
def test_a_flagperf_setting_is_an_error_pointing_to_the_importer(tmp_path, name):
    (error,) = plan(tmp_path, check=True, run_var_names=[name])["errors"]
    assert error.startswith(f"run vars: key '{name}': is a FlagPerf setting, which perfplay does not read (")
    assert error.endswith("python -m case_runners import-flagperf PATH converts a FlagPerf checkout's configs "
                          "(docs/flagperf-migration.md)")


def test_the_flagperf_error_names_perfplays_counterpart(tmp_path):
    errors = plan(tmp_path, check=True, run_var_names=["VENDOR", "SHM_SIZE"])["errors"]
    assert "(perfplay's is perfplay_vendor)" in errors[1]
    assert "(perfplay's is vendor/<vendor>/vendor.yaml container.run.shm_size)" in errors[0]


def test_other_upper_case_names_and_the_plays_own_vars_are_no_error(tmp_path):
    names = ["MY_SITE_VAR", "NCCL_DEBUG", *sorted(KNOWN_RUN_VARS)]
    result = plan(tmp_path, check=True, run_var_names=names, host_var_names={"a": names}, hosts=["a"])
    assert result["ok"], result["errors"]


def test_host_vars_are_checked_and_name_their_hosts(tmp_path):
    result = plan(tmp_path, check=True, hosts=["a", "b"], run_var_names=["perfplay_vendr"],
                  host_var_names={"a": ["perfplay_nics", "HOSTS", "perfplay_vendr"], "b": ["perfplay_nics"]})
    assert result["errors"] == [
        "host vars of a: key 'HOSTS': is a FlagPerf setting, which perfplay does not read (perfplay's is inventory: "
        "perfplay_hosts); python -m case_runners import-flagperf PATH converts a FlagPerf checkout's configs "
        "(docs/flagperf-migration.md)",
        "host vars of a, b: key 'perfplay_nics': unknown perfplay var (did you mean perfplay_nic?): perfplay would "
        "ignore it; docs/run-vars.md lists the run vars",
        # once, as a run var: an extra var is in every host's vars too
        "run vars: key 'perfplay_vendr': unknown perfplay var (did you mean perfplay_vendor?): perfplay would ignore "
        "it; docs/run-vars.md lists the run vars"]


@pytest.mark.parametrize("names, host_names, key", [
    ("perfplay_vendor", None, "run_var_names"), ([1], None, "run_var_names"),
    (None, ["perfplay_vendor"], "host_var_names"), (None, {"a": "perfplay_vendor"}, "host_var_names")])
def test_malformed_var_name_lists_are_errors(tmp_path, names, host_names, key):
    assert plan(tmp_path, check=True, run_var_names=names, host_var_names=host_names)["errors"][0].startswith(
        f"key '{key}': must")


@pytest.mark.parametrize("task", ["training", "inference"])
def test_a_versioned_framework_is_kept_in_the_resolved_config(tmp_path, task):
    result = plan(tmp_path, check=True, task=task, cases={"digits_cnn:pytorch_2.1": None})
    assert result["ok"], result["errors"]
    (case,) = result["cases"]
    assert (case["framework"], case["framework_version"]) == ("pytorch", "2.1")
    assert "framework_version" not in plan(tmp_path, check=True, task=task)["cases"][0], "absent without a version"


@pytest.mark.parametrize("task, what", [("training", "case"), ("inference", "inference case")])
def test_an_unknown_framework_names_the_allowed_ones(tmp_path, task, what):
    result = plan(tmp_path, check=True, task=task, cases=["digits_cnn:paddle_2.5"])
    assert result["errors"] == [
        f"run vars: key 'perfplay_cases[0].framework': unknown framework 'paddle_2.5': {what} 'digits_cnn' is "
        f"written for pytorch (allowed: pytorch, pytorch_<version>)"]


HUGE = "x" * 1_000_000


@pytest.mark.parametrize("request_part, key, rule", [
    ({"run_id": "r" + HUGE}, "perfplay_run_id", "8 to 64 characters"),
    ({"results_dir": "/tmp/" + HUGE}, "perfplay_results_dir", "(allowed: at most 4096 characters, 255 per name)"),
    ({"results_dir": "/tmp/" + "y" * 300}, "perfplay_results_dir", "has a name of 300 characters in it"),
    ({"history_db": "/tmp/" + HUGE}, "perfplay_history_db", "(allowed: at most 4096 characters, 255 per name)"),
    ({"cases": [{"case": "digits_cnn", "data_dir": "/" + HUGE}]}, "perfplay_cases[0].data_dir",
     "(allowed: at most 4096 characters, 255 per name)"),
    ({"cases": [{"case": "digits_cnn", "data_dir": "/data/" + "y" * 300}]}, "perfplay_cases[0].data_dir",
     "has a name of 300 characters in it"),
    ({"cases": ["c" + HUGE]}, "perfplay_cases[0].case", "(allowed: at most 255 characters)"),
    ({"cases": [{"case": "digits_cnn", "hardware": HUGE}]}, "perfplay_cases[0].hardware",
     "(allowed: at most 255 characters)"),
    ({"task": HUGE}, "perfplay_task", f"(allowed: {', '.join(sorted(TASKS))})"),
    ({"cases": [{"case": "digits_cnn", "overrides": {"batch_size": HUGE}}]}, "batch_size", "expected an integer"),
])
def test_a_huge_value_is_refused_naming_the_limit_and_echoed_cut(tmp_path, request_part, key, rule):
    result = make_plan({"vendor": "cpu", "cases": ["digits_cnn"], "results_dir": str(tmp_path), **request_part},
                       check=True)
    assert not result["ok"] and len(result["errors"]) == 1, [e[:300] for e in result["errors"]]
    (message,) = result["errors"]
    assert f"key '{key}'" in message and rule in message and "..." in message, message[:300]
    assert len(message) < 300, "the value is echoed cut, not whole"


def test_shown_cuts_strings_and_containers():
    from case_runners.core.errors import SHOWN_CHARS, shown
    assert shown("digits_cnn") == "'digits_cnn'" and shown(5) == "5"
    assert len(shown(HUGE)) == SHOWN_CHARS and shown(HUGE).endswith("...")
    assert len(shown([[HUGE] * 1000] * 1000)) <= SHOWN_CHARS


def test_the_request_type_has_every_request_key():
    assert sorted(RunRequest.__annotations__) == sorted(REQUEST_KEYS), "the TypedDict and the checked keys agree"
