"""Bad input is rejected before anything is launched, with a message naming the key and the file."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from playbook_run import REPO, launched_anything, run_playbook


def cases(*items) -> str:
    return json.dumps({"perfplay_cases": list(items)})


def assert_rejected(run, results_dir: Path, *expected: str) -> None:
    assert run.rc != 0, run.output[-3000:]
    for text in expected:
        assert text in run.output, f"{text!r} not in:\n{run.output[-3000:]}"
    assert launched_anything(results_dir) == []


@pytest.mark.parametrize("extra_vars, expected", [
    pytest.param(cases("nosuchcase"),
                 ["run vars", "key 'perfplay_cases[0].case'", "unknown case 'nosuchcase'", "digits_cnn"],
                 id="unknown-case"),
    pytest.param('{"perfplay_vendor": "acme"}',
                 ["run vars", "key 'perfplay_vendor'", "unknown vendor 'acme'", "(allowed: cpu, nvidia)"],
                 id="unknown-vendor"),
    pytest.param(cases({"case": "digits_cnn", "hardware": "Z80"}),
                 ["vendor/cpu/vendor.yaml", "key 'perfplay_cases[0].hardware'", "unknown hardware 'Z80'",
                  "(allowed: CPU)"],
                 id="unknown-hardware"),
    pytest.param(cases({"case": "digits_cnn", "nnodes": 1, "nproc": 3}),
                 ["key 'perfplay_cases[0]'", "vendor/cpu/cases/digits_cnn/config_CPUx1x3.yaml", "allowed: "],
                 id="nproc-without-config"),
    pytest.param(cases({"case": "digits_cnn", "nnodes": 3}),
                 ["key 'perfplay_cases[0]'", "config_CPUx3x1.yaml"],
                 id="nnodes-without-config"),
    pytest.param(cases({"case": "digits_cnn", "nnodes": 2}),
                 ["case digits_cnn_CPUx2x1: key 'nnodes': needs 2 hosts, the run has 1 (localhost)"],
                 id="more-nodes-than-hosts"),
    pytest.param(cases({"case": "digits_cnn", "overrides": {"no_such_param": 1}}),
                 ["run overrides (perfplay_cases[0].overrides)", "key 'no_such_param'", "unknown config key",
                  "batch_size"],
                 id="unknown-override-key"),
    pytest.param(cases({"case": "digits_cnn", "repeat": "abc"}),
                 ["run vars", "key 'perfplay_cases[0].repeat'", "'abc'"],
                 id="string-for-a-number"),
    pytest.param(cases({"case": "digits_cnn", "overrides": {"batch_size": 0}}),
                 ["run overrides (perfplay_cases[0].overrides): key 'batch_size': 0 is out of range "
                  "(allowed: 1 <= batch_size <= 65536)"],
                 id="batch-size-out-of-range"),
    pytest.param(cases({"case": "digits_cnn", "repeat": 1000000000}),
                 ["run vars: key 'perfplay_cases[0].repeat': 1000000000 is out of range "
                  "(allowed: 1 <= repeat <= 1000)"],
                 id="repeat-out-of-range"),
    pytest.param(json.dumps({"perfplay_cases": '[{"case": "digits_cnn", "nproc": 2}'}),  # a survey's text
                 ["run vars: key 'perfplay_cases': is not valid JSON or YAML (malformed YAML at line 1, column 36",
                  "expected a list of cases, a case name, or FlagPerf's"],
                 id="cases-text-not-json-or-yaml"),
    pytest.param('{"perfplay_clear_caches": "maybe", "perfplay_master_port": "x"}',
                 ["2 problem(s)", "run vars: key 'perfplay_clear_caches': expected a boolean, got 'maybe' "
                  "(allowed: true/false, yes/no, on/off, 1/0)",
                  "run vars: key 'perfplay_master_port': expected an integer, got 'x' "
                  "(allowed: 0 <= perfplay_master_port <= 65535)"],
                 id="run-var-types"),
    pytest.param('{"perfplay_rdzv_timeout": 60, "perfplay_case_timeout": 600}',
                 ["2 problem(s)", "run vars: key 'perfplay_case_timeout': renamed to perfplay_case_timeout_s",
                  "run vars: key 'perfplay_rdzv_timeout': renamed to perfplay_rdzv_timeout_s"],
                 id="renamed-run-vars"),
    pytest.param("VENDOR=nvidia",
                 ["run vars: key 'VENDOR': is a FlagPerf setting, which perfplay does not read (perfplay's is "
                  "perfplay_vendor); python -m case_runners import-flagperf PATH converts"],
                 id="flagperf-run-var"),
    pytest.param("perfplay_vendr=cpu",
                 ["run vars: key 'perfplay_vendr': unknown perfplay var (did you mean perfplay_vendor?)"],
                 id="unknown-perfplay-var"),
    pytest.param('{"perfplay_nic": "eth0/1"}',
                 ["run vars: key 'perfplay_nic': 'eth0/1' (host localhost) is not a network interface name"],
                 id="nic-not-an-interface-name"),
])
def test_rejected_by_the_plan(results_dir: Path, extra_vars: str, expected: list[str]):
    run = run_playbook(REPO, "run_case.yml", "-e", f"perfplay_results_dir={results_dir}", "-e", extra_vars)
    assert_rejected(run, results_dir, "the run was rejected", *expected)
    assert list(results_dir.iterdir()) == [], "a rejected plan creates no run directory"
    assert "PERFPLAY SUMMARY" not in run.output


def test_every_problem_at_once(results_dir: Path):
    extra = {"perfplay_vendor": "cpu", "perfplay_clear_caches": "maybe",
             "perfplay_cases": ["nosuchcase", {"case": "digits_cnn", "repeat": "abc"}]}
    run = run_playbook(REPO, "run_case.yml", "-e", f"perfplay_results_dir={results_dir}", "-e", json.dumps(extra))
    assert_rejected(run, results_dir, "3 problem(s)", "nosuchcase", "perfplay_cases[1].repeat",
                    "perfplay_clear_caches")


@pytest.mark.parametrize("data_dir, expected", [
    pytest.param("{missing}", ["not found"], id="missing-data-dir"),
    pytest.param("{garbage}", ["not a readable .npz"], id="data-dir-wrong-format"),
])
def test_rejected_by_the_host_preflight(results_dir: Path, tmp_path: Path, data_dir: str, expected: list[str]):
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "digits.npz").write_text("not an npz archive\n")
    path = data_dir.format(missing=tmp_path / "nowhere", garbage=garbage)
    run = run_playbook(REPO, "run_case.yml", "-e", f"perfplay_results_dir={results_dir}",
                       "-e", cases({"case": "digits_cnn", "data_dir": path}))
    assert_rejected(run, results_dir, "key 'data_dir' (run var perfplay_cases) of digits_cnn_CPUx1x1", path,
                    *expected)
    assert "PERFPLAY SUMMARY" not in run.output
    assert list(results_dir.iterdir()) == [], "a run rejected by the host preflight leaves no run directory"


def test_a_nic_the_host_lacks_is_rejected_by_the_host_preflight(results_dir: Path):
    run = run_playbook(REPO, "run_case.yml", "-e", f"perfplay_results_dir={results_dir}",
                       "-e", "perfplay_nic=nosuchnic0")
    assert_rejected(run, results_dir, "key 'perfplay_nic': this host has no network interface 'nosuchnic0'")
    assert list(results_dir.iterdir()) == []


def test_a_host_name_that_is_a_path_is_rejected_by_the_plan(results_dir: Path, tmp_path: Path):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("""\
all:
  children:
    perfplay_hosts:
      hosts:
        ../escape:
          ansible_connection: local
          ansible_python_interpreter: "{{ ansible_playbook_python }}"
  hosts:
    localhost: {ansible_connection: local, ansible_python_interpreter: "{{ ansible_playbook_python }}"}
""")
    run = run_playbook(REPO, "run_case.yml", "-i", str(inventory), "-e", f"perfplay_results_dir={results_dir}")
    assert_rejected(run, results_dir, "run vars: key 'perfplay_host_pattern': inventory host '../escape' cannot "
                    "name a node directory (allowed: 1 to 253 letters")
    assert list(results_dir.iterdir()) == [] and not (results_dir.parent / "escape").exists()


def test_a_yaml_alias_bomb_is_refused_before_ansible_templates_it(results_dir: Path, tmp_path: Path):
    """448 bytes that expand to 9**9 values: refused by the play's first check, not expanded for minutes."""
    bomb = tmp_path / "bomb.yml"
    lines = ["perfplay_cases:", '  - &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"  - &a{i} [{','.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    bomb.write_text("\n".join(lines) + "\n")
    run = run_playbook(REPO, "run_case.yml", "-e", f"perfplay_results_dir={results_dir}", "-e", f"@{bomb}",
                       timeout=300)
    assert_rejected(run, results_dir, "run vars: key 'perfplay_cases': more than 10000 values (a YAML alias bomb?)",
                    "(allowed: at most 10000 values, 20 levels, 1048576 characters)")
    assert "Resolve and check every case" not in run.output, "refused before any task templates it"


def test_malformed_vendor_config(repo_copy: Path, results_dir: Path):
    config = repo_copy / "vendor" / "cpu" / "cases" / "digits_cnn" / "config_CPUx1x1.yaml"
    config.write_text("batch_size: [32,\nlr: 0.1\n")
    run = run_playbook(repo_copy, "run_case.yml", "-e", f"perfplay_results_dir={results_dir}")
    assert_rejected(run, results_dir, "vendor/cpu/cases/digits_cnn/config_CPUx1x1.yaml", "malformed YAML", "line")


def test_immutable_key(repo_copy: Path, results_dir: Path):
    """bert's vocab_size is fixed by its base config; a vendor config may not change it."""
    config = repo_copy / "vendor" / "cpu" / "cases" / "bert" / "config_CPUx1x1.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("vocab_size: 1000\n")
    run = run_playbook(repo_copy, "run_case.yml", "-e", f"perfplay_results_dir={results_dir}", "-e", cases("bert"))
    assert_rejected(run, results_dir, "vendor/cpu/cases/bert/config_CPUx1x1.yaml", "key 'vocab_size'", "immutable")


def test_an_ansible_core_out_of_range_is_the_first_and_only_message(results_dir: Path):
    """The range the play checks first, moved past the running ansible-core: one message, nothing else run."""
    run = run_playbook(REPO, "run_case.yml", "-e", f"perfplay_results_dir={results_dir}",
                       "-e", '{"perfplay_ansible_core": {"min": "2.99", "below": "3.0"}}')
    assert_rejected(run, results_dir, "perfplay needs ansible-core >= 2.99, < 3.0; this is ansible-core 2.19.",
                    "Run `make` in the checkout (it installs the pinned one into .venv) and use "
                    ".venv/bin/ansible-playbook.")
    assert list(run.task_statuses()) == ["Check the ansible-core version"]
    assert list(results_dir.iterdir()) == []


def test_under_awx_a_results_dir_in_the_project_is_a_warning():
    """AWX deletes the project folder with the job: without perfplay_results_dir the play says so, once."""
    warning = "WARNING: perfplay_results_dir is not set, so the results go into the project folder"
    run = run_playbook(REPO, "playbooks/preflight.yml", "-e", "awx_job_id=7")
    assert run.rc == 0, run.output[-3000:]
    assert run.output.count(warning) == 1, run.output[-3000:]
    assert "which AWX deletes with the job. Set perfplay_results_dir to a persistent path" in run.output
    quiet = run_playbook(REPO, "playbooks/preflight.yml", "-e", "tower_job_id=7",
                         "-e", f"perfplay_results_dir={REPO / 'results'}")
    assert quiet.rc == 0 and warning not in quiet.output, quiet.output[-3000:]


def test_a_framework_version_other_than_the_hosts_torch_is_a_warning(results_dir: Path):
    """pytorch_1.8 resolves as pytorch; the host preflight warns that this host's torch is another, and goes on."""
    run = run_playbook(REPO, "playbooks/preflight.yml", "-e", f"perfplay_results_dir={results_dir}",
                       "-e", cases("digits_cnn:pytorch_1.8"))
    assert run.rc == 0, run.output[-3000:]
    assert re.search(r"\[WARNING\]: \S+: case digits_cnn_CPUx1x1 asks for pytorch_1\.8 \(perfplay_cases\), this host "
                     r"has torch \S+ \(", run.output), run.output[-3000:]
