"""A generate rank's task (the rank runtime runs it: case_runners/rank/worker.py): the case's model on this rank's
device, each combination of batch size, prompt length and output length generated `warmup` times untimed, then
`iterations` times timed token by token (decode.py). Every rank measures its own device; no process group."""

from __future__ import annotations

import importlib
import itertools
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from case_runners.rank import stop_request
from case_runners.rank.driver import events as ev
from case_runners.rank.driver.events import EventLogger
from case_runners.rank.env import DistEnv
from case_runners.records import names
from case_runners.records.generate import NO_ENGINE, RANDOM_WEIGHTS, GenerateMeasurement, Latency
from case_runners.records.resolved import ResolvedConfig
from case_runners.tasks.generate import CASE_MODEL_MODULE, VLLM, checkpoint_dir

if TYPE_CHECKING:  # torch is imported when the rank runs, vllm when a round runs on it
    from case_runners.tasks.generate.decode import Decoder
    from case_runners.tasks.generate.vllm_engine import VllmEngine

DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}  # param dtype -> torch's name


def run(config: ResolvedConfig, config_path: str, log: EventLogger, env: DistEnv) -> dict[str, Any]:
    """Measure every combination on this rank; the fields of its result (records/rank.py GenerateRankResult) but
    rank, world_size and e2e_time."""
    import torch

    from case_runners.rank.start import start_rank
    from case_runners.tasks.generate.decode import Decoder

    stop_request.check("init")
    params = config.params
    runtime, device = start_rank(config, env)
    versions = runtime.versions()
    checkpoint = checkpoint_dir(config, config_path)
    weights = RANDOM_WEIGHTS if checkpoint is None else str(checkpoint)
    prompts_from = f"{config.data_dir}/val.bin" if config.data_dir else "random ids"
    log.event(ev.SUBMIT_INFO, {"vendor": config.vendor, "case": config.case, "task": names.GENERATE,
                               "case_id": config.case_id, "config_path": config_path,
                               "run_id": os.environ.get("PERFPLAY_RUN_ID"), "device": str(device),
                               "world_size": env.world_size, "params": params, "checkpoint": weights,
                               "python": sys.executable, "torch": torch.__version__, "versions": versions})
    say = print if env.rank == 0 else (lambda *_a, **_k: None)
    say(f"generate: {config.case} {params.get('model', '')} ({weights}), {params['dtype']} on {device}, "
        f"{params['decode']} decoding; prompts from {prompts_from}", flush=True)
    case = importlib.import_module(CASE_MODEL_MODULE.format(case=config.case))
    torch.manual_seed(int(params["seed"]))  # random weights: the same every round, and so are the outputs
    model = case.build(params, checkpoint).to(device=device, dtype=getattr(torch, DTYPES[params["dtype"]])).eval()
    synchronize = runtime.synchronizer(device)
    combinations = list(itertools.product(params["batch_sizes"], params["prompt_lens"], params["output_lens"]))
    decoder = Decoder(model, params["decode"], len(combinations))
    engine = None
    if params["engine"] == VLLM:  # the torch path's tokens first, then its model gives the device to vLLM
        engine = start_vllm(decoder, [(case.prompts(params, config.data_dir, b, p), n) for b, p, n in combinations],
                            params, synchronize, lambda: runtime.empty_cache(device), Path(config_path).parent)
        say(f"  vllm started in {engine.start_s:.1f} s (loading, compiling, capturing graphs: compile_s)", flush=True)
    measurements = []
    for at, (batch, prompt_len, output_len) in enumerate(combinations):
        stop_request.check(f"generate batch {batch} prompt {prompt_len} output {output_len}")
        prompts = case.prompts(params, config.data_dir, batch, prompt_len)
        m = measure(decoder, prompts, output_len, params, synchronize, device) if engine is None else \
            engine.measure(prompts, output_len, params, engine.references[at])
        log.event(ev.GENERATE_MEASUREMENT, {k: v for k, v in m.to_json().items()
                                            if k not in ("ttft_s", "tpot_s", "generation_s")})
        compiled = f" (compiled in {m.compile_s:.1f} s, apart)" if isinstance(m.compile_s, float) else ""
        if isinstance(m.prompt_agreement, list):
            compiled += f"; agreement with torch per prompt {', '.join(f'{a:.3f}' for a in m.prompt_agreement)}"
        say(f"  batch {batch} prompt {prompt_len} output {output_len}: TTFT {m.ttft_ms.mean:.2f} ms, TPOT "
            f"{'-' if m.tpot_ms.mean is None else f'{m.tpot_ms.mean:.2f}'} ms, {m.tokens_per_s:.1f} tokens/s"
            f"{compiled}", flush=True)
        measurements.append(m)
    return {"status": names.SUCCESS, "task": names.GENERATE, "device": str(device), "dtype": params["dtype"],
            "checkpoint": weights, "prompts": prompts_from, "measurements": [m.to_json() for m in measurements],
            "versions": versions}


def start_vllm(decoder: Decoder, combinations: list[tuple[Any, int]], params: dict[str, Any], synchronize: Any,
               free: Any, case_dir: Path) -> VllmEngine:
    """The torch path's greedy tokens of every combination (prompts, output_len), kept as the engine's references;
    then the torch model off the device (free: the vendor's empty_cache), saved for vLLM, and vLLM started on it."""
    import torch

    from case_runners.tasks.generate.decode import generate
    from case_runners.tasks.generate.vllm_engine import VllmEngine, save_model

    model = decoder.model
    device = next(model.parameters()).device
    references = [generate(model, prompts.to(device), n, synchronize, decoder).tokens.cpu() for prompts, n in
                  combinations]
    model.cpu()  # the device for vLLM alone: no weights, no compiled graphs, no cached blocks
    torch.compiler.reset()
    free()
    return VllmEngine(save_model(model, case_dir), params, DTYPES[params["dtype"]], references)


def measure(decoder: Decoder, prompts: Any, output_len: int, params: dict[str, Any], synchronize: Any,
            device: Any) -> GenerateMeasurement:
    """One combination: with compiled decoding a first generation that compiles (its seconds compile_s), then
    `warmup` untimed generations, then `iterations` timed ones."""
    from case_runners.tasks.generate.decode import digest, generate

    on_device = prompts.to(device)
    model = decoder.model
    compile_s = generate(model, on_device, output_len, synchronize, decoder).seconds if decoder.compiles else None
    for _ in range(params["warmup"]):
        generate(model, on_device, output_len, synchronize, decoder)
    runs = [generate(model, on_device, output_len, synchronize, decoder) for _ in range(params["iterations"])]
    generation_s = [g.seconds for g in runs]
    batch = int(prompts.shape[0])
    return GenerateMeasurement(
        batch=batch, prompt_len=int(prompts.shape[1]), output_len=output_len, iterations=len(runs),
        ttft_s=[g.ttft_s for g in runs], tpot_s=[s for g in runs for s in g.tpot_s], generation_s=generation_s,
        ttft_ms=Latency.of([g.ttft_s for g in runs]), tpot_ms=Latency.of([s for g in runs for s in g.tpot_s]),
        tokens_per_s=batch * output_len * len(runs) / sum(generation_s), prompt_digest=digest(prompts),
        output_digest=digest(runs[-1].tokens), agreement=None, agreement_note=NO_ENGINE, decode=decoder.decode,
        compile_s=compile_s)
