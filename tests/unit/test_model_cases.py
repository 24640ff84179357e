"""Model cases (case_runners/cases/llama/models/): each FlagPerf LLM a case of its own, the llama case with its model
fixed and FlagPerf's workload; their nvidia configs per stack and chip count, each within its GPU's memory by the
estimator (cases/llama/memory.py) whose arithmetic the file shows."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from case_runners.cases import case_package, code_cases, list_cases, model_cases
from case_runners.cases.llama import memory, shapes
from case_runners.core.errors import ConfigError
from case_runners.core.paths import project_root
from case_runners.plan.config.stacks import STACKS
from case_runners.plan.layering import load_case_base
from case_runners.plan.run_plan import make_plan
from case_runners.rank.worker import main as rank_main
from case_runners.records.resolved import ResolvedConfig
from case_runners.vendors.description import load_vendor

ROOT = project_root()
CPU_SHAPES = ("tiny", "tiny_moe", "1b")  # perfplay's shapes, not FlagPerf's models
NVIDIA = ROOT / "vendor" / "nvidia" / "cases"
LLM_CASES = ("llama", *model_cases())
# The model cases whose nvidia configs are the megatron stack's only: FlagPerf's global batch at 32 or 64 GPUs needs its
# tensor and pipeline parallelism (44 on 32), or a 70B does not fit the built-in stacks' FSDP/ZeRO on 8-32 GPUs.
TP_PP_ONLY = ("llama3_70b", "llama2_70b", "aquila2_70b")


def plan(key_or_item: str | dict, vendor: str = "nvidia", root: Path = ROOT) -> dict:
    """The one resolved config of a selection (its plan's errors fail the test)."""
    result = make_plan({"vendor": vendor, "cases": [key_or_item]}, check=True, root=root)
    assert result["ok"], result["errors"]
    return result["cases"][0]


def plan_errors(key_or_item: str | dict, vendor: str = "nvidia", root: Path = ROOT) -> list[str]:
    result = make_plan({"vendor": vendor, "cases": [key_or_item]}, check=True, root=root)
    assert not result["ok"]
    return [str(e) for e in result["errors"]]


def test_every_flagperf_llm_is_a_case_of_its_own_run_by_the_llama_package():
    inference_only = {"deepseek_7b"}  # FlagPerf's deepseek_7b_mmlu (the mmlu case); FlagPerf does not train it
    assert model_cases() == {name: "llama" for name in shapes.SHAPES if name not in {*CPU_SHAPES, *inference_only}}
    assert set(model_cases()) <= set(list_cases()) and not set(model_cases()) & set(code_cases())
    assert case_package("llama3_8b") == "llama" and case_package("bert") == "bert"


@pytest.mark.parametrize("key, expected", [
    ("llama3_8b:deepspeed:H100:1:8:1", {"seq_len": 8192, "lr": 1e-5, "lr_min": 1e-6, "warmup_steps": 0,
                                        "max_steps": 300, "weight_decay": 0.1}),
    ("chatglm3_6b:pytorch:H100:1:8:1", {"seq_len": 4096, "lr": 1e-5, "lr_min": 1e-5, "max_steps": 3051,
                                        "adam_eps": 1e-5, "data_parallel": "fsdp"}),
    ("mixtral_8x7b:deepspeed:H100:2:8:1", {"seq_len": 4096, "lr": 1e-5, "lr_min": 1e-6, "max_steps": 100,
                                          "global_batch": 1200, "batch_size": 75}),
    ("llama2_70b:megatron:H100:4:8:1", {"seq_len": 4096, "lr": 1.5e-4, "lr_min": 1e-5, "warmup_steps": 6,
                                        "max_steps": 554, "weight_decay": 0.01, "global_batch": 44}),
])
def test_a_flagperf_key_resolves_to_the_llama_case_with_its_model_and_flagperfs_workload(key, expected):
    model, framework, *_ = key.split(":")
    config = plan(key)
    resolved = ResolvedConfig.from_json(config)
    assert (resolved.case, resolved.case_package, resolved.framework) == (model, "llama", framework)
    assert config["params"]["model"] == model and shapes.canonical(model) in shapes.SHAPES
    assert {k: config["params"][k] for k in expected} == expected
    model_file = f"case_runners/cases/llama/models/{model}.yaml"
    assert config["sources"][:2] == ["case_runners/cases/llama/config.yaml", model_file]
    assert config["provenance"]["seq_len"] == model_file and config["provenance"]["model"] == model_file
    assert config["standard"] is True
    assert config["flops_per_sample"] == shapes.flops_per_token(shapes.SHAPES[model], expected["seq_len"])


@pytest.fixture(scope="module")
def cpu_root(tmp_path_factory) -> Path:
    """A project with the cpu vendor and a llama3_8b config of it, as a vendor writes one."""
    root = tmp_path_factory.mktemp("project")
    shutil.copytree(ROOT / "vendor" / "cpu", root / "vendor" / "cpu")
    (root / "vendor" / "cpu" / "cases" / "llama3_8b").mkdir()
    (root / "vendor" / "cpu" / "cases" / "llama3_8b" / "config_CPUx1x1.yaml").write_text("grad_accumulation: 256\n")
    return root


def test_a_vendor_may_not_change_a_model_cases_workload_a_run_override_may(cpu_root: Path):
    shown = "vendor/cpu/cases/llama3_8b/config_CPUx1x1.yaml"
    (cpu_root / shown).write_text("grad_accumulation: 256\nseq_len: 128\nmodel: tiny\n")
    try:
        errors = plan_errors("llama3_8b:pytorch:CPU:1:1:1", "cpu", cpu_root)
    finally:
        (cpu_root / shown).write_text("grad_accumulation: 256\n")
    assert len(errors) == 2 and all(e.startswith(f"{shown}: key '") and "is run-only" in e for e in errors)
    config = plan({"case": "llama3_8b", "overrides": {"model": "tiny", "seq_len": 64}}, "cpu", cpu_root)
    assert config["standard"] is False and set(config["non_standard"]) == {"model", "seq_len"}
    # the model case's global batch, 512 on one rank, in the vendor's 256 micro batches
    assert config["params"]["lr"] == 1e-5 and config["params"]["batch_size"] == 512


def test_a_bad_model_name_names_the_key_and_the_allowed_names(tmp_path: Path):
    (error,) = plan_errors("llama3_8x:deepspeed:H100:1:8:1")
    assert "key 'perfplay_cases[0].case': unknown case 'llama3_8x'" in error and "llama3_8b" in error
    base, _ = load_case_base("llama", ROOT)
    from case_runners.plan.layering import _with_model  # the model file's own checks, on a file of a name

    bad = tmp_path / "llama4_8b.yaml"
    bad.write_text("params: {seq_len: 4096}\n")
    with pytest.raises(ConfigError) as caught:
        _with_model(base, "llama4_8b", bad, tmp_path)
    assert str(caught.value).startswith("llama4_8b.yaml: key 'params.model': 'llama4_8b' is not one of")
    assert "llama3_8b" in str(caught.value) and "mixtral_8x7b" in str(caught.value)
    bad.write_text("params: {seq_len: 4096}\nglobal_batch: 512\n")
    with pytest.raises(ConfigError, match=r"llama4_8b.yaml: key 'global_batch': is not a key of a model case's file "
                                          r"\(allowed: description, params\)"):
        _with_model(dict(base), "llama4_8b", bad, tmp_path)


def test_a_model_case_trains_one_rank_on_the_llama_package(cpu_root: Path, tmp_path: Path, monkeypatch):
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    config = plan({"case": "llama3_8b", "overrides": {
        "model": "tiny", "seq_len": 32, "global_batch": 2, "grad_accumulation": 1, "synthetic": True,
        "synthetic_samples": 8, "eval_samples": 4, "max_steps": 2, "eval_every_steps": 2, "eval_max_batches": 1,
        "log_freq": 1}}, "cpu", cpu_root)
    path = tmp_path / "resolved_config.json"
    path.write_text(json.dumps(config))
    assert rank_main(str(path), str(tmp_path / "logs")) == 0
    result = json.loads((tmp_path / "logs" / "rank0.result.json").read_text())
    assert result["steps"] == 2 and result["samples"] == 2 * 2 * 32  # 2 steps of 2 sequences of 32 tokens
    assert config["case"] == "llama3_8b" and config["package"] == "llama"


# -- the nvidia configs: within memory, the arithmetic in the file (test_check_vendor.py: check-vendor nvidia) ----


def nvidia_llm_configs() -> list[Path]:
    """The configs of the built-in stacks, whose memory cases/llama/memory.py estimates (not the vendor's megatron
    stack: tensor and pipeline parallelism, its arithmetic in its files)."""
    return sorted(p for case in LLM_CASES for p in (NVIDIA / case).rglob("config_H100x*.yaml")
                  if p.parent.name in (case, *STACKS))


def test_every_nvidia_llm_config_fits_its_gpu_by_the_estimate_its_file_shows():
    memory_bytes = load_vendor("nvidia", ROOT).hardware["H100"]["memory_bytes"]
    written = {}
    for path in nvidia_llm_configs():
        match = re.fullmatch(r"config_H100x(\d+)x(\d+)", path.stem)
        assert match, path
        case = path.relative_to(NVIDIA).parts[0]
        framework = path.parent.name if path.parent.name != case else "pytorch"
        nnodes, nproc = int(match[1]), int(match[2])
        config = plan({"case": case, "framework": framework, "hardware": "H100", "nnodes": nnodes, "nproc": nproc})
        estimate = memory.of_config(config["params"], framework, nnodes * nproc)
        assert estimate.total <= memory.FITS * memory_bytes, (path, estimate.total / memory.GB)
        total = re.search(rf"^#\s+{memory.TOTAL}\s+([\d.]+) GB$", path.read_text(), re.M)
        assert total and float(total[1]) == round(estimate.total / memory.GB, 1), path
        written[f"{case}/{framework}/{nnodes}x{nproc}"] = config["params"]["batch_size"]
    # every model case on pytorch and deepspeed where it fits; 1B on each stack on one GPU; a 70B on 8 GPUs does not
    for case in model_cases():
        assert any(key.startswith(f"{case}/deepspeed/") for key in written) or case in TP_PP_ONLY, case
    assert {"llama/pytorch/1x1", "llama/deepspeed/1x1", "llama/torchtitan/1x1", "llama3_8b/deepspeed/1x8",
            "mixtral_8x7b/deepspeed/2x8", "llama2_70b/torchtitan/4x8", "aquila2_70b/torchtitan/4x8"} <= set(written)
    # FlagPerf's global batch 44 (1200) on 32 data-parallel ranks does not split: megatron's TP x PP configs only
    assert not {"llama2_70b/pytorch/1x8", "llama3_70b/pytorch/4x8", "mixtral_8x7b/torchtitan/4x8",
                "llama2_70b/pytorch/4x8", "mixtral_8x7b/deepspeed/4x8", "aquila2_7b/pytorch/2x8"} & set(written)
    # FlagPerf's global batch where the ranks divide it (README.md "Model cases"), in micro batches that fit
    assert {key: written[key] for key in ("llama3_8b/pytorch/1x8", "llama3_8b/deepspeed/4x8",
                                          "mixtral_8x7b/deepspeed/2x8", "baichuan2_13b/pytorch/2x8")} == {
        "llama3_8b/pytorch/1x8": 512 // 8, "llama3_8b/deepspeed/4x8": 512 // 32,
        "mixtral_8x7b/deepspeed/2x8": 1200 // 16, "baichuan2_13b/pytorch/2x8": 1024 // 16}
    seventy = shapes.SHAPES["llama2_70b"]
    assert memory.estimate(seventy, 4096, 1, 8, memory.FSDP, True).total > memory_bytes  # 16 B x 69B / 8: 138 GB


def test_the_estimate_counts_what_sharding_and_checkpointing_save():
    shape = shapes.SHAPES["llama3_8b"]
    ddp, fsdp = (memory.estimate(shape, 8192, 1, 8, s, True) for s in (memory.DDP, memory.FSDP))
    assert ddp.parts["states"][0] == shapes.parameters(shape) * 16 == 8 * fsdp.parts["states"][0]
    zero1 = memory.estimate(shape, 8192, 1, 8, "zero1", True).parts["states"][0]
    assert zero1 == shapes.parameters(shape) * (2 + 2 + 12 / 8)
    saved = memory.estimate(shape, 8192, 1, 8, memory.FSDP, False).parts["activations"][0]
    assert saved == 8192 * 32 * memory.layer_activation_bytes(shape) > 3 * fsdp.parts["activations"][0]
    assert fsdp.parts["logits"][0] == 8192 * 128256 * 14
    # torchtitan's tensor parallelism over 8 of 32 ranks: the states still a 32nd, each activation an 8th plus the
    # two gathered projection inputs, the logits whole (gathered for the case's loss)
    seventy = shapes.SHAPES["llama2_70b"]
    plain, tp8 = (memory.estimate(seventy, 4096, 1, 32, memory.FSDP, False, tensor_parallel=tp) for tp in (1, 8))
    assert tp8.parts["states"] == plain.parts["states"] and tp8.parts["logits"] == plain.parts["logits"]
    assert tp8.parts["activations"][0] == 4096 * 80 * (memory.layer_activation_bytes(seventy) // 8 + 4 * 8192)
    assert tp8.parts["gathered"][0] < plain.parts["gathered"][0] / 7
    with pytest.raises(ValueError, match="sharding 'zero4'"):
        memory.estimate(shape, 8192, 1, 8, "zero4", True)
    # a config's activations and logits are one micro batch's: 64 sequences in 32 micro batches hold 2 at once
    params = {"model": "llama3_8b", "seq_len": 8192, "batch_size": 64, "grad_accumulation": 32,
              "activation_checkpointing": True, "data_parallel": "fsdp"}
    assert memory.of_config(params, "pytorch", 8) == memory.estimate(shape, 8192, 2, 8, memory.FSDP, True)


def test_the_cosine_ends_at_lr_min_and_an_lr_min_above_lr_is_refused(cpu_root: Path):
    import torch

    from case_runners.tasks.training.case_api import warmup_schedule

    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1e-5)
    schedule = warmup_schedule(opt, 0, 4, min_factor=0.1)  # llama3_8b's 1e-5 -> 1e-6 over 4 steps
    lrs = []
    for _ in range(5):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        schedule.step()
    assert lrs[0] == pytest.approx(1e-5) and lrs[2] == pytest.approx(5.5e-6) and lrs[4] == pytest.approx(1e-6)
    (error,) = plan_errors({"case": "llama3_8b", "overrides": {"lr_min": 1e-3}}, "cpu", cpu_root)
    assert error == ("run overrides (perfplay_cases[0].overrides): key 'lr_min' is 0.001, above lr (1e-05): the "
                     "cosine decays to it; allowed: 0..1e-05")
