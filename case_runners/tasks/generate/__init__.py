"""The generate task: a case's model decoding greedily with a KV cache on each rank's device, every token timed
(task.py the rank, decode.py the loop; records/generate.py the figures; plan/generate.py the config).

Which weights (param `checkpoint`): "" random ones; "trained" the checkpoint this run's earlier training of the
case saved (the plan names that case: resolved config `checkpoint_case`), found on the rank's host at
<run dir>/<training case id>/CHECKPOINT_DIR; else a checkpoint directory, absolute or relative to data_dir.
Standard library only here: the plan and the host preflight read it.
"""

from __future__ import annotations

from pathlib import Path

from case_runners.core.paths import CHECKPOINT_DIR
from case_runners.records.resolved import ResolvedConfig

RANDOM = ""  # checkpoint: random weights
TRAINED = "trained"  # checkpoint: this run's earlier training of the case
CASE_MODULE = "case_runners.cases.{case}.generate"  # stdlib: plan_problems, data_problems, checkpoint_problems
CASE_MODEL_MODULE = "case_runners.cases.{case}.generate.model"  # torch: build(params, dir), prompts(...)
# param decode (decode.py): how the torch path decodes; the tokens are the same
EAGER = "eager"  # transformers' DynamicCache, grown token by token
STATIC = "static"  # a StaticCache allocated once per combination
COMPILED = "compiled"  # the static cache and torch.compile of the one-token step (CUDA graphs on CUDA)
DECODES = (EAGER, STATIC, COMPILED)
# param engine: what generates and is timed; an engine beside torch reports its agreement with the torch path
TORCH = "torch"  # the torch path itself (decode.py)
VLLM = "vllm"  # vLLM's offline LLM API (vllm_engine.py), on a vendor that pins it (vendors/layout.py)
ENGINES = (TORCH, VLLM)


def given_checkpoint(checkpoint: str, data_dir: str | None) -> Path | None:
    """The directory a checkpoint param that is a path names (relative to data_dir); None for "" and "trained"."""
    if checkpoint in (RANDOM, TRAINED):
        return None
    path = Path(checkpoint).expanduser()
    return path if path.is_absolute() or not data_dir else Path(data_dir) / path


def checkpoint_dir(config: ResolvedConfig, config_path: str | Path) -> Path | None:
    """Where this host finds the config's checkpoint: None for random weights; the trained one in this run's
    directory on this host (the case's resolved config lies in <run dir>/<case id>/)."""
    checkpoint = str(config.params.get("checkpoint") or RANDOM)
    if checkpoint == TRAINED:
        return Path(config_path).resolve().parent.parent / str(config.checkpoint_case) / CHECKPOINT_DIR
    return given_checkpoint(checkpoint, config.data_dir)
