"""Every case README, and the one new-case writes, has the sections of the case README template (docs/adding-a-case.md:
model and source, data and its preparation, environment, how to start, results beside the reference; then FLOPs
and params), defined once in case_runners/vendors/scaffold CASE_README_SECTIONS."""

from __future__ import annotations

import pytest

from case_runners.cases import case_dir, code_cases
from case_runners.core.paths import display_path, project_root
from case_runners.vendors.scaffold import CASE_README_SECTIONS, missing_sections
from case_runners.vendors.scaffold.new_case import case_files


def _problems(shown: str, text: str) -> list[str]:
    return [f"{shown}: no section '## {title}' (the case README template: CASE_README_SECTIONS)"
            for title in missing_sections(text, CASE_README_SECTIONS)]


@pytest.mark.parametrize("case", code_cases())
def test_every_case_readme_has_the_template_sections(case: str) -> None:
    path = case_dir(case) / "README.md"
    assert _problems(display_path(path, project_root()), path.read_text(encoding="utf-8")) == []


def test_the_new_case_readme_has_them() -> None:
    assert _problems("new-case's README.md", case_files("toy")["README.md"]) == []


def test_a_missing_section_is_named_with_its_readme() -> None:
    text = case_files("toy")["README.md"].replace("## Environment\n", "").replace("## Results\n", "## Result\n")
    assert _problems("case_runners/cases/toy/README.md", text) == [
        "case_runners/cases/toy/README.md: no section '## Environment' (the case README template: "
        "CASE_README_SECTIONS)",
        "case_runners/cases/toy/README.md: no section '## Results' (the case README template: CASE_README_SECTIONS)"]
