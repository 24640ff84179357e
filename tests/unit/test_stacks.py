"""Training stacks (plan/config/stacks.py): selecting one by the case key's framework, its params and vendor
configs, and the stacks trained for real: two ranks of the llama tiny shape on pytorch, on deepspeed (ZeRO 2) and on
torchtitan from the same seed and data, whose loss curves `compare` aligns, and which catches a wrong lr."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import torch

from case_runners.cases.llama.prepare import prepare_text
from case_runners.cases.llama.shapes import FAMILIES, STACK_FAMILIES
from case_runners.cli.main import main as cli
from case_runners.core.paths import project_root
from case_runners.host.requirements import pins_answer
from case_runners.launch.container.image import image_spec, write_context
from case_runners.plan.config.selection import parse_selections
from case_runners.plan.config.stacks import STACKS
from case_runners.plan.layering import resolve, vendor_config_path
from case_runners.plan.run_plan import make_plan
from case_runners.rank.driver.events import EventLogger
from case_runners.tasks.training.adapter import AdapterContext, AdapterError, TrainerAdapter
from case_runners.tasks.training.stacks import deepspeed as ds_stack
from case_runners.vendors.description import load_vendor
from case_runners.views.catalogue.build import build_catalogue
from process_helpers import RUN_S

REPO = project_root()
STACK_PIN = "case_runners/tasks/training/stacks/deepspeed-requirements.txt"
TITAN_PINS = "case_runners/tasks/training/stacks/torchtitan-requirements.txt"


def resolved(key_or_item: str | dict, root: Path = REPO) -> tuple[object, list[str]]:
    """(the resolved config or None, its errors as text) of one selection on the cpu vendor."""
    selections, errors = parse_selections([key_or_item])
    assert not errors
    config, problems = resolve(selections[0], load_vendor("cpu", root), root)
    return config, [str(p) for p in problems]


# -- selection -------------------------------------------------------------------------------------------------------


def test_the_framework_field_picks_a_stack_the_case_lists():
    config, errors = resolved("llama:deepspeed:CPU:1:2:1")
    assert errors == [] and config.framework == "deepspeed" and config.case_id == "llama_deepspeed_CPUx1x2"
    assert config.params["zero_stage"] == 2  # vendor/cpu/cases/llama/deepspeed/config_CPUx1x2.yaml
    assert "vendor/cpu/cases/llama/deepspeed/config_CPUx1x2.yaml" in config.sources
    pytorch, errors = resolved("llama:pytorch_2.13:CPU:1:2:1")  # the versioned form still resolves pytorch
    assert errors == [] and pytorch.framework == "pytorch" and pytorch.case_id == "llama_CPUx1x2"
    assert "zero_stage" not in pytorch.params, "another stack's params are not resolved"


@pytest.mark.parametrize("key, allowed", [
    ("llama:megatron:CPU:1:2:1", "(allowed: deepspeed, pytorch, pytorch_<version>, torchtitan)"),
    ("llama:deepspeed_0.19:CPU:1:2:1", "(allowed: deepspeed, pytorch, pytorch_<version>, torchtitan)"),
    ("resnet50:deepspeed:CPU:1:1:1", "(allowed: pytorch, pytorch_<version>)")])
def test_a_framework_the_case_does_not_run_on_names_the_key_the_file_and_the_allowed_ones(key: str, allowed: str):
    config, errors = resolved(key)
    assert config is None and len(errors) == 1
    assert errors[0].startswith("run vars: key 'perfplay_cases[0].framework': unknown framework")
    assert errors[0].endswith(allowed)
    lists = "is written for pytorch and the stacks case_runners/cases/llama/config.yaml lists (deepspeed, torchtitan)"
    assert (lists in errors[0]) == key.startswith("llama")


def test_the_families_each_built_in_stack_builds_are_declared_once_for_every_stack():
    assert set(STACK_FAMILIES) == {"pytorch", *STACKS}
    assert STACK_FAMILIES["deepspeed"] == STACK_FAMILIES["pytorch"] == tuple(FAMILIES)  # the same model, wrapped
    assert STACK_FAMILIES["torchtitan"] == ("llama",)


@pytest.mark.parametrize("case, family", [("mixtral_8x7b", "mixtral"), ("qwen1.5_moe", "qwen2_moe"),
                                          ("chatglm3_6b", "glm"), ("baichuan2_13b", "baichuan")])
def test_a_model_case_on_a_stack_that_cannot_build_it_is_refused_before_any_host(case: str, family: str):
    """torchtitan builds the llama family only: the plan names the framework key, the run vars and the stacks that
    build the model, and `perfplay cases` lists no such row."""
    config, errors = resolved(f"{case}:torchtitan:CPU:1:2:1")
    assert config is None
    assert errors == [f"run vars: key 'perfplay_cases[0].framework': model case '{case}' cannot run on the torchtitan "
                      f"stack: model '{case}' is of the {family} family, which the torchtitan stack does not build (it "
                      f"builds llama: case_runners/cases/llama/shapes.py STACK_FAMILIES) (allowed: deepspeed, "
                      f"pytorch, pytorch_<version>)"]
    rows = {(e.case, e.framework) for e in build_catalogue(REPO).entries if e.task == "training"}
    assert (case, "deepspeed") in rows and (case, "torchtitan") not in rows
    assert ("llama3_8b", "torchtitan") in rows and ("llama", "torchtitan") in rows


def test_a_model_a_config_sets_that_the_stack_cannot_build_names_the_file_and_the_models_it_builds(tmp_path: Path):
    _, errors = resolved({"case": "llama", "framework": "torchtitan", "nproc": 2, "overrides": {"model": "tiny_moe"}})
    assert errors == ["run overrides (perfplay_cases[0].overrides): key 'model': model 'tiny_moe' is of the mixtral "
                      "family, which the torchtitan stack does not build (it builds llama: case_runners/cases/llama/"
                      "shapes.py STACK_FAMILIES) (allowed: 1b, 7b, aquila2_34b, aquila2_70b, aquila2_7b, deepseek_7b, "
                      "llama2_70b, llama2_7b, llama3_70b, llama3_8b, tiny)"]
    root = tmp_path / "project"  # a vendor's torchtitan config that trains a mixture of experts
    shutil.copytree(REPO / "vendor" / "cpu", root / "vendor" / "cpu")
    (root / "vendor/cpu/cases/llama/torchtitan/config_CPUx1x2.yaml").write_text("model: tiny_moe\n")
    _, errors = resolved("llama:torchtitan:CPU:1:2:1", root)
    assert len(errors) == 1 and errors[0].startswith("vendor/cpu/cases/llama/torchtitan/config_CPUx1x2.yaml: key "
                                                     "'model': model 'tiny_moe' is of the mixtral family")
    for framework in ("pytorch", "deepspeed"):  # both build it (tiny_moe trains on deepspeed: stack_runs)
        config, errors = resolved({"case": "llama", "framework": framework, "nproc": 2,
                                   "overrides": {"model": "tiny_moe"}})
        assert errors == [] and config.params["model"] == "tiny_moe"


def test_a_stack_param_for_another_stack_or_out_of_range_is_refused_naming_the_key_and_the_file(tmp_path: Path):
    _, errors = resolved({"case": "llama", "nproc": 2, "overrides": {"zero_stage": 1}})
    assert errors == ["run overrides (perfplay_cases[0].overrides): key 'zero_stage': is a param of the deepspeed "
                      "stack, and this selection runs on pytorch: set it in the deepspeed stack's configs only"]
    _, errors = resolved({"case": "llama", "framework": "deepspeed", "nproc": 2,
                          "overrides": {"zero_stage": 4, "data_parallel": "fsdp"}})
    assert errors == ["run overrides (perfplay_cases[0].overrides): key 'zero_stage': 4 is out of range (allowed: "
                      "0 <= zero_stage <= 3)",
                      "run overrides (perfplay_cases[0].overrides): key 'data_parallel': the deepspeed stack "
                      "partitions the model its own way (its params, plan/config/stacks.py): leave data_parallel ddp "
                      "(allowed: ddp)"]
    root = tmp_path / "project"  # a pytorch config of the vendor's that sets zero_stage
    shutil.copytree(REPO / "vendor" / "cpu", root / "vendor" / "cpu")
    (root / "vendor/cpu/cases/llama/config_CPUx1x2.yaml").write_text("model: tiny\nzero_stage: 2\n")
    _, errors = resolved({"case": "llama", "nproc": 2}, root)
    assert errors == ["vendor/cpu/cases/llama/config_CPUx1x2.yaml: key 'zero_stage': is a param of the deepspeed "
                      "stack, and this selection runs on pytorch: set it in the deepspeed stack's configs only"]


def test_a_stacks_configs_requirements_and_image_are_its_own(tmp_path: Path):
    selections, _ = parse_selections(["llama:deepspeed:CPU:1:2", "llama:pytorch:CPU:1:2"])
    paths = [vendor_config_path(REPO, "cpu", sel) for sel in selections]
    assert [p.relative_to(REPO).as_posix() for p in paths] == [
        "vendor/cpu/cases/llama/deepspeed/config_CPUx1x2.yaml", "vendor/cpu/cases/llama/config_CPUx1x2.yaml"]
    plan = make_plan({"vendor": "cpu", "cases": ["llama:deepspeed:CPU:1:2", "llama:pytorch:CPU:1:2"],
                      "results_dir": str(tmp_path)}, check=True)
    assert plan["errors"] == []
    (deepspeed, pytorch) = plan["cases"]
    assert deepspeed["requirements"] == [STACK_PIN] and pytorch["requirements"] == []  # only its runs install it
    spec = image_spec(REPO, load_vendor("cpu"), "deepspeed")
    assert spec["ref"].startswith("perfplay-cpu-deepspeed:")
    context = io.BytesIO()
    write_context(REPO, spec, context)
    names = tarfile.open(fileobj=context).getnames()
    assert {"Dockerfile", "deepspeed_install.sh", "perfplay/requirements-case.txt",
            "perfplay/deepspeed-requirements.txt"} <= set(names)
    assert "perfplay/deepspeed-requirements.txt" not in image_spec(REPO, load_vendor("cpu"), "pytorch")["context"]


def test_cases_check_vendor_and_new_vendor_know_the_stack_folders(tmp_path: Path, capsys):
    llama = {e.framework: e for e in build_catalogue(REPO, "cpu").entries if e.case == "llama" and e.task == "training"}
    assert [hw.scales for hw in llama["deepspeed"].vendors[0].hardware] == [["1x1", "1x2"]]
    assert [hw.scales for hw in llama["pytorch"].vendors[0].hardware] == [["1x1", "1x2"]]
    root = tmp_path / "project"
    for folder in ("case_runners", "vendor"):
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "requirements-case.txt", root)
    assert cli(["new-vendor", "chip", "--device", "cpu", "--backend", "gloo", "--hardware", "C1",
                "--root", str(root)]) == 0
    cases = root / "vendor/chip/cases"
    assert "zero_stage" in (cases / "llama/deepspeed/config_C1x1x1.yaml").read_text()
    assert "zero_stage" not in (cases / "llama/config_C1x1x1.yaml").read_text()
    (cases / "resnet50/deepspeed").mkdir()  # resnet50 lists no stacks
    (cases / "resnet50/deepspeed/config_C1x1x1.yaml").write_text("batch_size: 2\n")
    capsys.readouterr()
    assert cli(["check-vendor", "chip", "--root", str(root)]) == 1
    out = capsys.readouterr().out
    assert "ok: vendor/chip/cases/llama/deepspeed/config_C1x1x1.yaml: resolves (llama_deepspeed_C1x1x1" in out
    assert "error: vendor/chip/cases/resnet50/deepspeed: case 'resnet50' does not run on the deepspeed stack" in out


@pytest.mark.parametrize("accumulation, micro", [(1, 8), (4, 2)])
def test_the_deepspeed_config_is_built_from_the_runs_params(tmp_path: Path, accumulation: int, micro: int):
    """The global batch stays batch_size x ranks; grad_accumulation is DeepSpeed's, the boundary the trainer's."""
    ctx = AdapterContext(device=torch.device("cpu"), rank=0, local_rank=0, world_size=4,
                         params={"batch_size": 8, "grad_accumulation": accumulation, "zero_stage": 3},
                         precision="bf16", amp=True, amp_dtype=torch.bfloat16, max_grad_norm=0.5,
                         case=None,  # type: ignore[arg-type]
                         log=EventLogger(tmp_path, 0, 10, stream=None))
    config = ds_stack._ds_config(ctx)
    assert {key: config[key] for key in ("train_batch_size", "train_micro_batch_size_per_gpu",
                                         "gradient_accumulation_steps", "managed_gradient_accumulation",
                                         "gradient_clipping", "zero_optimization", "zero_allow_untested_optimizer",
                                         "bf16", "fp16")} == {
        "train_batch_size": 32, "train_micro_batch_size_per_gpu": micro, "gradient_accumulation_steps": accumulation,
        "managed_gradient_accumulation": False, "gradient_clipping": 0.5, "zero_optimization": {"stage": 3},
        "zero_allow_untested_optimizer": True, "bf16": {"enabled": True}, "fp16": {"enabled": False}}


def test_one_rank_trains_through_the_engine_in_a_group_of_its_own(tmp_path: Path, monkeypatch):
    """perfplay runs one rank without a process group: the stack makes a one-rank group (and sets the LOCAL_RANK
    DeepSpeed asserts), and the engine's backward and step train the model."""
    import torch.distributed as dist

    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "extensions"))
    monkeypatch.setenv("LOCAL_RANK", "0")  # restored (to absent) after the test
    monkeypatch.delenv("LOCAL_RANK")
    assert not dist.is_initialized()
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    before = model.weight.detach().clone()
    ctx = AdapterContext(device=torch.device("cpu"), rank=0, local_rank=0, world_size=1,
                         params={"batch_size": 3, "zero_stage": 2}, precision="fp32", amp=False, amp_dtype=None,
                         max_grad_norm=1.0, case=None,  # type: ignore[arg-type]
                         log=EventLogger(tmp_path, 0, 10, stream=None))
    try:
        optimizer, scheduler = ds_stack.create_optimizer(
            model, ctx, lambda: (torch.optim.AdamW(model.parameters(), lr=0.1), None))
        engine = ds_stack.model_to_ddp(model, ctx)
        assert dist.get_world_size() == 1 and engine.module is model and scheduler is None
        assert type(optimizer).__name__ == "DeepSpeedZeroOptimizer"
        ds_stack.backward(1, engine(torch.ones(3, 4)).square().mean(), optimizer, None, ctx)
        ds_stack.update_model_params(1, optimizer, None, None, ctx)
        assert not torch.equal(model.weight.detach(), before)
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
        ds_stack._ENGINES.clear()
    assert not (tmp_path / "extensions").exists(), "no C++ op was built"


def test_deepspeed_accumulates_the_trainers_micro_batches_at_zero_1_and_3(tmp_path: Path, monkeypatch):
    """The stack's points as the trainer calls them (a backward per micro batch, its loss weighted by its share, one
    update): two steps of 2 micro batches move the weights as two steps of the whole batch, at ZeRO-1 and ZeRO-3
    (the two-rank runs below train ZeRO-2). Measured: 3e-8 apart."""
    import deepspeed
    import torch.distributed as dist
    from deepspeed.utils import groups

    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "extensions"))
    monkeypatch.setenv("LOCAL_RANK", "0")
    weights = {}
    groups._WORLD_GROUP = None  # DeepSpeed's copy of an earlier test's process group, destroyed since
    try:
        for stage, accumulation in ((1, 1), (1, 2), (3, 1), (3, 2)):
            torch.manual_seed(0)
            model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Linear(8, 2))
            ctx = AdapterContext(device=torch.device("cpu"), rank=0, local_rank=0, world_size=1,
                                 params={"batch_size": 4, "grad_accumulation": accumulation, "zero_stage": stage},
                                 precision="fp32", amp=False, amp_dtype=None, max_grad_norm=1.0,
                                 case=None,  # type: ignore[arg-type]
                                 log=EventLogger(tmp_path, 0, 10, stream=None))
            optimizer, _ = ds_stack.create_optimizer(
                model, ctx, lambda: (torch.optim.SGD(model.parameters(), lr=0.5), None))  # noqa: B023
            engine = ds_stack.model_to_ddp(model, ctx)
            batch = torch.randn(4, 4, generator=torch.Generator().manual_seed(1))
            for step in (1, 2):
                for part in batch.split(4 // accumulation):
                    ds_stack.backward(step, engine(part).square().mean() * (len(part) / 4), optimizer, None, ctx)
                ds_stack.update_model_params(step, optimizer, None, None, ctx)
            with deepspeed.zero.GatheredParameters(list(model.parameters()), enabled=stage == 3):
                weights[stage, accumulation] = [p.detach().clone() for p in model.parameters()]
            ds_stack._ENGINES.clear()
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
        ds_stack._ENGINES.clear()
        groups._WORLD_GROUP = None
    torch.manual_seed(0)
    untrained = list(torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Linear(8, 2)).parameters())
    for stage in (1, 3):
        for whole, split, before in zip(weights[stage, 1], weights[stage, 2], untrained, strict=True):
            assert not torch.equal(whole, before)
            assert torch.allclose(whole, split, rtol=0, atol=1e-6)


def test_a_checkpoint_on_deepspeed_is_refused_before_any_host():
    _, errors = resolved({"case": "llama", "framework": "deepspeed", "nproc": 2,
                          "overrides": {"save_checkpoint": True}})
    assert errors == ["run overrides (perfplay_cases[0].overrides): key 'save_checkpoint': the deepspeed stack cannot "
                      "run it: the trainer saves the module's state_dict, which ZeRO-3 partitions into empty shards; "
                      "DeepSpeed's own checkpoint is not written yet (allowed: False)"]


def test_a_vendors_create_optimizer_over_a_stack_tunes_the_stacks_pair():
    """The vendor's standard() is the stack's create_optimizer over the case's pair: on deepspeed, the engine is
    still made (and a failure beneath names the stack's file)."""
    def stack_point(model, ctx, standard):
        return "engine(" + standard()[0] + ")", None

    def vendor_point(model, ctx, standard):
        return standard()[0] + " tuned", None

    stack = TrainerAdapter(None, {}, stack="s", stack_points={"create_optimizer": stack_point},
                           stack_shown="case_runners/tasks/training/stacks/s.py")
    vendor = TrainerAdapter("extern/trainer_adapter.py", {"create_optimizer": vendor_point}).under(stack)
    assert vendor.call("create_optimizer", "model", "ctx", lambda: ("AdamW", None)) == ("engine(AdamW) tuned", None)
    with pytest.raises(AdapterError, match=r"stacks/s.py: create_optimizer\(\) raised ZeroDivisionError"):
        vendor.call("create_optimizer", "model", "ctx", lambda: (str(1 / 0), None))


# -- real runs: pytorch and deepspeed, two ranks each ----------------------------------------------------------------

SHAPE = ["--set", "seq_len=32", "--set", "global_batch=6", "--set", "max_steps=6", "--set", "log_freq=1",
         "--set", "eval_every_steps=0", "--set", "eval_samples=8", "--set", "warmup_steps=1"]


@pytest.fixture(scope="session")
def stack_runs(tmp_path_factory) -> dict[str, Path]:
    """The llama tiny shape on 2 CPU ranks, 6 steps, the same seed and data (prepare-text's bytes of a small text
    tree), a global batch of 6 (global_batch: 3 sequences a rank): on pytorch, on deepspeed (ZeRO 2: the cpu vendor's
    config) and on torchtitan in one run, each rank's 3 in micro batches of 1 (grad_accumulation 3: the stacks
    accumulate alike, a run of its own would cost 30-70 s; test_trainer_fsdp.py holds the trainer's accumulation to
    the whole batch's), on deepspeed with a 10x lr and whole batches, and on torchtitan at tensor_parallel 2 (one
    data-parallel rank: the batch of 6 in micro batches of 2);
    their case directories, and the fresh torch extensions folder the deepspeed runs had."""
    root = tmp_path_factory.mktemp("stack_runs")
    src = root / "text"
    src.mkdir()
    for i in range(8):
        (src / f"doc{i}.py").write_text("".join(f"def f{i}_{k}(x):\n    return x * {k} + {i}\n" for k in range(40)))
    data = root / "data"
    prepare_text(src, data, "bytes", held_out=0.25, log=lambda line: None)
    extensions = root / "torch_extensions"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TORCH_EXTENSIONS_DIR": str(extensions)}
    found = {}
    runs = (("both", ["llama:pytorch:CPU:1:2:1", "llama:deepspeed:CPU:1:2:1", "llama:torchtitan:CPU:1:2:1"],
             ["--set", "grad_accumulation=3"]),
            ("wrong_lr", ["llama:deepspeed:CPU:1:2:1"], ["--set", "lr=0.03"]),
            ("tensor_parallel", ["llama:torchtitan:CPU:1:2:1"], ["--set", "tensor_parallel=2",
                                                                 "--set", "grad_accumulation=3"]))
    for name, keys, extra in runs:
        results = root / name
        done = subprocess.run([sys.executable, "-m", "case_runners", "run", *keys, "--dataset-path", str(data),
                               "--results-dir", str(results), "--no-monitors", *SHAPE, *extra], cwd=REPO, env=env,
                              capture_output=True, text=True, check=False, timeout=RUN_S)
        assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]  # 1: short of the target
        (found[name],) = results.glob("run*")
    return {"pytorch": found["both"] / "llama_CPUx1x2", "deepspeed": found["both"] / "llama_deepspeed_CPUx1x2",
            "torchtitan": found["both"] / "llama_torchtitan_CPUx1x2",
            "wrong_lr": found["wrong_lr"] / "llama_deepspeed_CPUx1x2", "extensions": extensions,
            "tensor_parallel": found["tensor_parallel"] / "llama_torchtitan_CPUx1x2"}


def test_both_stacks_record_tokens_per_second_mfu_and_loss(stack_runs: dict[str, Path]):
    for name in ("pytorch", "deepspeed", "torchtitan"):
        record = json.loads((stack_runs[name] / "round1" / "round_record.json").read_text())
        assert record["framework"] == name and record["status"] in ("success", "not_converged")
        assert record["throughput"]["unit"] == "tokens/s" and record["throughput"]["total"] > 0
        assert record["mfu"]["flops_per_sample"] > 0 and record["mfu"]["basis"] == "p_core"
        assert record["metrics"]["samples"] == 6 * 6 * 32  # tokens: steps x the global batch x seq_len
        rank0 = json.loads(next((stack_runs[name] / "round1").glob("*_noderank0/rank0.result.json")).read_text())
        assert 0 < rank0["final_metric"] < 5.6  # the held-out loss, below a uniform guess over 257 bytes
        if name == "deepspeed":
            assert rank0["optimizer"] == "DeepSpeedZeroOptimizer" and rank0["standard_optimizer"] == "AdamW"
            assert rank0["adapted"] == ["backward", "create_optimizer", "model_to_ddp", "update_model_params"]
            assert rank0["versions"]["deepspeed"] == "0.19.8"
        if name == "torchtitan":  # its FSDP2 over the two ranks, the case's AdamW
            assert rank0["optimizer"] == "AdamW" and rank0["versions"]["torchtitan"] == "0.3.0"
            assert rank0["adapted"] == ["backward", "convert_model", "create_optimizer", "model_to_ddp"]


def test_compare_aligns_the_stacks_loss_curves_and_catches_a_wrong_lr(stack_runs: dict[str, Path], capsys):
    assert cli(["compare", str(stack_runs["pytorch"]), str(stack_runs["deepspeed"])]) == 0
    out = capsys.readouterr().out
    assert "6 aligned steps (1..6)" in out and "PASS" in out
    assert cli(["compare", str(stack_runs["pytorch"]), str(stack_runs["torchtitan"])]) == 0
    out = capsys.readouterr().out
    assert "6 aligned steps (1..6)" in out and "PASS" in out
    assert cli(["compare", str(stack_runs["pytorch"]), str(stack_runs["wrong_lr"])]) == 2  # refused: lr differs
    refused = capsys.readouterr().err  # grad_accumulation (3 against 1) is how the batch is fed: not a difference
    assert "lr: reference 0.003, candidate 0.03" in refused and "grad_accumulation" not in refused
    assert cli(["compare", str(stack_runs["pytorch"]), str(stack_runs["wrong_lr"]), "--allow-diff", "lr"]) == 1
    assert "FAIL" in capsys.readouterr().out


def test_torchtitans_tensor_parallelism_trains_the_data_parallel_runs_batches_and_counts_them_once(
        stack_runs: dict[str, Path], capsys):
    """Two ranks at tensor_parallel 2 are one data-parallel rank: it trains the global batch of 6 that the two
    data-parallel ranks of the pytorch run split (the plan set batch_size 6), the same sequences each step, so that
    `compare` aligns the two loss curves; the record counts the batch's tokens once, each rank its half."""
    run = stack_runs["tensor_parallel"]
    config = json.loads((run / "resolved_config.json").read_text())
    assert (config["params"]["tensor_parallel"], config["params"]["batch_size"]) == (2, 6)
    assert cli(["compare", str(stack_runs["pytorch"]), str(run)]) == 0  # parallelism is not the workload
    out = capsys.readouterr().out
    assert "6 aligned steps (1..6)" in out and "PASS" in out
    record = json.loads((run / "round1" / "round_record.json").read_text())
    assert record["metrics"]["samples"] == 6 * 6 * 32
    ranks = [json.loads(path.read_text()) for path in sorted((run / "round1").glob("*_noderank0/rank*.result.json"))]
    assert [rank["rank_samples"] for rank in ranks] == [6 * 6 * 32 // 2] * 2


def test_the_stacks_accumulate_the_micro_batches_they_are_given(stack_runs: dict[str, Path]):
    """The aligned runs trained the global batch of 6 on 2 ranks as 3 micro batches of 1 a rank (compare, above,
    aligned them): the plan set batch_size to the rank's share, and the records count the global batch's tokens.
    A global batch the ranks do not divide (7 on 2) cannot run on data parallelism alone (each rank trains whole
    sequences): the plan refuses it (tests/unit/test_global_batch.py)."""
    for name in ("pytorch", "deepspeed", "torchtitan"):
        config = json.loads((stack_runs[name] / "resolved_config.json").read_text())
        assert (config["params"]["global_batch"], config["params"]["grad_accumulation"],
                config["params"]["batch_size"]) == (6, 3, 3)
        record = json.loads((stack_runs[name] / "round1" / "round_record.json").read_text())
        assert record["metrics"]["samples"] == 6 * 6 * 32


def test_a_cpu_deepspeed_run_builds_no_cpp_op(stack_runs: dict[str, Path]):
    """deepspeed.initialize would JIT-compile deepspeed_shm_comm (2-3 minutes) into TORCH_EXTENSIONS_DIR."""
    built = list(stack_runs["extensions"].rglob("*")) if stack_runs["extensions"].exists() else []
    assert not [p for p in built if "deepspeed_shm_comm" in p.name], built


def test_the_torchtitan_pins_go_in_without_their_declared_dependencies(tmp_path: Path):
    """torchtitan declares its trainer's dependencies (datasets, wandb, ...), which would move perfplay's pinned tree:
    its pins list what the stack imports, and the plan marks the file for pip's --no-deps (host_needs no_deps, which
    the playbook's install reads); the host check's advice says so too."""
    plan = make_plan({"vendor": "cpu", "cases": ["llama:torchtitan:CPU:1:2", "llama:deepspeed:CPU:1:2"],
                      "hosts": ["localhost"], "results_dir": str(tmp_path / "results")})
    assert plan["ok"], plan["errors"]
    need = plan["host_needs"]["localhost"]
    assert need["requirements"] == [TITAN_PINS, STACK_PIN] and need["no_deps"] == [TITAN_PINS]
    project = tmp_path / "project"
    (project / TITAN_PINS).parent.mkdir(parents=True)
    (project / TITAN_PINS).write_text("torchtitan==0.0.1\n")  # a version no venv has
    (advice,) = pins_answer([TITAN_PINS], project)["problems"]
    assert f"-m pip install --no-deps -r {project / TITAN_PINS}" in advice
