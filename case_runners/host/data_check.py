"""Check a case's data directory before anything is launched (stdlib only: no torch on this path)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from case_runners.plan.config.resolved import BASE, GENERATE, INFERENCE, OPERATION, TRAINING
from case_runners.records.resolved import ResolvedConfig


def data_problems(case: str, params: dict[str, Any], data_dir: str | None, task: str = TRAINING) -> list[str]:
    """Problems with a case's data dir, each naming the path and the expected format; [] when fine.
    An inference case without a data dir runs on synthetic data (digits_cnn: scikit-learn's digits); a base
    benchmark and the operation task read no data."""
    if params.get("synthetic") or task in (BASE, OPERATION):
        return []
    if task == GENERATE:
        return generate_problems(case, params, data_dir)
    module = importlib.import_module(f"case_runners.cases.{case}.data")
    if task == INFERENCE:
        check = getattr(module, "check_inference_data_dir", module.check_data_dir)
        return list(check(data_dir, params)) if data_dir else []
    return list(module.check_data_dir(data_dir, params))


def generate_problems(case: str, params: dict[str, Any], data_dir: str | None) -> list[str]:
    """A generate case's prompts file (with a data dir; random ids without) and its checkpoint directory when the
    config names one by path ("trained" is checked by the plan: the run saves it)."""
    from case_runners.tasks.generate import CASE_MODULE, given_checkpoint

    module = importlib.import_module(CASE_MODULE.format(case=case))
    problems = list(module.data_problems(data_dir, params)) if data_dir else []
    checkpoint = given_checkpoint(str(params.get("checkpoint") or ""), data_dir)
    if checkpoint is not None:
        problems += [f"key 'checkpoint': {p}" for p in module.checkpoint_problems(checkpoint, params)]
    return problems


def check_data(config: ResolvedConfig) -> list[str]:
    """data_problems of a resolved case."""
    return data_problems(config.case_package, config.params, config.data_dir, config.task_name)


def check_inference_files(config: ResolvedConfig) -> list[str]:
    """An inference case's exist_compiler_path must be a file on this host (exist_onnx_path may be a placeholder
    then; the engine checks it at step e)."""
    if config.task_name != INFERENCE:
        return []
    path = config.params.get("exist_compiler_path")
    if path is None or Path(path).is_file():
        return []
    origin = config.provenance.get("exist_compiler_path", "the case's configurations")
    return [f"key 'exist_compiler_path' ({origin}) of {config.case_id}: {path} does not exist on this host "
            f"(a compiled engine file, or null to compile)"]
