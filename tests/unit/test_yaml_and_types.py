"""YAML loading and type coercion: errors name the file, line and key."""

import pytest

from case_runners.config.types import coerce
from case_runners.config.yaml_io import load_mapping
from case_runners.errors import ConfigError


def test_malformed_yaml_names_file_and_line(tmp_path):
    path = tmp_path / "config_CPUx1x1.yaml"
    path.write_text("batch_size: 32\nlr: [0.1\n")
    with pytest.raises(ConfigError) as err:
        load_mapping(path)
    assert "config_CPUx1x1.yaml" in str(err.value) and "malformed YAML at line" in str(err.value)


def test_duplicate_key_is_an_error_not_a_silent_override(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("lr: 0.1\nlr: 0.2\n")
    with pytest.raises(ConfigError, match="duplicate key 'lr'"):
        load_mapping(path)


def test_top_level_must_be_a_mapping(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="must be a mapping"):
        load_mapping(path)


def test_yaml_tags_that_run_code_are_refused(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("x: !!python/object/apply:os.system ['true']\n")
    with pytest.raises(ConfigError, match="malformed YAML"):
        load_mapping(path)


@pytest.mark.parametrize(("value", "like", "expected"), [
    ("8", 1, 8), (8.0, 1, 8), ("0.5", 1.0, 0.5), (2, 1.0, 2.0), ("true", False, True), ("no", True, False),
    ("adamw", "sgd", "adamw"),
])
def test_coerce_accepts_spellings_of_the_right_type(value, like, expected):
    assert coerce(value, like, key="k", file="f") == expected


@pytest.mark.parametrize(("value", "like"), [("abc", 1), (1.5, 1), ("x", 1.0), ("maybe", True), (3, "s"), (True, 1)])
def test_coerce_rejects_wrong_types_naming_key_and_file(value, like):
    with pytest.raises(ConfigError) as err:
        coerce(value, like, key="batch_size", file="vendor/cpu/x.yaml")
    assert "vendor/cpu/x.yaml: key 'batch_size'" in str(err.value)


def test_exponent_numbers_are_numbers_not_strings(tmp_path):
    path = tmp_path / "v.yaml"
    path.write_text("a: 9.7e12\nb: 1e12\nc: 4.0e-5\nd: 2_000\ne: '1e3'\n")
    assert load_mapping(path) == {"a": 9.7e12, "b": 1e12, "c": 4.0e-5, "d": 2000, "e": "1e3"}
