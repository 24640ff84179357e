"""An operation case's operator rows as the views read them (report, compare-runs, history): the summary case's
`operation` rows (one per operator x dtype x oplib, records/operation.py) as plain dicts, their names, their rate
and the run's roofs (the vendor's peak FLOP/s per dtype and its memory bandwidth, from the case's resolved
config). Rows that are records or plain dicts (a round record's metrics) read the same."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from case_runners.core.paths import RESOLVED_NAME
from case_runners.plan.config.benchmarks import BYTES_S, FLOP_S, MEMORY_BANDWIDTH, PEAK_FLOPS
from case_runners.records.schema import ABSENT, RecordError, read_json

NATIVE = "native"  # the oplib of plain PyTorch: the other oplibs' speed-up is over it
MEMORY = "memory"  # a row's bound when the memory bandwidth roof is the lower
ROWS_KEY = "operation"  # a summary case's rows, and a round record's metrics' rows


def case_rows(case: Any) -> list[dict[str, Any]]:
    """The operator rows of a summary case (none for a case of another task)."""
    return rows_of(getattr(case, ROWS_KEY, ABSENT))


def rows_of(value: Any) -> list[dict[str, Any]]:
    """Rows as dicts, whether records (to_json) or dicts; [] for anything that is not a list."""
    if not isinstance(value, list):
        return []
    return [row.to_json() if hasattr(row, "to_json") else dict(row) for row in value
            if hasattr(row, "to_json") or isinstance(row, Mapping)]


def row_name(row: Mapping[str, Any]) -> str:
    """"mm FP32 flag_gems": what a row measured."""
    return f"{row['op']} {row['dtype']} {row['oplib']}"


def oplib_order(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """The oplibs of the rows, native first, then the libraries in the order they come."""
    found = list(dict.fromkeys(str(row["oplib"]) for row in rows))
    return sorted(found, key=lambda name: name != NATIVE)


def positive(value: Any) -> float | None:
    """A finite positive number, else None (what a log axis and a geometric mean can take)."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    return float(value) if ok else None


def rate(row: Mapping[str, Any], unit: str | None = None) -> tuple[float | None, str]:
    """The work a row did per second against the roof that bounds it: achieved FLOP/s (compute-bound), bytes/s
    (memory-bound, or an operator that counts no FLOPs); in `unit` (FLOP_S or BYTES_S) where given, since which roof
    bounds a row is the chip's: compare-runs reads a later run's rows in its baseline's units. Between two runs of
    the same shape its ratio is the speed-up; between chips of different shapes, the ratio of work rates."""
    if unit is None:
        unit = FLOP_S if row.get("bound") != MEMORY and positive(row.get("flops")) is not None else BYTES_S
    return positive(row.get("flops_per_s" if unit == FLOP_S else "bytes_per_s")), unit


def roofline_geomean(rows: Iterable[Mapping[str, Any]]) -> float | None:
    """The geometric mean of the rows' fraction of the roofline: one figure of how close a chip's operators come to
    its own peaks, comparable across chips whatever their peaks and shapes. None without such a row, and None where
    any row is incorrect: leaving a wrong kernel's row out would change the set the mean is over (and raise it when
    that row was slow), so such a run has no figure and its status names the rows."""
    rows = list(rows)
    if any(row.get("correct") is not True for row in rows):
        return None
    values = [v for row in rows if (v := positive(row.get("roofline_fraction")))]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


@dataclasses.dataclass(frozen=True)
class Roofs:
    """The roofline's ceilings: peak FLOP/s per dtype (lower case: fp32, bf16) and the memory bandwidth (B/s), and
    what is missing of them, for a note."""
    peak_flops: dict[str, float]
    bandwidth: float | None
    notes: list[str]

    def peak(self, dtype: str) -> float | None:
        return self.peak_flops.get(dtype.lower())


def case_roofs(run_dir: Path, case_id: str, hardware_name: str | None) -> Roofs:
    """The roofs of a case: its resolved config's vendor_info.hardware (the vendor.yaml hardware.<chip> the run ran
    with). What cannot be read is a note, never an error."""
    where = f"hardware.{hardware_name}"
    path = Path(run_dir) / case_id / RESOLVED_NAME
    try:
        doc = read_json(path)
    except RecordError as exc:
        return Roofs({}, None, [f"no roofs: {exc}"])
    info = doc.get("vendor_info") if isinstance(doc, dict) else None
    hardware = info.get("hardware") if isinstance(info, dict) else None
    hardware = hardware if isinstance(hardware, dict) else {}
    peaks = hardware.get(PEAK_FLOPS)
    peaks = peaks if isinstance(peaks, dict) else {}
    flops = {str(k).lower(): v for k, value in peaks.items() if (v := positive(value)) is not None}
    bandwidth = positive(hardware.get(MEMORY_BANDWIDTH))
    notes = [] if flops else [f"no compute roof: vendor.yaml has no {where}.{PEAK_FLOPS}"]
    notes += [] if bandwidth else [f"no memory roof: vendor.yaml has no {where}.{MEMORY_BANDWIDTH}"]
    return Roofs(flops, bandwidth, notes)
