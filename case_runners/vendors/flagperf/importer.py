"""`import-flagperf`: a FlagPerf checkout's configs (or one of them) as perfplay's, and a report per item.

Reads (never runs) training/run_benchmarks/config/test_conf.py and cluster_conf.py, inference/configs/host.yaml,
base/configs/host.yaml and the vendor configs training/<vendor>/<case>-<framework>/config/config_<HW>x<N>x<P>.py,
and writes under OUT:
- inventory/flagperf/hosts.yml (cluster_conf.py; inventory/flagperf_inference/hosts.yml from host.yaml): the
  hosts in order in the group perfplay_hosts, SSH_PORT as ansible_port, and the host vars perfplay needs;
- flagperf_training.yml (test_conf.py, with cluster_conf.py's MASTER_PORT), flagperf_inference.yml (host.yaml) and
  flagperf_base.yml (base/configs/host.yaml: its CASES as base selections, BENCHMARKS_OR_TOOLKITS as their mode;
  its hosts in inventory/flagperf_base/hosts.yml): run vars for `-e @FILE`;
- vendor/<vendor>/cases/<case>/config_<HW>x<N>x<P>.yaml: the params plan/config/flagperf_names.py maps, checked against
  the case; beside it the case folder's environment_variables.sh and requirements.txt (vendor_folder.py);
- vendor/<vendor>/cases/<model>/<stack>/config_<HW>x<N>x<P>.yaml from the configs of FlagPerf's LLM stacks
  (<case>-{megatron,megatron-deepspeed,deepspeed,flagscale}/config/, <case>-in_container/config.py): llm_configs.py;
- vendor/<vendor>/cases/<case>/<vendor>_configurations.yaml from inference/configs/<case>/vendor_config/, with what
  differs from perfplay's standard (inference.py, which also compares the case's configurations.yaml and
  parameters.yaml with perfplay's);
- vendor/<vendor>/ for a FlagPerf vendor perfplay lacks: the new-vendor scaffold filled from FlagPerf's tree
  (vendor_facts.py, vendor_folder.py); a vendor perfplay has is compared with its vendor.yaml instead.

Every setting, case, param and adapter function is reported: mapped (from -> to), no counterpart (and why), skipped
(a statement the reader does not run, with its file and line) or to port; and every config file of the checkout once
with its outcome, then their counts (report.py). Run vars never leave perfplay_cases unset (that would plan the
default case). Everything is read before anything is written; an existing file is kept unless `force`.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from case_runners.cases import list_cases
from case_runners.core.errors import ConfigError
from case_runners.core.paths import project_root
from case_runners.plan.config.benchmarks import MODE, TOOLKIT, TORCH
from case_runners.plan.config.flagperf_names import (
    ACCUMULATION_STEPS,
    BASE_CASES,
    BENCHMARK,
    CASE_NAMES,
    FRAMEWORK,
    HOSTS_SCALE,
    NODE_SCALE,
    PAIR_ACROSS_NODES,
    PAIR_IN_NODE,
    TOOLKIT_MODE,
    VENDOR_SETTINGS,
    Name,
    param,
    run_setting,
)
from case_runners.plan.config.selection import split_framework
from case_runners.plan.config.yaml_io import load_mapping
from case_runners.plan.inference_config import inference_cases
from case_runners.plan.layering import load_case_base
from case_runners.vendors.description import load_vendor, vendor_names
from case_runners.vendors.flagperf.inference import InferenceImport
from case_runners.vendors.flagperf.llm_configs import LlmConfig, llm_case, models_line
from case_runners.vendors.flagperf.operation import OperationImport, operator_standard
from case_runners.vendors.flagperf.pyconfig import PyConfig, read_config
from case_runners.vendors.flagperf.report import MAPPED, NONE, READ, SKIPPED, Output, Report, write
from case_runners.vendors.flagperf.sources import NOT_VENDORS, VENDOR_CONFIG, Sources, find_sources
from case_runners.vendors.flagperf.vendor_facts import VendorFacts, commented_settings, container_options, read_facts
from case_runners.vendors.flagperf.vendor_folder import compare_vendor, list_adapter, new_vendor_outputs, set_up_outputs
from case_runners.vendors.layout import VENDOR_FILE
from case_runners.vendors.toolkits import toolkit_names

TRAINING_VARS, INFERENCE_VARS, BASE_VARS = "flagperf_training.yml", "flagperf_inference.yml", "flagperf_base.yml"
INVENTORY, INFERENCE_INVENTORY = "inventory/flagperf/hosts.yml", "inventory/flagperf_inference/hosts.yml"
BASE_INVENTORY = "inventory/flagperf_base/hosts.yml"
# The host vars every remote host needs (docs/run-vars.md, The hosts), at inventory/sample's paths.
HOST_VARS = ("perfplay_project_dir", "perfplay_venv", "perfplay_host_results_dir")
# Written when no case perfplay has was named, so a run with the vars refuses instead of planning the default case.
EMPTY_CASES = ("perfplay_cases: {} (a run with these vars refuses: 'no case selected'; add the cases to run, "
               "docs/running.md)")
LIST_CASE_KEYS = ("model", "framework", "config", "data_dir_host")  # of a case of the list form of CASES
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")  # a FlagPerf host that is the controller itself
SAMPLE_HOST_VARS = ("inventory", "sample", "group_vars", "all", "perfplay.yml")


class Importer:
    """Reads the sources and maps them into outputs; write() writes them."""

    def __init__(self, sources: Sources, root: Path) -> None:
        self.sources = sources
        self.root = root
        self.report = Report()
        self.cases = list_cases()
        self.vendors = vendor_names(root)
        self.skipped_seen: set[str] = set()  # a sibling file's statements, reported once
        self.case_dirs: dict[tuple[str, str], Path] = {}  # (vendor, perfplay case): its FlagPerf case folder
        self.llm_outputs: dict[str, LlmConfig] = {}  # an LLM config's output path: the config that writes it
        # vendor: the run settings that are its vendor.yaml's (VENDOR_SETTINGS), with their source
        self.vendor_settings: dict[str, list[dict[str, tuple[Any, str]]]] = {}  # one dict per settings file
        # vendor: the same settings as test_conf.py's comments list them (for a vendor no settings file names)
        self.commented: dict[str, dict[str, tuple[str, str]]] = {}
        self.operators = operator_standard(root)  # perfplay's standard operators, None without the task

    def read_mapping(self, path: Path, what: str) -> dict[str, Any] | None:
        """A YAML file of the checkout, or None when it cannot be read, reported as `what` (a noun phrase)."""
        shown = self.shown(path)
        try:
            return load_mapping(path, self.sources.base)
        except ConfigError as exc:
            self.report.add(NONE, shown, f"cannot be read: {exc}")
            self.report.file(shown, NONE, f"{what} that cannot be read", str(exc))
            return None

    def shown(self, path: Path) -> str:
        """The path as the report names it: within the checkout (a link by its own name, not its target's)."""
        try:
            return str(path.relative_to(self.sources.base))
        except ValueError:
            pass
        try:
            return str(path.resolve().relative_to(self.sources.base.resolve()))
        except ValueError:
            return str(path)

    def run(self) -> Report:
        sources = self.sources
        training: dict[str, Any] = {}
        hosts: tuple[list[str], int | None] | None = None
        if sources.test_conf:  # FlagPerf's host.yaml has the hosts in it; a test_conf.py may too
            hosts = self._python_settings(sources.test_conf, training, inference=False)
            text = sources.test_conf.read_text(encoding="utf-8", errors="replace")
            self.commented = commented_settings(text, self.shown(sources.test_conf))
        if sources.cluster_conf:
            hosts = self._python_settings(sources.cluster_conf, training, inference=False) or hosts
        if training:
            files_read = [self.shown(p) for p in (sources.test_conf, sources.cluster_conf) if p]
            self._run_vars(TRAINING_VARS, " and ".join(files_read), "", training)
        if hosts:
            self._inventory(INVENTORY, hosts, self.shown(sources.cluster_conf or sources.test_conf or Path()))
        if sources.host_yaml:
            self._host_yaml(sources.host_yaml)
        if sources.base_host_yaml:
            self._base_host_yaml(sources.base_host_yaml)
        for path in sources.vendor_configs:
            self._vendor_config(path)
        for path in sources.in_container_configs:
            self.llm_config(path, path.resolve().parts[-3], path.resolve().parts[-2], None)
        for (vendor, case), case_dir in sorted(self.case_dirs.items()):
            self.report.outputs += set_up_outputs(self.report, case_dir, vendor, case, self.shown)
            list_adapter(self.report, case_dir, vendor, case, self.shown)
        for vendor in sources.vendors:
            self._vendor_folder(vendor)
        if sources.operation:
            OperationImport(self, sources.operation, self.operators).run()
        if sources.inference:
            InferenceImport(self, sources.inference).run()
        for path in sources.config_files:
            if self.shown(path) not in self.report.files:
                self.report.file(self.shown(path), SKIPPED, *self._not_read(path))
        self.report.file_items()
        return self.report

    def _not_read(self, path: Path) -> tuple[str, str]:
        """Why a config file of the checkout was not read (the reason's kind, and this file's particulars)."""
        parts = Path(self.shown(path)).parts
        top = parts[0]
        if top == "inference":
            return ("not an inference case's config (<case>/configurations.yaml, parameters.yaml, "
                    "vendor_config/<vendor>_configurations.yaml)"), ""
        if top != "training":
            return (f"the host file of FlagPerf's {top} suite, not an inference or base one: a suite perfplay does "
                    "not import"), ""
        if parts[1] in NOT_VENDORS:
            return "not a FlagPerf run setting file (test_conf.py, cluster_conf.py)", ""
        case, why = self._case_of(parts[2])
        if case is None:
            return "in the folder of a FlagPerf case perfplay does not run", why
        if path.name.startswith("config_") and path.suffix != ".yaml":
            return "not named config_<HW>x<N>x<P>.py: FlagPerf does not read it as a config either", ""
        if path.suffix == ".py":
            return "a Python module no config imports (the vendor's case code)", ""
        return "not a config of the case's params (the FlagPerf case code reads it)", ""

    def _case_of(self, case_dir: str) -> tuple[str | None, str]:
        """perfplay's case for a FlagPerf vendor case folder <model>-<framework>, or None and why not."""
        llm = llm_case(case_dir)
        if llm is not None:
            return llm[0], "" if llm[0] else f"perfplay has no model case '{llm[1]}' (FlagPerf's LLMs it has: " \
                                               f"{models_line()})"
        model, _, framework = case_dir.rpartition("-")
        if not model:
            return None, f"{case_dir} is not <case>-<framework>"
        if framework != FRAMEWORK:
            return None, f"framework {framework}: perfplay's cases are written for {FRAMEWORK}"
        case = CASE_NAMES.get(model, model)
        if case not in self.cases:
            return None, f"perfplay has no case '{model}' (its cases: {', '.join(self.cases)})"
        return case, ""

    # -- run settings ------------------------------------------------------------------------------------------

    def _python_settings(self, path: Path, run_vars: dict[str, Any], *,
                         inference: bool) -> tuple[list[str], int | None] | None:
        """Map a test_conf.py or cluster_conf.py into run_vars; its hosts (HOSTS, SSH_PORT), if it names them."""
        shown = self.shown(path)
        config = self.read_python(path, shown)
        hosts = self._settings(config.values, config.where, run_vars, inference)
        self._settings_file(shown, TRAINING_VARS, INVENTORY)
        return hosts

    def _host_yaml(self, path: Path) -> None:
        shown = self.shown(path)
        data = load_mapping(path, self.sources.base)
        run_vars: dict[str, Any] = {"perfplay_task": "inference"}
        hosts = self._settings(data, {name: shown for name in data}, run_vars, inference=True)
        if len(run_vars) > 1:
            self._run_vars(INFERENCE_VARS, shown, " (inference)", run_vars)
        if hosts:
            self._inventory(INFERENCE_INVENTORY, hosts, shown)
        self._settings_file(shown, INFERENCE_VARS, INFERENCE_INVENTORY)

    def _base_host_yaml(self, path: Path) -> None:
        """FlagPerf's base suite (base/configs/host.yaml): its hosts, and its CASES as base selections at their
        scale (BASE_CASES, NPROC_PER_NODE), in mode toolkit where BENCHMARKS_OR_TOOLKITS says TOOLKIT."""
        shown = self.shown(path)
        data = load_mapping(path, self.sources.base)
        run_vars: dict[str, Any] = {"perfplay_task": "base"}
        own = ("CASES", "BENCHMARKS_OR_TOOLKITS", "NPROC_PER_NODE")
        hosts = self._settings({k: v for k, v in data.items() if k not in own}, {name: shown for name in data},
                               run_vars, inference=False)
        nproc, mode = self._base_scale(data, shown)
        cases = data.get("CASES", {})  # none: _run_vars reports it
        if not isinstance(cases, dict):
            self.report.add(NONE, f"{shown} CASES", f"expected a mapping of base case keys to frameworks, got "
                                                    f"{cases!r}")
            cases = {}
        selections = [sel for key, framework in cases.items() if (sel := self._base_case(
            str(key), framework, f"{shown} CASES['{key}']", nproc, len(hosts[0]) if hosts else 1, mode,
            run_vars.get("perfplay_vendor")))]
        if selections:
            run_vars["perfplay_cases"] = selections
        self._run_vars(BASE_VARS, shown, " (base)", run_vars)
        if hosts:
            self._inventory(BASE_INVENTORY, hosts, shown)
        self._settings_file(shown, BASE_VARS, BASE_INVENTORY)

    def _base_scale(self, data: dict[str, Any], shown: str) -> tuple[int, str | None]:
        """(NPROC_PER_NODE, the mode BENCHMARKS_OR_TOOLKITS picks: None for perfplay's default, torch)."""
        nproc = data.get("NPROC_PER_NODE", 1)
        if isinstance(nproc, bool) or not isinstance(nproc, int) or nproc < 1:
            self.report.add(NONE, f"{shown} NPROC_PER_NODE", f"expected a count of ranks, got {nproc!r}: 1 taken")
            nproc = 1
        elif "NPROC_PER_NODE" in data:
            self.report.add(MAPPED, f"{shown} NPROC_PER_NODE", f"-> perfplay_cases: nproc {nproc} (p2p: its pair)")
        choice = data.get("BENCHMARKS_OR_TOOLKITS", BENCHMARK)
        row = run_setting("BENCHMARKS_OR_TOOLKITS")
        assert row is not None
        if choice not in (BENCHMARK, TOOLKIT_MODE):
            self.report.add(NONE, f"{shown} BENCHMARKS_OR_TOOLKITS", f"expected {BENCHMARK} or {TOOLKIT_MODE}, got "
                                                                      f"{choice!r}: perfplay's default, mode {TORCH}")
            return nproc, None
        mode = TOOLKIT if choice == TOOLKIT_MODE else None
        if "BENCHMARKS_OR_TOOLKITS" in data:
            self.report.add(MAPPED, f"{shown} BENCHMARKS_OR_TOOLKITS",
                            f"-> {row.perfplay}: mode {mode or f'{TORCH} (the default, nothing to write)'}")
        return nproc, mode

    def _base_case(self, key: str, framework: Any, where: str, nproc: int, hosts: int, mode: str | None,
                   vendor: Any) -> dict[str, Any] | None:
        """A FlagPerf base case key ('computation-FP32' or 'computation-FP32:A100') as a base selection, or None
        (reported)."""
        name, _, hardware = key.partition(":")
        case = BASE_CASES.get(name)
        if case is None:
            self.report.add(NONE, where, f"perfplay has no base benchmark for FlagPerf's '{name}' (its base cases: "
                                         f"{', '.join(BASE_CASES)})")
            return None
        nnodes, ranks = {NODE_SCALE: (1, nproc), HOSTS_SCALE: (hosts, nproc), PAIR_IN_NODE: (1, 2),
                         PAIR_ACROSS_NODES: (2, 1)}[case.scale]
        selection: dict[str, Any] = {"case": case.benchmark, **({"hardware": hardware} if hardware else {}),
                                     "nnodes": nnodes, "nproc": ranks}
        overrides = {**dict(case.overrides), **({MODE: mode} if mode else {})}
        if overrides:
            selection["overrides"] = _plain(overrides)
        notes = [case.note] if case.note else []
        if not (isinstance(framework, str) and framework.startswith(FRAMEWORK)):
            notes.append(f"framework {framework!r}: perfplay's base benchmarks are written for {FRAMEWORK}")
        if mode and isinstance(vendor, str) and vendor in self.vendors and \
                case.benchmark not in toolkit_names(self.root, vendor):
            notes.append(f"perfplay's vendor/{vendor}/ ships no toolkit for {case.benchmark} yet: the plan refuses "
                         "mode toolkit until one is written (docs/base.md)")
        shown_overrides = f", overrides {selection['overrides']}" if "overrides" in selection else ""
        self.report.add(MAPPED, where, f"-> perfplay_cases: {case.benchmark} {nnodes}x{ranks}{shown_overrides}"
                                       + "".join(f"; {note}" for note in notes))
        return selection

    def _settings_file(self, shown: str, run_vars: str, inventory: str) -> None:
        """The outcome of a run settings file: mapped when one of its settings was."""
        mapped = any(item.status == MAPPED and item.source.startswith(f"{shown}") for item in self.report.items)
        if mapped:
            self.report.file(shown, MAPPED, "FlagPerf's run settings", f"-> {run_vars}, {inventory}")
        else:
            self.report.file(shown, NONE, "FlagPerf's run settings, none of which perfplay has")

    def _settings(self, values: dict[str, Any], where: dict[str, str], run_vars: dict[str, Any],
                  inference: bool) -> tuple[list[str], int | None] | None:
        hosts: list[str] | None = None
        port: int | None = None
        vendor_settings: dict[str, tuple[Any, str]] = {}
        vendor = values.get("VENDOR")
        if isinstance(vendor, str) and vendor.strip():
            self.vendor_settings.setdefault(vendor.strip(), []).append(vendor_settings)
        cases = values.get("CASES")
        list_cases_named = {c for c in cases if isinstance(c, str)} if isinstance(cases, list) else set()
        for name, value in values.items():
            source = f"{where[name]} {name}"
            row = run_setting(str(name))
            if name in list_cases_named:
                continue  # a case of the list form of CASES: reported with CASES
            if row is None:
                self.report.add(NONE, source, "not a FlagPerf setting perfplay knows (docs/flagperf-migration.md)")
            elif name in VENDOR_SETTINGS:
                self._vendor_setting(name, value, source, row, vendor, vendor_settings)
            elif row.perfplay is None:
                self.report.add(NONE, source, row.note)
            elif name == "CASES":
                if isinstance(value, list):  # FlagPerf before 2023-04: case names, each a mapping of this file
                    value = self._list_cases(value, values, source)
                self._cases(value, source, run_vars, inference)
            elif name == "HOSTS":
                hosts = self._hosts(value, source, row)
            elif name == "SSH_PORT":
                port = self._port(value, source, row.perfplay)
            elif name == "MASTER_PORT":
                master = self._port(value, source, row.perfplay)
                if master is not None:
                    run_vars["perfplay_master_port"] = master
            elif name == "VENDOR":
                self._vendor(value, source, run_vars)
            elif name in ("CLEAR_CACHES", "PIP_SOURCE"):
                self._image_or_cache_setting(name, value, source, row, run_vars)
        return (hosts, port) if hosts else None

    def _vendor_setting(self, name: str, value: Any, source: str, row: Name, vendor: Any,
                        vendor_settings: dict[str, tuple[Any, str]]) -> None:
        """A setting of the vendor folder (VENDOR_SETTINGS): kept for the VENDOR this file names, if it names one."""
        if isinstance(vendor, str) and vendor.strip():
            vendor_settings[name] = (value, source)
        else:
            self.report.add(NONE, source, f"{row.note}: this file names no VENDOR to give it to")

    def _hosts(self, value: Any, source: str, row: Name) -> list[str] | None:
        """HOSTS: the inventory's hosts, or None (reported) when it is not a list of names."""
        if isinstance(value, list) and value and all(isinstance(h, str) and h.strip() for h in value):
            hosts = [h.strip() for h in value]
            self.report.add(MAPPED, source, f"-> {row.perfplay}: {', '.join(hosts)}")
            return hosts
        self.report.add(NONE, source, f"expected a list of host names or addresses, got {value!r}")
        return None

    def _image_or_cache_setting(self, name: str, value: Any, source: str, row: Name,
                                run_vars: dict[str, Any]) -> None:
        """CLEAR_CACHES (perfplay_clear_caches) or PIP_SOURCE (perfplay_image's pip_index_url), when of its type."""
        if name == "CLEAR_CACHES":
            if isinstance(value, bool):
                run_vars["perfplay_clear_caches"] = value
                self.report.add(MAPPED, source, f"-> {row.perfplay}: {str(value).lower()}")
            else:
                self.report.add(NONE, source, f"expected True or False, got {value!r}")
        elif isinstance(value, str) and value.strip():
            run_vars["perfplay_image"] = {"pip_index_url": value.strip()}
            self.report.add(MAPPED, source, f"-> {row.perfplay}: {value.strip()}; {row.note}")
        else:
            self.report.add(NONE, source, f"expected a URL, got {value!r}")

    def _run_vars(self, name: str, shown: str, what: str, run_vars: dict[str, Any]) -> None:
        """Run vars that never plan a case FlagPerf's CASES did not name: without a case perfplay has, an empty
        perfplay_cases, which the plan refuses ("no case selected"), instead of none, which plans the default."""
        if "perfplay_cases" not in run_vars:
            run_vars["perfplay_cases"] = {}
            self.report.add(NONE, name, f"{shown} names no CASES: {EMPTY_CASES}")
        why = "" if run_vars["perfplay_cases"] else f". It names no case perfplay has: {EMPTY_CASES}"
        self.output(name, f"Run vars from FlagPerf {shown}{what}{why}", run_vars)

    def _port(self, value: Any, source: str, target: str) -> int | None:
        try:
            port = int(str(value).strip())
        except ValueError:
            port = -1
        if not 0 <= port <= 65535 or isinstance(value, bool):
            self.report.add(NONE, source, f"expected a port number, got {value!r}")
            return None
        self.report.add(MAPPED, source, f"-> {target}: {port}")
        return port

    def _vendor(self, value: Any, source: str, run_vars: dict[str, Any]) -> None:
        if not isinstance(value, str) or not value.strip():
            self.report.add(NONE, source, f"expected a vendor name, got {value!r}")
            return
        vendor = value.strip()
        run_vars["perfplay_vendor"] = vendor
        missing = "" if vendor in self.vendors else (
            f" (perfplay has no vendor/{vendor}/ yet: the import writes one from FlagPerf's training/{vendor}/; "
            f"vendors: {', '.join(self.vendors)})")
        self.report.add(MAPPED, source, f"-> perfplay_vendor: {vendor}{missing}")

    def _list_cases(self, names: list[Any], values: dict[str, Any], source: str) -> dict[str, Any]:
        """FlagPerf's list form of CASES (before 2023-04): each name is a mapping of the same file, {model,
        framework, config: config_<HW>x<N>x<P>, repeat, nnodes, nproc, data_dir_host}; as the mapping form."""
        cases: dict[str, Any] = {}
        for name in names:
            where = f"{source}['{name}']"
            case = values.get(name) if isinstance(name, str) else None
            if not isinstance(case, dict):
                self.report.add(NONE, where, f"the list form of CASES names {name!r}, which this file does not "
                                             f"assign a mapping {{model, framework, config, ...}}")
                continue
            config = VENDOR_CONFIG.fullmatch(f"{case.get('config')}.py")
            missing = [key for key in LIST_CASE_KEYS if not case.get(key)]
            if missing or config is None:
                self.report.add(NONE, where, f"expected {', '.join(LIST_CASE_KEYS)} (config: config_<HW>x<N>x<P>), "
                                             f"got {case!r}")
                continue
            nnodes, nproc = case.get("nnodes", config["nnodes"]), case.get("nproc", config["nproc"])
            key = f"{case['model']}:{case['framework']}:{config['hw']}:{nnodes}:{nproc}:{case.get('repeat', 1)}"
            self.report.add(MAPPED, where, f"the list form of CASES -> CASES['{key}']: {case['data_dir_host']}")
            cases[key] = case["data_dir_host"]
        return cases

    def _cases(self, value: Any, source: str, run_vars: dict[str, Any], inference: bool) -> None:
        if not isinstance(value, dict):
            self.report.add(NONE, source, f"expected a mapping of case keys to data dirs, got {value!r}")
            return
        cases: dict[str, str] = {}
        for key, data_dir in value.items():
            where = f"{source}['{key}']"
            mapped = self._case_key(key, data_dir, where, inference)
            if mapped:
                cases[mapped] = data_dir
        if cases:
            run_vars["perfplay_cases"] = cases
        else:
            why = "selects no case (is every entry commented out?)" if not value else \
                "no case of CASES has a perfplay counterpart"
            run_vars["perfplay_cases"] = {}
            self.report.add(NONE, source, f"{why}: {EMPTY_CASES}")

    def _case_key(self, key: Any, data_dir: Any, where: str, inference: bool) -> str | None:
        """The perfplay_cases key of one FlagPerf CASES entry, or None (reported)."""
        if not isinstance(key, str) or not key:
            self.report.add(NONE, where, "a case key is a string 'case:framework:...'")
            return None
        parts = key.split(":")
        framework = parts[1] if len(parts) > 1 and parts[1] else FRAMEWORK
        if split_framework(framework)[0] != FRAMEWORK:
            self.report.add(NONE, where, f"framework {framework}: perfplay's cases are written for {FRAMEWORK}")
            return None
        known = inference_cases(self.root) if inference else self.cases
        case = CASE_NAMES.get(parts[0], parts[0])
        if case not in known:
            what = "inference case" if inference else "case"
            self.report.add(NONE, where, f"perfplay has no {what} '{parts[0]}' (its {what}s: {', '.join(known)})")
            return None
        if not isinstance(data_dir, str) or not data_dir:
            self.report.add(NONE, where, f"the data dir must be a path, got {data_dir!r}")
            return None
        mapped = ":".join([case, *parts[1:]])
        self.report.add(MAPPED, where, f"-> perfplay_cases['{mapped}']: {data_dir}")
        return mapped

    # -- vendor configs ----------------------------------------------------------------------------------------

    def _vendor_config(self, path: Path) -> None:
        shown = self.shown(path)
        match = VENDOR_CONFIG.fullmatch(path.name)
        assert match is not None  # find_sources took only these
        vendor, case_dir = path.resolve().parts[-4], path.resolve().parts[-3]
        if llm_case(case_dir) is not None:
            self.llm_config(path, vendor, case_dir, (match["hw"], int(match["nnodes"]), int(match["nproc"])))
            return
        case, why = self._case_of(case_dir)
        if case is None:
            self.report.add(NONE, shown, why)
            self.report.file(shown, NONE, "a vendor config of a case perfplay does not run", why)
            return
        base, _ = load_case_base(case, self.root)
        self.case_dirs.setdefault((vendor, case), path.parent.parent)
        config = self.read_python(path, shown)
        for sibling in config.siblings:
            self.report.file(sibling, READ, "a sibling a vendor config imports", f"read with {shown}")
        params: dict[str, Any] = {}
        sources: dict[str, str] = {}
        for name, value in config.values.items():
            where = config.where[name]  # file:line, of this file or of a sibling it imports
            source = f"{where} {name}" if where.startswith(f"{shown}:") else f"{shown} {name} (from {where})"
            sources[name] = source
            if name == ACCUMULATION_STEPS:
                continue  # with the batch, below
            target = self._param(name, value, source, case, base)
            if target is not None:
                params[target[0]] = target[1]
        if ACCUMULATION_STEPS in config.values:
            self._accumulation(config.values[ACCUMULATION_STEPS], sources[ACCUMULATION_STEPS], case, base, params)
        hardware = match["hw"]
        self.check_hardware(vendor, hardware, shown)
        out = f"vendor/{vendor}/cases/{case}/config_{hardware}x{match['nnodes']}x{match['nproc']}.yaml"
        self.output(out, f"{case} on {hardware}, from FlagPerf {shown}", params)
        self.report.file(shown, MAPPED, "a vendor config", f"-> {out} ({len(params)} params)")

    def _accumulation(self, steps: Any, source: str, case: str, base: dict[str, Any], params: dict[str, Any]) -> None:
        """FlagPerf's gradient_accumulation_steps with the config's train_batch_size: perfplay's batch_size is the
        batch of an optimizer step (their product), grad_accumulation its micro batches; without a batch of the
        config's, reported (FlagPerf's _base.py default is not perfplay's case default)."""
        if steps == 1:
            self.report.add(MAPPED, source, "-> grad_accumulation: 1, the trainer's default (the whole batch in one "
                                            "step): nothing to write")
            return
        if "batch_size" not in params:
            self.report.add(NONE, source, f"{ACCUMULATION_STEPS}: {steps!r}: the config sets no train_batch_size to "
                                          "multiply: set batch_size (the batch of an optimizer step) and "
                                          "grad_accumulation")
            return
        micro = params["batch_size"]
        accumulation = self.check_param("grad_accumulation", steps, source, case, base,
                                        note=f"micro batches of train_batch_size {micro}")
        if accumulation is None:
            return
        batch = self.check_param("batch_size", micro * accumulation[1], source, case, base,
                                 note=f"train_batch_size {micro} x {ACCUMULATION_STEPS} {accumulation[1]}, the "
                                      "batch of an optimizer step")
        if batch is None:
            params.pop("batch_size")
            return
        params.update(batch_size=batch[1], grad_accumulation=accumulation[1])

    def check_hardware(self, vendor: str, hardware: str, shown: str) -> None:
        """Report a config's hardware that a vendor perfplay has does not list."""
        if vendor in self.vendors:
            known = sorted(load_vendor(vendor, self.root).hardware)
            if hardware not in known:
                self.report.add(NONE, shown, f"hardware {hardware} is not in vendor/{vendor}/vendor.yaml (its "
                                             f"hardware: {', '.join(known)}): add it there before this config runs")

    def llm_config(self, path: Path, vendor: str, case_dir: str, scale: tuple[str, int, int] | None) -> None:
        """A config of FlagPerf's LLM frameworks (llm_configs.py); `scale` (HW, nnodes, nproc) from its name, None
        for in_container's config.py."""
        llm = llm_case(case_dir)
        assert llm is not None
        model, name, framework = llm
        shown = self.shown(path)
        if model is None:
            why = f"perfplay has no model case '{name}' (FlagPerf's LLMs it has: {models_line()})"
            self.report.add(NONE, shown, why)
            self.report.file(shown, NONE, "a vendor config of a case perfplay does not run", why)
            return
        LlmConfig(self, path, vendor, model, name, framework).run(scale)

    def _param(self, name: str, value: Any, source: str, case: str,
               base: dict[str, Any]) -> tuple[str, Any] | None:
        row = param(name)
        if row is not None and row.perfplay is None:
            self.report.add(NONE, source, row.note)
            return None
        target = row.perfplay if row is not None else name
        assert target is not None
        note = row.note if row is not None and row.perfplay != name else ""
        return self.check_param(target, value, source, case, base, note)

    def check_param(self, target: str, value: Any, source: str, case: str, base: dict[str, Any],
                    note: str = "") -> tuple[str, Any] | None:
        """perfplay's param `target` of the loaded case base, checked (mutable, in range) and reported."""
        if target not in base["params"]:
            self.report.add(NONE, source, f"perfplay's {case} has no param {target}")
            return None
        if target not in base["mutable"]:
            if _plain(value) == base["params"][target]:
                self.report.add(MAPPED, source, f"-> {target}: {json.dumps(_plain(value))}, perfplay's {case}'s "
                                "standard: nothing to write")
                return None
            kind = "run-only" if target in base["run_only"] else "immutable"
            self.report.add(NONE, source, f"-> {target}: {json.dumps(_plain(value))}, not perfplay's {case}'s standard "
                            f"{json.dumps(base['params'][target])}: {target} is {kind}, a vendor config may not set it"
                            f"{f'; {note}' if note else ''}")
            return None
        plain = _plain(value)
        if target == "lr" and isinstance(plain, list) and len(plain) == 1:
            plain = plain[0]  # fairseq's lr, a list of one per update_freq stage (transformer)
        try:
            checked = base["constraints"][target].check(plain, key=target, file=f"perfplay's {case}")
        except ConfigError as exc:
            self.report.add(NONE, source, f"-> {target}: {exc}")
            return None
        self.report.add(MAPPED, source, f"-> {target}: {json.dumps(checked)}{f'; {note}' if note else ''}")
        return target, checked

    def read_python(self, path: Path, shown: str) -> PyConfig:
        """The config, its skipped statements reported (a sibling file's once); ConfigError when unreadable."""
        try:
            config = read_config(path, shown)
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError) as exc:
            raise ConfigError(f"cannot be read as a Python config ({exc})", file=shown) from None
        for skipped in config.skipped:
            where = f"{skipped.file}:{skipped.line}"
            if where not in self.skipped_seen:
                self.skipped_seen.add(where)
                self.report.add(SKIPPED, where, f"`{skipped.what}`: {skipped.why}")
        return config

    # -- vendor folders ----------------------------------------------------------------------------------------

    def _vendor_folder(self, vendor: str) -> None:
        """FlagPerf's settings of a vendor into its vendor.yaml: compared with perfplay's, or a new folder."""
        facts = read_facts(self.sources.base, vendor, self.shown)
        settings_files = [s for s in self.vendor_settings.get(vendor, []) if s] or [{}]
        if vendor in self.vendors:
            data = load_mapping(load_vendor(vendor, self.root).path, self.root)  # checked, then as written there
            for i, settings in enumerate(settings_files):
                one = replace(facts, container_run={}, unmapped_options=[],
                              dist_backend=None if i else facts.dist_backend)
                compare_vendor(self.report, self._with_settings(one, settings), data, written=False)
            return
        if settings_files == [{}]:  # no settings file gives it any: what test_conf.py's comments list for it
            settings_files = [self.commented.get(vendor, {})]
        self._with_settings(facts, settings_files[0])  # the first file's values are written
        taken = {output.path for output in self.report.outputs}  # an imported config over the scaffold's starter
        outputs = new_vendor_outputs(self.report, facts, self.root)
        self.report.outputs += [o for o in outputs if o.path not in taken]
        data = yaml.safe_load(next(o.text for o in outputs if o.path == f"vendor/{vendor}/{VENDOR_FILE}") or "")
        for settings in settings_files:
            one = replace(facts, container_run={}, unmapped_options=[], dist_backend=None, visible_env=None)
            compare_vendor(self.report, self._with_settings(one, settings), data, written=True)

    @staticmethod
    def _with_settings(facts: VendorFacts, settings: dict[str, tuple[Any, str]]) -> VendorFacts:
        """`facts` with one settings file's ACCE_VISIBLE_DEVICE_ENV_NAME, ACCE_CONTAINER_OPT and SHM_SIZE."""
        if "ACCE_VISIBLE_DEVICE_ENV_NAME" in settings:
            value, source = settings["ACCE_VISIBLE_DEVICE_ENV_NAME"]
            if isinstance(value, str) and value.strip():
                facts.visible_env = (value.strip(), source)
        if "ACCE_CONTAINER_OPT" in settings:
            value, facts.container_where = settings["ACCE_CONTAINER_OPT"]
            facts.container_run, facts.unmapped_options = container_options(str(value))
        if "SHM_SIZE" in settings:
            value, source = settings["SHM_SIZE"]
            facts.container_run["shm_size"] = str(value).strip()
            facts.shm_where = source
        return facts

    # -- outputs -----------------------------------------------------------------------------------------------

    def _inventory(self, out: str, hosts: tuple[list[str], int | None], shown: str) -> None:
        names, port = hosts
        group_vars: dict[str, Any] = {} if port is None else {"ansible_port": port}
        sample = load_mapping(self.root.joinpath(*SAMPLE_HOST_VARS), self.root)
        group_vars.update({name: sample[name] for name in HOST_VARS})
        # The controller itself is reached without SSH (as inventory/local does).
        entries = {h: {"ansible_connection": "local"} if h.lower() in LOCAL_HOSTS else None for h in names}
        for host in names:
            if host.lower() in LOCAL_HOSTS:
                self.report.add(MAPPED, shown, f"HOSTS {host} -> inventory: ansible_connection: local (this machine)")
        data = {"all": {"children": {"perfplay_hosts": {"hosts": entries, "vars": group_vars}}}}
        self.output(out, f"The hosts of FlagPerf {shown}, in node order (the first is node 0). The perfplay_* "
                          f"vars are where perfplay lives on each host (docs/run-vars.md, The hosts): change "
                          f"them as you like", data)

    def output(self, path: str, what: str, data: dict[str, Any]) -> None:
        self.report.outputs.append(Output(path, f"{what}.", data))


def _plain(value: Any) -> Any:
    """Tuples as lists (YAML and the constraints know lists)."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def import_flagperf(path: Path, out: Path, *, force: bool = False, root: Path | None = None,
                    operators: dict[str, dict[str, Any]] | None = None) -> Report:
    """Read the FlagPerf configs at `path` and write perfplay's under `out` (ConfigError, before anything is
    written, when an input cannot be read). `operators`: the standard operators to compare FlagPerf's with, in
    place of the checkout's (operation.py operator_standard)."""
    importer = Importer(find_sources(path), root or project_root())
    if operators is not None:
        importer.operators = operators
    report = importer.run()
    write(report, out, force=force)
    return report
