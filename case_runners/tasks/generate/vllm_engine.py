"""The generate task's vllm engine: vLLM's offline `LLM` API on the case's model, timed the way the torch path is
timed, its greedy tokens compared with the torch path's.

The model goes to vLLM as a transformers folder (save_pretrained of the rank's model, random weights or a
checkpoint's, in the config's dtype), with no tokenizer: prompts are token ids. vLLM's own timings differ between
its releases, so the rank times whole requests, each batch at once: TTFT is a request for one token (the prefill and
the first token), the generation a request for output_len tokens; TPOT = (generation - TTFT) / (output_len - 1),
one sample per timed generation; tokens/s = batch x output_len / the mean generation time. Prefix caching is off,
so a repeated prompt is prefilled every time, as in the torch path. compile_s is the engine's start (loading,
torch.compile and CUDA-graph capture), the same for every combination of the round.

Agreement: per prompt, the share of output positions whose token equals the torch path's greedy token on the same
prompt (tasks/generate `decode`); the measurement's agreement is the mean over the prompts (all of one length).
vllm is imported only here, when a round runs on it. Not verified: no machine with a GPU and vLLM has run it yet.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from case_runners.records.generate import GenerateMeasurement, Latency
from case_runners.tasks.generate import VLLM

MODEL_DIR = "vllm_model"  # in the case's directory of the run: the model as vLLM reads it
MEMORY_SHARE = 0.9  # of the device's memory vLLM may hold (weights, graphs, KV cache)


def llm_args(params: dict[str, Any], model_dir: str, torch_dtype: str) -> dict[str, Any]:
    """vLLM's LLM(...) arguments for the config: the saved model without a tokenizer, the config's dtype and seed,
    room for the longest prompt and output, the largest batch in one step (its prefill unchunked), no prefix
    caching."""
    longest = max(params["prompt_lens"]) + max(params["output_lens"])
    return {"model": model_dir, "skip_tokenizer_init": True, "dtype": torch_dtype, "seed": int(params["seed"]),
            "max_model_len": longest, "max_num_seqs": max(params["batch_sizes"]),
            "max_num_batched_tokens": max(longest, max(params["batch_sizes"]) * max(params["prompt_lens"])),
            "enable_prefix_caching": False, "gpu_memory_utilization": MEMORY_SHARE}


def sampling_args(output_len: int) -> dict[str, Any]:
    """vLLM's SamplingParams(...) for greedy decoding of exactly output_len tokens, no text."""
    return {"temperature": 0.0, "max_tokens": output_len, "min_tokens": output_len, "ignore_eos": True,
            "detokenize": False}


def token_prompts(ids: Sequence[Sequence[int]]) -> list[dict[str, list[int]]]:
    """A batch of prompt ids as vLLM's TokensPrompt dictionaries."""
    return [{"prompt_token_ids": [int(i) for i in row]} for row in ids]


def agreement(found: Sequence[Sequence[int]], reference: Sequence[Sequence[int]]) -> list[float]:
    """Per prompt, the share of output positions where the engine's token equals the reference's."""
    if len(found) != len(reference):
        raise ValueError(f"{len(found)} outputs against {len(reference)} reference outputs")
    shares = []
    for mine, theirs in zip(found, reference):
        if len(mine) != len(theirs) or not theirs:
            raise ValueError(f"an output of {len(mine)} tokens against a reference of {len(theirs)}")
        shares.append(sum(a == b for a, b in zip(mine, theirs)) / len(theirs))
    return shares


def figures(prompts: Any, output_len: int, ttft_s: list[float], generation_s: list[float],
            tokens: list[list[int]], reference: Any, decode: str, compile_s: float) -> GenerateMeasurement:
    """One combination's measurement from the timed requests (prompts and reference: batch x length int64
    tensors; tokens: the last timed generation's)."""
    import torch

    from case_runners.tasks.generate.decode import digest

    batch = int(prompts.shape[0])
    tpot_s = [(whole - first) / (output_len - 1) for first, whole in zip(ttft_s, generation_s)] \
        if output_len > 1 else []
    shares = agreement(tokens, reference.tolist())
    return GenerateMeasurement(
        batch=batch, prompt_len=int(prompts.shape[1]), output_len=output_len, iterations=len(generation_s),
        ttft_s=ttft_s, tpot_s=tpot_s, generation_s=generation_s, ttft_ms=Latency.of(ttft_s),
        tpot_ms=Latency.of(tpot_s), tokens_per_s=batch * output_len * len(generation_s) / sum(generation_s),
        prompt_digest=digest(prompts), output_digest=digest(torch.tensor(tokens, dtype=torch.int64)),
        agreement=sum(shares) / len(shares), agreement_note=f"{VLLM} against the torch path's greedy tokens "
        f"({decode} decoding), per output position", decode=decode, compile_s=compile_s, prompt_agreement=shares)


def save_model(model: Any, case_dir: Path) -> Path:
    """The model as a transformers folder vLLM loads (config.json and safetensors), in the case's directory."""
    folder = case_dir / MODEL_DIR
    model.save_pretrained(folder)
    return folder


class VllmEngine:
    """vLLM's LLM on a saved model, started once per round (its seconds: compile_s), and the torch path's tokens
    of each combination (references, in the order measured)."""

    def __init__(self, model_dir: Path, params: dict[str, Any], torch_dtype: str, references: list[Any]) -> None:
        from vllm import LLM

        self.references = references
        began = time.perf_counter()
        self.llm = LLM(**llm_args(params, str(model_dir), torch_dtype))
        self.start_s = time.perf_counter() - began

    def _timed(self, requests: list[Any], output_len: int) -> tuple[float, list[Any]]:
        from vllm import SamplingParams

        sampling = SamplingParams(**sampling_args(output_len))
        began = time.perf_counter()
        outputs = self.llm.generate(requests, sampling, use_tqdm=False)  # returns once every output is on the host
        return time.perf_counter() - began, outputs

    def measure(self, prompts: Any, output_len: int, params: dict[str, Any], reference: Any) -> GenerateMeasurement:
        """`warmup` untimed generations, then `iterations` timed pairs of requests (one token, output_len tokens)."""
        requests: list[Any] = token_prompts(prompts.tolist())
        for _ in range(params["warmup"]):
            self._timed(requests, output_len)
        ttft_s: list[float] = []
        generation_s: list[float] = []
        outputs: list[Any] = []
        for _ in range(params["iterations"]):
            ttft_s.append(self._timed(requests, 1)[0])
            seconds, outputs = self._timed(requests, output_len)
            generation_s.append(seconds)
        tokens = [list(o.outputs[0].token_ids) for o in outputs]
        return figures(prompts, output_len, ttft_s, generation_s, tokens, reference, params["decode"], self.start_s)
