"""Fidelity of an image case: mobilenetv2's p_core in the harness against a bare transformers training loop.

Alternates a harness run (`python -m case_runners run mobilenetv2`, synthetic images, no monitors) and a bare loop
written plainly here, not from the case's code: transformers' MobileNetV2ForImageClassification of the same config,
the same batch of images of the same size, SGD with the case's hyperparameters and its step schedule, cross-entropy,
each optimizer step timed with perf_counter, at the harness rank's own thread count (its round record's
environment.threads). Fresh processes each; the median of the pairs' ratios harness / bare is judged by
bench/verdict.py, with their spread, each process's wall and CPU time and the load average. Target: within 3 %.
--quick: one pair of 3 steps, the smallest real measurement (which one pair cannot judge).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from bench.alternation import add_pair_options, pair_sizes
from bench.fidelity import bare_process, harness_at_threads
from bench.verdict import LoadWatch, bounded, judge, summary
from case_runners.core.cli_io import ArgumentParser

CASE = "mobilenetv2"
TARGET = 0.03
STEPS = (20, 3)  # steps per round: by default, and with --quick
# The standard MobileNetV2 (width 1.0, 1000 classes) at 96 px, batch 16: small enough to repeat on a CPU.
OVERRIDES: dict[str, Any] = {"synthetic": True, "image_size": 96, "batch_size": 16, "num_workers": 0,
                             "log_freq": 1000, "eval_every_epochs": 0, "eval_max_batches": 1,
                             "synthetic_samples": 1024}


def bare_loop(p: dict[str, Any], steps: int, threads: int) -> dict[str, Any]:
    """The bare loop, written out as a plain script would, not from the case's code: the case's config in
    transformers (torchvision's MobileNetV2 layout), SGD with momentum and weight decay, the LR times lr_gamma every
    epoch; only the numbers come from the harness's resolved params `p`. Its samples/s ("p"), thread count and the
    model's parameter count."""
    import torch
    from torch.nn import functional as F
    from transformers import MobileNetV2Config, MobileNetV2ForImageClassification

    torch.set_num_threads(threads)
    torch.manual_seed(p["seed"])
    size, batch, classes = p["image_size"], p["batch_size"], p["num_classes"]
    model = MobileNetV2ForImageClassification(MobileNetV2Config(  # type: ignore[call-arg]
        image_size=size, depth_multiplier=p["depth_multiplier"], tf_padding=False, classifier_dropout_prob=0.2,
        num_labels=classes))
    memory_format = torch.channels_last if p["channels_last"] else torch.contiguous_format
    model = model.to(memory_format=memory_format).train()  # type: ignore[call-arg]
    lr = p["lr"] * batch / p["lr_scaling_batch"] if p["lr_scaling_batch"] else p["lr"]
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=p["momentum"], weight_decay=p["weight_decay"])
    epoch = p["synthetic_samples"] // batch  # the harness's steps per epoch (its last partial batch dropped)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=max(1, round(p["lr_step_epochs"] * epoch)),
                                            gamma=p["lr_gamma"])
    compute = 0.0
    for _ in range(steps):
        # the batch made untimed, as the harness's data path is
        images = torch.randn(batch, 3, size, size).contiguous(memory_format=memory_format)
        labels = torch.randint(classes, (batch,))
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(pixel_values=images).logits, labels, label_smoothing=p["label_smoothing"])
        loss.backward()
        opt.step()
        sched.step()
        compute += time.perf_counter() - t0
    return {"p": steps * batch / compute, "threads": torch.get_num_threads(),
            "parameters": sum(w.numel() for w in model.parameters())}


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    add_pair_options(parser, "harness/bare", "optimizer steps per process", STEPS, bounded(1 - TARGET, 1 + TARGET),
                     f"LOW..HIGH harness/bare ratio (default {1 - TARGET:g}..{1 + TARGET:g})")
    args = parser.parse_args(argv)
    steps, pairs = pair_sizes(args, STEPS)
    ratios: list[float] = []
    load = LoadWatch()
    params: dict[str, Any] = {}
    threads = 0
    with tempfile.TemporaryDirectory(prefix="perfplay-fidelity-image-") as tmp:
        for pair in range(pairs):
            values = {}
            # The harness goes first in the first pair: the bare loop takes its params and thread count from it.
            for kind in (("harness", "bare") if pair % 2 == 0 else ("bare", "harness")):
                if kind == "harness":
                    values[kind], params, threads, timing = harness_at_threads(CASE, OVERRIDES, steps, Path(tmp))
                else:
                    measured, timing = bare_process("bench.fidelity_image:bare_loop", params, steps, threads)
                    values[kind] = measured["p"]
                load.sample()
                print(f"pair {pair + 1} {kind:7s}: {values[kind]:8.2f} samples/s ({timing.wall:.1f} s wall, "
                      f"{timing.cpu:.1f} s CPU)", flush=True)
            ratios.append(values["harness"] / values["bare"])
    print(f"\n{CASE} ({OVERRIDES['image_size']} px, batch {OVERRIDES['batch_size']}, {steps} steps, {threads} "
          f"threads, CPU), {pairs} pairs: harness p_core / bare transformers loop {summary(ratios, fmt='.4f')}")
    print(load.line())
    result = judge(ratios, args.target)
    print(result.line("fidelity: harness / bare", fmt=".4f"))
    return result.exit_code  # anything but PASS fails `make bench`


if __name__ == "__main__":
    raise SystemExit(main())
