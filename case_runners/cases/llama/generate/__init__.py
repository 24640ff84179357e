"""The llama case's generate task, plan side (standard library only: the plan and the host preflight read it).

The rank side is model.py here: the model of the params (random weights or a checkpoint directory) and the
prompts. case_runners/tasks/generate/ measures them; plan/generate.py resolves the config (config.yaml here).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from case_runners.cases.llama.data import FORMAT, read_header, split_problems
from case_runners.cases.llama.model import SHAPE_PARAMS as SHAPE_PARAMS  # what a trained checkpoint must agree on
from case_runners.cases.llama.model import checkpoint_problems as checkpoint_problems  # (directory, params) -> [..]
from case_runners.cases.llama.model import shape_params as shape_params  # params -> those, an alias resolved
from case_runners.cases.llama.shapes import shape_of

PROMPT_SPLIT = "val"  # the token file prompts are cut from


def plan_problems(params: dict[str, Any]) -> list[tuple[str, str]]:
    """(param, message) for each prompt that would run past the model's context with its output."""
    limit = shape_of(params).max_positions
    longest = max(params["prompt_lens"]) + max(params["output_lens"])
    if longest <= limit:
        return []
    return [("prompt_lens", f"a prompt longer than the context: prompt_len {max(params['prompt_lens'])} + "
                            f"output_len {max(params['output_lens'])} = {longest} positions, more than model "
                            f"'{params['model']}' holds ({limit}); allowed: prompt_len + output_len <= {limit}")]


def data_problems(data_dir: str, params: dict[str, Any]) -> list[str]:
    """The prompts' token file (val.bin) against its sidecar and the model: each problem names the file."""
    if not Path(data_dir).is_dir():
        return [f"{data_dir}: not a directory; expected {FORMAT}"]
    header, problems = read_header(data_dir, PROMPT_SPLIT)
    if header is None:
        return problems
    return split_problems(data_dir, PROMPT_SPLIT, header,
                          {"vocab_size": shape_of(params).vocab, "seq_len": max(params["prompt_lens"])})
