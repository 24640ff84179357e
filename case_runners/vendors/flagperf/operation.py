"""import-flagperf's operation suite (FlagPerf's operation/): each operator's standard shapes
(benchmarks/<op>/case_config.yaml) compared with perfplay's standard, a vendor's chip overrides
(benchmarks/<op>/<vendor>/<chip>/case_config.yaml) as vendor/<vendor>/operation.yaml `params`, only where they
differ from the standard, and configs/host.yaml's CASES ("op:DTYPE[:TFLOPS]:oplib:chip") as that file's suite,
dtypes and oplibs. FlagPerf's shape keys (M, N, K, Melements, ...) are kept as they are."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from case_runners.tasks.operation import operators
from case_runners.vendors.flagperf.report import MAPPED, NONE, READ

if TYPE_CHECKING:
    from case_runners.vendors.flagperf.importer import Importer

OPERATION_DIR = "operation"
STANDARD_FILE = ("benchmarks", "*", "case_config.yaml")
CHIP_FILE = ("benchmarks", "*", "*", "*", "case_config.yaml")
HOST_YAML = ("configs", "host.yaml")
OPERATORS_FILE = ("case_runners", "tasks", "operation", "operators.yaml")  # perfplay's standard: op -> params, dtypes
OPERATION_YAML = "operation.yaml"  # vendor/<vendor>/operation.yaml
OPLIBS = {"nativetorch": "native", "flaggems": "flag_gems"}  # FlagPerf's operator libraries, perfplay's names
DTYPES = ("FP32", "FP16", "BF16")
# FlagPerf's chip names that perfplay's vendor.yaml spells otherwise; the others are kept.
CHIPS = {"A100_40_SXM": "A100"}
# FlagPerf's per-operator timing loop: perfplay's operation task counts its own (operation.yaml warmup, iterations).
TIMING = ("WARMUP", "ITERS", "KERNELWARMUP", "KERNELITERS")
TIMING_WHY = ("FlagPerf's timing loop of one operator; perfplay's operation task sets its own for every operator "
              "(operation.yaml warmup, iterations)")
PEAK = "SPECTFLOPS"  # a chip's peak TFLOP/s as FlagPerf's operator config states it


def operator_standard(root: Path) -> dict[str, dict[str, Any]] | None:
    """perfplay's standard operators (its operation task's table: op -> {params, dtypes}); None where this checkout
    has no operation task."""
    if not root.joinpath(*OPERATORS_FILE).is_file():
        return None
    return {name: {"params": dict(op.params), "dtypes": list(op.dtypes)} for name, op in operators().items()}


class OperationImport:
    """Maps FlagPerf's operation/ into the importer's report and outputs."""

    def __init__(self, importer: Importer, folder: Path, standard: dict[str, dict[str, Any]] | None) -> None:
        self.importer = importer
        self.report = importer.report
        self.folder = folder
        self.perfplay = standard is not None
        self.standard: dict[str, dict[str, Any]] = {}  # op -> its standard params
        if standard is not None:
            self.standard = {op: dict((spec or {}).get("params") or {}) for op, spec in standard.items()}
        self.vendors: dict[str, dict[str, Any]] = {}  # vendor -> its operation.yaml
        self.where: dict[str, list[str]] = {}  # vendor -> the files it was made from

    def run(self) -> None:
        if not self.perfplay:
            self.report.add(NONE, OPERATION_DIR, f"perfplay's operator table ({'/'.join(OPERATORS_FILE)}) is not in "
                                                 "this checkout: the chips' shapes are compared with FlagPerf's own "
                                                 "standard (benchmarks/<op>/case_config.yaml)")
        flagperf = {path.parent.name: self._standard_file(path) for path in sorted(self.folder.glob("/".join(
            STANDARD_FILE)))}
        if not self.perfplay:
            self.standard = {op: params for op, params in flagperf.items() if params is not None}
        for path in sorted(self.folder.glob("/".join(CHIP_FILE))):
            self._chip_file(path)
        host = self.folder.joinpath(*HOST_YAML)
        if host.is_file():
            self._host_yaml(host)
        for vendor, data in sorted(self.vendors.items()):
            data.setdefault("oplibs", [OPLIBS["nativetorch"]])
            self.importer.output(f"vendor/{vendor}/{OPERATION_YAML}",
                                 f"{vendor}'s operator benchmarks from FlagPerf's operation/ "
                                 f"({', '.join(sorted(set(self.where[vendor])))}): its chips' shapes where they "
                                 f"differ from the standard", dict(data))

    def _read(self, path: Path) -> dict[str, Any] | None:
        return self.importer.read_mapping(path, "an operator config")

    def _unknown(self, op: str) -> str:
        return f"perfplay has no operator {op}" if self.perfplay else \
            f"no standard of operator {op} (FlagPerf's {OPERATION_DIR}/benchmarks/{op}/case_config.yaml)"

    def _shape(self, data: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in data.items() if key not in (*TIMING, PEAK)}

    def _standard_file(self, path: Path) -> dict[str, Any] | None:
        """FlagPerf's standard of an operator, compared with perfplay's; its shape."""
        shown, op = self.importer.shown(path), path.parent.name
        data = self._read(path)
        if data is None:
            return None
        shape = self._shape(data)
        if not self.perfplay:
            self.report.file(shown, READ, "an operator's FlagPerf standard, the chips' overrides are compared with")
            return shape
        if op not in self.standard:
            self.report.add(NONE, shown, f"perfplay has no operator {op}")
            self.report.file(shown, NONE, "the standard of an operator perfplay does not run")
            return shape
        mine = self.standard[op]
        differ = [f"{key} {value!r} (perfplay's {mine.get(key)!r})" for key, value in shape.items()
                  if mine.get(key) != value]
        for text in differ:
            self.report.add(NONE, shown, f"FlagPerf's standard {text}: perfplay's standard stands; a vendor sets "
                                         f"its own in {OPERATION_YAML} params")
        self.report.file(shown, READ, "an operator's FlagPerf standard, compared with perfplay's",
                         "differs: " + "; ".join(differ) if differ else "the same shape")
        return shape

    def _chip_file(self, path: Path) -> None:
        """A vendor's chip overrides of an operator: the shape keys that differ from the standard."""
        shown = self.importer.shown(path)
        parts = path.relative_to(self.folder).parts  # benchmarks, op, vendor, chip, case_config.yaml
        op, vendor, chip = parts[1], parts[2], CHIPS.get(parts[3], parts[3])
        data = self._read(path)
        if data is None:
            return
        if op not in self.standard:
            self.report.add(NONE, shown, self._unknown(op))
            self.report.file(shown, NONE, "a chip's config of an operator perfplay does not run")
            return
        for key in (k for k in data if k in TIMING):
            self.report.add(NONE, f"{shown} {key}", f"{data[key]!r}: {TIMING_WHY}")
        if PEAK in data:
            self.report.add(NONE, f"{shown} {PEAK}", f"{data[PEAK]!r}: a chip's peak is vendor.yaml's "
                                                     f"hardware.{chip}.peak_flops.<dtype>")
        known = self.standard[op]
        changed = {}
        for key, value in self._shape(data).items():
            if self.perfplay and key not in known:
                self.report.add(NONE, f"{shown} {key}", f"perfplay's {op} has no shape key {key} (its keys: "
                                                        f"{', '.join(known) or 'none'})")
            elif known.get(key) != value:
                changed[key] = value
                was = f"the standard's {known[key]!r}" if key in known else "not in the standard"
                self.report.add(MAPPED, f"{shown} {key}", f"{value!r} -> vendor/{vendor}/{OPERATION_YAML} "
                                                          f"params.{chip}.{op}.{key} ({was})")
        if changed:
            params = self.vendors.setdefault(vendor, {}).setdefault("params", {})
            params.setdefault(chip, {})[op] = changed
            self.where.setdefault(vendor, []).append("benchmarks/<op>/<vendor>/<chip>/case_config.yaml")
            self.report.file(shown, MAPPED, "a chip's overrides of an operator",
                             f"-> vendor/{vendor}/{OPERATION_YAML} params.{chip}.{op}")
            self.importer.check_hardware(vendor, chip, shown)
        else:
            self.report.file(shown, READ, "a chip's config of an operator: the standard's shape")

    def _host_yaml(self, path: Path) -> None:
        """CASES' operators, dtypes and oplibs as the VENDOR's suite, dtypes and oplibs."""
        shown = self.importer.shown(path)
        data = self._read(path)
        if data is None:
            return
        vendor, cases = data.get("VENDOR"), data.get("CASES")
        if not isinstance(vendor, str) or not vendor.strip() or not isinstance(cases, dict) or not cases:
            self.report.add(NONE, shown, "no VENDOR and CASES: nothing to map")
            self.report.file(shown, NONE, "the operation suite's run settings, without cases")
            return
        found: dict[str, list[str]] = {"suite": [], "dtypes": [], "oplibs": []}
        for key in cases:
            parts = str(key).split(":")
            where = f"{shown} CASES {key}"
            if len(parts) not in (4, 5):
                self.report.add(NONE, where, "not op:DTYPE[:TFLOPS]:oplib:chip")
                continue
            op, dtype, oplib = parts[0], parts[1].upper(), OPLIBS.get(parts[-2])
            why = (self._unknown(op) if op not in self.standard else
                   f"dtype {parts[1]}: expected one of {', '.join(DTYPES)}" if dtype not in DTYPES else
                   f"oplib {parts[-2]}: expected one of {', '.join(OPLIBS)}" if oplib is None else None)
            if why or oplib is None:
                self.report.add(NONE, where, why or "")
                continue
            for name, value in (("suite", op), ("dtypes", dtype), ("oplibs", oplib)):
                if value not in found[name]:
                    found[name].append(value)
            self.report.add(MAPPED, where, f"-> vendor/{vendor}/{OPERATION_YAML} suite {op}, dtypes {dtype}, "
                                           f"oplibs {oplib}" + (f" ({parts[2]} TFLOPS: a chip's peak is vendor.yaml's "
                                                                f"hardware.<chip>.peak_flops)" if len(parts) == 5
                                                                else ""))
        if not found["suite"]:
            self.report.file(shown, NONE, "the operation suite's run settings, none of whose cases perfplay runs")
            return
        data_out = self.vendors.setdefault(vendor, {})
        data_out.update({name: values for name, values in found.items()})
        self.where.setdefault(vendor, []).append(shown)
        if len(cases) > 1:
            self.report.add(NONE, f"{shown} CASES", "perfplay runs every operator of the suite in every dtype and "
                                                    "oplib listed, not only the combinations CASES names")
        others = [key for key in data if key not in ("VENDOR", "CASES")]
        self.report.add(NONE, shown, f"{', '.join(others)}: where FlagPerf runs (hosts, ports, container); "
                                     "perfplay's inventory and run vars say that (docs/running.md)")
        self.report.file(shown, MAPPED, "the operation suite's run settings",
                         f"CASES -> vendor/{vendor}/{OPERATION_YAML} suite, dtypes, oplibs")
