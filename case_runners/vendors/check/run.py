"""check-vendor's entry: every check in order, one line per finding, exit status 1 on any error."""

from __future__ import annotations

from pathlib import Path

from case_runners.core.paths import VENDOR_NAME
from case_runners.vendors.check.findings import Finding, error
from case_runners.vendors.check.functional import DEFAULT_STEPS, check_functional
from case_runners.vendors.check.monitor_run import check_monitor
from case_runners.vendors.check.structure import check_structure


def check_vendor(name: str, root: Path, functional: bool = False, steps: int = DEFAULT_STEPS,
                 cases: list[str] | None = None, data_dirs: dict[str, str] | None = None) -> list[Finding]:
    if not VENDOR_NAME.match(name):
        return [error(name, f"is not a vendor name (a folder under vendor/: {VENDOR_NAME.pattern})")]
    found = check_structure(name, root)
    if any(f.level == "error" and f.where.endswith("vendor.yaml") for f in found):
        return found  # nothing else can be checked without a vendor.yaml that loads
    found += check_monitor(name, root)
    if functional:
        if any(f.level == "error" for f in found):
            return [*found, error(name, "--functional skipped: fix the errors above first")]
        found += check_functional(name, root, steps, cases, data_dirs)
    return found


def report(name: str, found: list[Finding]) -> tuple[str, int]:
    """The printed report and the exit status."""
    errors = sum(1 for f in found if f.level == "error")
    warnings = sum(1 for f in found if f.level == "warning")
    lines = [str(f) for f in found]
    lines.append(f"check-vendor {name}: {errors} error(s), {warnings} warning(s)")
    return "\n".join(lines), 1 if errors else 0
