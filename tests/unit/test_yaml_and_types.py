"""YAML loading (one loader, refusing what could hurt) and type conversion: errors name the file, line and key."""

import shutil
import subprocess
import sys

import pytest

from case_runners.core.errors import ConfigError
from case_runners.core.paths import project_root
from case_runners.plan.config.types import coerce, to_bool
from case_runners.plan.config.yaml_io import FILE_LIMIT, VALUE_LIMIT, load_mapping
from case_runners.plan.run_plan import make_plan


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
    assert coerce(value, type(like), key="k", file="f") == expected


@pytest.mark.parametrize(("value", "expected"), [
    (True, True), ("true", True), (" Yes", True), ("ON", True), ("1", True), (1, True),
    (False, False), ("False", False), ("no", False), ("off", False), ("0", False), (0, False),
])
def test_one_boolean_parser_reads_what_ansible_reads(value, expected):
    assert to_bool(value, key="k", file="f") is expected


@pytest.mark.parametrize("value", ["maybe", "y", "", 2, 1.0, None, [True]])
def test_a_bad_boolean_names_every_accepted_spelling(value):
    with pytest.raises(ConfigError) as err:
        to_bool(value, key="perfplay_clear_caches", file="run vars")
    assert str(err.value) == (f"run vars: key 'perfplay_clear_caches': expected a boolean, got {value!r} "
                              "(allowed: true/false, yes/no, on/off, 1/0)")


@pytest.mark.parametrize(("value", "like"), [("abc", 1), (1.5, 1), ("x", 1.0), ("maybe", True), (3, "s"), (True, 1)])
def test_coerce_rejects_wrong_types_naming_key_and_file(value, like):
    with pytest.raises(ConfigError) as err:
        coerce(value, type(like), key="batch_size", file="vendor/cpu/x.yaml")
    assert "vendor/cpu/x.yaml: key 'batch_size'" in str(err.value)


def test_exponent_numbers_are_numbers_not_strings(tmp_path):
    path = tmp_path / "v.yaml"
    path.write_text("a: 9.7e12\nb: 1e12\nc: 4.0e-5\nd: 2_000\ne: '1e3'\n")
    assert load_mapping(path) == {"a": 9.7e12, "b": 1e12, "c": 4.0e-5, "d": 2000, "e": "1e3"}


# -- refused YAML: anchors and aliases, deep nesting, oversized documents ----------------------------------------

ALIAS_BOMB = ("[&a [lol, lol, lol, lol, lol, lol, lol, lol, lol], &b [*a, *a, *a, *a, *a, *a, *a, *a, *a], "
              "&c [*b, *b, *b, *b, *b, *b, *b, *b, *b], &d [*c, *c, *c, *c, *c, *c, *c, *c, *c], "
              "&e [*d, *d, *d, *d, *d, *d, *d, *d, *d], &f [*e, *e, *e, *e, *e, *e, *e, *e, *e], "
              "&g [*f, *f, *f, *f, *f, *f, *f, *f, *f], &h [*g, *g, *g, *g, *g, *g, *g, *g, *g], "
              "&i [*h, *h, *h, *h, *h, *h, *h, *h, *h]]")


@pytest.fixture
def vendor_copy(tmp_path):
    root = tmp_path / "project"
    shutil.copytree(project_root() / "vendor", root / "vendor")
    return root


@pytest.mark.parametrize("text, line", [
    ("---\nbatch_size: &b 32\neval_batch_size: *b\n", 2),
    ("---\nbase: &base {batch_size: 32}\n<<: *base\n", 2),
    ("---\nbatch_size: 32\nlr: *nowhere\n", 3),
])
def test_anchors_and_aliases_in_a_project_file_are_refused_with_file_and_line(vendor_copy, text, line):
    (vendor_copy / "vendor/cpu/cases/digits_cnn/config_CPUx1x1.yaml").write_text(text)
    result = make_plan({"vendor": "cpu", "cases": ["digits_cnn"]}, check=True, root=vendor_copy)
    assert len(result["errors"]) == 1
    assert result["errors"][0].startswith("vendor/cpu/cases/digits_cnn/config_CPUx1x1.yaml: YAML anchors and aliases "
                                          f"are not allowed at line {line}, column ")


def test_a_file_over_the_size_limit_is_refused_unparsed(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text("---\n" + "# padding\n" * (FILE_LIMIT // 10) + "lr: 0.1\n")
    with pytest.raises(ConfigError, match=f"big.yaml: over the limit of {FILE_LIMIT} bytes of YAML"):
        load_mapping(path)


def test_deep_nesting_is_refused(tmp_path):
    path = tmp_path / "deep.yaml"
    path.write_text("x: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ConfigError, match="deep.yaml: YAML nested deeper than 64 levels at line 1"):
        load_mapping(path)


@pytest.mark.parametrize("value, expected", [
    (ALIAS_BOMB, "error: --set lr: YAML anchors and aliases are not allowed at line 1, column 2"),
    ("[" + "1, " * VALUE_LIMIT + "1]", f"bytes of YAML, over the limit of {VALUE_LIMIT} bytes"),
    ("[0.1", "error: --set lr: malformed YAML"),
])
def test_a_refused_set_value_stops_the_run_before_its_directory_exists(tmp_path, value, expected):
    results = tmp_path / "results"
    proc = subprocess.run([sys.executable, "-m", "case_runners", "run", "digits_cnn", "--set", f"lr={value}",
                           "--results-dir", str(results)], cwd=project_root(), capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and expected in proc.stderr, proc.stderr
    assert not results.exists(), "no run directory"
