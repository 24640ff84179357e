"""`python -m case_runners run`'s options, the unified run interface: each option lands on its config key or
selection field (through the plan, as --set does), --help and the docs name what each sets, --device picks the
vendor, the printed command is the launch that ran, and --nnode/--node-rank run a round's nodes on two "hosts"."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from case_runners.cli.local_run import _request
from case_runners.cli.main import build_parser, main
from case_runners.cli.run_options import CONFIG_KEY, RUN_OPTIONS, markdown_table
from case_runners.core.errors import ConfigError
from case_runners.core.netutil import free_port
from case_runners.core.paths import project_root
from case_runners.plan.run_plan import make_plan
from case_runners.records.round import RoundRecord
from case_runners.vendors.description import vendor_for_device
from process_helpers import REAPED_S, SHORT_S, kill_run, run_pids


def resolved(*argv: str) -> dict:
    """The resolved config `run` would run for argv, from the plan's check (nothing is written or run)."""
    request = _request(build_parser().parse_args(["run", *argv]))
    plan = make_plan(request, check=True)
    assert plan["ok"], plan["errors"]
    (config,) = plan["cases"]
    return config


def refused(capsys, *argv: str) -> str:
    """What `run` says when it refuses argv (exit status 2, nothing run)."""
    assert main(["run", *argv]) == 2
    return capsys.readouterr().err


def test_every_option_lands_on_its_config_key_or_selection_field(tmp_path):
    config = resolved("--model-name", "digits_cnn", "--batch-size", "16", "--epoch", "3", "--step", "7", "--lr",
                      "0.01", "--autocast", "--device", "cpu", "--nproc-per-node", "2", "--dataset-path",
                      str(tmp_path), "--repeat", "2", "--hardware", "CPU")
    assert {key: config["params"][key] for key in ("batch_size", "max_epochs", "max_steps", "lr", "amp")} == {
        "batch_size": 16, "max_epochs": 3, "max_steps": 7, "lr": 0.01, "amp": True}
    assert (config["case"], config["vendor"], config["nproc"], config["data_dir"], config["repeat"]) == (
        "digits_cnn", "cpu", 2, str(tmp_path), 2)
    assert resolved("digits_cnn", "--nnode", "2", "--nproc", "2", "--data-dir", str(tmp_path))["case_id"] == \
        "digits_cnn_CPUx2x2", "the old names stay as aliases"
    assert resolved("digits_cnn", "--set", "max_steps=7")["params"] == resolved("digits_cnn", "--step", "7")["params"]


def test_an_option_and_a_set_of_the_same_key_must_agree(capsys, tmp_path):
    err = refused(capsys, "digits_cnn", "--step", "5", "--set", "max_steps=6", "--results-dir", str(tmp_path))
    assert "key 'max_steps': --set max_steps=6 and --step 5 set it differently" in err
    assert resolved("digits_cnn", "--step", "5", "--set", "max_steps=5")["params"]["max_steps"] == 5
    err = refused(capsys, "digits_cnn", "--autocast", "--set", "amp=false", "--results-dir", str(tmp_path))
    assert "key 'amp': --set amp=false and --autocast set it differently" in err
    err = refused(capsys, "digits_cnn", "--batch-size", "many", "--results-dir", str(tmp_path))
    assert "key 'batch_size': expected an integer, got 'many'" in err, "the plan checks an option's value"
    assert not list(tmp_path.iterdir())


def test_help_names_what_every_option_sets_and_the_docs_show_the_table():
    done = subprocess.run([sys.executable, "-m", "case_runners", "run", "--help"], cwd=project_root(),
                          capture_output=True, text=True, check=True, env={**os.environ, "COLUMNS": "1000"},
                          timeout=SHORT_S)
    text = " ".join(done.stdout.split())
    for option in RUN_OPTIONS:
        invocation = ", ".join(flag if option.metavar is None else f"{flag} {option.metavar}" for flag in option.flags)
        assert f"{invocation} [{option.target}] {option.meaning}" in text
    keys = {option.flags[0]: option.key for option in RUN_OPTIONS if option.kind == CONFIG_KEY}
    assert keys == {"--batch-size": "batch_size", "--epoch": "max_epochs", "--step": "max_steps", "--lr": "lr",
                    "--autocast": "amp"}
    assert markdown_table() in (project_root() / "docs" / "running.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(("command", "old", "new"), [
    ("run", "--monitor-interval", "--monitor-interval-s"), ("run", "--progress-interval", "--progress-interval-s"),
    ("launch", "--monitor-interval", "--monitor-interval-s"), ("run", "--rdzv-timeout", "--rdzv-timeout-s")])
def test_an_old_option_name_is_refused_naming_the_new_one(capsys, command, old, new):
    """Not run under the new name either: argparse took the old one as an abbreviation of it."""
    with pytest.raises(SystemExit) as exit_:
        build_parser(command).parse_args([command, "--config", "c", "--log-dir", "d"][:1 + 4 * (command == "launch")]
                                         + [old, "0.5"])
    assert exit_.value.code == 2
    assert f"error: {old} is renamed {new}: give that instead" in capsys.readouterr().err


def test_an_abbreviated_option_is_refused_not_guessed(capsys, tmp_path):
    """`--vend` was taken as `--vendor`, and `history list --cas` as `--case`: every parser refuses both, a nested
    command's too, and no parser of case_runners or bench is argparse's own (which guesses)."""
    for argv, flag in ((["run", "digits_cnn", "--vend", "nosuch", "--results-dir", str(tmp_path)], "--vend"),
                       (["history", "list", "--db", str(tmp_path / "h.sqlite"), "--cas", "digits_cnn"], "--cas")):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2 and f"error: unrecognized arguments: {flag}" in capsys.readouterr().err
    own = [f"{path.relative_to(project_root())}" for folder in ("case_runners", "bench")
           for path in sorted((project_root() / folder).rglob("*.py"))
           if "argparse.ArgumentParser(" in path.read_text(encoding="utf-8")]
    assert own == []


def test_the_commands_the_modules_run_import_none_of_the_others(capsys):
    """A module call per host and round starts `python -m case_runners <command>`: its parser is built without
    the modules people's commands need (the plan's checks, the views, the cases), a third of the CLI's start."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "case_runners", "requirements",
                           "--requirements", str(project_root() / "requirements.txt")],
                          capture_output=True, text=True, timeout=120, cwd=project_root())
    assert done.returncode == 0 and json.loads(done.stdout)["satisfied"], done.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    slow = ("case_runners.plan.run_vars", "case_runners.views.compare", "case_runners.views.history",
            "case_runners.views.report", "case_runners.cases", "case_runners.views.catalogue",
            "case_runners.records.round")
    assert not sorted(name for name in imported if name.startswith(slow))
    assert build_parser("wait").parse_args(["wait", "--log-dir", "d", "--run-id", "r"]).for_s > 0
    with pytest.raises(SystemExit):
        build_parser("nosuch").parse_args(["nosuch"])
    assert "'report'" in capsys.readouterr().err, "an unknown command is told every command"


def test_device_picks_the_vendor_and_an_unknown_or_ambiguous_one_is_refused(capsys, tmp_path):
    assert resolved("digits_cnn", "--device", "cuda")["vendor"] == "nvidia"
    err = refused(capsys, "digits_cnn", "--device", "musa", "--results-dir", str(tmp_path))
    assert "--device musa: no vendor has this device type (vendors and their devices: cpu: cpu, nvidia: cuda)" in err
    err = refused(capsys, "digits_cnn", "--device", "cuda", "--vendor", "cpu", "--results-dir", str(tmp_path))
    assert "--device cuda does not agree with vendor 'cpu', whose device is cpu" in err
    for name in ("gpu_a", "gpu_b"):
        (tmp_path / "vendor" / name).mkdir(parents=True)
        (tmp_path / "vendor" / name / "vendor.yaml").write_text("device: cuda\n")
    with pytest.raises(ConfigError, match=r"--device cuda: several vendors have this device type \(gpu_a, gpu_b\); "
                                          r"choose one with --vendor"):
        vendor_for_device("cuda", root=tmp_path)
    assert vendor_for_device("cuda", "gpu_b", root=tmp_path) == "gpu_b"


def test_a_node_of_several_needs_a_run_id_a_port_and_a_rank_in_range(capsys, tmp_path):
    results = ("--results-dir", str(tmp_path))
    err = refused(capsys, "digits_cnn", "--nnode", "2", *results)
    assert "start every node with the same --run-id" in err and "--master-port 0: digits_cnn_CPUx2x1 runs on 2" in err
    err = refused(capsys, "digits_cnn", "--nnode", "2", "--node-rank", "2", "--run-id", "nodes0001",
                  "--master-port", "29500", *results)
    assert "--node-rank 2: digits_cnn_CPUx2x1 has 2 node(s), ranks 0 to 1" in err
    assert "--node-rank 1: digits_cnn_CPUx1x1 has 1 node(s)" in refused(capsys, "digits_cnn", "--node-rank", "1",
                                                                         *results)
    assert "key '--run-id': 'x' is not a run id" in refused(capsys, "digits_cnn", "--run-id", "x", *results)
    assert "give the case as CASE or as --model-name" in refused(capsys, "digits_cnn", "--model-name", "bert",
                                                                 *results)
    assert not list(tmp_path.iterdir())


class Launched(Exception):
    """Raised where `run` would start its first round's launcher."""


def test_run_resolves_its_cases_once_and_launches_the_config_it_wrote(monkeypatch, tmp_path):
    import case_runners.plan.run_plan as run_plan
    resolved_cases = []
    real_resolve = run_plan.resolve

    def counted(sel, *rest):
        resolved_cases.append(sel.case)
        return real_resolve(sel, *rest)

    def launch(argv, *rest):
        raise Launched(argv)

    monkeypatch.setattr(run_plan, "resolve", counted)
    monkeypatch.setattr("case_runners.cli.local_run._host_problems", lambda plan: [])  # this host's preflight: not here
    monkeypatch.setattr("case_runners.cli.local_run._launch", launch)
    with pytest.raises(Launched) as launched:
        main(["run", "digits_cnn", "--step", "2", "--results-dir", str(tmp_path), "--run-id", "once0001"])
    assert resolved_cases == ["digits_cnn"], "checked and written from one plan"
    config = json.loads(Path(value(launched.value.args[0], "--config")).read_text())
    assert (config["case_id"], config["params"]["max_steps"]) == ("digits_cnn_CPUx1x1", 2)
    assert Path(value(launched.value.args[0], "--config")).parent == tmp_path / "once0001" / "digits_cnn_CPUx1x1"


def start(results: Path, *argv: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "case_runners", "run", "digits_cnn", "--results-dir", str(results),
                             *argv], cwd=project_root(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL, start_new_session=True)


def run_to_the_end(procs: list[subprocess.Popen], *run_ids: str) -> list[tuple[str, str]]:
    """Each node's (stdout, stderr) once it ended; whatever is left of them and their runs is killed, also when a
    node hangs past the (generous) timeout."""
    try:
        return [proc.communicate(timeout=900) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=REAPED_S)
        for run_id in run_ids:
            kill_run(run_id)


def printed_launch(err: str) -> list[str]:
    """The launch command `run` printed before running it."""
    (line,) = [line for line in err.splitlines() if " -m case_runners launch " in line]
    argv = shlex.split(line)
    assert argv[:4] == [sys.executable, "-m", "case_runners", "launch"]
    return argv


def value(argv: list[str], option: str) -> str:
    return argv[argv.index(option) + 1]


def test_a_short_run_prints_its_launch_command_and_runs_the_options(tmp_path):
    proc = start(tmp_path, "--step", "3", "--batch-size", "16", "--autocast", "--run-id", "short0001")
    ((out, err),) = run_to_the_end([proc], "short0001")
    assert proc.returncode == 0, err
    argv = printed_launch(err)
    round_dir = tmp_path / "short0001" / "digits_cnn_CPUx1x1" / "round1"
    assert Path(value(argv, "--log-dir")).parent == round_dir and value(argv, "--node-rank") == "0"
    assert json.loads(Path(value(argv, "--config")).read_text())["params"]["batch_size"] == 16
    record = RoundRecord.load(round_dir / "round_record.json")
    assert (record.metrics["steps"], record.metrics["samples"], record.metrics["amp"]) == (3, 48, True)
    assert record.metrics["precision"] == "bf16", "the cpu vendor's amp_dtype"


def test_two_nodes_on_loopback_each_run_their_node_and_node_0_records_the_round(tmp_path):
    run_id, port = "twonodes01", str(free_port())
    common = ("--nnode", "2", "--run-id", run_id, "--master-addr", "127.0.0.1", "--master-port", port, "--step", "5",
              "--rdzv-timeout-s", "600")  # a bound on a hang, not on speed
    procs = [start(tmp_path / f"node{rank}", *common, "--node-rank", str(rank)) for rank in (0, 1)]
    (out0, err0), (out1, err1) = run_to_the_end(procs, run_id)
    assert [proc.returncode for proc in procs] == [0, 0], (err0, err1)
    for rank, err in ((0, err0), (1, err1)):
        argv = printed_launch(err)
        assert (value(argv, "--node-rank"), value(argv, "--master-port"), value(argv, "--run-id")) == (
            str(rank), port, run_id)
    assert "digits_cnn_CPUx2x1 round 1: node 1: success" in err1
    round_dir = tmp_path / "node0" / run_id / "digits_cnn_CPUx2x1" / "round1"
    record = RoundRecord.load(round_dir / "round_record.json")
    assert (record.status, record.nnodes, record.nodes_elsewhere) == ("not_converged", 2, [1])
    assert record.metrics["stop_reason"] == "max_steps"
    assert [(r["rank"], r["world_size"], r["node_rank"]) for r in record.per_rank] == [(0, 2, 0)]
    assert record.metrics["samples"] == 5 * 32 * 2, "rank 0 counts both nodes' samples"
    assert json.loads((tmp_path / "node0" / run_id / "summary.json").read_text())["cases"][0]["rounds"]
    assert "node1: on its own host" in out0, out0  # the summary names the node it has no figure of
    assert "| 1 | on its own host |" in (tmp_path / "node0" / run_id / "summary.md").read_text()
    node1 = tmp_path / "node1" / run_id / "digits_cnn_CPUx2x1" / "round1"
    assert not (node1 / "round_record.json").exists() and not (tmp_path / "node1" / run_id / "summary.json").exists()
    assert json.loads(next(node1.glob("*_noderank1/rank1.result.json")).read_text())["world_size"] == 2
    assert run_pids(run_id) == []


def test_a_node_of_another_run_is_turned_away_and_node_0_records_the_failed_round(tmp_path):
    port = str(free_port())
    common = ("--nnode", "2", "--master-port", port, "--step", "5", "--rdzv-timeout-s", "5")
    procs = [start(tmp_path / "node0", *common, "--node-rank", "0", "--run-id", "ourrun001"),
             start(tmp_path / "node1", *common, "--node-rank", "1", "--run-id", "otherrun01")]
    (_, err0), (_, err1) = run_to_the_end(procs, "ourrun001", "otherrun01")
    assert [proc.returncode for proc in procs] == [1, 1], (err0, err1)
    assert "digits_cnn_CPUx2x1 round 1: node 1: failed (rendezvous" in err1
    record = RoundRecord.load(tmp_path / "node0" / "ourrun001" / "digits_cnn_CPUx2x1" / "round1" / "round_record.json")
    assert record.status == "failed" and "rendezvous: node(s) 1 did not join" in record.reason
    assert record.nodes_elsewhere == [1]
