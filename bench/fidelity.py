"""Fidelity: p_core reported by the harness against a bare timing loop over the same model, batch and steps.

Alternates a harness run (`python -m case_runners run CASE`, no monitors) and a bare loop in fresh processes, and
judges the median of the pairs' ratios harness / bare by bench/verdict.py, with their spread, each process's wall and
CPU time and the load average. Target: within 2 %. --case picks the pair:
- resnet50 (default): the bare loop is the case's own model, optimizer, loss and train loader, N optimizer steps,
  each step's compute timed with perf_counter, at the thread count the harness's rank ran at;
- llama: the tiny shape (seq_len 256, batch 16: the cpu vendor's config) against a bare transformers loop written
  plainly here (llama_bare_loop), at the thread count the harness's rank ran at (its round record's
  environment.threads).
Both sides run with the same glibc malloc settings (--malloc fixed, the default; bench/malloc_control.py), as
bench/fidelity_image.py's do: with glibc's own (--malloc default) each step page-faults back in the heap the step
before gave back, in a number each process's history sets (llama tiny: 65-99 thousand faults a step).
--quick: one pair of 3 steps (llama: 2), the smallest real measurement (which one pair cannot judge).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.alternation import Timing, add_pair_options, pair_sizes, run_timed
from bench.malloc_control import MODE_SHOWN, add_malloc_option, malloc_env
from bench.verdict import LoadWatch, bounded, judge, summary
from case_runners.core.cli_io import ArgumentParser
from case_runners.records.round import RECORD_NAME, RoundRecord

TARGET = 0.02
STEPS = (30, 3)  # steps per round: by default, and with --quick
# resnet50 at 64 px: a step of a few hundred ms on a CPU, long enough to time, short enough to repeat.
OVERRIDES = {"synthetic": True, "image_size": 64, "batch_size": 16, "num_workers": 0, "log_freq": 1000,
             "eval_every_epochs": 0, "synthetic_samples": 512, "warmup_steps": 0}
# llama tiny at the cpu vendor's shape (seq_len 256, batch 16, AdamW, clipping at 1.0): a step of about a second on
# one core. Its held-out evaluation, after the timed steps, on one batch.
LLAMA_STEPS = (12, 2)
LLAMA_OVERRIDES = {"synthetic": True, "num_workers": 0, "log_freq": 1000, "eval_every_steps": 0, "eval_samples": 16,
                   "synthetic_samples": 256}


def harness_round(case: str, overrides: dict[str, Any], steps: int, results: Path,
                  env: dict[str, str] | None = None) -> tuple[RoundRecord, Path, Timing]:
    """`python -m case_runners run CASE` (no monitors) with the overrides and max_steps, in `env` (None: this
    process's): its round record, the record's round directory and its timing."""
    sets = [f"--set={k}={json.dumps(v)}" for k, v in {**overrides, "max_steps": steps}.items()]
    proc, timing = run_timed([sys.executable, "-m", "case_runners", "run", case, "--no-monitors",
                             "--results-dir", str(results), *sets], env)
    if proc.returncode not in (0, 1):  # 1: not converged, expected for a short synthetic run
        sys.exit(f"harness run failed:\n{proc.stdout}\n{proc.stderr}")
    (record,) = sorted(results.glob(f"run*/{case}_*/round1/{RECORD_NAME}"), key=os.path.getmtime)[-1:]
    return RoundRecord.load(record), record.parent, timing


def rank_threads(record: RoundRecord) -> int:
    """The thread count the round's rank 0 ran at (its environment.threads); exits when the record lacks it."""
    intra_op = getattr(getattr(record.environment, "threads", None), "intra_op", None)
    if not intra_op:
        sys.exit(f"the harness's round record has no thread count (environment.threads): {record.reason}")
    return int(intra_op)


def harness_at_threads(case: str, overrides: dict[str, Any], steps: int,
                       results: Path) -> tuple[float, dict[str, Any], int, Timing]:
    """The harness's p_core, its resolved params, and the thread count its rank 0 ran at."""
    record, _, timing = harness_round(case, overrides, steps, results)
    return record.metrics["p_core"], record.params, rank_threads(record), timing


def bare_process(loop: str, params: dict[str, Any], steps: int, threads: int,
                 env: dict[str, str] | None = None) -> tuple[dict[str, Any], Timing]:
    """`loop` ("module:function", called with the harness's params, steps and threads) in a fresh process, in `env`
    (None: this process's) at `threads` torch threads (OMP_NUM_THREADS too, as the rank's): what it returns, and its
    timing."""
    module, function = loop.split(":")
    env = {**(os.environ if env is None else env), "OMP_NUM_THREADS": str(threads)}
    code = (f"import json, sys\nfrom {module} import {function}\n"
            f"print(json.dumps({function}(json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))))")
    proc, timing = run_timed([sys.executable, "-c", code, json.dumps(params), str(steps), str(threads)], env)
    if proc.returncode != 0:
        sys.exit(f"bare loop failed:\n{proc.stdout}\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1]), timing


def llama_bare_loop(p: dict[str, Any], steps: int, threads: int) -> dict[str, Any]:
    """The bare loop a user would write with transformers, not from the case's code: LlamaForCausalLM of the
    shape's numbers, AdamW (weight decay on the matrices), a linear warmup then cosine schedule
    (transformers' get_cosine_schedule_with_warmup), gradients clipped to max_grad_norm, next-token cross-entropy;
    only the numbers come from the harness's resolved params `p`. Its tokens/s ("p"), thread count and the model's
    parameter count."""
    import torch
    from torch.nn import functional as F
    from transformers import LlamaConfig, LlamaForCausalLM, get_cosine_schedule_with_warmup

    from case_runners.cases.llama.shapes import shape_of

    torch.set_num_threads(threads)
    torch.manual_seed(p["seed"])
    s = shape_of(p)
    model = LlamaForCausalLM(LlamaConfig(
        vocab_size=s.vocab, hidden_size=s.hidden, intermediate_size=s.intermediate, num_hidden_layers=s.layers,
        num_attention_heads=s.heads, num_key_value_heads=s.kv_heads, max_position_embeddings=s.max_positions,
        rope_parameters={"rope_type": "default", "rope_theta": s.rope_theta}, tie_word_embeddings=s.tied,
        use_cache=False)).train()
    groups = [{"params": [w for w in model.parameters() if w.ndim >= 2], "weight_decay": p["weight_decay"]},
              {"params": [w for w in model.parameters() if w.ndim < 2], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=p["lr"], betas=(p["adam_beta1"], p["adam_beta2"]), eps=p["adam_eps"])
    sched = get_cosine_schedule_with_warmup(opt, p["warmup_steps"], p["max_steps"])
    batch, seq_len = p["batch_size"], p["seq_len"]
    compute = 0.0
    for _ in range(steps):
        tokens = torch.randint(s.vocab, (batch, seq_len + 1))  # the batch made untimed, as the harness's data path is
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        logits = model(input_ids=tokens[:, :-1]).logits
        loss = F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), p["max_grad_norm"])
        opt.step()
        sched.step()
        compute += time.perf_counter() - t0
    return {"p": steps * batch * seq_len / compute, "threads": torch.get_num_threads(),
            "parameters": sum(w.numel() for w in model.parameters())}


def resnet50_bare(steps: int, threads: int) -> tuple[dict[str, Any], Timing]:
    """The bare loop, in a fresh process at the thread count the harness's single rank ran at (OMP_NUM_THREADS too):
    its samples/s ("p") and thread count."""
    code = f"""
import json, time, torch
from case_runners.cases.resnet50.case import build_case
from case_runners.rank.driver.events import EventLogger
from case_runners.plan.run_plan import make_plan
from case_runners.tasks.training.case_api import RunContext
import tempfile, pathlib
torch.set_num_threads({threads})
config = make_plan({{"vendor": "cpu", "cases": [{{"case": "resnet50", "overrides": {OVERRIDES!r}}}]}},
                   check=True)["cases"][0]
params = config["params"]
torch.manual_seed(params["seed"])
log = EventLogger(pathlib.Path(tempfile.mkdtemp()), 0, 10**9)
case = build_case(params, RunContext(0, 0, 1, torch.device("cpu"), None, log))
model = case.build_model()
train_loader, _ = case.build_data()
opt, sched = case.build_optimizer(model)
model.train()
bs, compute, batches = params["batch_size"], 0.0, iter(train_loader)
for step in range({steps}):
    batch = case.to_device(next(batches), torch.device("cpu"))  # the same data path, untimed
    t0 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    loss, n = case.train_step(model, batch)
    loss.backward()
    opt.step()
    if sched is not None:
        sched.step()
    compute += time.perf_counter() - t0
print(json.dumps({{"p": {steps} * bs / compute, "threads": torch.get_num_threads()}}))
"""
    proc, timing = run_timed([sys.executable, "-c", code], {**os.environ, "OMP_NUM_THREADS": str(threads)})
    if proc.returncode != 0:
        sys.exit(f"bare loop failed:\n{proc.stdout}\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1]), timing


@dataclass(frozen=True)
class Pair:
    """One case's two sides. harness(steps, results): the harness's figure, its params and the thread count its rank
    ran at (which the bare side takes); bare(params, steps, threads): the bare loop's figure; each with its timing."""
    steps: tuple[int, int]  # steps per process: by default, and with --quick
    unit: str
    harness: Callable[[int, Path], tuple[float, dict[str, Any], int, Timing]]
    bare: Callable[[dict[str, Any], int, int], tuple[float, Timing]]
    shown: str  # the run, {steps} and {threads} filled in
    what: str  # what the ratio compares


def _resnet50_harness(steps: int, results: Path) -> tuple[float, dict[str, Any], int, Timing]:
    return harness_at_threads("resnet50", OVERRIDES, steps, results)


def _resnet50_bare(_params: dict[str, Any], steps: int, threads: int) -> tuple[float, Timing]:
    measured, timing = resnet50_bare(steps, threads)
    return measured["p"], timing


def _llama_harness(steps: int, results: Path) -> tuple[float, dict[str, Any], int, Timing]:
    return harness_at_threads("llama", LLAMA_OVERRIDES, steps, results)


def _llama_bare(params: dict[str, Any], steps: int, threads: int) -> tuple[float, Timing]:
    measured, timing = bare_process("bench.fidelity:llama_bare_loop", params, steps, threads)
    return measured["p"], timing


PAIRS = {
    "resnet50": Pair(STEPS, "samples/s", _resnet50_harness, _resnet50_bare,
                     "resnet50 (64 px, batch 16, {steps} steps, {threads} threads, CPU)", "harness p_core / bare loop"),
    "llama": Pair(LLAMA_STEPS, "tokens/s", _llama_harness, _llama_bare,
                  "llama tiny (seq_len 256, batch 16, {steps} steps, {threads} threads, CPU)",
                  "harness p_core / bare transformers loop"),
}


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=sorted(PAIRS), default="resnet50",
                        help="the pair: resnet50 against its own pieces (default), or llama tiny against a bare "
                             "transformers loop")
    add_pair_options(parser, "harness/bare", f"optimizer steps per process (llama: default {LLAMA_STEPS[0]}, quick "
                     f"{LLAMA_STEPS[1]}); resnet50's", STEPS, bounded(1 - TARGET, 1 + TARGET),
                     f"LOW..HIGH harness/bare ratio (default {1 - TARGET:g}..{1 + TARGET:g})")
    add_malloc_option(parser)
    args = parser.parse_args(argv)
    # Both sides' processes inherit this process's environment (`case_runners run` -> launcher -> rank, as
    # bench/fidelity_image.py shows from /proc): the same glibc malloc settings on both (bench/malloc_control.py).
    settings = malloc_env(args.malloc)
    os.environ.clear()
    os.environ.update(settings)
    pair_of = PAIRS[args.case]
    steps, pairs = pair_sizes(args, pair_of.steps)
    ratios: list[float] = []
    load = LoadWatch()
    params: dict[str, Any] = {}
    threads = 0
    with tempfile.TemporaryDirectory(prefix="perfplay-fidelity-") as tmp:
        for pair in range(pairs):
            values = {}
            # The harness goes first in the first pair: the bare side takes its params and thread count from it.
            for kind in (("harness", "bare") if pair % 2 == 0 else ("bare", "harness")):
                if kind == "harness":
                    values[kind], params, threads, timing = pair_of.harness(steps, Path(tmp))
                else:
                    values[kind], timing = pair_of.bare(params, steps, threads)
                load.sample()
                print(f"pair {pair + 1} {kind:7s}: {values[kind]:8.2f} {pair_of.unit} ({timing.wall:.1f} s wall, "
                      f"{timing.cpu:.1f} s CPU)", flush=True)
            ratios.append(values["harness"] / values["bare"])
    print(f"\n{pair_of.shown.format(steps=steps, threads=threads)}, {pairs} pairs: {pair_of.what} "
          f"{summary(ratios, fmt='.4f')}")
    print(f"malloc {args.malloc} on both sides ({MODE_SHOWN[args.malloc]})")
    print(load.line())
    result = judge(ratios, args.target)
    print(result.line("fidelity: harness / bare", fmt=".4f"))
    return result.exit_code  # anything but PASS fails `make bench`


if __name__ == "__main__":
    raise SystemExit(main())
