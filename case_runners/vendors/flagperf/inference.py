"""import-flagperf on FlagPerf's inference configs (inference/configs/<case>/): a vendor's
vendor_config/<vendor>_configurations.yaml as perfplay's vendor/<vendor>/cases/<case>/<vendor>_configurations.yaml, and
the case's configurations.yaml and parameters.yaml compared with perfplay's standard (which stands).

A vendor file's key: a key of perfplay's configurations whose value differs from perfplay's standard is written (the
compiler by perfplay's engine name, flagperf_names.py INFERENCE_ENGINES; one perfplay does not ship keeps its name
and the vendor brings the engine); one equal to it, or repeating FlagPerf's own standard, is reported with nothing
to write (perfplay's override rules refuse a repeated value); flops never (FlagPerf's figures count otherwise, and a
vendor's FLOPs make a run non-standard); a parameter of the case never (hardware-independent); FlagPerf's engine
settings by INFERENCE_SETTINGS. The keys written are resolved together over perfplay's standard (its ranges and
switches); a key that makes them fail is reported, not written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from case_runners.core.errors import ConfigError
from case_runners.plan.config.flagperf_names import CASE_NAMES, inference_engine, inference_param, inference_setting
from case_runners.plan.inference_config import (
    CONFIG_KEYS,
    inference_cases,
    parse_flops,
    resolve_inference,
    vendor_overrides_path,
)
from case_runners.records.resolved import InferenceConfig
from case_runners.vendors.flagperf.report import MAPPED, NONE, READ
from case_runners.vendors.flagperf.sources import INFERENCE_PARAMETERS, INFERENCE_STANDARD, INFERENCE_VENDOR_GLOB
from case_runners.vendors.flagperf.vendor_folder import PORT
from case_runners.vendors.layout import vendor_engines

if TYPE_CHECKING:
    from case_runners.vendors.flagperf.importer import Importer

VENDOR_SUFFIX = "_configurations.yaml"
ENGINE_FILE = "inference/inference_engine/{vendor}/{compiler}.py"  # FlagPerf's engine of a vendor


def _text(value: Any) -> str:
    return json.dumps(value)


class InferenceImport:
    """Maps FlagPerf's inference/configs/ into the importer's report and outputs."""

    def __init__(self, importer: Importer, folder: Path) -> None:
        self.importer = importer
        self.report = importer.report
        self.folder = folder
        self.cases = inference_cases(importer.root)

    def run(self) -> None:
        for case_dir in sorted(p for p in self.folder.iterdir() if p.is_dir()):
            name = CASE_NAMES.get(case_dir.name, case_dir.name)
            files = sorted(case_dir.glob(INFERENCE_VENDOR_GLOB)) + [
                p for p in (case_dir / INFERENCE_STANDARD, case_dir / INFERENCE_PARAMETERS) if p.is_file()]
            if name not in self.cases:
                why = f"perfplay has no inference case '{case_dir.name}' (its inference cases: {', '.join(self.cases)})"
                for path in files:
                    self.report.add(NONE, self.importer.shown(path), why)
                    self.report.file(self.importer.shown(path), NONE, "an inference configuration of a case perfplay "
                                                                      "does not run", why)
                continue
            standard, _ = resolve_inference(name, None, self.importer.root)
            flagperf = self._read(case_dir / INFERENCE_STANDARD) or {}
            self._standard(case_dir / INFERENCE_STANDARD, flagperf, standard)
            self._parameters(case_dir / INFERENCE_PARAMETERS, standard)
            for path in sorted(case_dir.glob(INFERENCE_VENDOR_GLOB)):
                self._vendor_file(path, name, flagperf, standard)

    def _read(self, path: Path) -> dict[str, Any] | None:
        return self.importer.read_mapping(path, "an inference configuration") if path.is_file() else None

    # -- FlagPerf's standard ---------------------------------------------------------------------------------------

    def _standard(self, path: Path, flagperf: dict[str, Any], standard: InferenceConfig) -> None:
        """FlagPerf's configurations.yaml against perfplay's: each difference reported with the file that sets
        perfplay's (its comments say why)."""
        if not path.is_file() or not flagperf:
            return
        shown, mine = self.importer.shown(path), standard.configurations
        differ = []
        for key, value in flagperf.items():
            if key not in mine:
                self.report.add(NONE, f"{shown} {key}", f"perfplay's {standard.case} has no configuration {key}")
                differ.append(key)
            elif not self._same(key, value, mine[key], shown):
                theirs = inference_engine(value) if key == "compiler" else value
                self.report.add(NONE, f"{shown} {key}",
                                f"FlagPerf's standard {_text(theirs)}, perfplay's {_text(mine[key])} "
                                f"({standard.provenance[key]}): perfplay's standard stands")
                differ.append(key)
        self.report.file(shown, READ, "an inference case's FlagPerf standard, compared with perfplay's",
                         f"differs: {', '.join(differ)}" if differ else "the same")

    def _same(self, key: str, value: Any, mine: Any, shown: str) -> bool:
        if key == "flops":
            try:
                return parse_flops(value, file=shown) == mine
            except ConfigError:
                return False
        return bool((inference_engine(value) if key == "compiler" else value) == mine)

    def _parameters(self, path: Path, standard: InferenceConfig) -> None:
        """FlagPerf's parameters.yaml against perfplay's parameters of the same names."""
        data = self._read(path)
        if data is None:
            return
        shown, mine = self.importer.shown(path), standard.parameters
        differ = []
        for key, value in data.items():
            row = inference_param(key) if key not in mine else None
            name = row.perfplay if row is not None and row.perfplay in mine else key
            if row is not None and row.perfplay is None:
                self.report.add(NONE, f"{shown} {key}", f"{_text(value)}: {row.note}")
                differ.append(key)
            elif name not in mine:
                self.report.add(NONE, f"{shown} {key}", f"{_text(value)}: perfplay's {standard.case} has no parameter "
                                                        f"{key} (its parameters: {', '.join(mine)})")
                differ.append(key)
            elif value != mine[name]:
                self.report.add(NONE, f"{shown} {key}", f"FlagPerf's standard {_text(value)}, perfplay's {name} "
                                                        f"{_text(mine[name])}: perfplay's standard stands")
                differ.append(key)
            elif name != key:
                self.report.add(MAPPED, f"{shown} {key}", f"-> {name}: {_text(value)}, perfplay's standard")
        self.report.file(shown, READ, "an inference case's FlagPerf parameters, compared with perfplay's",
                         f"differs: {', '.join(differ)}" if differ else "the same" if data else "none")

    # -- a vendor's file -------------------------------------------------------------------------------------------

    def _vendor_file(self, path: Path, case: str, flagperf: dict[str, Any], standard: InferenceConfig) -> None:
        shown = self.importer.shown(path)
        vendor = path.name.removesuffix(VENDOR_SUFFIX)
        data = self._read(path)
        if data is None:
            return
        mine = standard.configurations
        written: dict[str, Any] = {}
        origin: dict[str, str] = {}  # a key written: FlagPerf's name of it
        later: list[tuple[str, Any, str]] = []  # engine settings, which depend on the compiler in effect
        for key, value in data.items():
            where = f"{shown} {key}"
            if key in standard.parameters:
                if value == standard.parameters[key]:
                    self.report.add(MAPPED, where, f"-> {key}: {_text(value)}, perfplay's {case}'s parameter: nothing "
                                                   "to write")
                else:
                    self.report.add(NONE, where, f"{_text(value)}: {key} is a parameter of perfplay's {case} "
                                                 f"({_text(standard.parameters[key])}): hardware-independent, never "
                                                 "overridden by a vendor")
            elif key == "flops":
                repeated = "FlagPerf's standard's figure, repeated" if flagperf.get(key) == value else \
                    "a vendor's FLOPs per item make its runs non-standard"
                self.report.add(NONE, where, f"{_text(value)}: {repeated}; perfplay's {case} counts "
                                             f"{mine['flops']:.6g} per item ({standard.provenance['flops']})")
            elif key in CONFIG_KEYS:
                mapped = inference_engine(value) if key == "compiler" else value
                if key in flagperf and flagperf[key] == value and mapped != mine[key]:
                    self.report.add(MAPPED, where, f"{_text(value)}: FlagPerf's standard's value, repeated: perfplay's "
                                                   f"standard's {_text(mine[key])} stands, nothing to write")
                elif mapped == mine[key]:
                    self.report.add(MAPPED, where, f"-> {key}: {_text(mapped)}, perfplay's {case}'s standard: nothing "
                                                   "to write")
                else:
                    written[key], origin[key] = mapped, key
            else:
                later.append((key, value, where))
        self._check(written, case, shown)
        compiler = written.get("compiler", mine["compiler"])
        for key, value, where in later:
            row = inference_setting(key)
            if row is None:
                self.report.add(NONE, where, f"{_text(value)}: not a key of perfplay's inference "
                                                        f"configurations ({', '.join(CONFIG_KEYS)}) nor a FlagPerf "
                                                        "engine setting it maps")
            elif row.perfplay is None:
                self.report.add(NONE, where, f"{_text(value)}: {row.note}")
            elif compiler != "inductor":
                self.report.add(NONE, where, f"{_text(value)}: {row.note}; this case's compiler is "
                                                        f"{_text(compiler)}, which does not read it")
            else:
                written[row.perfplay], origin[row.perfplay] = value, key
        out = vendor_overrides_path(Path(), vendor, case).as_posix()
        for key, value in written.items():
            was = f"perfplay's standard {_text(mine[key])}" if key in mine else "a key the vendor's file adds: " \
                  "the plan warns"
            self.report.add(MAPPED, f"{shown} {origin[key]}", f"-> {out} {key}: {_text(value)} ({was})")
        self._engine(vendor, compiler, data.get("compiler"), shown)
        if written:
            self.importer.output(out, f"{case} inference on {vendor}, from FlagPerf {shown}: the keys that differ "
                                      "from perfplay's standard", written)
            self.report.file(shown, MAPPED, "an inference vendor configuration", f"-> {out} ({len(written)} keys)")
        else:
            self.report.file(shown, READ, "an inference vendor configuration: nothing differs from perfplay's "
                                          "standard that perfplay takes")

    def _check(self, written: dict[str, Any], case: str, shown: str) -> None:
        """The keys to write, resolved together over perfplay's standard; one whose leaving out resolves them is
        reported and left out (a range, or a switch: no_validation needs exist_onnx_path)."""
        try:
            resolve_inference(case, None, self.importer.root, overrides=written, overrides_file=shown)
            return
        except ConfigError as exc:
            error = exc
        for key in reversed(list(written)):
            rest = {k: v for k, v in written.items() if k != key}
            try:
                resolve_inference(case, None, self.importer.root, overrides=rest, overrides_file=shown)
            except ConfigError:
                continue
            self.report.add(NONE, f"{shown} {key}", f"{_text(written.pop(key))}: not written: perfplay refuses it "
                                                    f"over its standard: {error}")
            return
        self.report.add(NONE, shown, f"not written: perfplay refuses its keys over its standard: {error}")
        written.clear()

    def _engine(self, vendor: str, compiler: Any, flagperf: Any, shown: str) -> None:
        """The compiler in effect: an engine the vendor has in perfplay, or one it brings."""
        if compiler is None:
            return
        engines = vendor_engines(self.importer.root, vendor) if vendor in self.importer.vendors else []
        if compiler in engines:
            return
        theirs = ENGINE_FILE.format(vendor=vendor, compiler=flagperf or compiler)
        port = f"FlagPerf's {theirs} as an InferModel" if (self.importer.sources.base / theirs).is_file() else \
            "an InferModel"
        self.report.add(PORT, shown, f"compiler {compiler}: perfplay ships no vendor/{vendor}/engines/{compiler}.py: "
                                     f"the vendor brings it ({port}, docs/adapting-a-chip.md); until then the plan "
                                     f"refuses this case on {vendor}")
