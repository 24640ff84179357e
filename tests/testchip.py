"""The test chip's hardware table (tests/vendor_testchip/ABOUT.md): the scaffold's TODO(vendor) lines of vendor.yaml
hardware.TC1 as a vendor engineer fills them, once for the tests that lay the overlay over a scaffolded testchip."""

from __future__ import annotations

import shutil
from pathlib import Path

PEAK_FP32, PEAK_BF16 = 2.0e12, 4.0e12
# Plausible for a server CPU: a CI box of two cores reaches a few percent of these peaks, no host 1.5 times them.
HARDWARE = {
    "memory_bytes: null": "memory_bytes: 68719476736",   # 64 GiB: the base memory_capacity's bound
    "peak_flops: {fp32: null, tf32: null, fp16: null, bf16: null, int8: null}":
        f"peak_flops: {{fp32: {PEAK_FP32}, bf16: {PEAK_BF16}}}",
    "memory_bandwidth_bytes_s: null": "memory_bandwidth_bytes_s: 2.0e11",
}


def fill_hardware(vendor: Path) -> None:
    """Fill vendor/testchip/vendor.yaml's hardware lines; each scaffolded line must be there, once."""
    path = vendor / "vendor.yaml"
    text = path.read_text()
    for scaffolded, filled in HARDWARE.items():
        assert text.count(scaffolded) == 1, scaffolded
        text = text.replace(scaffolded, filled)
    path.write_text(text)


def chip_project(root: Path) -> Path:
    """A project copy with vendor/testchip scaffolded (new-vendor), the overlay (tests/vendor_testchip, ABOUT.md
    aside) laid over it and its hardware filled in, as a vendor has it; run it with PROJECT_ENV set to it."""
    from case_runners.cli.main import main as cli
    from case_runners.core.paths import project_root

    repo = project_root()
    for folder in ("case_runners", "vendor"):
        shutil.copytree(repo / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(repo / "requirements-case.txt", root)
    assert cli(["new-vendor", "testchip", "--device", "cpu", "--backend", "testccl", "--hardware", "TC1",
                "--root", str(root)]) == 0
    vendor = root / "vendor" / "testchip"
    for item in (repo / "tests" / "vendor_testchip").iterdir():
        if item.is_dir():
            shutil.copytree(item, vendor / item.name, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
        elif item.name != "ABOUT.md":
            shutil.copy(item, vendor / item.name)
    fill_hardware(vendor)
    return root
