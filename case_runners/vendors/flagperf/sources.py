"""Where a FlagPerf checkout keeps its configs, and which of them a path given to import-flagperf is."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from case_runners.core.errors import ConfigError
from case_runners.plan.config.flagperf_names import CLUSTER_CONF, HOST_YAML, TEST_CONF
from case_runners.vendors.layout import HARDWARE_NAME

CONFIG_DIR = ("training", "run_benchmarks", "config")
HOST_YAML_DIR = ("inference", "configs")
BASE_HOST_DIR = ("base", "configs")
HOST_SUITES = {"inference": HOST_YAML_DIR, "base": BASE_HOST_DIR, "operation": ("operation", "configs"),
               "generate": ("generate",)}  # FlagPerf's suites with a host.yaml, by its folder
IMPORTED_SUITES = ("inference", "base")  # those whose host.yaml the importer maps
# FlagPerf's config files, its hardware names perfplay's (vendor_files.py HARDWARE_NAME): A100, BI-V100, 9100.
VENDOR_CONFIG = re.compile(rf"config_(?P<hw>{HARDWARE_NAME})x(?P<nnodes>[0-9]+)x(?P<nproc>[0-9]+)\.py")
NOT_VENDORS = ("benchmarks", "run_benchmarks", "utils")  # folders of training/ that are not a vendor's
# Where a checkout keeps config files, each of which the report names (read, mapped or skipped, with the reason).
IN_CONTAINER_GLOB = "training/*/*-in_container/config.py"  # FlagPerf's in_container configs (no config/ folder)
CONFIG_GLOBS = ("training/run_benchmarks/config/*", "training/*/*/config/**/*", "inference/configs/**/*",
                "base/configs/*", "operation/configs/*", "generate/host.yaml", IN_CONTAINER_GLOB,
                "operation/benchmarks/*/case_config.yaml", "operation/benchmarks/*/*/*/case_config.yaml")
# An inference case's files under inference/configs/<case>/: its standard, its parameters, a vendor's overrides.
INFERENCE_STANDARD, INFERENCE_PARAMETERS = "configurations.yaml", "parameters.yaml"
INFERENCE_VENDOR_GLOB = "vendor_config/*_configurations.yaml"
OPERATION_DIR = "operation"  # FlagPerf's operator suite: benchmarks/<op>/[<vendor>/<chip>/]case_config.yaml


@dataclass
class Sources:
    base: Path  # the checkout, for the names in the report
    test_conf: Path | None = None
    cluster_conf: Path | None = None
    host_yaml: Path | None = None
    base_host_yaml: Path | None = None  # base/configs/host.yaml: the base suite's run settings
    vendor_configs: list[Path] = field(default_factory=list)
    in_container_configs: list[Path] = field(default_factory=list)  # training/<vendor>/<case>-in_container/config.py
    config_files: list[Path] = field(default_factory=list)  # every config file of the checkout (CONFIG_GLOBS)
    vendors: list[str] = field(default_factory=list)  # the vendor folders training/<vendor>/ to import
    operation: Path | None = None  # operation/, when it has benchmarks/
    inference: Path | None = None  # inference/configs/, when it has a case's folder (<case>/)


def find_sources(path: Path) -> Sources:
    """The FlagPerf configs of a checkout, or the one config file `path` is; ConfigError when there is none."""
    if path.is_dir():
        found = Sources(base=path)
        config_dir = path.joinpath(*CONFIG_DIR)
        found.test_conf = _file(config_dir / TEST_CONF)
        found.cluster_conf = _file(config_dir / CLUSTER_CONF)
        found.host_yaml = _file(path.joinpath(*HOST_YAML_DIR, HOST_YAML))
        found.base_host_yaml = _file(path.joinpath(*BASE_HOST_DIR, HOST_YAML))
        found.vendor_configs = sorted(p for p in path.glob("training/*/*/config/config_*.py")
                                      if p.parts[-4] not in NOT_VENDORS and VENDOR_CONFIG.fullmatch(p.name))
        found.in_container_configs = sorted(p for p in path.glob(IN_CONTAINER_GLOB) if p.parts[-3] not in NOT_VENDORS)
        found.config_files = sorted({p for pattern in CONFIG_GLOBS for p in path.glob(pattern) if p.is_file()})
        found.vendors = sorted(p.name for p in path.glob("training/*") if p.is_dir() and p.name not in NOT_VENDORS
                               and (any(p.glob("*/config")) or (p / f"{p.name}_monitor.py").is_file()))
        found.operation = path / OPERATION_DIR if (path / OPERATION_DIR / "benchmarks").is_dir() else None
        inference = path.joinpath(*HOST_YAML_DIR)
        found.inference = inference if any(p.is_dir() for p in inference.glob("*")) else None
        if not (found.test_conf or found.cluster_conf or found.host_yaml or found.base_host_yaml
                or found.vendor_configs or found.in_container_configs or found.operation or found.inference):
            raise ConfigError(f"{path} is not a FlagPerf checkout: it has none of {'/'.join(CONFIG_DIR)}/"
                              f"{TEST_CONF}, {CLUSTER_CONF}, {'/'.join(HOST_YAML_DIR)}/{HOST_YAML}, "
                              f"{'/'.join(BASE_HOST_DIR)}/{HOST_YAML}, "
                              f"training/<vendor>/<case>-<framework>/config/config_<HW>x<N>x<P>.py, "
                              f"{OPERATION_DIR}/benchmarks/")
        return found
    if not path.is_file():
        raise ConfigError(f"{path} does not exist")
    name, parts = path.name, path.resolve().parts
    if name in (TEST_CONF, CLUSTER_CONF):
        found = Sources(base=_above(path, CONFIG_DIR))
        setattr(found, "test_conf" if name == TEST_CONF else "cluster_conf", path)
        return found
    if name == HOST_YAML:
        suite = host_suite(path)
        if suite == "base":
            return Sources(base=_above(path, BASE_HOST_DIR), base_host_yaml=path)
        if suite == OPERATION_DIR:
            raise ConfigError(f"{path} is the host file of FlagPerf's operation suite: import the checkout it is in "
                              f"(its CASES are read with {OPERATION_DIR}/benchmarks/, the standard they refer to)")
        if suite not in IMPORTED_SUITES:
            raise ConfigError(f"{path} is the host file of FlagPerf's {suite} suite, not an inference or base one "
                              f"({'/'.join(HOST_YAML_DIR)}/{HOST_YAML}, {'/'.join(BASE_HOST_DIR)}/{HOST_YAML}): "
                              "perfplay does not import that suite")
        return Sources(base=_above(path, HOST_YAML_DIR), host_yaml=path)
    if VENDOR_CONFIG.fullmatch(name):
        if len(parts) < 5 or parts[-5] != "training" or parts[-2] != "config" or "-" not in parts[-3] \
                or parts[-4] in NOT_VENDORS:
            raise ConfigError(f"{path}: cannot tell its vendor and case: a vendor config is "
                              f"training/<vendor>/<case>-<framework>/config/config_<HW>x<N>x<P>.py")
        return Sources(base=path.resolve().parents[4], vendor_configs=[path], vendors=[parts[-4]])
    if name == "config.py" and parts[-2].endswith("-in_container") and len(parts) >= 4 and parts[-4] == "training":
        return Sources(base=path.resolve().parents[3], in_container_configs=[path], vendors=[parts[-3]])
    raise ConfigError(f"{path} is not a FlagPerf config: expected {TEST_CONF}, {CLUSTER_CONF}, {HOST_YAML}, "
                      f"config_<HW>x<N>x<P>.py or <case>-in_container/config.py")


def host_suite(path: Path) -> str:
    """Which FlagPerf suite a host.yaml is for: by its folder (inference/configs, base/configs, operation/configs,
    generate), else by the keys only base's has."""
    parts = path.resolve().parent.parts
    for suite, folders in HOST_SUITES.items():
        if parts[-len(folders):] == folders:
            return suite
    text = path.read_text(encoding="utf-8", errors="replace")
    return "base" if re.search(r"^(BENCHMARKS_OR_TOOLKITS|NPROC_PER_NODE)\s*:", text, re.MULTILINE) else "inference"


def _file(path: Path) -> Path | None:
    return path if path.is_file() else None


def _above(path: Path, folders: tuple[str, ...]) -> Path:
    """The checkout a config at <checkout>/<folders>/<file> is in; its own folder when it is elsewhere."""
    resolved = path.resolve()
    inside = resolved.parent.parts[-len(folders):] == folders
    return resolved.parents[len(folders)] if inside else resolved.parent
