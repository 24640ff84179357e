"""Vendor extern/ adapters (tasks/training/adapter.py): the trainer calls the vendor's points where they exist, the run
records what they replaced, and a bad adapter is refused with its file and line before any rank starts."""

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from torch import nn

from case_runners.cases.digits_cnn.case import DigitsCNN
from case_runners.core.paths import project_root
from case_runners.host.check import host_check, runtime_problems
from case_runners.plan.run_plan import make_plan
from case_runners.rank.driver.events import read_events
from case_runners.rank.worker import main
from case_runners.records.resolved import ResolvedConfig
from case_runners.records.round_build import write_round_record
from case_runners.tasks.training import adapter as adapter_module
from case_runners.tasks.training.adapter import (
    POINTS,
    STANDARD,
    AdapterError,
    check_adapter_source,
    load_adapter,
    package_name,
    replace_modules,
)
from process_helpers import communicate_or_kill
from record_helpers import node_result, resolved

ADAPTER = "vendor/acme/cases/digits_cnn/extern/trainer_adapter.py"
PACKAGE = package_name("acme", "digits_cnn")

COUNTING = """\
CALLS = {"create_optimizer": 0, "model_to_fp16": 0, "backward": 0}


def create_optimizer(model, ctx, standard):
    CALLS["create_optimizer"] += 1
    return standard()


def model_to_fp16(model, ctx):
    CALLS["model_to_fp16"] += 1
    CALLS["precision"] = ctx.precision
    return model


def backward(step, loss, optimizer, scaler, ctx):
    CALLS["backward"] += 1
    CALLS["last_step"] = step
    loss.backward()
"""

CONVERTING = {
    "trainer_adapter.py": """\
        from .converter import convert


        def convert_model(model, ctx):
            convert(model)
            return model
    """,
    "converter.py": """\
        from torch import nn

        from case_runners.tasks.training.adapter import replace_modules

        from .layers.fused import VendorLinear

        SWAPPED = []


        def convert(model):
            SWAPPED.append(replace_modules(model, {nn.Linear: VendorLinear.from_linear}))
    """,
    "layers/__init__.py": "",
    "layers/fused.py": """\
        from torch import nn


        class VendorLinear(nn.Linear):
            @classmethod
            def from_linear(cls, old):
                new = cls(old.in_features, old.out_features, bias=old.bias is not None)
                new.load_state_dict(old.state_dict())
                return new
    """,
}


def make_extern(root: Path, files: dict[str, str] | str, vendor: str = "acme", case: str = "digits_cnn") -> Path:
    """vendor/<vendor>/cases/<case>/extern/ under root with files ({relative path: source}, or the adapter's)."""
    folder = root / "vendor" / vendor / "cases" / case / "extern"
    for name, source in ({"trainer_adapter.py": files} if isinstance(files, str) else files).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(textwrap.dedent(source))
    return folder


def loaded_modules() -> list[str]:
    return [m for m in sys.modules if m == PACKAGE or m.startswith(f"{PACKAGE}.")]


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project root the worker and the host preflight find adapters in (the repository stays untouched)."""
    root = tmp_path / "project"
    root.mkdir()
    monkeypatch.setattr(adapter_module, "project_root", lambda: root)
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    yield root
    for name in loaded_modules():
        del sys.modules[name]


def case_config(**params) -> dict:
    """digits_cnn's resolved config for the vendor acme: the cpu vendor's, under acme's name."""
    return {**resolved(params=params), "vendor": "acme"}


def run_rank(tmp_path: Path, **overrides) -> tuple[int, dict, Path]:
    """One rank of digits_cnn for the vendor acme (the cpu vendor's device) through worker.main."""
    path, log_dir = tmp_path / "resolved_config.json", tmp_path / "logs"
    path.write_text(json.dumps(case_config(**overrides)))
    code = main(str(path), str(log_dir))
    return code, json.loads((log_dir / "rank0.result.json").read_text()), log_dir


# -- the contract ------------------------------------------------------------------------------------------------

def test_every_point_is_documented_with_the_call_the_trainer_makes():
    for point in POINTS.values():
        assert point.call in adapter_module.__doc__, point.call
    assert set(POINTS) == {"convert_model", "create_optimizer", "model_to_fp16", "model_to_ddp",
                           "create_grad_scaler", "autocast", "train_step", "backward", "update_model_params"}


def test_a_vendor_case_without_extern_runs_the_standard_code():
    assert load_adapter("cpu", "digits_cnn") is STANDARD
    assert STANDARD.adapted == [] and STANDARD.shown is None
    assert check_adapter_source(project_root(), "cpu", "digits_cnn") == []


# -- the adapter in a run ----------------------------------------------------------------------------------------

def test_adapted_points_run_and_are_recorded_in_the_rank_result_the_log_and_the_round_record(project, tmp_path,
                                                                                              capsys):
    make_extern(project, COUNTING)
    code, result, log_dir = run_rank(tmp_path, amp=True)

    assert code == 0, result.get("reason")
    assert result["status"] == "success" and result["final_metric"] >= 0.95, "it still converges"
    assert result["adapted"] == ["backward", "create_optimizer", "model_to_fp16"]
    assert result["adapter"] == ADAPTER
    assert (result["optimizer"], result["standard_optimizer"]) == ("SGD", "SGD")
    calls = sys.modules[f"{PACKAGE}.trainer_adapter"].CALLS
    assert calls["create_optimizer"] == calls["model_to_fp16"] == 1 and calls["precision"] == "bf16"
    assert calls["backward"] == result["steps"] == calls["last_step"], "backward runs once a step, numbered from 1"
    assert f"vendor adapter {ADAPTER} replaces: backward, create_optimizer, model_to_fp16\n" in capsys.readouterr().out
    events = read_events(log_dir / "rank0.events.jsonl")
    said = [e["value"] for e in events if e["event"] == "VENDOR_ADAPTER"]
    assert said == [{"file": ADAPTER, "points": ["backward", "create_optimizer", "model_to_fp16"]}]
    assert next(e for e in events if e["event"] == "SUBMIT_INFO")["value"]["adapter"] == ADAPTER

    node = tmp_path / "run1" / "digits_cnn_CPUx1x1" / "round1" / "localhost_noderank0"
    node.mkdir(parents=True)
    (node / "node_result.json").write_text(json.dumps(node_result("localhost")))
    shutil.copy(log_dir / "rank0.result.json", node)
    record = write_round_record(node.parent, ResolvedConfig.from_json(case_config()), 1)
    assert record.status == "success" and record.adapted == result["adapted"]


def test_adapted_lists_the_points_that_ran_not_those_defined(project, tmp_path, capsys):
    """An fp32 round on one rank calls no create_grad_scaler, model_to_fp16 or model_to_ddp: the records carry only
    backward; the log and the VENDOR_ADAPTER event still name every point the file defines."""
    make_extern(project, """\
        def create_grad_scaler(ctx):
            return None


        def model_to_fp16(model, ctx):
            return model


        def model_to_ddp(model, ctx):
            return model


        def backward(step, loss, optimizer, scaler, ctx):
            loss.backward()
    """)
    code, result, log_dir = run_rank(tmp_path, max_steps=2)
    assert code == 0, result.get("reason")
    assert result["adapted"] == ["backward"], "only backward ran"
    defined = ["backward", "create_grad_scaler", "model_to_ddp", "model_to_fp16"]
    assert f"vendor adapter {ADAPTER} replaces: {', '.join(defined)}\n" in capsys.readouterr().out
    said = [e["value"] for e in read_events(log_dir / "rank0.events.jsonl") if e["event"] == "VENDOR_ADAPTER"]
    assert said == [{"file": ADAPTER, "points": defined}]


def test_the_vendor_autocast_wraps_the_forward_pass_and_the_evaluation(project, tmp_path):
    """The autocast point (FlagPerf mthreads' torch.musa.amp.autocast) replaces the trainer's torch.autocast with
    amp: the case's forward runs inside it, in its dtype; an fp32 round never calls it."""
    make_extern(project, """\
        import contextlib

        import torch

        SEEN = []


        @contextlib.contextmanager
        def autocast(dtype, ctx):
            with torch.autocast(device_type=ctx.device.type, dtype=dtype):
                SEEN.append((dtype, torch.is_autocast_enabled(ctx.device.type)))
                yield


        def train_step(model, batch, ctx):
            loss, samples = ctx.case.train_step(model, batch)
            SEEN.append(("forward", torch.is_autocast_enabled(ctx.device.type)))
            return loss, samples
    """)
    code, result, _ = run_rank(tmp_path, amp=True, max_steps=2)
    assert code == 0, result.get("reason")
    assert result["adapted"] == ["autocast", "train_step"]
    seen = sys.modules[f"{PACKAGE}.trainer_adapter"].SEEN
    assert seen[:2] == [(torch.bfloat16, True), ("forward", True)], "the forward ran inside the vendor's context"
    assert seen.count((torch.bfloat16, True)) > 2, "the evaluation too"
    (tmp_path / "fp32").mkdir()
    code, result, _ = run_rank(tmp_path / "fp32", max_steps=2)
    assert code == 0 and result["adapted"] == ["train_step"], result


def test_the_standard_run_records_no_adapted_point(tmp_path, project):
    code, result, _ = run_rank(tmp_path, max_steps=2)
    assert code == 0 and result["adapted"] == [] and result["adapter"] is None
    assert result["optimizer"] == result["standard_optimizer"] == "SGD"


def test_a_vendor_optimizer_of_another_type_is_recorded_beside_the_standard_one(tmp_path, project):
    make_extern(project, """\
        import torch


        def create_optimizer(model, ctx, standard):
            return torch.optim.Adam(model.parameters(), lr=ctx.params["lr"] / 50), None


        def train_step(model, batch, ctx):
            return ctx.case.train_step(model, batch)


        def update_model_params(step, optimizer, scheduler, scaler, ctx):
            optimizer.step()
    """)
    code, result, _ = run_rank(tmp_path, max_steps=3)
    assert code == 0 and result["steps"] == 3
    assert (result["optimizer"], result["standard_optimizer"]) == ("Adam", "SGD")
    assert result["adapted"] == ["create_optimizer", "train_step", "update_model_params"]


def test_two_ranks_wrap_the_model_with_the_vendor_s_model_to_ddp(tmp_path, project):
    make_extern(project, """\
        from torch.nn.parallel import DistributedDataParallel


        def model_to_ddp(model, ctx):
            print(f"model_to_ddp on rank {ctx.rank} of {ctx.world_size}", flush=True)
            return DistributedDataParallel(model, bucket_cap_mb=1)
    """)
    config, log_dir = tmp_path / "resolved_config.json", tmp_path / "logs"
    config.write_text(json.dumps({**case_config(max_steps=4), "nproc": 2}))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    code = ("import sys; from pathlib import Path; from case_runners.tasks.training import adapter; "
            f"adapter.project_root = lambda: Path({str(project)!r}); "
            "from case_runners.rank.worker import main; "
            f"raise SystemExit(main({str(config)!r}, {str(log_dir)!r}))")
    procs = [subprocess.Popen([sys.executable, "-c", code], cwd=project_root(), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True,
                              env={**os.environ, "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2",
                                   "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port,
                                   "PERFPLAY_DIST_TIMEOUT_S": "60", "PERFPLAY_DEVICE_INDEX": "0"})  # no acme hook
             for rank in range(2)]
    outputs = communicate_or_kill(procs)
    assert [p.returncode for p in procs] == [0, 0], outputs
    for rank, output in enumerate(outputs):
        assert f"model_to_ddp on rank {rank} of 2" in output
        result = json.loads((log_dir / f"rank{rank}.result.json").read_text())
        assert (result["steps"], result["adapted"]) == (4, ["model_to_ddp"])


def test_the_converter_and_its_layers_import_relatively_and_replace_modules_counts(project):
    make_extern(project, CONVERTING)
    path_before = list(sys.path)
    adapter = load_adapter("acme", "digits_cnn")
    assert (adapter.defined, adapter.adapted) == (["convert_model"], []) and sys.path == path_before
    model = DigitsCNN()
    before = model(torch.zeros(2, 1, 8, 8))
    assert adapter.call("convert_model", model, None) is model
    assert adapter.adapted == ["convert_model"], "called now"
    assert type(model.fc1).__name__ == type(model.fc2).__name__ == "VendorLinear"
    assert sys.modules[f"{PACKAGE}.converter"].SWAPPED == [2]
    assert torch.equal(model(torch.zeros(2, 1, 8, 8)), before), "the vendor's layer keeps the weights"


def test_replace_modules_swaps_exact_types_at_any_depth_once_per_module():
    class Norm(nn.LayerNorm):
        pass

    shared = nn.LayerNorm(4)
    model = nn.Sequential(nn.Linear(4, 4), shared, nn.Sequential(shared, Norm(4), nn.LayerNorm(4)))
    swapped = replace_modules(model, {nn.LayerNorm: lambda old: nn.RMSNorm(old.normalized_shape)})
    assert swapped == 2, "the shared layernorm once, the nested one; not the subclass"
    assert model[1] is model[2][0] and isinstance(model[1], nn.RMSNorm)
    assert isinstance(model[2][1], Norm) and isinstance(model[2][2], nn.RMSNorm)
    assert replace_modules(nn.LayerNorm(4), {nn.LayerNorm: nn.Identity}) == 0, "the model itself is kept"
    with pytest.raises(TypeError, match="the factory for Linear returned NoneType, not a torch.nn.Module"):
        replace_modules(model, {nn.Linear: lambda old: None})


# -- bad adapters ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("files, message", [
    ({**CONVERTING, "converter.py": "import apex_not_installed_here\n"},
     f"{ADAPTER}: importing it failed at vendor/acme/cases/digits_cnn/extern/converter.py line 1: "
     f"ModuleNotFoundError: No module named 'apex_not_installed_here'"),
    ("import torch\n\nSCALE = 1 / 0\n",
     f"{ADAPTER}: importing it failed at line 3: ZeroDivisionError: division by zero"),
    ({**CONVERTING, "layers/fused.py": "from torch import nn\n\nclass VendorLinear(nn.Linear)\n"},
     f"{ADAPTER}: importing it failed at vendor/acme/cases/digits_cnn/extern/layers/fused.py line 3: "
     f"SyntaxError: expected ':'"),
], ids=["missing-module", "raises", "syntax-error-in-layers"])
def test_an_adapter_that_fails_to_import_names_the_file_the_line_and_the_last_traceback_line(project, files,
                                                                                             message):
    make_extern(project, files)
    with pytest.raises(AdapterError) as raised:
        load_adapter("acme", "digits_cnn")
    assert str(raised.value) == message
    assert loaded_modules() == [], "nothing of the failed import stays loaded"


@pytest.mark.parametrize("source, message", [
    ("def backward(step, loss, optimizer, scaler, ctx):\n    pass\n\n\ndef zero_grad(optimizer):\n    pass\n",
     "line 5: defines 'zero_grad', which is not a point of the contract (known: convert_model, model_to_fp16, "
     "create_optimizer, create_grad_scaler, autocast, model_to_ddp, train_step, backward, update_model_params); "
     "give helpers a leading underscore"),
    ("def backward(loss):\n    loss.backward()\n",
     "line 1: backward takes 1 positional parameter(s); the caller calls backward(step, loss, optimizer, scaler, "
     "ctx)"),
    ("def create_optimizer(model, ctx):\n    pass\n",
     "line 1: create_optimizer takes 2 positional parameter(s); the caller calls create_optimizer(model, ctx, "
     "standard)"),
], ids=["unknown-point", "too-few-parameters", "no-standard"])
def test_an_unknown_point_or_a_wrong_signature_is_refused_from_the_source_and_when_loaded(project, source, message):
    make_extern(project, source)
    assert check_adapter_source(project, "acme", "digits_cnn") == [f"{ADAPTER}: {message}"]
    with pytest.raises(AdapterError) as raised:
        load_adapter("acme", "digits_cnn")
    loaded = message.split(": ", 1)[1] if "takes" in message else message  # no line: from the function itself
    assert str(raised.value) == f"{ADAPTER}: {loaded}"
    assert loaded_modules() == []


def test_a_point_that_raises_fails_the_round_naming_the_point_the_file_and_the_line(tmp_path, project, capsys):
    make_extern(project, {"trainer_adapter.py": """\
        from .layers.fused import fused_backward


        def backward(step, loss, optimizer, scaler, ctx):
            fused_backward(loss)
    """, "layers/fused.py": """\
        def fused_backward(loss):
            raise RuntimeError("no fused kernel for this shape")
    """})
    code, result, _ = run_rank(tmp_path, max_steps=2)
    assert code == 1 and result["status"] == "failed"
    assert result["reason"] == (f"{ADAPTER}: backward() raised RuntimeError: no fused kernel for this shape "
                                f"(at vendor/acme/cases/digits_cnn/extern/layers/fused.py line 2)")
    assert f"error: {result['reason']}" in capsys.readouterr().err


def test_a_point_that_returns_no_model_fails_the_round(tmp_path, project):
    make_extern(project, "def convert_model(model, ctx):\n    model.float()\n")
    code, result, _ = run_rank(tmp_path, max_steps=2)
    assert code == 1
    assert result["reason"] == f"{ADAPTER}: convert_model() returned NoneType, not a torch.nn.modules.module.Module"


def test_the_rank_refuses_an_adapter_that_does_not_import(tmp_path, project):
    make_extern(project, "import apex_not_installed_here\n")
    code, result, log_dir = run_rank(tmp_path, max_steps=2)
    assert code == 1 and result["reason"] == (f"{ADAPTER}: importing it failed at line 1: ModuleNotFoundError: "
                                              f"No module named 'apex_not_installed_here'")
    assert "INIT_START" not in [e["event"] for e in read_events(log_dir / "rank0.events.jsonl")]


# -- before any rank starts --------------------------------------------------------------------------------------

@pytest.fixture
def project_copy(tmp_path):
    root = tmp_path / "checkout"
    shutil.copytree(project_root() / "vendor", root / "vendor")
    return root


def test_the_plan_refuses_a_statically_bad_adapter_naming_file_and_line(project_copy, tmp_path):
    make_extern(project_copy, {"trainer_adapter.py": "def backward(loss):\n    pass\n",
                               "layers/fused.py": "def f(:\n"}, vendor="cpu")
    shown = "vendor/cpu/cases/digits_cnn/extern"
    result = make_plan({"vendor": "cpu", "cases": ["digits_cnn", "digits_cnn:pytorch:CPU:1:2:1"],
                        "results_dir": str(tmp_path / "results")}, root=project_copy)
    assert not result["ok"] and result["run_dir"] is None
    assert result["errors"] == [
        f"{shown}/trainer_adapter.py: line 1: backward takes 1 positional parameter(s); the caller calls "
        f"backward(step, loss, optimizer, scaler, ctx)",
        f"{shown}/layers/fused.py: line 1: invalid syntax"], "each problem once, for both selections of the case"
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir()), "nothing written"


def test_the_plan_takes_a_good_adapter(project_copy):
    make_extern(project_copy, CONVERTING, vendor="cpu")
    result = make_plan({"vendor": "cpu", "cases": ["digits_cnn"]}, check=True, root=project_copy)
    assert result["ok"], result["errors"]


def test_the_host_preflight_imports_each_host_case_s_adapter(project):
    make_extern(project, "import apex_not_installed_here\n", vendor="cpu")
    expected = ("vendor/cpu/cases/digits_cnn/extern/trainer_adapter.py: importing it failed at line 1: "
                "ModuleNotFoundError: No module named 'apex_not_installed_here'")
    config = {**case_config(), "vendor": "cpu", "runtime": {"kind": "host"}}
    assert host_check({"vendor": "cpu", "nproc": 1, "cases": [config, {**config, "case_id": "other"}]}
                      )["problems"] == [expected]
    assert runtime_problems(ResolvedConfig.from_json(config)) == [expected], \
        "check-runtime, as the container's prepare runs it"
    docker = {**config, "runtime": {"kind": "docker"}}
    assert host_check({"vendor": "cpu", "nproc": 1, "cases": [docker]})["problems"] == [], \
        "the docker runtime imports it in the container"
