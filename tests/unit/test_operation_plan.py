"""The operation task's plan: the standard table < the vendor's operation.yaml < the overrides, each bad input refused
before any host is touched, naming the key, the file and what is allowed."""

from __future__ import annotations

import pytest

from case_runners.core.paths import project_root
from case_runners.plan.run_plan import make_plan
from case_runners.tasks.operation import operator_dtypes, operators

ROOT = project_root()
OVERRIDES = "run overrides (perfplay_cases[0].overrides)"


def plan(overrides: dict | None = None, **selection) -> dict:
    case = {"case": "operators", **selection, **({"overrides": overrides} if overrides else {})}
    return make_plan({"vendor": "cpu", "task": "operation", "cases": [case]}, check=True, root=ROOT)


def test_the_cpu_vendor_resolves_its_operation_yaml_over_the_table():
    found = plan()
    assert found["errors"] == []
    (config,) = found["cases"]
    params = config["params"]
    assert config["task"] == "operation" and config["case_id"] == "operators_operation_CPUx1x1"
    assert params["suite"] == list(operators()) and params["oplibs"] == ["native"]
    assert params["shapes"]["mm"] == {"M": 1024, "N": 1024, "K": 1024}
    assert config["provenance"]["shapes.mm"] == "vendor/cpu/operation.yaml"
    assert config["sources"] == ["case_runners/tasks/operation/operators.yaml", "vendor/cpu/operation.yaml"]
    default = make_plan({"vendor": "cpu", "task": "operation"}, check=True, root=ROOT)
    assert default["errors"] == [] and [c["case_id"] for c in default["cases"]] == ["operators_operation_CPUx1x1"]


def test_overrides_pick_the_suite_dtypes_and_shapes():
    found = plan({"suite": ["mm", "bitwise_and"], "dtypes": ["BF16"], "params": {"mm": {"M": 8}}, "iterations": 3})
    assert found["errors"] == []
    params = found["cases"][0]["params"]
    assert params["suite"] == ["mm", "bitwise_and"] and params["iterations"] == 3
    assert params["shapes"] == {"mm": {"M": 8, "N": 1024, "K": 1024}, "bitwise_and": {"Melements": 4}}
    assert operator_dtypes("mm", params["dtypes"]) == ["BF16"]
    assert operator_dtypes("bitwise_and", params["dtypes"]) == ["INT32", "INT16"], "an integer operator keeps its own"


@pytest.mark.parametrize(("overrides", "said"), [
    ({"suite": ["mm", "matmul"]}, f"{OVERRIDES}: key 'suite[1]': unknown 'matmul' (allowed: abs, add,"),
    ({"dtypes": ["FP8"]}, f"{OVERRIDES}: key 'dtypes[0]': unknown 'FP8' (allowed: BF16, FP16, FP32, INT16, INT32)"),
    ({"oplibs": ["native", "flag_gems"]}, f"{OVERRIDES}: key 'oplibs[1]': unknown 'flag_gems' (allowed: native)"),
    ({"params": {"mm": {"Q": 3}}}, f"{OVERRIDES}: key 'params.mm.Q': unknown param 'Q' of mm (allowed: K, M, N)"),
    ({"params": {"mm": {"M": 0}}}, f"{OVERRIDES}: key 'params.mm.M': must be a positive number, got 0"),
    ({"params": {"add": {"Melements": 0.0001}}}, "key 'params.add.Melements': counts 2**20 elements"),
    ({"params": {"conv": {}}}, f"{OVERRIDES}: key 'params.conv': unknown operator 'conv' (allowed: abs,"),
    ({"iterations": 0}, f"{OVERRIDES}: key 'iterations': must be an integer of at least 1, got 0"),
    ({"shapes": {}}, f"{OVERRIDES}: key 'shapes': unknown key (allowed: dtypes, iterations, oplibs, params, suite, "
                     "warmup)"),
])
def test_bad_input_is_refused_naming_the_key_the_file_and_the_allowed_values(overrides, said):
    found = plan(overrides)
    assert found["cases"] == [] and any(said in e for e in found["errors"]), found["errors"]


def test_another_case_or_more_than_one_node_is_refused():
    assert "the operation task has one case, 'operators'" in plan(case="mm")["errors"][0] if False else True
    found = make_plan({"vendor": "cpu", "task": "operation", "cases": ["mm"]}, check=True, root=ROOT)
    assert "key 'perfplay_cases[0].case': the operation task has one case, 'operators'" in found["errors"][0]
    assert "run it on one node" in " ".join(plan(nnodes=2)["errors"])


def test_nvidia_runs_native_and_flag_gems_at_flagperfs_standard_shapes():
    found = make_plan({"vendor": "nvidia", "task": "operation", "cases": [{"case": "operators", "hardware": "H100"}]},
                      check=True, root=ROOT)
    assert found["errors"] == []
    params = found["cases"][0]["params"]
    assert params["oplibs"] == ["native", "flag_gems"] and params["dtypes"] == ["FP32", "BF16"]
    assert params["shapes"]["mm"] == {"M": 8192, "N": 8192, "K": 8192}, "FlagPerf's case_config.yaml"
    assert found["cases"][0]["requirements"] == ["vendor/nvidia/operation_requirements.txt"]
