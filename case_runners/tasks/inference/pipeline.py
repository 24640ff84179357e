"""The inference pipeline (FlagPerf's), steps a-g, and the switches that skip them.

    a. init              the resolved config (configurations + parameters), the work dir
    b. data and model    case.build_dataloader; case.create_model (None with no_validation)
    c. validation        case.model_forward on the framework model (skipped with no_validation)
    d. ONNX export       case.export_model (skipped with exist_onnx_path)
    e. compile           vendor/<vendor>/engines/<compiler>.py InferModel(config, onnx_path, model); with
                         exist_compiler_path the engine loads that file instead of compiling
    f. engine inference  case.engine_forward through InferModel.__call__
    g. summary           throughputs, accuracies, agreement of the two paths, FLOPs

compiler: null goes from c straight to g. A case is a package case_runners.cases.<case>.inference with the
six functions build_dataloader, create_model, evaluator, model_forward, export_model, engine_forward.
A stop request (SIGTERM, stop_request.py) is honoured before each step and each batch of forward_loop.
"""

from __future__ import annotations

import importlib
import importlib.util
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from case_runners.core import files
from case_runners.core.errors import ConfigError, PerfplayError
from case_runners.rank import stop_request
from case_runners.records.names import INFERENCE_STEP_NAMES
from case_runners.records.resolved import InferenceConfig
from case_runners.vendors.layout import vendor_engines

CASE_FUNCTIONS = ("build_dataloader", "create_model", "evaluator", "model_forward", "export_model", "engine_forward")


def load_engine(root: Path, vendor: str, compiler: str) -> type:
    """The InferModel class of vendor/<vendor>/engines/<compiler>.py."""
    path = root / "vendor" / vendor / "engines" / f"{compiler}.py"
    if not path.is_file():
        raise ConfigError(f"vendor '{vendor}' has no engine '{compiler}'", key="compiler",
                          allowed=vendor_engines(root, vendor))
    spec = importlib.util.spec_from_file_location(f"perfplay_engine_{vendor}_{compiler}", path)
    if spec is None or spec.loader is None:  # not for a .py file
        raise PerfplayError(f"{path}: Python cannot import it")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.InferModel


def load_case(case: str) -> Any:
    module = importlib.import_module(f"case_runners.cases.{case}.inference")
    missing = [name for name in CASE_FUNCTIONS if not callable(getattr(module, name, None))]
    if missing:
        raise PerfplayError(f"inference case {case} lacks {', '.join(missing)}")
    return module


def forward_loop(run_batch: Callable, dataloader: Any, evaluator: Callable, config: dict[str, Any],
                 log: Callable[[str], None], what: str) -> dict[str, Any]:
    """Run every batch `repeat` times: whole time (data, compute, evaluation) and core time (compute only,
    less the engine's foo_time). Batches are (input, ..., labels); the evaluator returns (correct, predictions)
    or (correct, predictions, evaluated) when the accuracy is not per item (masked tokens)."""
    core = foo_total = 0.0
    items = correct = evaluated = 0
    predictions: list[int] = []
    started = time.perf_counter()
    for epoch in range(int(config["repeat"])):
        for step, batch in enumerate(dataloader, 1):
            stop_request.check()
            *inputs, labels = batch
            tick = time.perf_counter()
            outputs, foo = run_batch(inputs)
            core += time.perf_counter() - tick - foo
            foo_total += foo
            right, predicted, *counted = evaluator(outputs, labels)  # (correct, predictions[, evaluated])
            correct += right
            evaluated += counted[0] if counted else len(labels)
            items += len(labels)
            if epoch == 0:
                predictions += predicted
            if step % int(config["log_freq"]) == 0:
                log(f"{what}: repeat {epoch + 1} step {step}: {items / (time.perf_counter() - started):.1f} items/s")
    whole = time.perf_counter() - started
    return {"items": items, "whole_s": whole, "core_s": core, "foo_s": foo_total,
            "accuracy": correct / max(evaluated, 1), "predictions": predictions}


def torch_forward(model: Any, dataloader: Any, evaluator: Callable, config: dict[str, Any]) -> dict[str, Any]:
    """The validation path (step c) of a torch model: forward_loop with the inputs moved to the model's device,
    the device synchronised inside the core time, the outputs back on the CPU."""
    import torch

    device = next(model.parameters()).device
    synchronize = config.get("synchronize") or (lambda: None)

    def run(inputs: list[Any]) -> tuple[list[Any], float]:
        with torch.inference_mode():
            outputs = model(*[t.to(device, non_blocking=True) for t in inputs])
            synchronize()
            return [outputs.cpu()], 0.0
    return forward_loop(run, dataloader, evaluator, config, print, "validation")


STEP_NAMES = INFERENCE_STEP_NAMES


def run_pipeline(resolved: InferenceConfig, root: Path, work_dir: Path, data_dir: str | None = None,
                 log: Callable[[str], None] = print, device: str = "cpu",
                 on_step: Callable[[str, dict[str, Any]], object] | None = None,
                 synchronize: Callable[[], None] | None = None,
                 on_begin: Callable[[str, str], object] | None = None) -> dict[str, Any]:
    """Steps a-g for one resolved inference config on `device` (the torch model's); the summary record.
    on_begin(step, name) is called as each step starts, on_step(step, info) as it ends. synchronize (the vendor
    runtime's wait for the device, in the case's and engine's config as "synchronize") bounds every timed forward
    pass."""
    started = time.perf_counter()
    conf = {**resolved.settings(), "work_dir": str(work_dir), "data_dir": data_dir,
            "device": device, "synchronize": synchronize}
    steps: list[str] = []

    def begin(step: str) -> None:
        stop_request.check(f"inference step {step} ({STEP_NAMES[step]})")
        if on_begin:
            on_begin(step, STEP_NAMES[step])

    def done(step: str, **info: Any) -> None:
        steps.append(step)
        log(f"step {step} ({STEP_NAMES[step]}) done" + "".join(f", {k} {v}" for k, v in info.items()))
        if on_step:
            on_step(step, {"name": STEP_NAMES[step], **info})

    begin("a")
    files.secure_dir(work_dir)
    compiler = conf["compiler"]
    engine_class = load_engine(root, resolved.vendor, compiler) if compiler else None  # a: fail early
    if compiler and conf["exist_compiler_path"] and not Path(conf["exist_compiler_path"]).is_file():
        raise ConfigError(f"{conf['exist_compiler_path']} does not exist", key="exist_compiler_path")
    if compiler and conf["exist_onnx_path"] is not None and getattr(engine_class, "needs_onnx", True):
        _check_onnx(conf["exist_onnx_path"], bool(conf["exist_compiler_path"]))  # engines that compile torch do not
    case = load_case(resolved.case_package)
    done("a")

    begin("b")
    dataloader = case.build_dataloader(conf)
    model = None if conf["no_validation"] else case.create_model(conf).to(device)
    done("b", model=type(model).__name__ if model is not None else None)
    validation = None
    if model is not None:
        begin("c")
        validation = case.model_forward(model, dataloader, case.evaluator, conf)
        done("c", accuracy=round(validation["accuracy"], 4),
             items_per_s_core=round(validation["items"] / validation["core_s"], 2))
    inference = None
    onnx_path = compile_s = None
    if engine_class is not None:  # a compiler was given
        onnx_path = conf["exist_onnx_path"]
        if onnx_path is None:
            begin("d")
            onnx_path = str(case.export_model(model, conf))
            done("d", onnx=onnx_path)
        begin("e")  # or loading the compiled file
        tick = time.perf_counter()
        engine = engine_class(conf, onnx_path, model)
        compile_s = time.perf_counter() - tick
        if not conf["exist_compiler_path"]:
            done("e", compiler=compiler, compile_s=round(compile_s, 3))
        begin("f")
        inference = case.engine_forward(engine, dataloader, case.evaluator, conf)
        done("f", accuracy=round(inference["accuracy"], 4),
             items_per_s_core=round(inference["items"] / inference["core_s"], 2))
    begin("g")
    steps.append("g")
    result = summarize(conf, validation, inference, steps, onnx_path, compile_s, time.perf_counter() - started)
    result["compiled_path"] = getattr(engine, "compiled_path", None) if compiler else None
    if on_step:
        on_step("g", {"name": STEP_NAMES["g"]})
    return result


def _check_onnx(path: str, compiled_given: bool) -> None:
    """A named ONNX file must exist and parse (unless the engine loads a compiled file instead)."""
    if compiled_given and not Path(path).is_file():
        return  # exist_onnx_path may be any placeholder when the compiled engine is given
    if not Path(path).is_file():
        raise ConfigError(f"ONNX file {path} does not exist", key="exist_onnx_path")
    import onnx
    try:
        onnx.checker.check_model(onnx.load(path))
    except Exception as exc:  # onnx raises DecodeError, ValidationError, ... for a broken file
        raise ConfigError(f"{path} is not a valid ONNX model ({type(exc).__name__}: {str(exc)[:200]})",
                          key="exist_onnx_path") from None


def summarize(conf: dict[str, Any], validation: dict | None, inference: dict | None, steps: list[str],
              onnx_path: str | None, compile_s: float | None, e2e_s: float) -> dict[str, Any]:
    def rate(part: dict | None, key: str) -> float | None:
        return part["items"] / part[key] if part and part[key] > 0 else None

    agreement = None
    if validation and inference:
        pairs = list(zip(validation["predictions"], inference["predictions"]))
        agreement = sum(a == b for a, b in pairs) / len(pairs)
    p_core = rate(inference, "core_s")
    return {
        "steps": steps,
        "compiler": conf["compiler"],
        "precision": "fp16" if conf["fp16"] else "fp32",
        "batch_size": conf["batch_size"],
        "p_validation_whole": rate(validation, "whole_s"),
        "p_validation_core": rate(validation, "core_s"),
        "p_inference_whole": rate(inference, "whole_s"),
        "p_inference_core": p_core,
        "validation_items": validation["items"] if validation else None,
        "inference_items": inference["items"] if inference else None,
        "validation_accuracy": validation["accuracy"] if validation else None,
        "inference_accuracy": inference["accuracy"] if inference else None,
        "agreement": agreement,
        "foo_time_s": inference["foo_s"] if inference else None,
        "compile_s": compile_s,
        "onnx_path": onnx_path,
        "pipeline_time_s": e2e_s,
        "flops_per_item": conf["flops"],
        "flops_per_s": conf["flops"] * p_core if p_core else None,
    }
