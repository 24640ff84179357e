"""Ranges: every param's value is checked against the range declared with it, in every layer, at plan time.
Each error names the key, the file the value came from, the value and the allowed range."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

import case_runners.cases
from case_runners.cases import list_cases
from case_runners.core.errors import ConfigError
from case_runners.core.paths import project_root
from case_runners.plan.config.constraints import make_constraint
from case_runners.plan.inference_config import inference_cases, resolve_inference
from case_runners.plan.layering import load_case_base
from case_runners.plan.run_plan import make_plan

OVERRIDES = "run overrides (perfplay_cases[0].overrides)"
RUN_VARS = "run vars"


def plan(cases, root: Path | None = None, **request):
    return make_plan({"vendor": "cpu", "cases": cases, **request}, check=True, root=root)


def only_error(result) -> str:
    assert not result["ok"]
    assert len(result["errors"]) == 1, result["errors"]
    return result["errors"][0]


def assert_names(error: str, *parts: str) -> None:
    for part in parts:
        assert part in error, f"{part!r} not in {error!r}"


@pytest.mark.parametrize("case, key, value, shown, allowed", [
    ("digits_cnn", "batch_size", -1, "-1 is out of range", "1 <= batch_size <= 65536"),
    ("digits_cnn", "batch_size", 0, "0 is out of range", "1 <= batch_size <= 65536"),
    ("digits_cnn", "batch_size", None, "null is not allowed", "1 <= batch_size <= 65536"),
    ("digits_cnn", "batch_size", 1e12, "1000000000000 is out of range", "1 <= batch_size <= 65536"),
    ("digits_cnn", "batch_size", "1e12", "expected an integer, got '1e12'", ""),
    ("digits_cnn", "lr", float("nan"), "nan is not a finite number", "0 < lr <= 10"),
    ("digits_cnn", "lr", "nan", "nan is not a finite number", "0 < lr <= 10"),
    ("digits_cnn", "lr", "inf", "inf is not a finite number", "0 < lr <= 10"),
    ("digits_cnn", "lr", 0, "0.0 is out of range", "0 < lr <= 10"),
    ("digits_cnn", "max_epochs", -1, "-1 is out of range", "0 <= max_epochs <= 10000"),
    ("digits_cnn", "num_workers", -1, "-1 is out of range", "0 <= num_workers <= 256"),
    ("digits_cnn", "momentum", 1.0, "1.0 is out of range", "0 <= momentum < 1"),
    ("digits_cnn", "seed", 2**32, "4294967296 is out of range", "0 <= seed <= 4294967295"),
    ("digits_cnn", "amp", "maybe", "expected a boolean, got 'maybe'", "true/false, yes/no, on/off, 1/0"),
    ("resnet50", "depths", [3, 0, 6, 3], "key 'depths[1]': 0 is out of range", "1 <= depths[i] <= 100"),
    ("resnet50", "depths", ["3", "x"], "key 'depths[1]': expected an integer, got 'x'", ""),
    ("resnet50", "depths", [1] * 9, "has length 9", "a list of 1 to 8 items, each 1 <= depths[i] <= 100"),
    ("resnet50", "depths", [], "[] has length 0", "a list of 1 to 8 items"),
    ("resnet50", "image_size", 8, "8 is out of range", "32 <= image_size <= 1024"),
    ("bert", "hidden_dropout", 1, "1.0 is out of range", "0 <= hidden_dropout < 1"),
    ("bert", "init_checkpoint", "x" * 5000, "has length 5000", "a string of at most 4096 characters"),
])
def test_an_override_out_of_range_is_rejected_naming_key_file_value_and_range(case, key, value, shown, allowed):
    error = only_error(plan([{"case": case, "overrides": {key: value}}]))
    assert_names(error, f"{OVERRIDES}: key '{key}", shown, allowed)


def test_a_vendor_file_out_of_range_names_that_file(tmp_path: Path):
    root = tmp_path / "project"
    shutil.copytree(project_root() / "vendor", root / "vendor")
    (root / "vendor/cpu/cases/digits_cnn/config_CPUx1x1.yaml").write_text("---\nbatch_size: 0\nlr: .nan\n")
    result = plan(["digits_cnn"], root=root)
    assert result["errors"] == [
        "vendor/cpu/cases/digits_cnn/config_CPUx1x1.yaml: key 'batch_size': 0 is out of range "
        "(allowed: 1 <= batch_size <= 65536)",
        "vendor/cpu/cases/digits_cnn/config_CPUx1x1.yaml: key 'lr': nan is not a finite number (allowed: 0 < lr <= 10)",
    ]


def test_every_problem_of_every_layer_is_reported_at_once():
    result = plan([{"case": "digits_cnn", "overrides": {"batch_size": -1, "num_workers": -1}},
                   {"case": "resnet50", "repeat": 0, "timeout_s": 0, "overrides": {"depths": [0]}},
                   {"case": "bert", "nproc": 0, "nnodes": 0, "overrides": {"lr": 0}}])
    keys = [error.split(": key ")[1].split(":")[0] for error in result["errors"]]
    assert keys == ["'perfplay_cases[1].repeat'", "'perfplay_cases[1].timeout_s'", "'perfplay_cases[2].nnodes'",
                    "'perfplay_cases[2].nproc'", "'batch_size'", "'num_workers'", "'depths[0]'"], result["errors"]


@pytest.mark.parametrize("value, expected", [("64", 64), (64.0, 64), ("true", True), ("0.1", 0.1), (2, 2.0)])
def test_strings_that_spell_values_are_still_accepted(value, expected):
    key = {bool: "amp", float: "lr"}.get(type(expected), "batch_size")
    result = plan([{"case": "digits_cnn", "overrides": {key: value}}])
    assert result["ok"], result["errors"]
    assert result["cases"][0]["params"][key] == expected and type(result["cases"][0]["params"][key]) is type(expected)


@pytest.mark.parametrize("selection, key, shown, allowed", [
    ({"repeat": 1000000000}, "perfplay_cases[0].repeat", "1000000000 is out of range", "1 <= repeat <= 1000"),
    ({"nproc": 0}, "perfplay_cases[0].nproc", "0 is out of range", "1 <= nproc <= 256"),
    ({"nproc": 100000}, "perfplay_cases[0].nproc", "100000 is out of range", "1 <= nproc <= 256"),
    ({"nnodes": 5000}, "perfplay_cases[0].nnodes", "5000 is out of range", "1 <= nnodes <= 4096"),
    ({"timeout_s": 10**9}, "perfplay_cases[0].timeout_s", "1000000000 is out of range", "1 <= timeout_s <= 604800"),
    ({"repeat": None}, "perfplay_cases[0].repeat", "null is not allowed", "1 <= repeat <= 1000"),
])
def test_a_selection_out_of_range_is_rejected(selection, key, shown, allowed):
    started = time.monotonic()
    error = only_error(plan([{"case": "digits_cnn", **selection}]))
    assert time.monotonic() - started < 10, "rejected before anything is expanded"
    assert_names(error, f"{RUN_VARS}: key '{key}'", shown, allowed)


def test_the_run_timeout_is_bounded():
    error = only_error(plan(["digits_cnn"], case_timeout_s="9999999999"))
    assert_names(error, "run vars: key 'perfplay_case_timeout_s'", "9999999999 is out of range",
                 "1 <= perfplay_case_timeout_s <= 604800")


@pytest.mark.parametrize("overrides, shown", [
    ({"batch_size": 0}, "key 'batch_size': 0 is out of range (allowed: 1 <= batch_size <= 65536)"),
    ({"repeat": 5000}, "key 'repeat': 5000 is out of range (allowed: 1 <= repeat <= 1000)"),
    ({"log_freq": 0}, "key 'log_freq': 0 is out of range (allowed: 1 <= log_freq <= 1000000)"),
    ({"fp16": "maybe"}, "key 'fp16': expected a boolean, got 'maybe'"),
    ({"compiler": "x" * 100}, "key 'compiler': 'xxxxx"),
])
def test_an_inference_override_out_of_range_is_rejected(overrides, shown):
    error = only_error(plan([{"case": "digits_cnn", "task": "inference", "overrides": overrides}]))
    assert_names(error, f"{OVERRIDES}: {shown}")


def test_inference_overrides_accept_spellings_and_null_where_allowed():
    result = plan([{"case": "digits_cnn", "task": "inference",
                    "overrides": {"batch_size": "16", "compiler": None, "exist_onnx_path": None}}])
    assert result["ok"], result["errors"]
    assert result["cases"][0]["params"]["batch_size"] == 16 and result["cases"][0]["params"]["compiler"] is None


def test_an_inference_vendor_file_out_of_range_names_that_file(tmp_path: Path):
    root = tmp_path / "checkout"
    shutil.copytree(project_root() / "case_runners/cases/digits_cnn/inference",
                    root / "case_runners/cases/digits_cnn/inference")
    shutil.copytree(project_root() / "vendor", root / "vendor", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "vendor/cpu/cases/digits_cnn/cpu_configurations.yaml").write_text("---\nbatch_size: 0\n")
    with pytest.raises(ConfigError) as error:
        resolve_inference("digits_cnn", "cpu", root)
    assert str(error.value) == ("vendor/cpu/cases/digits_cnn/cpu_configurations.yaml: key 'batch_size': 0 is out of "
                                "range (allowed: 1 <= batch_size <= 65536)")


# -- every param of every shipped case has a range, and its default is in it -----------------------------------


@pytest.mark.parametrize("case", list_cases())
def test_every_param_of_every_case_base_has_a_range(case):
    base, _ = load_case_base(case, project_root())
    assert set(base["constraints"]) == set(base["params"])


@pytest.mark.parametrize("case", inference_cases(project_root()))
def test_every_inference_case_loads_with_its_ranges(case):
    resolved, _ = resolve_inference(case, "cpu", project_root())
    assert resolved.parameters and all(not isinstance(v, dict) for v in resolved.parameters.values())


@pytest.fixture
def cases_copy(tmp_path: Path, monkeypatch) -> Path:
    """A copy of the shipped cases to break, in place of the package's."""
    copy = tmp_path / "cases"
    shutil.copytree(project_root() / "case_runners" / "cases", copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(case_runners.cases, "CASES_DIR", copy)
    return copy


@pytest.mark.parametrize("line, shown", [
    ("  dropout: 0.5\n", "key 'params.dropout': has no range: write it as {default: ..., min: ..., max: ...}"),
    ("  dropout: {default: 0.5, min: 0}\n", "key 'params.dropout': bad range declaration: a number needs a lower "
                                            "bound (min or above) and an upper one (max or below)"),
    ("  dropout: {default: 2.0, min: 0, max: 1}\n", "key 'params.dropout': bad default: 2.0 is out of range "
                                                    "(allowed: 0 <= dropout <= 1)"),
    ("  dropout: {min: 0, max: 1}\n", "key 'params.dropout': a param with a range needs its default"),
    ("  dropout: {default: 0.5, min: 0, max: 1, step: 1}\n", "bad range declaration: unknown key 'step'"),
    ("  label: {default: x}\n", "key 'params.label': bad range declaration: a string needs max_length or choices"),
    ("  sizes: {default: [1, 2], max_length: 4}\n", "a list needs max_length and items"),
])
def test_a_case_param_without_a_sound_range_fails_to_load(cases_copy: Path, line: str, shown: str):
    config = cases_copy / "digits_cnn" / "config.yaml"
    config.write_text(config.read_text() + line)
    error = only_error(plan(["digits_cnn"]))
    assert_names(error, "cases/digits_cnn/config.yaml: ", shown)


def test_a_shared_param_takes_its_range_from_one_place_only(cases_copy: Path):
    config = cases_copy / "digits_cnn" / "config.yaml"
    config.write_text(config.read_text().replace("  batch_size: 32 ", "  batch_size: {default: 32, min: 1, max: 9}"))
    assert_names(only_error(plan(["digits_cnn"])), "key 'params.batch_size': its range is declared once, in "
                                                   "case_runners/plan/config/shared_params.py; give only its default")


def test_a_case_default_out_of_a_shared_range_fails_to_load(cases_copy: Path):
    config = cases_copy / "digits_cnn" / "config.yaml"
    config.write_text(config.read_text() + "  num_workers: -2\n")
    assert_names(only_error(plan(["digits_cnn"])), "cases/digits_cnn/config.yaml: key "
                 "'params.num_workers': bad default: -2 is out of range")


def test_an_inference_parameter_without_a_range_fails_to_load(tmp_path: Path):
    root = tmp_path / "checkout"
    shutil.copytree(project_root() / "case_runners/cases/digits_cnn/inference",
                    root / "case_runners/cases/digits_cnn/inference")
    params = root / "case_runners/cases/digits_cnn/inference/parameters.yaml"
    text = params.read_text().replace("seed: 1234", "seed: {default: 1, min: 0, max: 9}")
    params.write_text(text + "temperature: 0.7\n")
    with pytest.raises(ConfigError) as error:
        resolve_inference("digits_cnn", "cpu", root)
    assert_names(str(error.value), "case_runners/cases/digits_cnn/inference/parameters.yaml: key 'temperature': "
                 "has no range", "parameters.yaml: key 'seed': its range is declared once")


@pytest.mark.parametrize("spec, like, shown", [
    ({"min": 1, "max": 2, "choices": [1]}, True, "bounds are for numbers, not bool"),
    ({"min": 0, "above": 0, "max": 1}, 1, "give min or above, max or below, not both"),
    ({"max_length": 3}, 1, "min_length and max_length are for strings and lists"),
    ({"nullable": True}, None, "a null default needs a type"),
    ({"type": "dict"}, {}, "unknown type 'dict'"),
    ({"min": "0", "max": 1}, 1, "min, max, above and below must be numbers"),
])
def test_bad_range_declarations_are_developer_errors(spec, like, shown):
    with pytest.raises(ConfigError, match="bad range declaration") as error:
        make_constraint(spec, like, key="k", file="f.yaml")
    assert shown in str(error.value)


def test_choices_and_nullable():
    constraint = make_constraint({"choices": ["sgd", "adamw"], "nullable": True}, "sgd", key="opt", file="f")
    assert constraint.check("adamw", key="opt", file="f") == "adamw"
    assert constraint.check(None, key="opt", file="f") is None
    with pytest.raises(ConfigError) as error:
        constraint.check("lamb", key="opt", file="f")
    assert str(error.value) == "f: key 'opt': 'lamb' is not one of the allowed values (allowed: adamw, null, sgd)"
