"""What FlagPerf's tree says about one vendor, read without running anything: its hardware names (the <HW> of its
config_<HW>x<N>x<P>.py), its dist_backend (the value its pytorch configs assign), the torch device its pytorch code
uses, the monitor tool its <vendor>_monitor.py calls, the base image of its docker_image/pytorch*/Dockerfile, and,
when the run settings name it (VENDOR), their container options, visible-devices variable and shm size; for the
other vendors, those test_conf.py lists in its comments (commented_settings).
"""

from __future__ import annotations

import re
import shlex
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from case_runners.vendors.flagperf.pyconfig import read_config
from case_runners.vendors.flagperf.sources import VENDOR_CONFIG

# The management tools FlagPerf's monitors call: nvidia-smi, ixsmi, xpu-smi, npu-smi, mx-smi, rocm-smi,
# mthreads-gmi, cnmon.
MONITOR_TOOL = re.compile(r"\b(?:[a-z]+-)?[a-z]*(?:smi|gmi)\b|\bcnmon\b")
TORCH_DEVICE = re.compile(r"\btorch\.([a-z]+)\.(?:amp|current_device|device_count|set_device|synchronize)\b")
FROM_LINE = re.compile(r"^\s*FROM\s+(?:--\S+\s+)*(\S+)", re.MULTILINE | re.IGNORECASE)
# test_conf.py's comments on the settings of each vendor: a heading, then `#   <VAR> for <vendor>, <vendor>` lines
# (ACCE_VISIBLE_DEVICE_ENV_NAME) or `#   <vendor>:` lines, each followed by its value's string literals.
COMMENT_HEADING = re.compile(r"#\s*possible values? of (\w+) (?:are|is):?\s*$")
COMMENT_FOR = re.compile(r"#\s+(\w+) for (\w+(?:\s*,\s*\w+)*)\s*$")
COMMENT_VENDOR = re.compile(r"#(\s+)(\w+):\s*$")
STRING_LITERAL = re.compile(r"\"([^\"]*)\"|'([^']*)'")


@dataclass
class VendorFacts:
    name: str
    hardware: list[str] = field(default_factory=list)  # in the order first found
    dist_backend: tuple[str, str] | None = None  # (value, where)
    device: tuple[str, str] | None = None
    monitor_tool: tuple[str, str] | None = None
    base_image: tuple[str, str] | None = None
    visible_env: tuple[str, str] | None = None  # from the run settings (ACCE_VISIBLE_DEVICE_ENV_NAME)
    container_run: dict[str, Any] = field(default_factory=dict)  # vendor.yaml container.run keys
    container_where: str = ""  # ACCE_CONTAINER_OPT's file:line
    shm_where: str = ""  # SHM_SIZE's
    unmapped_options: list[str] = field(default_factory=list)  # docker options container.run has no key for


def container_options(text: str) -> tuple[dict[str, Any], list[str]]:
    """FlagPerf's ACCE_CONTAINER_OPT (docker run options in one string) as vendor.yaml container.run keys, and the
    options that have none (volumes, --group-add: docs/flagperf-migration.md)."""
    run: dict[str, Any] = {}
    unmapped: list[str] = []
    try:
        words = shlex.split(text)
    except ValueError:
        return {}, [text.strip()]
    i = 0
    while i < len(words):
        word = words[i]
        option, has_value, value = word.partition("=")
        takes = option in ("--gpus", "--device", "--env", "-e", "--cap-add", "--ipc", "--shm-size", "-v",
                           "--volume", "--group-add", "--ulimit")
        if takes and not has_value:
            i += 1
            value = words[i] if i < len(words) else ""
        i += 1
        if option == "--gpus":
            run["gpus"] = int(value) if value.isdigit() else value
        elif option == "--device":
            run.setdefault("devices", []).append(value)
        elif option in ("--env", "-e") and "=" in value:
            key, _, env_value = value.partition("=")
            run.setdefault("environment", {})[key] = env_value
        elif option == "--cap-add":
            run.setdefault("cap_add", []).append(value)
        elif option == "--ipc":
            run["ipc_mode"] = value
        elif option == "--shm-size":
            run["shm_size"] = value
        elif option == "--privileged":
            run["privileged"] = True
        else:
            unmapped.append(f"{option} {value}".strip() if takes else word)
    return run, unmapped


def commented_settings(text: str, shown: str) -> dict[str, dict[str, tuple[str, str]]]:
    """Per vendor, the run settings test_conf.py's comments give it (read as text, never run): {vendor: {setting:
    (value, "file:line (commented)")}}; an ACCE_CONTAINER_OPT comment's string literals joined, its `+` dropped."""
    found: dict[str, dict[str, tuple[str, str]]] = {}
    setting = ""
    vendor = ""  # the vendor whose value lines follow (`#   <vendor>:`), deeper than `indent`
    indent = 0
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        body = line[1:]
        depth = len(body) - len(body.lstrip())
        if not line.startswith("#"):
            setting = vendor = ""
        elif heading := COMMENT_HEADING.fullmatch(line):
            setting, vendor = heading[1], ""
        elif setting and (pair := COMMENT_FOR.fullmatch(line)):
            for name in re.split(r"\s*,\s*", pair[2]):
                found.setdefault(name, {})[setting] = (f'"{pair[1]}"', f"{shown}:{number} (commented)")
        elif setting and (head := COMMENT_VENDOR.fullmatch(line)):
            vendor, indent = head[2], len(head[1])
            found.setdefault(vendor, {})[setting] = ("", f"{shown}:{number} (commented)")
        elif vendor and depth > indent:
            value, where = found[vendor][setting]
            found[vendor][setting] = (f"{value} {body.strip().removesuffix(chr(92))}", where)
        else:
            vendor = ""
    return {name: {key: (_literals(value), where) for key, (value, where) in values.items() if value.strip()}
            for name, values in found.items()}


def _literals(text: str) -> str:
    """The string literals of a commented value, joined, without the `+` between them (or left in one)."""
    words = " ".join(a or b for a, b in STRING_LITERAL.findall(text)).split()
    return " ".join(word for word in words if word != "+")


def hardware_names(vendor_dir: Path) -> list[str]:
    """The <HW> of the vendor's pytorch configs (its LLM frameworks' keys are not hardware), the most used first."""
    names = [m["hw"] for p in sorted(vendor_dir.glob("*-pytorch/config/config_*.py"))
             if (m := VENDOR_CONFIG.fullmatch(p.name))]
    return [name for name, _ in Counter(names).most_common()]


def _most_common(found: list[tuple[str, str]]) -> tuple[str, str] | None:
    """The value found most often, with the first place it was found."""
    if not found:
        return None
    value = Counter(v for v, _ in found).most_common(1)[0][0]
    return value, next(where for v, where in found if v == value)


def read_facts(base: Path, vendor: str, shown: Any) -> VendorFacts:
    """The facts of training/<vendor>/ in the checkout at `base`; `shown(path)` names a file in them."""
    folder = base / "training" / vendor
    facts = VendorFacts(vendor, hardware=hardware_names(folder))
    backends: list[tuple[str, str]] = []
    for path in sorted(folder.glob("*-pytorch/config/config_*.py")):
        try:
            config = read_config(path, shown(path))
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            continue
        value = config.values.get("dist_backend")
        if isinstance(value, str) and value.strip():
            backends.append((value.strip(), config.where["dist_backend"]))
    facts.dist_backend = _most_common(backends)
    devices: list[tuple[str, str]] = []
    for path in sorted([*folder.glob("*-pytorch/extern/**/*.py"), *folder.glob("*-pytorch/config/*.py")]):
        text = path.read_text(encoding="utf-8", errors="replace")
        devices += [(m, shown(path)) for m in TORCH_DEVICE.findall(text)]
    non_cuda = [d for d in devices if d[0] != "cuda"]  # a chip's own torch device over CUDA-compatible code
    facts.device = _most_common(non_cuda or devices)
    monitor = folder / f"{vendor}_monitor.py"
    if monitor.is_file():
        tools = MONITOR_TOOL.findall(monitor.read_text(encoding="utf-8", errors="replace"))
        facts.monitor_tool = _most_common([(t, shown(monitor)) for t in tools])
    for dockerfile in sorted(folder.glob("docker_image/pytorch*/Dockerfile"), reverse=True):  # the newest first
        match = FROM_LINE.search(dockerfile.read_text(encoding="utf-8", errors="replace"))
        if match:
            facts.base_image = (match[1], shown(dockerfile))
            break
    return facts
