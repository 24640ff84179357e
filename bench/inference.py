"""Inference throughput: resnet50 on this CPU with synthetic images, through the whole a-g pipeline.

Reports, from one run:
- p_inference_whole / p_inference_core of ONNX Runtime: how much of the engine's speed the data pipeline
  and the evaluation leave. Target: at least 0.8 (FlagPerf's published TensorRT run reaches 0.11, its data
  pipeline starving the engine);
- ONNX Runtime core throughput against torch eager core throughput (the validation step), same batch, same
  precision (fp32), same images.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from case_runners.inference.pipeline import run_pipeline
from case_runners.plan.inference_config import resolve_inference

ROOT = Path(__file__).resolve().parent.parent

TARGET_WHOLE_OVER_CORE = 0.8


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=256, help="synthetic images")
    parser.add_argument("--batch-size", type=int, help="default: the cpu vendor's")
    args = parser.parse_args()
    resolved, _ = resolve_inference("resnet50", "cpu", ROOT)
    resolved.parameters["synthetic_samples"] = args.samples
    if args.batch_size:
        resolved.configurations["batch_size"] = args.batch_size
    with tempfile.TemporaryDirectory(prefix="perfplay-bench-infer-") as work:
        result = run_pipeline(resolved, ROOT, Path(work), log=lambda line: print(line, file=sys.stderr))
    conf = resolved.configurations
    print(json.dumps({k: result[k] for k in ("p_validation_whole", "p_validation_core", "p_inference_whole",
                                              "p_inference_core", "compile_s", "pipeline_time_s")}, indent=2))
    ratio = result["p_inference_whole"] / result["p_inference_core"]
    verdict = "PASS" if ratio >= TARGET_WHOLE_OVER_CORE else "FAIL"
    print(f"resnet50, {args.samples} synthetic images, batch {conf['batch_size']}, {result['precision']}:")
    print(f"p_inference_whole / p_inference_core: {ratio:.3f} (target >= {TARGET_WHOLE_OVER_CORE}) {verdict}")
    speedup = result["p_inference_core"] / result["p_validation_core"]
    print(f"onnxruntime core / torch eager core:  {speedup:.2f}x "
          f"({result['p_inference_core']:.1f} vs {result['p_validation_core']:.1f} images/s)")
    return 0 if verdict == "PASS" else 1  # a missed target fails `make bench`


if __name__ == "__main__":
    raise SystemExit(main())
