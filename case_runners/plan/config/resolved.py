"""The resolved config's outer shape, the same for every task (plan/layering.py for training, plan/inference.py for
inference, plan/base.py, plan/generate.py): its schema, its tasks and its default case timeout."""

from __future__ import annotations

RESOLVED_SCHEMA = "perfplay.resolved_config/1"
DEFAULT_CASE_TIMEOUT_S = 3600  # a case's timeout when neither the case nor the run gives one
TRAINING = "training"  # the task of a config without one
INFERENCE = "inference"  # the case's inference pipeline, steps a-g
BASE = "base"  # a hardware microbenchmark (case_runners/tasks/base/): its figures against the vendor's peaks
GENERATE = "generate"  # LLM generation latency (case_runners/tasks/generate/): TTFT, TPOT, tokens/s of a case's model
OPERATION = "operation"
TASKS = (TRAINING, INFERENCE, BASE, GENERATE)
