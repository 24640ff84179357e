"""The llama training case: its shapes' parameters against the models built on the meta device and the published
figures, its FLOPs against the models' own matmuls (dense and mixture of experts), the plan's errors (through
make_plan, as a user meets them), the data check naming the file, a short real run's record of the dense and the
MoE tiny shapes (tokens/s, MFU's convention), and the case's trainer hooks (FSDP units, activation checkpointing,
the checkpoint round trip)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from case_runners.cases import llama as llama_hooks
from case_runners.cases.llama import shapes
from case_runners.cases.llama.case import TARGET_METRIC, build_case, case_target
from case_runners.cases.llama.data import SPLITS
from case_runners.cases.llama.dataset import unigram_entropy
from case_runners.cases.llama.model import build_model, load_checkpoint, model_config
from case_runners.cases.llama.prepare import BYTES_EOT, prepare_text
from case_runners.host.data_check import check_data
from case_runners.plan.run_plan import make_plan
from case_runners.rank.driver.events import EventLogger
from case_runners.records.resolved import ResolvedConfig
from case_runners.tasks.training.case_api import RunContext
from megatron_indexed import documents, write_indexed
from process_helpers import REAPED_S, RUN_S

REPO = Path(__file__).resolve().parents[2]
SMALL = {"model": "tiny", "vocab_size": 0, "seq_len": 32, "batch_size": 4, "eval_batch_size": 8, "eval_samples": 6,
         "synthetic_samples": 16, "seed": 5, "synthetic": True, "num_workers": 0, "lr": 1e-3, "lr_min": 0.0,
         "weight_decay": 0.1, "adam_beta1": 0.9, "adam_beta2": 0.95, "adam_eps": 1e-8, "max_grad_norm": 1.0,
         "warmup_steps": 2, "max_steps": 4}


def plan(overrides: dict | None = None, data_dir: str | None = None, nproc: int = 1) -> dict:
    case = {"case": "llama", "nproc": nproc, "overrides": overrides or {}, **({"data_dir": data_dir} if data_dir
                                                                           else {})}
    return make_plan({"vendor": "cpu", "cases": [case]}, check=True)


def resolved(overrides: dict | None = None, data_dir: str | None = None) -> ResolvedConfig:
    result = plan(overrides, data_dir)
    assert result["ok"], result["errors"]
    return ResolvedConfig.from_json(result["cases"][0], "plan")


def meta_model(params: dict):
    with torch.device("meta"):  # no memory: a 70B model's parameters are counted, never allocated
        return build_model(params)


# The published parameter counts (billions, to the digits published): total and active per token. Sources: the
# models' cards and papers (README.md's shape table); aquila2's and deepseek's are the nominal 7B/34B/70B only,
# checked below.
PUBLISHED = {"1b": ("1.24", "1.24"), "llama2_7b": ("6.74", "6.74"), "llama3_8b": ("8.03", "8.03"),
             "llama2_70b": ("68.98", "68.98"), "llama3_70b": ("70.55", "70.55"), "mixtral_8x7b": ("46.7", "12.9"),
             "qwen1.5_moe": ("14.3", "2.7"), "chatglm3_6b": ("6.24", "6.24"), "baichuan2_13b": ("13.9", "13.9")}
NOMINAL = {"aquila2_7b": 7, "aquila2_34b": 34, "aquila2_70b": 70, "deepseek_7b": 7}


@pytest.mark.parametrize("name", list(shapes.SHAPES))
def test_each_shape_builds_its_familys_model_with_the_published_parameter_count(name):
    shape = shapes.SHAPES[name]
    model = meta_model({"model": name, "vocab_size": 0})
    assert type(model).__name__ == shapes.FAMILIES[shape.family].builder
    assert shapes.parameters(shape) == sum(p.numel() for p in model.parameters())
    total, active = shapes.parameters(shape) / 1e9, shapes.parameters(shape, active=True) / 1e9
    if name in PUBLISHED:
        digits = len(PUBLISHED[name][0].split(".")[1])
        assert (f"{total:.{digits}f}", f"{active:.{digits}f}") == PUBLISHED[name]
    elif name in NOMINAL:
        assert abs(total - NOMINAL[name]) / NOMINAL[name] < 0.05
    else:
        assert shape.vocab == 4096 and total < 0.01  # the CPU shapes
    assert (active < total) == bool(shape.experts)


def test_the_model_param_takes_every_shape_and_the_old_7b_name():
    """config.yaml's choices are the shapes and their aliases; generate's, those that decode with a KV cache."""
    from case_runners.cases import case_dir
    from case_runners.plan.config.yaml_io import load_mapping

    def choices(path: Path) -> list:
        return load_mapping(path, path.parent)["params"]["model"]["choices"]

    assert choices(case_dir("llama") / "config.yaml") == list(shapes.MODEL_CHOICES)
    assert choices(case_dir("llama") / "generate" / "config.yaml") == [
        name for name in shapes.MODEL_CHOICES if shapes.FAMILIES[shapes.shape_of({"model": name}).family].kv_cache]
    assert shapes.shape_of({"model": "7b"}) is shapes.SHAPES["llama2_7b"]
    assert resolved({"model": "7b", "seq_len": 64}).flops_per_sample == \
        shapes.flops_per_token(shapes.SHAPES["llama2_7b"], 64)


def readme_shape_rows() -> dict[str, list[str]]:
    """The cells of the README's shape table, by model."""
    rows = {}
    for line in (REPO / "case_runners/cases/llama/README.md").read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 14 and cells[0].strip("`") in shapes.SHAPES:
            rows[cells[0].strip("`")] = cells
    return rows


def test_the_readmes_shape_table_is_the_shapes_own_count():
    """The class, N, parameters, active parameters and FLOPs per token at T of every shape, as shapes.py computes."""
    def count(n: float) -> str:
        return f"{n / 1e9:.3f}B" if n >= 1e9 else f"{n / 1e6:.2f}M"

    rows = readme_shape_rows()
    assert list(rows) == list(shapes.SHAPES)
    for name, cells in rows.items():
        shape, seq_len = shapes.SHAPES[name], int(cells[12].split("(T ")[1].rstrip(")"))
        flops = shapes.flops_per_token(shape, seq_len)
        assert cells[1] == shapes.FAMILIES[shape.family].builder, name
        assert cells[9:12] == [count(shapes.matmul_weights(shape)), count(shapes.parameters(shape)),
                               count(shapes.parameters(shape, active=True))], name
        assert cells[12] == (f"{flops / 1e9:.3g}G" if flops >= 1e9 else f"{flops / 1e6:.3g}M") + f" (T {seq_len})"


def test_tiny_moe_flops_per_token_by_hand():
    """N counts the router and the 2 experts a token goes through, not the other 2: tiny_moe is 4 layers of 256,
    8 heads of 32, 4 KV heads, 4 experts of FFN 352, top-2, and a 4096-id head."""
    shape = shapes.SHAPES["tiny_moe"]
    attention = 256 * 256 + 2 * 256 * (4 * 32) + 256 * 256  # q, k, v, o
    router, experts = 256 * 4, 2 * 3 * 256 * 352  # gate; two experts' gate, up and down
    n = 4 * (attention + router + experts) + 4096 * 256
    assert shapes.matmul_weights(shape) == n == 4_001_792
    assert shapes.flops_per_token(shape, 256) == 6 * n + 12 * 4 * 8 * 32 * 256 == 27_156_480
    assert shapes.parameters(shape) - shapes.parameters(shape, active=True) == 4 * 2 * 3 * 256 * 352


SMALL_FAMILIES = {  # each family's architecture at a CPU's size, to count what its model multiplies
    "tiny_qwen2_moe": dataclasses.replace(shapes.SHAPES["qwen1.5_moe"], hidden=64, layers=2, heads=4, kv_heads=4,
                                          vocab=512, experts=6, expert_intermediate=48, shared_intermediate=96),
    "tiny_glm": dataclasses.replace(shapes.SHAPES["chatglm3_6b"], hidden=64, intermediate=160, layers=2, heads=4,
                                    kv_heads=2, vocab=512),
    "tiny_baichuan": dataclasses.replace(shapes.SHAPES["baichuan2_13b"], hidden=80, intermediate=160, layers=2,
                                         heads=5, kv_heads=5, vocab=512),
}


@pytest.mark.parametrize("name", ["tiny", "tiny_moe", *SMALL_FAMILIES])
def test_n_is_what_the_models_forward_multiplies(name, monkeypatch):
    """A forward's matmul FLOPs (torch's FlopCounterMode, which counts no attention on the CPU; the experts in
    transformers' eager loop, which it sees, not its default grouped matmul, which it does not) are 2 x tokens x N:
    the experts a token skips are not counted, the router and shared expert are."""
    import transformers
    from torch.utils.flop_counter import FlopCounterMode

    for key, shape in SMALL_FAMILIES.items():
        monkeypatch.setitem(shapes.SHAPES, key, shape)
    params = {"model": name, "vocab_size": 0}
    shape = shapes.shape_of(params)
    torch.manual_seed(0)
    if shape.family == "baichuan":
        model = build_model(params)
    else:
        config = model_config(params)
        config._experts_implementation = "eager"
        model = getattr(transformers, shapes.FAMILIES[shape.family].builder)(config)
    ids = torch.randint(0, shape.vocab, (2, 24))
    with FlopCounterMode(display=False) as counter:
        logits = model(input_ids=ids).logits
    assert logits.shape == (2, 24, shape.vocab)
    counts = dict(counter.get_flop_counts()["Global"])  # addmm: the linears with a bias (qwen2_moe's, glm's q, k, v)
    # bmm: the attention of sdpa's math kernel (baichuan's ALiBi mask), the forward third of the attention term
    attention = counts.pop(torch.ops.aten.bmm, 0)
    assert attention in (0, 4 * shape.layers * shape.hidden * 2 * 24 * 24)
    assert set(counts) <= {torch.ops.aten.mm, torch.ops.aten.addmm}
    assert sum(counts.values()) == 2 * 48 * shapes.matmul_weights(shape)


@pytest.mark.parametrize("name", ["tiny", "1b"])
def test_flops_count_the_models_own_weights(name):
    """N (the matmul weights) is every nn.Linear's weight of LlamaForCausalLM, the parameter count its own; the
    attention term is 12·L·D·T."""
    params = {"model": name, "vocab_size": 0}
    shape, model = shapes.shape_of(params), meta_model(params)
    linear = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    assert shapes.matmul_weights(shape) == linear
    assert shapes.parameters(shape) == sum(p.numel() for p in model.parameters())
    if name == "1b":
        assert shapes.parameters(shape) == 1_235_814_400  # Llama 3.2 1B
    seq_len = 2048
    attention = shapes.flops_per_token(shape, seq_len) - 6 * linear
    assert attention == 12 * shape.layers * shape.hidden * seq_len
    assert llama_hooks.flops_per_sample({**params, "seq_len": seq_len}) == shapes.flops_per_token(shape, seq_len)


def test_the_plan_uses_the_cases_flops_and_states_the_convention():
    config = resolved({"seq_len": 128})
    assert config.flops_per_sample == shapes.flops_per_token(shapes.SHAPES["tiny"], 128)
    assert config.flops_convention == shapes.CONVENTION and config.flops_convention.startswith("PaLM")
    assert config.sample == "token" and config.throughput_unit == "tokens/s"
    assert config.target.metric == TARGET_METRIC and config.target.value == case_target()


def test_plan_errors_name_the_key_and_the_file():
    long = plan({"seq_len": 2048})
    assert not long["ok"]
    text = " ".join(long["errors"])
    assert "run overrides" in text and "key 'seq_len' is 2048" in text and "model 'tiny'" in text
    assert "allowed: 1..1024" in text
    unknown = plan({"model": "13b"})
    assert not unknown["ok"]
    text = " ".join(unknown["errors"])
    assert "key 'model'" in text and "13b" in text and all(name in text for name in ("tiny", "1b", "7b"))


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    """prepare-text's bytes token files of a small generated text tree (vocab 257)."""
    src = tmp_path_factory.mktemp("text")
    for i in range(8):
        (src / f"doc{i}.py").write_text("".join(f"def f{i}_{k}(x):\n    return x * {k} + {i}\n" for k in range(40)))
    out = tmp_path_factory.mktemp("tokens") / "data"
    prepare_text(src, out, "bytes", held_out=0.25, log=lambda line: None)
    return out


def test_the_data_check_names_the_file(data_dir: Path, tmp_path: Path):
    config = resolved({"seq_len": 64}, str(data_dir))
    assert check_data(config) == []  # 257 ids under the tiny shape's 4096
    small = resolved({"seq_len": 64, "vocab_size": 200}, str(data_dir))
    problems = check_data(small)
    assert problems and all("vocab_size 257 is larger than the model's vocab_size 200" in p for p in problems)
    assert f"{data_dir / 'train.json'}" in problems[0]
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in ("train.bin", "train.json", "val.bin", "val.json"):
        (broken / name).write_bytes((data_dir / name).read_bytes())
    (broken / "val.bin").write_bytes((data_dir / "val.bin").read_bytes()[:-2])
    problems = check_data(resolved({"seq_len": 64}, str(broken)))
    assert len(problems) == 1 and problems[0].startswith(f"{broken / 'val.bin'}: ")
    assert "but its header val.json says" in problems[0]


@pytest.fixture(scope="module")
def megatron_dir(data_dir: Path, tmp_path_factory) -> tuple[Path, list[str]]:
    """data_dir's documents as one Megatron indexed dataset (uint16, a document a sequence), and the --set of the
    data_split that holds out the same documents as val.bin."""
    train, val = (documents(np.fromfile(data_dir / f"{split}.bin", dtype="<u2"), BYTES_EOT) for split in SPLITS)
    out = tmp_path_factory.mktemp("megatron")
    write_indexed(out / "code_text_document", train + val)
    return out, ["--set", f"data_split=[{len(train)}, {len(val)}]"]


@pytest.mark.parametrize("model, data", [("tiny", "megatron"), ("tiny_moe", "tokens")])
def test_a_short_run_records_tokens_per_second_and_the_flops_convention(model: str, data: str, data_dir: Path,
                                                                         megatron_dir: tuple[Path, list[str]],
                                                                         tmp_path: Path):
    """`run llama` on the CPU: the dense tiny shape on a Megatron indexed dataset of data_dir's documents, the
    mixtral family's tiny_moe on data_dir's token files: tokens/s, MFU of the shape's FLOPs per token (the active
    experts' for tiny_moe) and the losses; either way the held-out part is val.bin's tokens, its unigram entropy
    theirs."""
    results = tmp_path / "results"
    path, extra = megatron_dir if data == "megatron" else (data_dir, [])
    done = subprocess.run(
        [sys.executable, "-m", "case_runners", "run", "llama", "--dataset-path", str(path), "--results-dir",
         str(results), "--no-monitors", "--set", f"model={json.dumps(model)}", "--set", "seq_len=32", "--set",
         "batch_size=4", "--set", "max_steps=3", "--set", "eval_every_steps=0", "--set", "eval_samples=4", "--set",
         "warmup_steps=1", *extra],
        cwd=REPO, capture_output=True, text=True, check=False, timeout=RUN_S)
    assert done.returncode in (0, 1), done.stderr  # a run short of its target is a valid not_converged result
    record = json.loads(next(results.glob("run*/llama_CPUx1x1/round1/round_record.json")).read_text())
    metrics = record["metrics"]
    assert record["status"] == "not_converged" and metrics["metric"] == TARGET_METRIC
    assert metrics["final_metric"] < torch.log(torch.tensor(4096.0)).item()  # learned: below a uniform guess
    assert metrics["samples"] == 3 * 4 * 32  # tokens
    assert record["throughput"]["unit"] == "tokens/s" and record["throughput"]["total"] > 0
    assert record["mfu"]["convention"] == shapes.CONVENTION
    assert record["mfu"]["flops_per_sample"] == shapes.flops_per_token(shapes.SHAPES[model], 32)
    assert "training (throughput in tokens/s)" in done.stdout
    node = next(results.glob("run*/llama_CPUx1x1/round1/*_noderank0"))
    evaluated = json.loads((node / "rank0.result.json").read_text())["metrics_history"][-1]
    assert evaluated["perplexity"] > 1
    val = np.fromfile(data_dir / "val.bin", dtype="<u2")[1:4 * 32 + 1]  # the labels of the 4 evaluated sequences
    assert unigram_entropy(val) > 0 and evaluated["unigram_entropy"] == pytest.approx(unigram_entropy(val), rel=1e-12)
    log = (node / "rank0.out.log").read_text()
    assert f"nats/token (a model knowing only token frequencies); target: held-out loss <= {case_target()}" in log


def context(tmp_path: Path) -> RunContext:
    return RunContext(rank=0, local_rank=0, world_size=1, device=torch.device("cpu"), data_dir=None,
                      log=EventLogger(tmp_path, 0, 10, stream=None))


def test_the_cases_steps_on_synthetic_tokens(tmp_path: Path):
    """A sample is a token; the loss starts near ln(vocab) and the held-out entropy of uniform ids is ln(vocab)."""
    torch.manual_seed(0)
    case = build_case(dict(SMALL), context(tmp_path))
    model = case.build_model()
    train, held_out = case.build_data()
    optimizer, scheduler = case.build_optimizer(model)
    decayed, plain = optimizer.param_groups
    assert all(p.ndim >= 2 for p in decayed["params"]) and all(p.ndim < 2 for p in plain["params"])
    assert plain["weight_decay"] == 0.0 and optimizer.defaults["betas"] == (0.9, 0.95)
    loss, tokens = case.train_step(model, next(iter(train)))
    assert tokens == 4 * 32 and abs(loss.item() - torch.log(torch.tensor(4096.0)).item()) < 1.0
    with torch.no_grad():
        metrics = case.evaluate(model.eval(), held_out)
    assert metrics["unigram_entropy"] == pytest.approx(torch.log(torch.tensor(4096.0)).item())
    assert metrics["perplexity"] == pytest.approx(torch.exp(torch.tensor(metrics[TARGET_METRIC])).item(), rel=1e-6)


@pytest.mark.parametrize("model", ["tiny", "tiny_moe"])
def test_the_trainer_hooks_units_checkpointing_and_checkpoint(model: str, tmp_path: Path):
    params = {**SMALL, "model": model}
    case = build_case(dict(params), context(tmp_path))
    model = case.build_model()
    assert case.shard_units(model) == list(model.model.layers) and len(case.shard_units(model)) == 4
    case.enable_activation_checkpointing(model)
    assert model.is_activation_checkpointing
    model.train()
    ids = torch.randint(0, 4096, (2, 16))
    loss, _ = case.train_step(model, (ids, ids))
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())
    state = {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}
    case.save_checkpoint(state, tmp_path / "checkpoint")
    loaded = load_checkpoint(tmp_path / "checkpoint", params)
    assert loaded.lm_head.weight is loaded.model.embed_tokens.weight or \
        loaded.lm_head.weight.data_ptr() == loaded.model.embed_tokens.weight.data_ptr()
    fresh = loaded.state_dict()
    assert fresh.keys() == state.keys()
    assert all(torch.equal(fresh[name], state[name]) for name in state)


TINY = {"model": "tiny", "vocab_size": 0}
SLOW_SAVE = """
import sys, time
import safetensors.torch
import torch
from case_runners.cases.llama import model
from case_runners.rank import stop_request

real = safetensors.torch.save_file

def slow(tensors, path):  # the save is under way (its file written, not yet renamed) when SIGTERM comes
    real(tensors, path)
    open(sys.argv[2], "w").close()
    time.sleep(120)

safetensors.torch.save_file = slow
stop_request.install(1.0, lambda reason: None)  # as in a rank
model.save_state_dict({"model.norm.weight": torch.ones(256)}, sys.argv[1], {"model": "tiny", "vocab_size": 0})
"""


def test_an_interrupted_checkpoint_save_leaves_the_old_checkpoint_and_no_temporary(tmp_path, monkeypatch):
    import safetensors.torch

    from case_runners.cases.llama.model import build_model, save_checkpoint
    directory = tmp_path / "checkpoint"
    first = build_model(TINY)
    save_checkpoint(first, directory, TINY)
    saved = sorted(p.name for p in directory.iterdir())
    assert saved == ["model.json", "model.safetensors"]
    real = safetensors.torch.save_file

    def interrupted(tensors, path):
        real(tensors, path)
        raise KeyboardInterrupt

    monkeypatch.setattr(safetensors.torch, "save_file", interrupted)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(build_model(TINY), directory, TINY)
    assert sorted(p.name for p in directory.iterdir()) == saved, "no temporary file left"
    loaded = load_checkpoint(directory, TINY).state_dict()
    assert all(torch.equal(loaded[k], v) for k, v in first.state_dict().items()), "the old checkpoint is whole"


def test_a_checkpoint_save_stopped_by_sigterm_leaves_no_temporary(tmp_path):
    import signal
    import time
    directory, marker = tmp_path / "checkpoint", tmp_path / "saving"
    proc = subprocess.Popen([sys.executable, "-c", SLOW_SAVE, str(directory), str(marker)], cwd=REPO)
    try:
        deadline = time.monotonic() + 300  # a bound on a hang (imports on a loaded host), not on speed
        while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert marker.exists(), "the save started"
        assert list(directory.iterdir()), "its temporary file is there while it saves"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 128 + signal.SIGTERM
        assert list(directory.iterdir()) == [], "no temporary and no checkpoint cut short"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=REAPED_S)
