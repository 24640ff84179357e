"""The generate task on the llama case: the hand decoding loop against transformers' generate, the plan's refusals,
the pooling of the ranks' figures, the preflight of a checkpoint, and real CPU runs from the command line (random
weights; a checkpoint directory with prompts from val.bin) to the record and the summary table."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from case_runners.cases.llama.data import FORMAT_NAME
from case_runners.cases.llama.generate.model import prompts
from case_runners.cases.llama.model import build_model, load_checkpoint, save_checkpoint
from case_runners.cases.llama.shapes import FAMILIES, MODEL_CHOICES, shape_of
from case_runners.core.paths import project_root
from case_runners.host.data_check import data_problems
from case_runners.host.requirements import read_pins
from case_runners.plan.generate import trained_checkpoints
from case_runners.plan.run_plan import make_plan
from case_runners.records.generate import Combination, GenerateMeasurement, Latency, combine, headline, percentile
from case_runners.records.resolved import ResolvedConfig
from case_runners.records.round import GenerateRoundRecord, RoundRecord
from case_runners.records.schema import ABSENT
from case_runners.records.summary import RunSummary
from case_runners.tasks.generate.decode import Decoder, digest, generate
from case_runners.tasks.generate.task import measure
from case_runners.tasks.generate.vllm_engine import agreement, figures, llm_args, sampling_args, token_prompts

ROOT = project_root()
TINY = {"model": "tiny", "vocab_size": 0, "seed": 7}
QUICK = ["--set", "batch_sizes=[1, 2]", "--set", "prompt_lens=[8]", "--set", "output_lens=[5]", "--set",
         "iterations=2", "--set", "warmup=1"]


def plan(*cases: dict, vendor: str = "cpu") -> dict:
    return make_plan({"task": "generate", "vendor": vendor, "cases": list(cases)}, check=True)


@pytest.mark.parametrize("model", ["tiny", "tiny_moe"])
def test_the_hand_loop_gives_what_transformers_generate_gives(model):
    from transformers import GenerationConfig

    torch.manual_seed(0)
    params = {**TINY, "model": model}
    model = build_model(params).eval()
    ids = prompts(params, None, 3, 11)
    found = generate(model, ids, 7, lambda: None)
    assert found.tokens.shape == (3, 7) and len(found.tpot_s) == 6 and found.ttft_s > 0
    expected = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), generation_config=GenerationConfig(
        do_sample=False, max_new_tokens=7, eos_token_id=None, pad_token_id=0, use_cache=True))
    assert torch.equal(expected[:, 11:], found.tokens)


def test_static_and_compiled_decoding_give_the_eager_tokens_and_compile_apart():
    """The faster torch paths decode the same greedy tokens as the eager loop; compiled decoding's first generation
    of a combination (the compilation) is its compile_s, outside the timed samples."""
    torch.manual_seed(0)
    model = build_model(TINY).eval()
    ids = prompts(TINY, None, 2, 9)
    eager = generate(model, ids, 5, lambda: None).tokens
    static = Decoder(model, "static")
    assert torch.equal(generate(model, ids, 5, lambda: None, static).tokens, eager)
    assert torch.equal(generate(model, ids, 5, lambda: None, static).tokens, eager)  # the same cache, reset
    other = prompts(TINY, None, 3, 4)  # another combination: its own cache
    assert torch.equal(generate(model, other, 3, lambda: None, static).tokens,
                       generate(model, other, 3, lambda: None).tokens)
    compiled = Decoder(model, "compiled")
    m = measure(compiled, ids, 5, {"warmup": 0, "iterations": 2}, lambda: None, torch.device("cpu"))
    assert m.decode == "compiled" and isinstance(m.compile_s, float) and m.compile_s > 0
    assert len(m.ttft_s) == 2 and len(m.tpot_s) == 2 * 4 and m.output_digest == digest(eager)
    assert torch.equal(generate(model, ids, 5, lambda: None, compiled).tokens, eager)
    eager_m = measure(Decoder(model), ids, 5, {"warmup": 0, "iterations": 1}, lambda: None, torch.device("cpu"))
    assert eager_m.compile_s is None and eager_m.decode == "eager" and eager_m.output_digest == digest(eager)


def test_prompts_are_the_same_for_a_seed_batch_and_length(tmp_path):
    assert torch.equal(prompts(TINY, None, 2, 9), prompts(TINY, None, 2, 9))
    assert not torch.equal(prompts(TINY, None, 2, 9), prompts({**TINY, "seed": 8}, None, 2, 9))
    data = write_tokens(tmp_path / "data", 300)
    windows = prompts(TINY, str(data), 4, 16)
    tokens = np.fromfile(data / "val.bin", dtype="<u2")
    assert windows.shape == (4, 16) and digest(windows) == digest(prompts(TINY, str(data), 4, 16))
    for row in windows.numpy():  # each a window of val.bin
        assert any(np.array_equal(row, tokens[o:o + 16]) for o in range(len(tokens) - 15))


def test_the_plan_resolves_the_vendors_params_and_refuses_bad_selections_by_name():
    (cpu,) = plan({"case": "llama"})["cases"]
    assert (cpu["task"], cpu["case_id"], cpu["params"]["model"]) == ("generate", "llama_generate_CPUx1x1", "tiny")
    assert cpu["provenance"]["dtype"] == "vendor/cpu/cases/llama/generate.yaml"
    for model in MODEL_CHOICES:  # the config's choices: the shapes that decode with a KV cache
        errors = plan({"case": "llama", "overrides": {"model": model, "prompt_lens": [8]}})["errors"]
        assert errors == [] if FAMILIES[shape_of({"model": model}).family].kv_cache else \
            any("key 'model': 'baichuan2_13b' is not one of the allowed values (allowed: 1b, 7b, aquila2_34b" in e
                and "qwen1.5_moe, tiny, tiny_moe)" in e for e in errors), errors
    (h100,) = plan({"case": "llama", "hardware": "H100"}, vendor="nvidia")["cases"]
    assert (h100["params"]["model"], h100["params"]["dtype"], h100["params"]["batch_sizes"],
            h100["params"]["prompt_lens"], h100["params"]["output_lens"]) == ("1b", "bf16", [1, 8], [128, 512], [128])
    errors = plan({"case": "resnet50"}, {"case": "llama", "overrides": {"prompt_lens": [1000], "output_lens": [100]}},
                  {"case": "llama", "nnodes": 2}, {"case": "llama", "overrides": {"dtype": "fp8"}},
                  {"case": "llama", "overrides": {"checkpoint": "ckpt"}})["errors"]
    assert any("key 'perfplay_cases[0].case': case 'resnet50' does not offer the generate task" in e
               and "(allowed: llama)" in e for e in errors), errors
    assert "run overrides (perfplay_cases[1].overrides): key 'prompt_lens': a prompt longer than the context: " \
           "prompt_len 1000 + output_len 100 = 1100 positions, more than model 'tiny' holds (1024); allowed: " \
           "prompt_len + output_len <= 1024" in errors, errors
    assert any("key 'perfplay_cases[2].nnodes': generate measures each device on its own" in e for e in errors)
    assert any("key 'dtype': 'fp8' is not one of the allowed values (allowed: bf16, fp16, fp32)" in e for e in errors)
    assert any("key 'checkpoint': 'ckpt' is relative to data_dir, and the selection has none" in e for e in errors)
    assert (cpu["params"]["decode"], h100["params"]["decode"]) == ("eager", "compiled")  # CI cheap; CUDA graphs
    errors = plan({"case": "llama", "overrides": {"decode": "jit"}})["errors"]
    assert any("key 'decode': 'jit' is not one of the allowed values (allowed: compiled, eager, static)" in e
               for e in errors), errors


def test_trained_needs_an_earlier_training_of_the_same_model_that_saves_its_checkpoint():
    errors = plan({"case": "llama", "overrides": {"checkpoint": "trained"}})["errors"]
    assert errors == ["run overrides (perfplay_cases[0].overrides): key 'checkpoint': 'trained' loads the checkpoint "
                      "of this run's earlier llama training selection of model 'tiny', vocab_size 0, with "
                      "save_checkpoint: true; llama_generate_CPUx1x1 has none before it"]
    # The training side comes from the llama training case: a resolved config of its shape stands in for it here.
    (generate_doc,) = make_plan({"task": "generate", "vendor": "cpu", "cases": [{"case": "llama"}]},
                                check=True)["cases"]
    wanted = ResolvedConfig.from_json({**generate_doc, "params": {**generate_doc["params"], "checkpoint": "trained"}})
    training = ResolvedConfig.from_json({**generate_doc, "task": "training", "case_id": "llama_CPUx1x1",
                                         "params": {"model": "tiny", "vocab_size": 0, "save_checkpoint": False},
                                         "provenance": {"save_checkpoint": "case_runners/cases/llama/config.yaml"}})
    other = ResolvedConfig.from_json({**training.to_json(), "case_id": "llama_CPUx1x2",
                                      "params": {"model": "1b", "vocab_size": 0, "save_checkpoint": True}})
    assert [str(e) for e in trained_checkpoints([training, other, wanted])] == [
        "case_runners/cases/llama/config.yaml: key 'save_checkpoint': llama_generate_CPUx1x1 loads the checkpoint "
        "llama_CPUx1x1 saves, and it saves none: set save_checkpoint: true in its overrides"]
    assert trained_checkpoints([wanted, training]) and wanted.checkpoint_case is ABSENT  # a later one does not count
    training.params["save_checkpoint"] = True
    assert trained_checkpoints([training, other, wanted]) == [] and wanted.checkpoint_case == "llama_CPUx1x1"
    # a model named by an alias is its shape: a 7b training's checkpoint is the llama2_7b generate's
    wanted.checkpoint_case = ABSENT
    training.params["model"], wanted.params["model"] = "7b", "llama2_7b"
    assert trained_checkpoints([training, other, wanted]) == [] and wanted.checkpoint_case == "llama_CPUx1x1"


def test_a_round_pools_the_ranks_samples_and_sums_their_tokens_per_s():
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 50) == 3.0 and percentile([0.0, 10.0], 99) == pytest.approx(9.9)
    assert Latency.of([]).mean is None

    def measured(ttft: list[float], tpot: list[float], out: str) -> GenerateMeasurement:
        return GenerateMeasurement(batch=2, prompt_len=8, output_len=3, iterations=len(ttft), ttft_s=ttft,
                                   tpot_s=tpot, generation_s=[1.0] * len(ttft), ttft_ms=Latency.of(ttft),
                                   tpot_ms=Latency.of(tpot), tokens_per_s=6.0, prompt_digest="p", output_digest=out,
                                   agreement=None, agreement_note="no engine")
    (pooled,) = combine([[measured([0.010, 0.030], [0.001, 0.003], "a")], [measured([0.020], [0.002], "b")]])
    assert isinstance(pooled, Combination) and pooled.ranks == 2 and pooled.tokens_per_s == 12.0
    assert pooled.ttft_ms.mean == pytest.approx(20.0) and pooled.ttft_ms.p50 == pytest.approx(20.0)
    assert pooled.tpot_ms.mean == pytest.approx(2.0) and pooled.outputs_differ == [1]
    assert headline([pooled]) == {"ttft_ms": pytest.approx(20.0), "tpot_ms": pytest.approx(2.0),
                                  "tokens_per_s": 12.0, "agreement": None}


def test_the_preflight_checks_a_checkpoint_path_and_the_prompts_file(tmp_path):
    data = write_tokens(tmp_path / "data", 300)
    save_checkpoint(build_model(TINY), data / "ckpt", TINY)
    params = plan({"case": "llama", "data_dir": str(data), "overrides": {"checkpoint": "ckpt"}})["cases"][0]["params"]
    assert data_problems("llama", params, str(data), "generate") == []
    assert data_problems("llama", {**params, "model": "1b"}, str(data), "generate") == [
        f"key 'checkpoint': {data / 'ckpt' / 'model.json'}: the checkpoint is of {{'model': 'tiny', 'vocab_size': 0}}, "
        "the config asks for {'model': '1b', 'vocab_size': 0}"]
    missing = data_problems("llama", {**params, "checkpoint": str(tmp_path / "none")}, str(data), "generate")
    assert missing == [f"key 'checkpoint': {tmp_path / 'none' / 'model.safetensors'}: missing; a llama checkpoint "
                       "is a directory with model.safetensors and model.json"]
    assert any("fewer than one sequence" in p
               for p in data_problems("llama", {**params, "prompt_lens": [512]}, str(data), "generate"))


def test_a_generate_round_runs_from_the_command_line_to_the_summary(tmp_path):
    run_dir = run_cli(tmp_path)
    record = RoundRecord.load(run_dir / "llama_generate_CPUx1x1" / "round1" / "round_record.json")
    assert isinstance(record, GenerateRoundRecord) and record.status == "success", record.reason
    assert record.metrics["checkpoint"] == "random weights" and record.metrics["prompts"] == "random ids"
    assert [(c["batch"], c["prompt_len"], c["output_len"]) for c in record.metrics["combinations"]] == \
        [(1, 8, 5), (2, 8, 5)]
    torch.manual_seed(1234)  # the config's seed: the task's random weights, the same every round
    model = build_model(TINY).eval()
    for c in record.metrics["combinations"]:
        assert c["ttft_ms"]["mean"] > 0 and c["tpot_ms"]["p99"] > 0 and c["tokens_per_s"] > 0
        assert c["agreement"] is None and c["agreement_note"] == "no engine"
        ids = prompts({**TINY, "seed": 1234}, None, c["batch"], 8)
        assert c["prompt_digest"] == digest(ids)
        assert c["output_digest"] == digest(generate(model, ids, 5, lambda: None).tokens)
    assert len(record.per_rank[0]["measurements"][0]["tpot_s"]) == 2 * 4  # every decode step of the timed runs
    assert record.metrics["tokens_per_s"] == max(c["tokens_per_s"] for c in record.metrics["combinations"])
    summary = RunSummary.load(run_dir / "summary.json")
    (case,) = summary.cases
    assert case.checkpoint == "random weights" and [r.batch for r in case.generate] == [1, 2]
    assert case.generate[1].tokens_per_s.n == 1 and case.stats["tokens_per_s"].n == 1
    markdown = (run_dir / "summary.md").read_text()
    assert "## Generate" in markdown and "| llama_generate_CPUx1x1 | 2 | 8 | 5 |" in markdown


def test_a_generate_round_on_a_checkpoint_directory_with_prompts_from_val_bin(tmp_path):
    data = write_tokens(tmp_path / "data", 400)
    torch.manual_seed(3)
    save_checkpoint(build_model(TINY), data / "ckpt", TINY)
    run_dir = run_cli(tmp_path, "--data-dir", str(data), "--set", "checkpoint=ckpt", "--set", "seed=7",
                      "--set", "decode=static")
    record = RoundRecord.load(run_dir / "llama_generate_CPUx1x1" / "round1" / "round_record.json")
    assert record.status == "success", record.reason
    assert [(c["decode"], c["compile_s"]) for c in record.metrics["combinations"]] == [("static", None)] * 2
    assert record.metrics["checkpoint"] == str(data / "ckpt") and record.metrics["prompts"] == f"{data}/val.bin"
    model = load_checkpoint(data / "ckpt", TINY).eval()
    for c in record.metrics["combinations"]:  # the checkpoint's own (eager) greedy outputs on the same prompts
        ids = prompts(TINY, str(data), c["batch"], 8)
        assert c["prompt_digest"] == digest(ids)
        assert c["output_digest"] == digest(generate(model, ids, 5, lambda: None).tokens)
    assert f"weights: {data / 'ckpt'}" in (run_dir / "summary.md").read_text()


def run_cli(tmp_path: Path, *extra: str) -> Path:
    """`python -m case_runners run llama --task generate` with small combinations; the run directory."""
    results = tmp_path / "results"
    done = subprocess.run([sys.executable, "-m", "case_runners", "run", "llama", "--task", "generate",
                           "--results-dir", str(results), "--no-monitors", *QUICK, *extra],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr + done.stdout
    assert "TTFT ms mean" in done.stdout and "llama_generate_CPUx1x1" in done.stdout
    (run_dir,) = results.glob("run*")
    return run_dir


def write_tokens(folder: Path, count: int) -> Path:
    """A data dir with val.bin of `count` uint16 ids below the tiny vocab, and its sidecar."""
    folder.mkdir(parents=True)
    ids = np.random.default_rng(0).integers(0, 4096, size=count, dtype=np.uint16)
    ids.astype("<u2").tofile(folder / "val.bin")
    (folder / "val.json").write_text(json.dumps({
        "format": FORMAT_NAME, "dtype": "uint16", "tokens": count, "vocab_size": 4096,
        "max_token_id": int(ids.max()), "tokenizer": "bytes", "source": "test"}))
    return folder


def test_the_vllm_engine_is_offered_where_the_vendor_pins_it_and_its_pins_install_with_it():
    """engine: vllm needs the vendor's pins (vendor/<v>/engines/vllm-requirements.txt) and one rank; the round's
    requirements are then those pins; an inference round on tensorrt gets TensorRT's pin the same way."""
    errors = plan({"case": "llama", "overrides": {"engine": "vllm"}})["errors"]
    assert errors == ["run overrides (perfplay_cases[0].overrides): key 'engine': vendor 'cpu' has no generate "
                      "engine 'vllm' (a vendor offers it by pinning it: vendor/cpu/engines/vllm-requirements.txt) "
                      "(allowed: torch)"], errors
    errors = plan({"case": "llama", "hardware": "H100", "nproc": 2, "overrides": {"engine": "vllm"}},
                  vendor="nvidia")["errors"]
    assert any("key 'perfplay_cases[0].nproc': the vllm engine measures one device per round (it picks its device "
               "itself); llama_generate_H100x1x2 has nproc 2 (allowed: 1)" in e for e in errors), errors
    (vllm,) = plan({"case": "llama", "hardware": "H100", "overrides": {"engine": "vllm"}}, vendor="nvidia")["cases"]
    assert vllm["params"]["engine"] == "vllm"
    assert vllm["requirements"] == ["vendor/nvidia/engines/vllm-requirements.txt"]
    (torch_path,) = plan({"case": "llama", "hardware": "H100"}, vendor="nvidia")["cases"]
    assert torch_path["params"]["engine"] == "torch" and torch_path["requirements"] == []
    (resnet,) = make_plan({"task": "inference", "vendor": "nvidia",
                           "cases": [{"case": "resnet50", "hardware": "H100"}]}, check=True)["cases"]
    assert resnet["inference"]["configurations"]["compiler"] == "tensorrt"
    assert "vendor/nvidia/engines/tensorrt-requirements.txt" in resnet["requirements"]
    assert [name for name, _ in read_pins(ROOT / "vendor/nvidia/engines/vllm-requirements.txt")] == ["vllm"]
    assert [name for name, _ in read_pins(ROOT / "vendor/nvidia/engines/tensorrt-requirements.txt")] == \
        ["tensorrt-cu12"]


def test_the_vllm_engine_s_arguments_figures_and_agreement_per_prompt():
    """What the vllm engine asks of vLLM (greedy, exactly output_len tokens, no prefix cache, the largest prefill in
    one step) and what it makes of the timed requests and tokens: without vllm, which is imported only to run."""
    params = {"seed": 5, "batch_sizes": [1, 8], "prompt_lens": [128, 512], "output_lens": [128], "decode": "compiled"}
    assert llm_args(params, "/run/case/vllm_model", "bfloat16") == {
        "model": "/run/case/vllm_model", "skip_tokenizer_init": True, "dtype": "bfloat16", "seed": 5,
        "max_model_len": 640, "max_num_seqs": 8, "max_num_batched_tokens": 4096, "enable_prefix_caching": False,
        "gpu_memory_utilization": 0.9}
    assert sampling_args(16) == {"temperature": 0.0, "max_tokens": 16, "min_tokens": 16, "ignore_eos": True,
                                 "detokenize": False}
    assert token_prompts(torch.tensor([[1, 2], [3, 4]]).tolist()) == [{"prompt_token_ids": [1, 2]},
                                                                      {"prompt_token_ids": [3, 4]}]
    assert agreement([[1, 2, 3, 4], [5, 6, 7, 8]], [[1, 2, 9, 9], [5, 6, 7, 8]]) == [0.5, 1.0]
    with pytest.raises(ValueError, match="2 outputs against 1 reference outputs"):
        agreement([[1], [2]], [[1]])
    reference = torch.tensor([[1, 2, 3, 4], [5, 6, 7, 8]])
    m = figures(torch.zeros(2, 3, dtype=torch.int64), 4, [0.010, 0.020], [0.040, 0.050],
                [[1, 2, 9, 9], [5, 6, 7, 8]], reference, "compiled", 30.0)
    assert (m.batch, m.prompt_len, m.output_len, m.iterations) == (2, 3, 4, 2)
    assert m.tpot_s == pytest.approx([0.010, 0.010]) and m.ttft_ms.mean == pytest.approx(15.0)
    assert m.tokens_per_s == pytest.approx(2 * 4 * 2 / 0.090) and m.compile_s == 30.0
    assert m.agreement == 0.75 and m.prompt_agreement == [0.5, 1.0] and "vllm against the torch path" in \
        m.agreement_note
    assert m.output_digest == digest(torch.tensor([[1, 2, 9, 9], [5, 6, 7, 8]]))
    (pooled,) = combine([[m]])
    assert pooled.agreement == 0.75 and pooled.prompt_agreement == [0.5, 1.0] and pooled.compile_s == 30.0


def test_the_vllm_round_takes_the_torch_tokens_first_then_frees_the_device_and_measures_vllm(tmp_path, monkeypatch):
    """The rank's vllm plumbing without vllm: a stand-in with vLLM's offline API (LLM(**kwargs), generate(prompts,
    SamplingParams, use_tqdm) -> outputs[i].outputs[0].token_ids) decodes the saved transformers folder with
    transformers' generate and changes prompt 0's last token, so the agreement must say 4 of 5 for it."""
    import types

    from transformers import AutoModelForCausalLM, GenerationConfig

    from case_runners.tasks.generate.task import start_vllm

    class FakeLLM:
        def __init__(self, **kwargs: object) -> None:
            self.kwargs = kwargs
            self.model = AutoModelForCausalLM.from_pretrained(str(kwargs["model"])).eval()

        def generate(self, requests: list, sampling: object, use_tqdm: bool) -> list:
            ids = torch.tensor([r["prompt_token_ids"] for r in requests])
            wanted = int(sampling.max_tokens)  # type: ignore[attr-defined]
            out = self.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), generation_config=(
                GenerationConfig(do_sample=False, max_new_tokens=wanted, eos_token_id=None, pad_token_id=0)))
            rows = out[:, ids.shape[1]:].tolist()
            rows[0][-1] = (rows[0][-1] + 1) % 4096
            return [types.SimpleNamespace(outputs=[types.SimpleNamespace(token_ids=row)]) for row in rows]

    fake = types.ModuleType("vllm")
    fake.LLM = FakeLLM  # type: ignore[attr-defined]
    fake.SamplingParams = lambda **kwargs: types.SimpleNamespace(**kwargs)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", fake)
    torch.manual_seed(0)
    model = build_model(TINY).eval()
    ids = prompts(TINY, None, 2, 6)
    params = {**TINY, "dtype": "fp32", "batch_sizes": [2], "prompt_lens": [6], "output_lens": [5], "decode": "static",
              "warmup": 1, "iterations": 2}
    freed = []
    engine = start_vllm(Decoder(model, "static"), [(ids, 5)], params, lambda: None, lambda: freed.append(1), tmp_path)
    assert freed == [1] and (tmp_path / "vllm_model" / "config.json").is_file()
    assert engine.llm.kwargs == llm_args(params, str(tmp_path / "vllm_model"), "float32")
    (reference,) = engine.references
    assert torch.equal(reference, generate(model, ids, 5, lambda: None).tokens)
    m = engine.measure(ids, 5, params, reference)
    assert m.prompt_agreement == [0.8, 1.0] and m.agreement == pytest.approx(0.9) and m.iterations == 2
    assert len(m.tpot_s) == 2 and m.compile_s == engine.start_s and m.decode == "static"
