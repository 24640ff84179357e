"""The names results are made of, each defined here once: statuses, stop reasons and metric keys.

Every writer and reader of a rank result, node result, round record or run summary takes them from here (the Ansible
modules, which cannot import case_runners, get what they need from the command line's answers). docs/results.md
explains each one.
"""

from __future__ import annotations

# The tasks are the resolved config's, named in the config leaf (which imports nothing of this): re-exported.
from case_runners.plan.config.resolved import BASE as BASE
from case_runners.plan.config.resolved import GENERATE as GENERATE
from case_runners.plan.config.resolved import INFERENCE as INFERENCE
from case_runners.plan.config.resolved import OPERATION as OPERATION
from case_runners.plan.config.resolved import TASKS as TASKS
from case_runners.plan.config.resolved import TRAINING as TRAINING

# -- statuses ----------------------------------------------------------------------------------------------------
SUCCESS = "success"  # reached its target (inference: the pipeline ran)
NOT_CONVERGED = "not_converged"  # ran to its end without reaching the target: a valid result
FAILED = "failed"
TIMEOUT = "timeout"  # the case timeout stopped the ranks
INTERRUPTED = "interrupted"  # a signal stopped the node; in the summary, a round that started and left no record
MISSING = "missing"  # (summary) a round of the plan that never started
UNREADABLE = "unreadable"  # (summary) a round whose round record cannot be read
RUNNING = "running"  # `wait`'s answer while the launcher still runs: no document has it

RANK_STATUSES = (SUCCESS, NOT_CONVERGED, FAILED)
NODE_STATUSES = (SUCCESS, FAILED, TIMEOUT, INTERRUPTED)
ROUND_STATUSES = (SUCCESS, NOT_CONVERGED, FAILED, TIMEOUT)  # an interrupted node fails its round
SUMMARY_ROUND_STATUSES = (*ROUND_STATUSES, INTERRUPTED, MISSING, UNREADABLE)
VALID_STATUSES = (SUCCESS, NOT_CONVERGED)  # a missed target is a valid result, counted in the means

# -- why training stopped (a rank result's stop_reason) -------------------------------------------------------------
TARGET_REACHED = "target_reached"
MAX_STEPS = "max_steps"
MAX_EPOCHS = "max_epochs"
TIME_BUDGET = "time_budget"
STOP_REASONS = (TARGET_REACHED, MAX_STEPS, MAX_EPOCHS, TIME_BUDGET)

# -- metrics --------------------------------------------------------------------------------------------------------
THROUGHPUTS = ("p_whole", "p_train", "p_core")  # global samples/s; a rank also reports its own as rank_<key>
THROUGHPUT_BASIS = "p_train"  # of the round record's throughput block, the per-node figures and the scaling table
MFU_BASIS = "p_core"  # what a training round's MFU is computed on
DEVICE_MEMORY = "device_memory"  # beside the metrics in a round record: the vendor monitor's peak and total
# A training round record's metrics: rank 0's, in this order.
TRAINING_METRICS = (*THROUGHPUTS, "init_time", "e2e_time", "train_time", "train_no_eval_time", "core_time",
                    "converged", "final_metric", "target", "metric", "samples", "steps", "epochs", "stop_reason",
                    "precision", "amp", "device", "peak_memory_bytes")
INFERENCE_THROUGHPUTS = ("p_validation_whole", "p_validation_core", "p_inference_whole", "p_inference_core")
INFERENCE_ACCURACIES = ("validation_accuracy", "inference_accuracy")
# An inference round record's metrics: the pipeline's, rank 0's, in this order.
INFERENCE_METRICS = (*INFERENCE_THROUGHPUTS, *INFERENCE_ACCURACIES, "agreement", "validation_items",
                     "inference_items", "e2e_time", "pipeline_time_s", "compile_s", "foo_time_s", "steps",
                     "compiler", "precision", "batch_size", "device", "onnx_path", "compiled_path", "flops_per_item",
                     "flops_per_s", "torch_peak_memory_bytes")
# The inference pipeline's steps (tasks/inference/pipeline.py), an inference record's `steps` and the INFERENCE_STEP
# events' `step`, with their names (the report shades them).
INFERENCE_STEP_NAMES = {"a": "init", "b": "data and model", "c": "framework validation", "d": "ONNX export",
                        "e": "compile", "f": "engine inference", "g": "summary"}
# A base round record's metrics: rank 0's figures of its benchmark (records/base.py), in this order.
BASE_METRICS = ("benchmark", "device", "measurements", "headlines", "convention", "e2e_time")
# A generate round record's metrics (records/generate.py): its combinations, pooled over the ranks, and their
# headline figures, in this order.
GENERATE_HEADLINE = ("ttft_ms", "tpot_ms", "tokens_per_s", "agreement")
GENERATE_METRICS = ("device", "dtype", "checkpoint", "prompts", "combinations", *GENERATE_HEADLINE, "e2e_time")
# An operation round record's metrics: rank 0's rows (records/operation.py) and the rows not correct, in this order.
OPERATION_METRICS = ("device", "oplibs", "operation", "incorrect", "e2e_time")
NODE_THROUGHPUTS = THROUGHPUTS  # a node's: the sums over its ranks of rank_<key>

# What the run summary shows of them: mean and std over the valid rounds.
DEVICE_MEMORY_PEAK = "device_memory_peak_bytes"  # the summary's name for metrics.device_memory.peak_used_bytes
SUMMARY_TRAINING_STATS = (*THROUGHPUTS, "e2e_time", "init_time", "final_metric")
SUMMARY_INFERENCE_STATS = (*INFERENCE_THROUGHPUTS, *INFERENCE_ACCURACIES, "agreement", "e2e_time", "compile_s",
                           DEVICE_MEMORY_PEAK)
SUMMARY_BASE_STATS = ("e2e_time",)  # a base case's headlines have their own statistics (records/summary.py)
SUMMARY_GENERATE_STATS = (*GENERATE_HEADLINE, "e2e_time")  # its combinations have their own (records/summary.py)
SUMMARY_OPERATION_STATS = ("e2e_time",)  # its rows are the last valid round's (records/summary.py)
SUMMARY_NODE_STATS = ("p_train", "p_core")
# What a round's compact digest (set_stats, the AWX artifact perfplay_rounds) shows of them.
COMPACT_TRAINING = (*THROUGHPUTS, "e2e_time", "final_metric", "converged")
COMPACT_INFERENCE = (*INFERENCE_THROUGHPUTS, *INFERENCE_ACCURACIES, "e2e_time")
COMPACT_BASE = ("benchmark", "headlines")
COMPACT_GENERATE = ("checkpoint", *GENERATE_HEADLINE)
COMPACT_OPERATION = ("oplibs", "incorrect")


def summary_stats(task: str | None) -> tuple[str, ...]:
    """The figures of a round the run summary has the mean and std of, for its task (training when None)."""
    return {INFERENCE: SUMMARY_INFERENCE_STATS, BASE: SUMMARY_BASE_STATS,
            GENERATE: SUMMARY_GENERATE_STATS, OPERATION: SUMMARY_OPERATION_STATS}.get(task or TRAINING,
                                                                                      SUMMARY_TRAINING_STATS)


def metric_keys(task: str | None) -> tuple[str, ...]:
    """A round record's metric keys for its task (training when None)."""
    return {INFERENCE: INFERENCE_METRICS, BASE: BASE_METRICS, GENERATE: GENERATE_METRICS,
            OPERATION: OPERATION_METRICS}.get(task or TRAINING, TRAINING_METRICS)
