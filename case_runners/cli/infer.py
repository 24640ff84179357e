"""`infer`: an inference case on this host, the inference pipeline's steps a-g (JSON)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from case_runners.core.cli_io import print_json
from case_runners.core.defaults import (
    VENDOR,
)


def cmd_infer(args: argparse.Namespace) -> int:
    from case_runners.core.paths import project_root
    from case_runners.plan.inference_config import resolve_inference
    from case_runners.tasks.inference.pipeline import run_pipeline
    root = project_root()
    resolved, notes = resolve_inference(args.case, args.vendor, root)
    for note in notes:
        print(note, file=sys.stderr)
    # stdout is the JSON document; progress and exporters' chatter go to stderr
    with contextlib.redirect_stdout(sys.stderr):
        result = run_pipeline(resolved, root, Path(args.work_dir), args.data_dir,
                              log=lambda line: print(line, file=sys.stderr, flush=True))
    print_json({"config": resolved.to_json(), "notes": notes, "result": result})
    return 0


def add_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("infer", help="an inference case on this host: the inference pipeline, steps a-g (JSON)")
    p.add_argument("case")
    p.add_argument("--vendor", default=VENDOR)
    p.add_argument("--work-dir", required=True, help="where the ONNX file and the compiled engine go")
    p.add_argument("--data-dir")
    p.set_defaults(func=cmd_infer)
