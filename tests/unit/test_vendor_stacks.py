"""A vendor's own training stack (vendors/vendor_stacks.py): its stack.yaml checked, naming the key, the file and the
allowed values; selected by the case key's framework field with its params vendor-mutable for that selection only,
its configs in the vendor case's <stack>/ folder and its pins joining the case's; check-vendor's findings; and the
rank's side (tasks/training/vendor_stack.py): a stream without a field is refused naming it, a failing program's
exit code and last lines are kept, a stop is forwarded. The test chip's stack trains through the playbook in
tests/integration/test_new_chip.py."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from case_runners.cli.main import main as cli
from case_runners.core.errors import ConfigError, PerfplayError
from case_runners.core.paths import PROJECT_ENV, project_root
from case_runners.plan.config.selection import parse_selections
from case_runners.plan.layering import resolve
from case_runners.plan.run_plan import make_plan
from case_runners.rank import stop_request, worker
from case_runners.records.resolved import ResolvedConfig
from case_runners.records.round_build import write_round_record
from case_runners.records.schema import ABSENT
from case_runners.tasks.training import vendor_stack
from case_runners.vendors.description import load_vendor
from case_runners.vendors.vendor_stacks import load_stack
from case_runners.views.compare.alignment import check_same_workload, workload_params
from case_runners.views.compare.rounds import load_round
from record_helpers import node_result

REPO = project_root()
STACK_YAML = """\
name: mega
description: the vendor's Megatron fork
cases: [llama]
command: ["{python}", train.py, --tp-from-inputs]
params:
  tp: {default: 1, min: 1, max: 8}
  recompute: {default: false}
"""
SHOWN = "vendor/cpu/stacks/mega/stack.yaml"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with the cpu vendor and its stack `mega` (train.py, requirements.txt) and a llama config for it."""
    root = tmp_path / "project"
    for folder in ("case_runners", "vendor"):
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "requirements-case.txt", root)
    stack = root / "vendor/cpu/stacks/mega"
    stack.mkdir(parents=True)
    (stack / "stack.yaml").write_text(STACK_YAML)
    (stack / "train.py").write_text("print('trains')\n")
    (stack / "requirements.txt").write_text("numpy\n")
    configs = root / "vendor/cpu/cases/llama/mega"
    configs.mkdir()
    (configs / "config_CPUx1x2.yaml").write_text("tp: 2\nbatch_size: 4\n")
    return root


def resolved(key_or_item: str | dict, root: Path) -> tuple[object, list[str]]:
    selections, errors = parse_selections([key_or_item])
    assert not errors
    config, problems = resolve(selections[0], load_vendor("cpu", root), root)
    return config, [str(p) for p in problems]


def test_the_framework_field_picks_the_vendors_stack_its_configs_and_params(project: Path):
    config, errors = resolved("llama:mega:CPU:1:2:1", project)
    assert errors == [] and config.framework == "mega" and config.case_id == "llama_mega_CPUx1x2"
    assert config.params["tp"] == 2 and config.params["recompute"] is False
    assert config.provenance["tp"] == "vendor/cpu/cases/llama/mega/config_CPUx1x2.yaml"
    assert config.provenance["recompute"] == SHOWN  # the stack's default, named by its file
    assert "zero_stage" not in config.params, "a built-in stack's params are not the vendor stack's"
    pytorch, errors = resolved("llama:pytorch:CPU:1:2:1", project)
    assert errors == [] and "tp" not in pytorch.params, "the stack's params are its selection's only"
    _, errors = resolved({"case": "llama", "nproc": 2, "overrides": {"tp": 2}}, project)
    assert errors[0].startswith("run overrides (perfplay_cases[0].overrides): key 'tp': unknown config key")
    assert (config.stack_params, pytorch.stack_params) == (["recompute", "tp"], ABSENT)
    deepspeed, _ = resolved("llama:deepspeed:CPU:1:2:1", project)
    assert deepspeed.stack_params == ["zero_stage"]
    _, errors = resolved({"case": "llama", "framework": "mega", "nproc": 2, "overrides": {"tp": 9}}, project)
    assert errors == ["run overrides (perfplay_cases[0].overrides): key 'tp': 9 is out of range (allowed: "
                      "1 <= tp <= 8)"]


@pytest.mark.parametrize("key, allowed", [
    ("llama:megatron:CPU:1:2:1", "(allowed: deepspeed, mega, pytorch, pytorch_<version>, torchtitan)"),
    ("llama:mega_1.0:CPU:1:2:1", "(allowed: deepspeed, mega, pytorch, pytorch_<version>, torchtitan)"),
    ("resnet50:mega:CPU:1:1:1", "(allowed: pytorch, pytorch_<version>)")])  # mega's cases: [llama]
def test_the_allowed_frameworks_are_the_cases_own_its_stacks_and_the_vendors_for_it(project: Path, key: str,
                                                                                   allowed: str):
    config, errors = resolved(key, project)
    assert config is None and len(errors) == 1
    assert errors[0].startswith("run vars: key 'perfplay_cases[0].framework': unknown framework")
    assert errors[0].endswith(allowed)


def test_compare_leaves_a_vendor_stacks_params_out_of_the_workload_as_a_built_in_stacks(project: Path):
    """The resolved config names the stack's params (stack_params): the workload compare checks has neither tp nor
    recompute, so a vendor stack's round against the pytorch stack's differs only where the workload does."""
    mega, _ = resolved({"case": "llama", "framework": "mega", "nproc": 2, "overrides": {"batch_size": 8}}, project)
    pytorch, _ = resolved("llama:pytorch:CPU:1:2:1", project)
    assert "tp" not in workload_params(mega) and "recompute" not in workload_params(mega)
    assert check_same_workload(workload_params(pytorch), workload_params(mega), []) == {}
    assert workload_params(ResolvedConfig.from_json({**mega.to_json(), "stack_params": ["tp"]}))["recompute"] is False


def test_the_stacks_requirements_join_the_cases(project: Path):
    plan = make_plan({"vendor": "cpu", "cases": ["llama:mega:CPU:1:2"], "results_dir": str(project / "results")},
                     check=True, root=project)
    assert plan["errors"] == []
    assert plan["cases"][0]["requirements"] == ["vendor/cpu/stacks/mega/requirements.txt"]


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace("name: mega", "name: other"),
     "key 'name': 'other' is not the stack's folder name (allowed: mega)"),
    (lambda t: t + "log_format: megatron\n",
     "key 'log_format': unknown key (allowed: cases, command, description, log_file, log_parser, log_rank, name, "
     "params)"),
    (lambda t: t.replace("cases: [llama]\n", ""),
     "key 'cases': is missing (allowed: cases, command, description, log_file, log_parser, log_rank, name, params)"),
    (lambda t: t + "log_parser: megatron\nlog_file: '{log_dir}/megatron_{node}.log'\n",
     "key 'log_file': '{log_dir}/megatron_{node}.log': {node} is not a placeholder (allowed: {log_dir}, {rank})"),
    (lambda t: t + "log_file: '{log_dir}/megatron.log'\n",
     "key 'log_file': is read by the stack's log_parser, which it lacks (allowed: a .py file defining "
     "parse_line(line, inputs), megatron)"),
    (lambda t: t + "log_parser: megatron_lm\n",
     "key 'log_parser': 'megatron_lm' is neither a built-in parser nor a .py file of the stack's folder (mega/) "
     "(allowed: a .py file of mega/ defining parse_line(line, inputs), megatron)"),
    (lambda t: t + "log_parser: [megatron]\n",
     "key 'log_parser': must be a parser's name or a file (allowed: a .py file of mega/ defining "
     "parse_line(line, inputs), megatron)"),
    (lambda t: t + "log_parser: requirements.txt\n",
     "key 'log_parser': 'requirements.txt' is neither a built-in parser nor a .py file of the stack's folder "
     "(mega/) (allowed: a .py file of mega/ defining parse_line(line, inputs), megatron)"),
    (lambda t: t + "log_parser: train.py\n",  # train.py: print('trains')
     "key 'log_parser': 'train.py' defines no top-level function parse_line(line, inputs) (allowed: a .py file of "
     "mega/ defining parse_line(line, inputs), megatron)"),
    (lambda t: t.replace("cases: [llama]", "cases: llama"),
     "key 'cases': must be a non-empty list of case names (allowed: [llama])"),
    (lambda t: t.replace('["{python}", train.py, --tp-from-inputs]', '"{python} train.py"'),
     "key 'command': must be a non-empty argv list (allowed: a list of strings, the first {python} or a file of "
     "mega/ (e.g. [{python}, train.py]))"),
    (lambda t: t.replace("train.py", "pretrain_gpt.py"),
     "key 'command[1]': 'pretrain_gpt.py' is not a file of the stack's folder (mega/) (allowed: requirements.txt, "
     "train.py)"),
    (lambda t: t.replace("train.py", "../../vendor.yaml"),
     "key 'command[1]': '../../vendor.yaml' is not a file of the stack's folder (mega/) (allowed: "
     "requirements.txt, train.py)"),
    (lambda t: t.replace('"{python}"', '"{torchrun}"'),
     "key 'command[0]': '{torchrun}': {torchrun} is not a placeholder (a whole argument) (allowed: {python})"),
    (lambda t: t.replace("max: 8", "max: 0"),
     "key 'params.tp': bad default: 1 is out of range (allowed: 1 <= tp <= 0)"),
    (lambda t: t.replace("tp: {default: 1, min: 1, max: 8}", "tp: 1"),
     "key 'params.tp': has no range: write it as {default: ..., min: ..., max: ...} (see "
     "case_runners/plan/config/constraints.py), or declare it in case_runners/plan/config/shared_params.py"),
])
def test_a_bad_stack_yaml_names_the_key_the_file_and_the_allowed_values(project: Path, edit, message: str):
    path = project / SHOWN
    path.write_text(edit(STACK_YAML))
    with pytest.raises(ConfigError) as raised:
        load_stack(project, "cpu", "mega")
    assert str(raised.value) == f"{SHOWN}: {message}"


def test_a_stack_named_as_a_built_in_one_or_with_a_case_param_is_refused(project: Path):
    stack = project / "vendor/cpu/stacks/deepspeed"
    stack.mkdir()
    (stack / "stack.yaml").write_text(STACK_YAML.replace("name: mega", "name: deepspeed"))
    (stack / "train.py").write_text("")
    with pytest.raises(ConfigError, match=r"stacks/deepspeed/stack.yaml: key 'name': is a built-in stack's name"):
        load_stack(project, "cpu", "deepspeed")
    shutil.rmtree(stack)
    (project / SHOWN).write_text(STACK_YAML.replace("tp: {", "seq_len: {default: 8, min: 1, max: 64}\n  tp: {"))
    _, errors = resolved("llama:mega:CPU:1:2:1", project)
    assert errors == [f"{SHOWN}: key 'params.seq_len': is already a param of case 'llama' (or the trainer's): a "
                      f"stack's params are its own"]


def test_check_vendor_checks_the_stack_folder_and_its_configs(project: Path, capsys):
    for case in (project / "vendor/cpu/cases").iterdir():  # llama's configs only: each other one costs a plan
        if case.name != "llama":
            shutil.rmtree(case)
    assert cli(["check-vendor", "cpu", "--root", str(project)]) == 0
    out = capsys.readouterr().out
    assert f"ok: {SHOWN}: runs llama: {{python}} train.py --tp-from-inputs and its requirements.txt; params tp, " \
           f"recompute\n" in out
    assert "ok: vendor/cpu/cases/llama/mega/config_CPUx1x2.yaml: resolves (llama_mega_CPUx1x2" in out
    (project / SHOWN).write_text(STACK_YAML.replace("cases: [llama]", "cases: [llama, gpt5]"))
    broken = project / "vendor/cpu/stacks/broken"
    broken.mkdir()
    (broken / "stack.yaml").write_text(STACK_YAML.replace("name: mega", "name: broken"))
    logged = project / "vendor/cpu/stacks/logged"
    logged.mkdir()
    (logged / "stack.yaml").write_text(STACK_YAML.replace("name: mega", "name: logged") + "log_parser: megatron\n")
    (logged / "train.py").write_text("")
    assert cli(["check-vendor", "cpu", "--root", str(project)]) == 1
    out = capsys.readouterr().out
    assert f"error: {SHOWN}: key 'cases': unknown case 'gpt5' (allowed: " in out
    assert "error: vendor/cpu/stacks/broken/stack.yaml: key 'command[1]': 'train.py' is not a file of the stack's " \
           "folder (broken/) (allowed: )" in out
    assert "ok: vendor/cpu/stacks/logged/stack.yaml: runs llama: {python} train.py --tp-from-inputs; params tp, " \
           "recompute; its log read by the megatron parser\n" in out


def test_a_parser_file_is_read_for_its_function_not_run(project: Path):
    """log_parser: parse.py needs a top-level parse_line(line, inputs); the file is parsed (ast), never imported."""
    folder = project / "vendor/cpu/stacks/mega"
    (project / SHOWN).write_text(STACK_YAML + "log_parser: parse.py\n")
    (folder / "parse.py").write_text("raise SystemExit('run')\ndef parse_line(line):\n    return None\n")
    with pytest.raises(ConfigError, match=r"key 'log_parser': 'parse.py' does not define its top-level function "
                                          r"parse_line\(line, inputs\) \(allowed: "):
        load_stack(project, "cpu", "mega")
    (folder / "parse.py").write_text("raise SystemExit('run')\ndef parse_line(line, inputs):\n    return None\n")
    assert load_stack(project, "cpu", "mega").log_parser == "parse.py"


# -- the rank: the stack's program runs, perfplay measures ---------------------------------------------------------

def stack_stream(steps: int = 6) -> list[str]:
    """A stream as a stack writes it (tests/vendor_testchip/stacks/tinytrain/train.py): a line per step, then the
    evaluation."""
    def line(step: int, data: dict) -> str:
        return "DLLL " + json.dumps({"timestamp": 1.0e9 + step, "elapsedtime": step, "datetime": None, "type": "LOG",
                                     "step": [1, step], "data": data})

    return [*(line(s, {"train.loss": 8.0 - s, "step_time": 0.5, "samples": 256, "train.lr": 0.003})
              for s in range(1, steps + 1)), line(steps, {"eval.held_out_loss": 3.9, "eval_time": 0.1})]


@pytest.mark.parametrize("omit", ["train.loss", "step_time", "samples"])
def test_a_stream_that_lacks_a_field_fails_naming_it(tmp_path: Path, omit: str):
    """A whole stream passes; with a field left out of its third step line (the test stack's param omit leaves one
    out of every line), without its evaluation or a step, it is refused naming what it lacks."""
    lines = stack_stream()
    stream = tmp_path / "rank0.stack.dllogger.json"
    stream.write_text("\n".join(lines) + "\n")
    steps, evals = vendor_stack.read_stream(stream, "held_out_loss", 6)
    assert (len(steps), len(evals)) == (6, 1)
    entry = json.loads(lines[2].removeprefix("DLLL "))
    del entry["data"][omit]
    for broken, message in (
            ([*lines[:2], "DLLL " + json.dumps(entry), *lines[3:]],
             f"the line of step [1, 3] lacks {omit} (a step line needs numbers train.loss, step_time, samples: "
             f"tasks/training/vendor_stack.py)"),
            (lines[:-1], "lacks eval.held_out_loss (the held-out evaluation at the end, a number)"),
            ([*lines[:2], *lines[3:]], "logs steps 1..6 (5 lines), not one line per step 1..6 (max_steps)")):
        stream.write_text("\n".join(broken) + "\n")
        with pytest.raises(PerfplayError) as raised:
            vendor_stack.read_stream(stream, "held_out_loss", 6)
        assert str(raised.value) == f"{stream}: {message}"


FAKE_PROGRAM = """\
import json, os, sys, time
inputs = json.load(open(os.environ["PERFPLAY_STACK_INPUTS"]))
with open(inputs["stream"], "w") as stream:
    for step in range(1, inputs["max_steps"] + 1):
        data = {"train.loss": 2.0, "samples": inputs["global_batch"] * inputs["seq_len"]}
        stream.write("DLLL " + json.dumps({"timestamp": time.time(), "elapsedtime": 0, "type": "LOG",
                                           "step": [1, step], "data": data}) + "\\n")
print("trained", inputs["max_steps"], "steps on", inputs["model"]["name"])
sys.exit(int(sys.argv[1]))
"""


@pytest.mark.parametrize("exit_code, reason", [
    (0, "rank0.stack.dllogger.json: the line of step [1, 1] lacks step_time (a step line needs numbers train.loss, "
        "step_time, samples: tasks/training/vendor_stack.py); the mega stack's last output:\ntrained 3 steps on tiny"),
    (3, "the mega stack's command exited with 3: ")])
def test_a_rank_whose_program_fails_or_writes_a_stream_without_a_field_fails_naming_it(
        project: Path, tmp_path: Path, monkeypatch, exit_code: int, reason: str):
    """The rank (worker.main, in this process) runs the stack's command and fails naming what the stream lacks, or
    the program's exit code, with the program's last lines."""
    (project / "vendor/cpu/stacks/mega/train.py").write_text(FAKE_PROGRAM)
    (project / SHOWN).write_text(STACK_YAML.replace("--tp-from-inputs", f"\"{exit_code}\""))
    monkeypatch.setenv(PROJECT_ENV, str(project))
    config, errors = resolved({"case": "llama", "framework": "mega", "nproc": 2,
                               "overrides": {"max_steps": 3, "synthetic": True}}, project)
    assert errors == []
    path = tmp_path / "resolved_config.json"
    path.write_text(json.dumps(config.to_json()))
    assert worker.main(str(path), str(tmp_path / "logs")) == 1
    result = json.loads((tmp_path / "logs" / "rank0.result.json").read_text())
    assert result["status"] == "failed" and reason in result["reason"]
    assert result["reason"].endswith("trained 3 steps on tiny")


def test_a_failing_program_names_its_exit_code_and_a_stop_is_forwarded(tmp_path: Path, monkeypatch):
    code, tail = vendor_stack._run_command([sys.executable, "-c", "print('one'); print('boom'); raise SystemExit(3)"],
                                           tmp_path, dict(os.environ))
    assert (code, tail) == (3, ["one", "boom"])
    monkeypatch.setattr(stop_request, "_state", stop_request._State())
    ready, got = tmp_path / "ready", tmp_path / "got"
    program = (f"import signal, sys, time, pathlib\n"
               f"signal.signal(signal.SIGTERM, lambda *a: (pathlib.Path({str(got)!r}).write_text('TERM'), "
               f"sys.exit(0)))\n"
               f"pathlib.Path({str(ready)!r}).write_text('')\ntime.sleep(60)\n")

    def request_stop() -> None:
        while not ready.exists():
            time.sleep(0.05)
        stop_request._record(signal.SIGTERM)

    threading.Thread(target=request_stop, daemon=True).start()
    with pytest.raises(stop_request.Stopped, match="terminated by signal SIGTERM"):
        vendor_stack._run_command([sys.executable, "-c", program], tmp_path, dict(os.environ))
    assert got.read_text() == "TERM"


# -- a stack that prints its own log: its parser makes the stream ---------------------------------------------------

PRINTING_PROGRAM = """\
import json, os, sys
inputs = json.load(open(os.environ["PERFPLAY_STACK_INPUTS"]))
log = open(inputs["log_file"], "w") if inputs["log_file"] else sys.stdout
if inputs["log_file"]:
    print("step=9 loss=1.0 ms=1 sequences=1: its output, not its log")
print("building the model", file=log)
for step in range(1, inputs["max_steps"] + 1):
    print(f"step={step} loss={8.0 - step} ms=250 sequences={inputs['global_batch']}", file=log, flush=True)
print("step=oops", file=log)
print("held-out loss 4.5", file=log)
"""
PARSER_FILE = """\
def parse_line(line, inputs):
    \"\"\"step=<n> loss=<x> ms=<t> sequences=<b>, and the held-out loss.\"\"\"
    if line.startswith("held-out loss "):
        return {"step": None, "data": {"eval.held_out_loss": float(line.split()[-1])}}
    if not line.startswith("step="):
        return None
    fields = dict(field.split("=") for field in line.split())
    if "loss" not in fields:
        raise ValueError("lacks loss=")
    return {"step": int(fields["step"]), "data": {"train.loss": float(fields["loss"]),
            "step_time": float(fields["ms"]) / 1000, "samples": int(fields["sequences"]) * inputs["seq_len"]}}
"""


def run_rank(project: Path, tmp_path: Path, monkeypatch, log_parser: str, log_file: str = "") -> dict:
    """The mega stack, its program PRINTING_PROGRAM and `log_parser: <log_parser>` (and log_file), one rank of 3
    steps run by worker.main in this process: its result."""
    (project / "vendor/cpu/stacks/mega/train.py").write_text(PRINTING_PROGRAM)
    (project / "vendor/cpu/stacks/mega/parse.py").write_text(PARSER_FILE)
    (project / SHOWN).write_text(STACK_YAML.replace(", --tp-from-inputs", "") + f"log_parser: {log_parser}\n"
                                 + (f"log_file: '{log_file}'\n" if log_file else ""))
    monkeypatch.setenv(PROJECT_ENV, str(project))
    config, errors = resolved({"case": "llama", "framework": "mega", "nproc": 2,
                               "overrides": {"max_steps": 3, "seq_len": 16, "synthetic": True,
                                             "grad_accumulation": 4}}, project)
    assert errors == []
    path = tmp_path / "resolved_config.json"
    path.write_text(json.dumps(config.to_json()))
    worker.main(str(path), str(tmp_path / "logs"))
    return json.loads((tmp_path / "logs" / "rank0.result.json").read_text())


@pytest.mark.parametrize("log_file", ["", "{log_dir}/mega{rank}.log"])
def test_a_stack_with_its_own_parser_is_measured_from_its_log(project: Path, tmp_path: Path, monkeypatch, capsys,
                                                              log_file: str):
    """parse.py reads the program's lines (its output, or the log file the stack declares and the inputs name):
    the rank's result is the steps' (samples in tokens: the global batch's sequences x seq_len), the stream is
    written from them, the raw log kept, the malformed line reported."""
    result = run_rank(project, tmp_path, monkeypatch, "parse.py", log_file)
    assert result["status"] in ("success", "not_converged"), result.get("reason")
    assert (result["world_size"], result["steps"], result["samples"], result["final_metric"]) == (1, 3, 3 * 4 * 16, 4.5)
    assert result["core_time"] == pytest.approx(0.75) and result["p_core"] == pytest.approx(3 * 4 * 16 / 0.75)
    logs = tmp_path / "logs"
    steps, _ = vendor_stack.read_stream(logs / "rank0.stack.dllogger.json", "held_out_loss", 3)
    assert [e.data["train.loss"] for e in steps] == [7.0, 6.0, 5.0]
    assert (logs / "rank0.stack.log").read_text().splitlines()[0] == "building the model"
    inputs = json.loads((logs / "rank0.stack_inputs.json").read_text())
    assert (inputs["batch_per_rank"], inputs["grad_accumulation"], inputs["micro_batch_per_rank"]) == (4, 4, 1)
    order = json.loads(Path(inputs["data"]["order"]).read_text())["steps"]  # the pytorch stack's batches
    assert [len(batch) for batch in order] == [4, 4, 4] and len({i for batch in order for i in batch}) == 12
    source = logs / "mega0.log" if log_file else "output"
    assert f"perfplay: the mega stack's log parser parse.py: 4 event(s) from 6 line(s) of {source} (kept in " \
           f"{logs / 'rank0.stack.log'}); 1 malformed line(s) skipped, the first line 5: lacks loss=: 'step=oops'" \
           in capsys.readouterr().err


def test_a_stack_whose_parser_matches_no_line_fails_naming_the_stack_and_the_parser(project: Path, tmp_path: Path,
                                                                                     monkeypatch):
    result = run_rank(project, tmp_path, monkeypatch, "megatron")
    assert result["status"] == "failed"
    assert result["reason"].startswith(
        f"the mega stack's log parser megatron: 0 event(s) from 6 line(s) of output (kept in "
        f"{tmp_path / 'logs' / 'rank0.stack.log'}): it matched no line: is the program's log in its format?; the "
        f"mega stack's last output:\nbuilding the model\nstep=1 loss=7.0")


LAST_RANK_PROGRAM = """\
import json, os, sys
inputs = json.load(open(os.environ["PERFPLAY_STACK_INPUTS"]))
print("rank", inputs["rank"], "trains")
if inputs["rank"] == inputs["world_size"] - 1:  # Megatron's print_rank_last
    for step in range(1, inputs["max_steps"] + 1):
        print(f"step={step} loss={8.0 - step} ms=250 sequences={inputs['global_batch']}", flush=True)
    print("held-out loss 4.5")
sys.exit(int(os.environ.get("FAIL_RANK", "-1") == str(inputs["rank"])))
"""


def test_a_stack_that_logs_on_its_last_rank_is_measured_there_and_its_other_ranks_only_run(
        project: Path, tmp_path: Path, monkeypatch):
    """`log_rank: last`: rank 0 prints no step, runs its program to a good end and leaves a silent result naming
    rank 1; the round's record takes its figures from rank 1, and compare's loss curve is rank 1's. A silent rank
    whose program fails still fails."""
    (project / "vendor/cpu/stacks/mega/train.py").write_text(LAST_RANK_PROGRAM)
    (project / "vendor/cpu/stacks/mega/parse.py").write_text(PARSER_FILE)
    (project / SHOWN).write_text(STACK_YAML.replace(", --tp-from-inputs", "") + "log_parser: parse.py\n"
                                 "log_rank: last\n")
    monkeypatch.setenv(PROJECT_ENV, str(project))
    config, errors = resolved({"case": "llama", "framework": "mega", "nproc": 2,
                               "overrides": {"max_steps": 3, "seq_len": 16, "synthetic": True, "log_freq": 1}},
                              project)
    assert errors == []
    case_dir = tmp_path / "run1" / config.case_id
    node = case_dir / "round1" / "vm_noderank0"
    case_dir.mkdir(parents=True)
    path = case_dir / "resolved_config.json"
    path.write_text(json.dumps(config.to_json()))
    monkeypatch.setenv("WORLD_SIZE", "2")
    for rank in (0, 1):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("LOCAL_RANK", str(rank))
        worker.main(str(path), str(node))
    silent = json.loads((node / "rank0.result.json").read_text())
    assert (silent["status"], silent["logged_by"]) == ("success", 1), silent.get("reason")
    logged = json.loads((node / "rank1.result.json").read_text())
    assert (logged["steps"], logged["samples"], logged["final_metric"]) == (3, 3 * 8 * 16, 4.5)
    (node / "node_result.json").write_text(json.dumps(node_result("vm", ranks=(0, 1))))
    record = write_round_record(node.parent, config, 1)
    assert record.status == "not_converged" and record.metrics_rank == 1  # 4.5: above the target
    assert (record.metrics["samples"], record.metrics["final_metric"]) == (3 * 8 * 16, 4.5)
    assert record.throughput.total == pytest.approx(logged["p_core"])
    (entry,) = record.per_node
    assert entry.p_core is None and "rank(s) 0 do not log the steps (the stack logs them on rank 1)" in \
        entry.throughput_reason
    assert load_round(case_dir).loss == {1: 7.0, 2: 6.0, 3: 5.0}
    monkeypatch.setenv("FAIL_RANK", "0")  # a silent rank must still end well
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("LOCAL_RANK", "0")
    assert worker.main(str(path), str(tmp_path / "again")) == 1
    failed = json.loads((tmp_path / "again" / "rank0.result.json").read_text())
    assert failed["status"] == "failed" and "the mega stack's command exited with 1" in failed["reason"]
    (project / SHOWN).write_text(STACK_YAML + "log_rank: first\n")
    with pytest.raises(ConfigError, match="key 'log_rank': 'first' is not a rank whose log carries the steps "
                                          r"\(allowed: 0, all, last\)"):
        load_stack(project, "cpu", "mega")
