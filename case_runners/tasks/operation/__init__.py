"""The operation task: FlagPerf's 52 single-operator benchmarks, each checked against a float64 CPU reference and
timed on the rank's device, natively and with an operator library the vendor's runtime hook enables.

operators.yaml is the standard table (shapes, dtypes, FLOP and byte formulas, tolerances; the data), table.py the
torch side (each operator's call and inputs), measure.py one operator x dtype x oplib measured, task.py the rank's
task. This module reads the table with the standard library only: the plan checks a vendor's operation.yaml with it.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import math
import operator
from pathlib import Path
from typing import Any

from case_runners.plan.config.yaml_io import load_mapping
from case_runners.records.operation import NATIVE as NATIVE

TABLE_FILE = Path(__file__).with_name("operators.yaml")
CASE = "operators"  # the one case of the task: the suite of operators, run by one rank
# FlagPerf's dtype names: (torch's dtype, bytes per element, vendor.yaml peak_flops key)
DTYPES: dict[str, tuple[str, int, str]] = {
    "FP32": ("float32", 4, "fp32"), "FP16": ("float16", 2, "fp16"), "BF16": ("bfloat16", 2, "bf16"),
    "INT32": ("int32", 4, "int32"), "INT16": ("int16", 2, "int16")}
FLOAT_DTYPES = ("FP32", "FP16", "BF16")
ELEMENT = "E"  # in a formula: the bytes of an element of the dtype
TIMING = ("warmup", "iterations")  # the table's defaults, a vendor's operation.yaml may change them


@dataclasses.dataclass(frozen=True)
class Operator:
    name: str
    source: str  # FlagPerf's case_config.yaml its standard shape comes from
    params: dict[str, Any]  # the standard shape
    check: dict[str, Any]  # the small shape correctness is checked at, whatever the timed shape
    dtypes: tuple[str, ...]
    flops: str  # formulas of the params and E
    bytes: str
    tolerance: dict[str, dict[str, float]]  # per dtype: atol, rtol
    millions: tuple[str, ...]  # params counting 2**20 elements (Melements): a multiple of 1/1024 is allowed


@functools.cache
def operators() -> dict[str, Operator]:
    """The standard table, by operator name in the table's order."""
    data = load_mapping(TABLE_FILE)
    default = data["tolerance"]
    return {name: Operator(name=name, source=spec["source"], params=dict(spec["params"]), check=dict(spec["check"]),
                           dtypes=tuple(spec.get("dtypes", FLOAT_DTYPES)), flops=spec["flops"], bytes=spec["bytes"],
                           tolerance={**default, **spec.get("tolerance", {})},
                           millions=tuple(spec.get("millions", [k for k in spec["params"] if k == "Melements"])))
            for name, spec in data["operators"].items()}


_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def formula(expression: str, values: dict[str, float]) -> float:
    """The value of a table formula: numbers, names of `values`, + - * / and parentheses."""
    def value(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return value(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value)
        if isinstance(node, ast.Name) and node.id in values:
            return float(values[node.id])
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            return float(_OPERATORS[type(node.op)](value(node.left), value(node.right)))
        raise ValueError(f"formula {expression!r}: {ast.dump(node)} is not a number, a param or + - * /")
    return value(ast.parse(expression, mode="eval"))


def flops_and_bytes(op: str, shape: dict[str, Any], dtype: str) -> tuple[float, float]:
    """The operator's FLOPs and bytes moved at `shape` in `dtype`."""
    spec, values = operators()[op], {**shape, ELEMENT: DTYPES[dtype][1]}
    return formula(spec.flops, values), formula(spec.bytes, values)


@functools.cache
def timing_defaults() -> dict[str, int]:
    data = load_mapping(TABLE_FILE)
    return {key: int(data[key]) for key in TIMING}


def param_problem(op: str, key: str, value: Any) -> str | None:
    """Why `value` is not a size for the param `key` of `op`; None when it is one."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        return f"must be a positive number, got {value!r}"
    if key in operators()[op].millions:
        if value * 1024 != int(value * 1024):
            return f"counts 2**20 elements: a multiple of 1/1024 (rows of 1024 elements), got {value!r}"
    elif not isinstance(value, int):
        return f"must be a positive integer, got {value!r}"
    return None


def operator_dtypes(op: str, dtypes: list[str] | None) -> list[str]:
    """The dtypes `op` runs in: its standard ones, those of `dtypes` where it names some of them."""
    own = list(operators()[op].dtypes)
    chosen = [d for d in own if dtypes is None or d in dtypes]
    return chosen or own
