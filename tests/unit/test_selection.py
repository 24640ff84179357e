"""Case selection forms users write, and the errors they get for bad ones."""

import pytest

from case_runners.plan.config.selection import parse_selections, split_framework


def test_flagperf_mapping_form_gives_every_field():
    sels, errors = parse_selections({"resnet50:pytorch:A100:2:8:3": "/data/imagenet"})
    assert errors == []
    (sel,) = sels
    assert (sel.case, sel.framework, sel.hardware, sel.nnodes, sel.nproc, sel.repeat, sel.data_dir) == \
        ("resnet50", "pytorch", "A100", 2, 8, 3, "/data/imagenet")
    assert sel.case_id == "resnet50_A100x2x8"


@pytest.mark.parametrize("raw", ["digits_cnn", ["digits_cnn"], [{"case": "digits_cnn"}]])
def test_short_forms_take_defaults(raw):
    (sel,), errors = parse_selections(raw)
    assert errors == []
    assert (sel.case, sel.nnodes, sel.nproc, sel.repeat, sel.hardware) == ("digits_cnn", 1, 1, 1, None)


def test_numbers_given_as_strings_from_extra_vars_are_accepted():
    (sel,), errors = parse_selections([{"case": "digits_cnn", "nproc": "2", "repeat": "3"}])
    assert errors == [] and (sel.nproc, sel.repeat) == (2, 3)


def test_every_bad_selection_is_reported_at_once():
    _, errors = parse_selections([{"case": "digits_cnn", "repeat": "abc"}, {"case": "x", "nproc": 0},
                                  {"case": "y", "colour": "red"}])
    text = [str(e) for e in errors]
    assert len(text) == 3
    assert "perfplay_cases[0].repeat" in text[0] and "expected an integer, got 'abc'" in text[0]
    assert "perfplay_cases[1].nproc" in text[1] and "0 is out of range (allowed: 1 <= nproc <= 256)" in text[1]
    assert "perfplay_cases[2].colour" in text[2] and "allowed:" in text[2] and "nproc" in text[2]


def test_wrong_container_type_is_explained():
    _, errors = parse_selections(42)
    assert "must be a list of cases" in str(errors[0])


SURVEY_YAML = """\
- case: digits_cnn
  nproc: 2
  overrides: {max_steps: 5}
- resnet50
"""


@pytest.mark.parametrize("text", [
    pytest.param('[{"case": "digits_cnn", "nproc": 2, "overrides": {"max_steps": 5}}, "resnet50"]', id="json"),
    pytest.param(SURVEY_YAML, id="yaml"),
])
def test_a_list_written_as_text_is_read_as_the_list(text):
    """An AWX survey's text field gives perfplay_cases as a string."""
    sels, errors = parse_selections(text)
    assert errors == []
    assert [(s.case, s.nproc, s.overrides, s.source) for s in sels] == [
        ("digits_cnn", 2, {"max_steps": 5}, "perfplay_cases[0]"), ("resnet50", 1, {}, "perfplay_cases[1]")]


def test_a_flagperf_mapping_written_as_text():
    (sel,), errors = parse_selections('{"resnet50:pytorch:A100:2:8:3": "/data/imagenet"}')
    assert errors == [] and (sel.case_id, sel.repeat, sel.data_dir) == ("resnet50_A100x2x8", 3, "/data/imagenet")


@pytest.mark.parametrize("text", ["digits_cnn", " digits_cnn\n", '"digits_cnn"'])
def test_a_case_name_stays_a_case_name(text):
    (sel,), errors = parse_selections(text)
    assert errors == [] and sel.case == "digits_cnn"


def test_blank_text_selects_nothing():
    _, errors = parse_selections("  \n")
    assert [str(e) for e in errors] == ["run vars: key 'perfplay_cases': no case selected"]


@pytest.mark.parametrize("text, where", [
    ('[{"case": "digits_cnn", "nproc": 2}', "line 1, column 36"),
    ("- case: digits_cnn\n nproc: 2\n", "line 2"),
    ("{case: digits_cnn, case: resnet50}", "duplicate key 'case'"),
])
def test_bad_text_names_perfplay_cases_and_the_allowed_forms(text, where):
    sels, errors = parse_selections(text)
    assert sels == [] and len(errors) == 1
    message = str(errors[0])
    assert message.startswith("run vars: key 'perfplay_cases': is not valid JSON or YAML (")
    assert where in message
    assert message.endswith("expected a list of cases, a case name, or FlagPerf's "
                            "{'case:framework:hardware:nnodes:nproc:repeat': data_dir} mapping; "
                            "or one of these written as JSON or YAML text")


def test_errors_inside_text_name_the_item():
    _, errors = parse_selections('[{"case": "digits_cnn", "repeat": "abc"}]')
    assert "perfplay_cases[0].repeat" in str(errors[0]) and "'abc'" in str(errors[0])


@pytest.mark.parametrize("raw", [
    {"resnet50:pytorch_1.8:A100:1:8:1": "/data"},        # FlagPerf's mapping
    ["resnet50:pytorch_1.8:A100:1:8:1"],                  # a FlagPerf key
    [{"case": "resnet50", "framework": "pytorch_1.8"}],   # the list of mappings
    [{"case": "resnet50:pytorch_1.8:A100"}],              # a key as the case of a mapping
])
def test_a_versioned_framework_key_is_pytorch_with_its_version(raw):
    (sel,), errors = parse_selections(raw)
    assert errors == []
    assert (sel.framework, sel.framework_version, sel.framework_key) == ("pytorch", "1.8", "pytorch_1.8")


@pytest.mark.parametrize("framework, name, version", [
    ("pytorch", "pytorch", None), ("pytorch_2.1.0", "pytorch", "2.1.0"), ("paddle_2.5.1", "paddle", "2.5.1"),
    ("pytorch_x", "pytorch_x", None), ("tensorrt-llm", "tensorrt-llm", None), ("_1.8", "_1.8", None)])
def test_split_framework(framework, name, version):
    assert split_framework(framework) == (name, version)
