"""Inference throughput: resnet50 on this CPU with synthetic images, through the whole a-g pipeline.

Runs the pipeline --runs times (each run is one pair: its engine's whole and core throughput, and torch eager's,
measured on the same images in the same process) and reports, as median and spread over the runs:
- p_inference_whole / p_inference_core of ONNX Runtime: how much of the engine's speed the data pipeline
  and the evaluation leave. Target: at least 0.8 (FlagPerf's published TensorRT run reaches 0.11, its data
  pipeline starving the engine), judged by bench/verdict.py;
- ONNX Runtime core throughput against torch eager core throughput (the validation step), same batch, same
  precision (fp32), same images.
Each run's wall and CPU time and the load average are printed beside them.
--quick: one run of 16 images, the smallest real measurement (which one run cannot judge).
"""

from __future__ import annotations

import copy
import json
import sys
import tempfile
import time
from pathlib import Path

from bench.verdict import LoadWatch, bounded, judge, parse_target, summary
from case_runners.core.cli_io import ArgumentParser
from case_runners.plan.inference_config import resolve_inference
from case_runners.tasks.inference.pipeline import run_pipeline

ROOT = Path(__file__).resolve().parent.parent

TARGET_WHOLE_OVER_CORE = 0.8


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, help="synthetic images (default 256, quick 16)")
    parser.add_argument("--batch-size", type=int, help="default: the cpu vendor's (quick 8)")
    parser.add_argument("--runs", type=int, help="pipeline runs (default 3, quick 1)")
    parser.add_argument("--quick", action="store_true", help="the smallest real measurement: 1 run of 16 images")
    parser.add_argument("--target", type=parse_target, default=bounded(TARGET_WHOLE_OVER_CORE),
                        help=f"LOW..HIGH whole/core ratio (default {TARGET_WHOLE_OVER_CORE:g}..)")
    args = parser.parse_args(argv)
    runs = args.runs or (1 if args.quick else 3)
    resolved, _ = resolve_inference("resnet50", "cpu", ROOT)
    resolved.parameters["synthetic_samples"] = args.samples or (16 if args.quick else 256)
    batch_size = args.batch_size or (8 if args.quick else None)
    if batch_size:
        resolved.configurations["batch_size"] = batch_size
    ratios, speedups = [], []
    load = LoadWatch()
    for run in range(runs):
        start, cpu0 = time.perf_counter(), time.process_time()
        with tempfile.TemporaryDirectory(prefix="perfplay-bench-infer-") as work:
            result = run_pipeline(copy.deepcopy(resolved), ROOT, Path(work),
                                  log=lambda line: print(line, file=sys.stderr))
        load.sample()
        print(json.dumps({k: result[k] for k in ("p_validation_whole", "p_validation_core", "p_inference_whole",
                                                  "p_inference_core", "compile_s", "pipeline_time_s")}))
        print(f"run {run + 1}: {time.perf_counter() - start:.1f} s wall, {time.process_time() - cpu0:.1f} s CPU",
              flush=True)
        ratios.append(result["p_inference_whole"] / result["p_inference_core"])
        speedups.append(result["p_inference_core"] / result["p_validation_core"])
    conf = resolved.configurations
    print(f"\nresnet50, {resolved.parameters['synthetic_samples']} synthetic images, batch {conf['batch_size']}, "
          f"{result['precision']}, {runs} runs:")
    print(f"onnxruntime core / torch eager core: {summary(speedups, 'x')}")
    print(load.line())
    verdict = judge(ratios, args.target)
    print(verdict.line("p_inference_whole / p_inference_core", fmt=".3f"))
    return verdict.exit_code  # anything but PASS fails `make bench`


if __name__ == "__main__":
    raise SystemExit(main())
