"""The code's names, read from the source: a grace period and a timeout have one name per meaning (two modules
defining GRACE_S with 5 and 10 s read as one setting), and every function, class, constant and field defined is used
somewhere (a name nothing reads is dead code that looks like behaviour)."""

from __future__ import annotations

import ast
import functools
import io
import re
import subprocess
import tokenize
from collections import Counter, defaultdict
from pathlib import Path

from case_runners.core.paths import project_root

REPO = project_root()
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Names that other code calls by convention, not by name: Ansible's callback hooks, dunders, pytest's tests and hooks.
BY_CONVENTION = re.compile(r"^(__\w+__|v2_\w+|test_\w+|Test\w+|pytest_\w+)$")
CODE = ("case_runners", "vendor", "library", "module_utils", "playbooks")


def tracked(*suffixes: str) -> list[Path]:
    names = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True,
                           timeout=60).stdout.split()
    return [REPO / name for name in names if name.endswith(suffixes) and (REPO / name).is_file()]


def defined_names(path: Path) -> list[tuple[int, str]]:
    """The names a module defines at its top level and in its classes' bodies (methods, fields, constants); not
    those of a test's Fake class, which mimics an interface outside the repository."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[int, str]] = []
    classes = [c for c in tree.body if isinstance(c, ast.ClassDef) and not c.name.startswith("Fake")]
    for node in [*tree.body, *(n for c in classes for n in c.body)]:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if not any("fixture" in ast.unparse(d) for d in node.decorator_list):  # pytest passes those by name
                found.append((node.lineno, node.name))
        elif isinstance(node, ast.Assign):
            found += [(node.lineno, t.id) for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found.append((node.lineno, node.target.id))
    return found


def used_words() -> Counter[str]:
    """Every name in code (Python names and strings, not comments) and in the YAML, JSON and shell files."""
    words: Counter[str] = Counter()
    for path in tracked(".py", ".yml", ".yaml", ".json", ".j2", ".sh", ".toml", ".cfg"):
        text = path.read_text(encoding="utf-8", errors="replace")
        if path.suffix != ".py":
            words.update(WORD.findall(text))
            continue
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.NAME:
                words[token.string] += 1
            elif token.type == tokenize.STRING:
                words.update(WORD.findall(token.string))
    return words


def uses(name: str, path: Path, words: Counter[str]) -> int:
    """A doc fragment's part (READ_ONLY) is named in lower case by the modules that extend it (`fragment.read_only`)."""
    return words[name] + (words[name.lower()] if "doc_fragments" in path.parts and name.isupper() else 0)


def test_every_name_defined_is_used_somewhere() -> None:
    words = used_words()
    unused = [f"{path.relative_to(REPO)}:{line}: {name}" for path in tracked(".py")
              for line, name in defined_names(path) if uses(name, path, words) <= 1 and not BY_CONVENTION.match(name)]
    assert unused == [], "defined and never used: remove them"


@functools.cache
def code_names() -> tuple[tuple[str, str], ...]:
    """(name, module) of every name the code defines (read once for the tests that ask)."""
    return tuple((name, str(path.relative_to(REPO))) for path in tracked(".py")
                 if path.relative_to(REPO).parts[0] in CODE for _, name in defined_names(path))


def defined_in_several(pattern: str) -> dict[str, list[str]]:
    """Each name matching `pattern` that more than one module of the code defines, with those modules."""
    defined: defaultdict[str, list[str]] = defaultdict(list)
    for name, module in code_names():
        if re.fullmatch(pattern, name):
            defined[name].append(module)
    return {name: where for name, where in defined.items() if len(where) > 1}


def test_a_grace_period_has_one_name_per_meaning() -> None:
    assert defined_in_several(r"\w*GRACE_S") == {}


def test_a_timeout_has_one_name_per_meaning() -> None:
    """A case's default timeout and torch.distributed's were both DEFAULT_TIMEOUT_S; sourcing a vendor's environment
    file and a check-vendor run were both TIMEOUT_S."""
    assert defined_in_several(r"\w*TIMEOUT\w*") == {}
