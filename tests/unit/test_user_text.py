"""What users read says what it means: no internal specification numbers ("seed 002", "§4.4") in the docs, the
READMEs, the scaffolds' templates, the case and vendor files, the inventories, the CLI's help, or any string
(a message) in case_runners/ and vendor/ code. Docstrings and comments cite only documents in the repository: no
specification numbers, no DESIGN.md or research notes kept outside it."""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

from case_runners.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]
INTERNAL = re.compile(r"\bseed[ -]?0\d\d\b|§ ?\d", re.IGNORECASE)
TEXT_FILES = ("README.md", "docs/**/*.md", "inventory/**/*.yml", "vendor/**/*.md", "vendor/**/*.yaml",
              "vendor/**/*.sh", "case_runners/cases/**/*.md", "case_runners/cases/**/*.yaml",
              "case_runners/vendors/scaffold/templates/**/*", "tests/vendor_testchip/**/*.md",
              "tests/vendor_testchip/**/*.yaml")
CODE = ("case_runners/**/*.py", "vendor/**/*.py", "tests/vendor_testchip/**/*.py")


def found_in(text: str) -> list[str]:
    return [m[0] for m in INTERNAL.finditer(text)]


def docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes of a module, its classes and functions."""
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def test_the_pattern_finds_what_it_must() -> None:
    assert found_in("as seed 002 says, seed-000 and Seed 003 (§4.4)") == ["seed 002", "seed-000", "Seed 003", "§4"]
    assert not found_in("seed 1234, seed: 0, manual_seed(seed)")


def test_no_internal_numbers_in_user_files() -> None:
    hits = [f"{path.relative_to(ROOT)}:{number}: {hit}"
            for pattern in TEXT_FILES for path in sorted(ROOT.glob(pattern)) if path.is_file()
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            for hit in found_in(line)]
    assert not hits, "internal spec numbers in user-facing files: " + "; ".join(hits)


def test_no_internal_numbers_in_messages() -> None:
    hits = []
    for pattern in CODE:
        for path in sorted(ROOT.glob(pattern)):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            skip = docstrings(tree)
            hits += [f"{path.relative_to(ROOT)}:{node.lineno}: {hit}" for node in ast.walk(tree)
                     if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
                     for hit in found_in(node.value)]
    assert not hits, "internal spec numbers in strings of the code: " + "; ".join(hits)


def test_no_internal_numbers_in_the_cli_help() -> None:
    parser = build_parser()
    helps = [parser.format_help()]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps += [sub.format_help() for sub in action.choices.values()]
    hits = [hit for text in helps for hit in found_in(text)]
    assert not hits, "internal spec numbers in `python -m case_runners` help: " + ", ".join(hits)


OUTSIDE = re.compile(r"\bseed[ -]?0\d\d\b|§ ?\d|\bDESIGN\.md\b|shared/(research|seeds)\b", re.IGNORECASE)
SOURCES = ("case_runners/**/*.py", "library/*.py", "module_utils/*.py", "playbooks/**/*.py", "playbooks/**/*.yml",
           "roles/**/*.yml", "bench/*.py", "vendor/**/*", "tests/**/*.py", "*.yml", "Makefile", ".ci/*")


def test_no_source_cites_a_document_outside_the_repository() -> None:
    me = Path(__file__).resolve()
    hits = [f"{path.relative_to(ROOT)}:{number}: {m[0]}"
            for pattern in SOURCES for path in sorted(ROOT.glob(pattern)) if path.is_file() and path != me
            and ".venv" not in path.parts and "__pycache__" not in path.parts
            for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
            for m in OUTSIDE.finditer(line)]
    assert not hits, "citations of documents that are not in the repository: " + "; ".join(hits)
