"""Case selection forms users write, and the errors they get for bad ones."""

import pytest

from case_runners.config.selection import parse_selections


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
