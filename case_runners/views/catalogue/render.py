"""The catalogue as text (a table: a row per case, a column per vendor) and as the Markdown of docs/catalogue.md."""

from __future__ import annotations

from pathlib import Path

from case_runners.cases import model_cases
from case_runners.core.text import text_columns
from case_runners.plan.base import BENCHMARKS_DIR
from case_runners.plan.config.resolved import BASE, TASKS
from case_runners.plan.config.stacks import PYTORCH
from case_runners.plan.inference_config import inference_models
from case_runners.views.catalogue.build import Catalogue, Entry, VendorConfigs

PAGE = "docs/catalogue.md"
# What writes the page (a test fails when the page is not its output).
COMMAND = f".venv/bin/python -m case_runners cases --markdown > {PAGE}"


def target_text(entry: Entry) -> str:
    """metric ≥ value (≤ where lower is better), or "-"."""
    if entry.target is None:
        return "-"
    return f"{entry.target.metric} {'≥' if entry.target.higher_is_better else '≤'} {entry.target.value:g}"


def case_text(entry: Entry) -> str:
    """The case, with its stack where it is not pytorch as a case key names it: llama:deepspeed."""
    return entry.case if entry.framework == PYTORCH else f"{entry.case}:{entry.framework}"


def configs_text(configs: VendorConfigs | None) -> str:
    """"A100 1x1 1x8 2x8, H100 1x1", or "-"."""
    if configs is None:
        return "-"
    return ", ".join(f"{hw.hardware} {' '.join(hw.scales)}" for hw in configs.hardware)


def _cells(catalogue: Catalogue, entry: Entry) -> list[str]:
    by_vendor = {c.vendor: c for c in entry.vendors}
    return [configs_text(by_vendor.get(v)) for v in catalogue.vendors]


def render_text(catalogue: Catalogue) -> str:
    header = ["task", "case", "target", *catalogue.vendors, "description"]
    rows = [[e.task, case_text(e), target_text(e), *_cells(catalogue, e), e.description] for e in catalogue.entries]
    return "\n".join(text_columns(header, rows))


def _readme(root: Path, entry: Entry) -> str | None:
    """The case's (a base benchmark's) README as the page links it, where there is one: a model case's is its
    package's."""
    parts = BENCHMARKS_DIR if entry.task == BASE else ("case_runners", "cases")
    packages = {**model_cases(root), **inference_models(root)}
    folder = entry.case if entry.task == BASE else packages.get(entry.case, entry.case)
    path = root.joinpath(*parts, folder, "README.md")
    return f"../{path.relative_to(root).as_posix()}" if path.is_file() else None


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown(catalogue: Catalogue, root: Path) -> str:
    """The catalogue page: a table per task, a column per vendor."""
    lines = ["# Case catalogue", "",
             f"<!-- Generated: `{COMMAND}` rewrites this page; a test fails when it is out of date. -->", "",
             "Every case per task, with the hardware and scales (`nnodes`x`nproc`) each vendor has configs for "
             "(`perfplay cases`; `--json` for the document, `--vendor V` for one vendor). Training: the vendor case "
             "folder's `config_<HW>x<nnodes>x<nproc>.yaml` (a stack's, `case:stack`, in its `<stack>/` subfolder); "
             "inference: where the case's configuration resolves on the "
             "vendor (with its `<vendor>_configurations.yaml`, or the standard one where the vendor has the engine "
             "of its compiler); generate: the vendor's `generate.yaml` for the case; operation: the vendor's "
             "`operation.yaml`; these hold for every hardware of the vendor's table, at 1x1. Base: the scales of the "
             "vendor's base suite. "
             "A `-` is a vendor without configs for the case: [Adapting a chip](adapting-a-chip.md) adds them."]
    for task in TASKS:
        entries = [e for e in catalogue.entries if e.task == task]
        if not entries:
            continue
        lines += ["", f"## {task}", "",
                  "| case | description | target | " + " | ".join(catalogue.vendors) + " |",
                  "|---|---|---|" + "---|" * len(catalogue.vendors)]
        for entry in entries:
            link = _readme(root, entry)
            name = f"[`{case_text(entry)}`]({link})" if link else f"`{case_text(entry)}`"
            cells = [name, _md(entry.description), _md(target_text(entry)), *map(_md, _cells(catalogue, entry))]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
