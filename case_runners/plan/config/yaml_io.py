"""The one YAML loader of perfplay's files and `--set` values: safe (no tags that build objects), and it refuses
duplicate keys, anchors and aliases (an alias bomb expands a few lines into gigabytes), nesting deeper than
MAX_DEPTH and documents over a size limit. Every error names the file (or value) and the line."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from case_runners.core.errors import ConfigError
from case_runners.core.paths import display_path

FILE_LIMIT = 1 << 20       # bytes of one YAML file
VALUE_LIMIT = 16 << 10     # bytes of one `--set KEY=VALUE` value
MAX_DEPTH = 64             # nested collections


class _Refused(yaml.MarkedYAMLError):
    """Well-formed YAML that perfplay does not accept."""


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping (PyYAML keeps the last silently), anchors and
    aliases, and deep nesting (PyYAML composes recursively)."""

    depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise _Refused(problem="YAML anchors and aliases are not allowed", problem_mark=event.start_mark)
        if self.depth >= MAX_DEPTH:
            raise _Refused(problem=f"YAML nested deeper than {MAX_DEPTH} levels", problem_mark=event.start_mark)
        self.depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key '{key}' (first at line {seen[key] + 1})", key_node.start_mark)
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
# YAML 1.1 reads 1e12 and 9.7e12 as strings; resolve them as numbers, as YAML 1.2 (and users) do.
_StrictLoader.add_implicit_resolver("tag:yaml.org,2002:float", re.compile(r"""^(?:
     [-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
    |\.[0-9_]+(?:[eE][-+]?[0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""", re.X), list("-+0123456789."))


def load_yaml(text: str, *, source: str, limit: int) -> Any:
    """One YAML document from `text` (named `source` in errors); ConfigError when it is refused."""
    size = len(text.encode("utf-8"))
    if size > limit:
        raise ConfigError(f"{size} bytes of YAML, over the limit of {limit} bytes", file=source)
    try:
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        message = f"{problem}{where}" if isinstance(exc, _Refused) else f"malformed YAML{where}: {problem}"
        raise ConfigError(message, file=source) from None


def load_mapping(path: Path, root: Path | None = None) -> dict[str, Any]:
    """Load a YAML file whose top level must be a mapping; an empty file is an empty mapping. Errors name the
    file relative to `root` (default: the project root)."""
    shown = display_path(path, root)
    try:
        with path.open("rb") as handle:
            raw = handle.read(FILE_LIMIT + 1)  # enough to tell it is too big
    except OSError as exc:
        raise ConfigError(f"cannot read file: {exc.strerror}", file=shown) from None
    if len(raw) > FILE_LIMIT:
        raise ConfigError(f"over the limit of {FILE_LIMIT} bytes of YAML", file=shown)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", file=shown) from None
    data = load_yaml(text, source=shown, limit=FILE_LIMIT)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"the top level must be a mapping of keys to values, not {type(data).__name__}",
                          file=shown)
    return data


def check_keys(data: dict[str, Any], keys: tuple[str, ...], required: tuple[str, ...], file: str) -> None:
    """A mapping's keys: each one of `keys`, each of `required` there; the first one that is not, named with the file
    and the allowed keys."""
    unknown = sorted(set(data) - set(keys), key=str)
    if unknown:
        raise ConfigError("unknown key", key=str(unknown[0]), file=file, allowed=keys)
    missing = [key for key in required if key not in data]
    if missing:
        raise ConfigError("is missing", key=missing[0], file=file, allowed=keys)
