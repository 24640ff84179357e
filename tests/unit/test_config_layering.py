"""Config layering: case base < vendor config < run overrides, with mutable and run-only keys enforced."""

import json
import shutil
from pathlib import Path

import pytest

from case_runners.cases import case_dir
from case_runners.core.errors import ConfigError
from case_runners.core.paths import project_root
from case_runners.plan import layering
from case_runners.plan.run_plan import make_plan


def plan(cases, vendor="cpu", **kw):
    return make_plan({"vendor": vendor, "cases": cases, **kw}, check=True)


def only_error(result):
    assert not result["ok"]
    assert len(result["errors"]) == 1, result["errors"]
    return result["errors"][0]


def test_layers_apply_in_order_and_provenance_names_the_file():
    result = plan([{"case": "digits_cnn", "nproc": 2, "overrides": {"lr": "0.1"}}])
    assert result["ok"], result["errors"]
    (config,) = result["cases"]
    assert config["case_id"] == "digits_cnn_CPUx1x2"
    assert config["params"]["lr"] == 0.1
    assert config["provenance"]["lr"] == "run overrides (perfplay_cases[0].overrides)"
    assert config["provenance"]["batch_size"] == "vendor/cpu/cases/digits_cnn/config_CPUx1x2.yaml"
    assert config["provenance"]["seed"] == "case_runners/cases/digits_cnn/config.yaml"
    assert config["vendor_info"]["dist_backend"] == "gloo"


def test_unknown_case_lists_the_cases():
    error = only_error(plan(["resnet5O"]))
    assert "unknown case 'resnet5O'" in error and "digits_cnn" in error and "resnet50" in error


def test_unknown_vendor_lists_the_vendors():
    error = only_error(plan(["digits_cnn"], vendor="nvidai"))
    assert "perfplay_vendor" in error and "allowed: cpu, nvidia" in error


def test_unknown_hardware_lists_the_vendors_hardware():
    error = only_error(plan([{"case": "resnet50", "hardware": "A10"}], vendor="nvidia"))
    assert "unknown hardware 'A10'" in error and "vendor/nvidia/vendor.yaml" in error and "H100" in error


def test_missing_scale_config_names_the_file_and_what_exists():
    error = only_error(plan([{"case": "digits_cnn", "nproc": 4}]))
    assert "config_CPUx1x4.yaml" in error and "allowed: CPUx1x1, CPUx1x2" in error


def test_immutable_key_is_rejected_with_the_mutable_list():
    error = only_error(plan([{"case": "bert", "overrides": {"vocab_size": 100}}]))
    assert "key 'vocab_size'" in error and "immutable" in error and "run overrides" in error
    assert "allowed:" in error and "batch_size" in error


def test_unknown_override_key_is_rejected_with_the_known_keys():
    error = only_error(plan([{"case": "digits_cnn", "overrides": {"learning_rate": 0.1}}]))
    assert "key 'learning_rate'" in error and "unknown config key" in error and "lr" in error


def test_wrong_type_in_override_names_key_and_source():
    error = only_error(plan([{"case": "digits_cnn", "overrides": {"max_epochs": "lots"}}]))
    assert "key 'max_epochs'" in error and "expected an integer, got 'lots'" in error


def test_all_errors_of_all_cases_are_reported_together():
    result = plan([{"case": "nope"}, {"case": "digits_cnn", "overrides": {"x": 1, "lr": "fast"}}])
    assert len(result["errors"]) == 3


@pytest.fixture
def project_copy(tmp_path):
    """A copy of vendor/ to break, with cases from the package."""
    root = tmp_path / "project"
    shutil.copytree(project_root() / "vendor", root / "vendor")
    return root


def test_malformed_vendor_yaml_names_file_and_line(project_copy):
    bad = project_copy / "vendor/cpu/cases/digits_cnn/config_CPUx1x1.yaml"
    bad.write_text("batch_size: 32\nlr: [0.05\n")
    result = make_plan({"vendor": "cpu", "cases": ["digits_cnn"]}, check=True, root=project_copy)
    error = only_error(result)
    assert "vendor/cpu/cases/digits_cnn/config_CPUx1x1.yaml" in error and "malformed YAML at line" in error


def test_immutable_key_in_vendor_file_names_that_file(project_copy):
    path = project_copy / "vendor/cpu/cases/bert/config_CPUx1x1.yaml"
    path.write_text(path.read_text() + "vocab_size: 1000\n")
    error = only_error(make_plan({"vendor": "cpu", "cases": ["bert"]}, check=True, root=project_copy))
    assert "vendor/cpu/cases/bert/config_CPUx1x1.yaml: key 'vocab_size'" in error


def test_vendor_config_may_not_set_a_run_only_key(project_copy):
    path = project_copy / "vendor/cpu/cases/resnet50/config_CPUx1x1.yaml"
    path.write_text(path.read_text() + "depths: [1, 1, 1, 1]\n")
    error = only_error(make_plan({"vendor": "cpu", "cases": ["resnet50"]}, check=True, root=project_copy))
    assert error.startswith("vendor/cpu/cases/resnet50/config_CPUx1x1.yaml: key 'depths': is run-only: "
                            "only a run override may set it, for a smoke test")
    assert "allowed:" in error and "batch_size" in error and "image_size" not in error


def test_vendor_config_may_set_tf32_and_stays_standard(project_copy):
    path = project_copy / "vendor/cpu/cases/resnet50/config_CPUx1x1.yaml"
    path.write_text(path.read_text() + "tf32: true\n")
    result = make_plan({"vendor": "cpu", "cases": ["resnet50"]}, check=True, root=project_copy)
    assert result["ok"], result["errors"]
    (config,) = result["cases"]
    assert config["params"]["tf32"] is True and config["standard"] is True and config["non_standard"] == []


def test_run_override_of_a_run_only_key_makes_the_config_non_standard():
    (config,) = plan([{"case": "resnet50", "overrides": {"depths": [1, 1, 1, 1], "batch_size": 8}}])["cases"]
    assert config["params"]["depths"] == [1, 1, 1, 1]
    assert config["standard"] is False and config["non_standard"] == ["depths"]
    (smoke,) = plan([{"case": "bert", "overrides": {"synthetic": "true", "num_layers": 2}}])["cases"]
    assert smoke["standard"] is False and smoke["non_standard"] == ["num_layers", "synthetic"]


def test_run_override_of_a_mutable_key_or_of_a_run_only_key_to_its_default_stays_standard():
    (config,) = plan([{"case": "resnet50", "overrides": {"lr": 0.2, "image_size": 224}}])["cases"]
    assert config["params"]["lr"] == 0.2
    assert config["standard"] is True and config["non_standard"] == []


def test_an_inference_config_says_whether_it_is_standard():
    swap = {"no_validation": True, "exist_onnx_path": "/models/digits.onnx"}
    standard, swapped = plan([{"case": "resnet50", "task": "inference"},
                              {"case": "digits_cnn", "task": "inference", "overrides": swap}])["cases"]
    assert standard["standard"] is True and standard["non_standard"] == []
    assert swapped["standard"] is False and swapped["non_standard"] == ["exist_onnx_path"]


@pytest.mark.parametrize("change, message", [
    (("run_only: []", "run_only: synthetic"), "key 'run_only': must be a list"),
    (("run_only: []", "run_only: [depths]"), "key 'run_only.depths': is listed as run_only but is not a param"),
    (("run_only: []", "run_only: [lr]"), "key 'run_only.lr': is listed as mutable (a vendor may set it) and as "
                                         "run_only"),
    (("run_only: []\n", ""), "key 'run_only': must be a list"),
])
def test_case_base_run_only_list_is_checked(tmp_path, monkeypatch, change, message):
    text = (case_dir("digits_cnn") / "config.yaml").read_text()
    assert change[0] in text
    (tmp_path / "config.yaml").write_text(text.replace(change[0], change[1]))
    monkeypatch.setattr(layering, "case_dir", lambda case: tmp_path)
    with pytest.raises(ConfigError) as error:
        layering.load_case_base("digits_cnn", tmp_path)
    assert str(error.value).startswith("config.yaml: " + message)


def test_plan_writes_resolved_configs_into_a_new_run_dir(tmp_path):
    result = make_plan({"vendor": "cpu", "cases": ["digits_cnn", "digits_cnn:pytorch:CPU:1:2:2"],
                        "results_dir": str(tmp_path)})
    assert result["ok"], result["errors"]
    run_dir = Path(result["run_dir"])
    assert run_dir.parent == tmp_path and run_dir.name.startswith("run")
    saved = json.loads((run_dir / "digits_cnn_CPUx1x2" / "resolved_config.json").read_text())
    assert saved["repeat"] == 2 and saved["nproc"] == 2
    again = make_plan({"vendor": "cpu", "cases": ["digits_cnn"], "results_dir": str(tmp_path)})
    assert again["run_dir"] != result["run_dir"], "two runs in the same second must not share a directory"


def test_check_mode_writes_nothing(tmp_path):
    result = make_plan({"vendor": "cpu", "cases": ["digits_cnn"], "results_dir": str(tmp_path)}, check=True)
    assert result["ok"] and result["run_dir"] is None and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("run_id", ["../escape", "a/b", "-x"])
def test_run_id_must_be_a_plain_name(run_id, tmp_path):
    result = make_plan({"vendor": "cpu", "cases": ["digits_cnn"], "results_dir": str(tmp_path), "run_id": run_id})
    assert "perfplay_run_id" in only_error(result)
    assert list(tmp_path.iterdir()) == []


def test_every_shipped_vendor_config_resolves():
    """Each config_<HW>x<nnodes>x<nproc>.yaml in vendor/ sets only mutable keys of the right type."""
    for path in sorted(project_root().glob("vendor/*/cases/*/config_*.yaml")):
        vendor, case = path.parts[-4], path.parts[-2]
        hardware, nnodes, nproc = path.stem.removeprefix("config_").rsplit("x", 2)
        result = plan([{"case": case, "hardware": hardware, "nnodes": nnodes, "nproc": nproc}], vendor=vendor)
        assert result["ok"], (path, result["errors"])


def test_resizing_the_model_voids_its_flops_figure_and_says_why():
    result = plan([{"case": "bert", "overrides": {"seq_len": 128}}])
    (config,) = result["cases"]
    assert config["flops_per_sample"] is None and "seq_len" in config["flops_note"]
    (same,) = plan([{"case": "bert", "overrides": {"batch_size": 8}}])["cases"]
    hand = layering.load_case_base("bert", project_root())[0]["flops_per_sample"]
    assert same["flops_per_sample"] == hand and same["flops_note"] is None


def test_counted_flops_are_left_to_rank_0_at_any_shape():
    """flops_per_sample: counted: the plan (no torch) names the params the count depends on; resizing the model
    does not void it (the rank counts at the run's shape)."""
    for overrides in ({}, {"image_size": 64, "depths": [1, 1, 1, 1]}):
        (config,) = plan([{"case": "resnet50", "overrides": overrides}])["cases"]
        assert config["flops_per_sample"] is None and "counted by rank 0" in config["flops_note"]
        assert config["flops_counted"] == ["image_size", "num_classes", "depths", "hidden_sizes", "embedding_size"]
    (hand,) = plan([{"case": "bert"}])["cases"]
    assert "flops_counted" not in hand
