"""A vendor's base toolkits (vendors/toolkits.py, tasks/base/toolkit.py): mode toolkit or both refused at plan time
without a toolkit or with a bad toolkit.yaml, naming the key, the file and the allowed values; the result line
parsed or refused; a real C toolkit (the test chip's) built once per node with the host's cc and run, its figures
measurements beside the torch benchmark's in the headlines and the summary table; a failed build or program named."""

from __future__ import annotations

import shutil
import textwrap
import threading
from pathlib import Path

import pytest
import torch

from case_runners.core.errors import PerfplayError
from case_runners.core.paths import project_root
from case_runners.plan.config.benchmarks import Peak
from case_runners.plan.run_plan import make_plan
from case_runners.rank.env import DistEnv
from case_runners.records.base import headlines, measurement
from case_runners.records.summary import BaseRow, Stat
from case_runners.tasks.base.context import BaseContext
from case_runners.tasks.base.toolkit import STAMP, build, build_dir, measure
from case_runners.vendors.runtime import VendorRuntime
from case_runners.vendors.toolkits import load_toolkit, parse_result
from case_runners.views.summary import base_rows

ROOT = project_root()
CHIP_TOOLKIT = ROOT / "tests" / "vendor_testchip" / "base" / "toolkits" / "memory_bandwidth"
TOOLKIT_YAML = "vendor/cpu/base/toolkits/memory_bandwidth/toolkit.yaml"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A project copy whose cpu vendor ships the test chip's memory_bandwidth toolkit."""
    for folder in ("case_runners", "vendor"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(CHIP_TOOLKIT, tmp_path / "vendor/cpu/base/toolkits/memory_bandwidth")
    return tmp_path


def plan_errors(root: Path, mode: str = "toolkit", **selection) -> list[str]:
    case = {"case": "memory_bandwidth", "overrides": {"mode": mode}, **selection}
    return make_plan({"task": "base", "vendor": "cpu", "cases": [case]}, check=True, root=root)["errors"]


def context(lines: list[str], **hardware) -> BaseContext:
    runtime = VendorRuntime("cpu", "cpu", "gloo")
    runtime.prepare()
    return BaseContext(benchmark="memory_bandwidth", runtime=runtime, device=torch.device("cpu"), hardware_name="CPU",
                       hardware=hardware, nnodes=1, rank=0, world_size=1, say=lines.append)


def test_the_default_mode_is_torch_and_a_toolkit_mode_resolves_where_the_vendor_ships_one(root):
    plan = make_plan({"task": "base", "vendor": "cpu", "cases": ["memory_bandwidth"]}, check=True, root=root)
    assert plan["errors"] == [] and plan["cases"][0]["params"]["mode"] == "torch"
    assert plan_errors(root, "both") == []
    assert plan_errors(root, "toolkits") == ["run overrides (perfplay_cases[0].overrides): key 'mode': 'toolkits' is "
                                             "not one of the allowed values (allowed: both, toolkit, torch)"]


def test_a_toolkit_the_vendor_lacks_is_refused_naming_the_file_and_the_toolkits_it_has(root):
    (errors,) = plan_errors(root, case="gemm", overrides={"mode": "toolkit"})
    assert errors == ("vendor/cpu/base/toolkits/gemm/toolkit.yaml: is missing: vendor 'cpu' ships no toolkit for "
                      "gemm (mode toolkit, set in run overrides (perfplay_cases[0].overrides)) (allowed: mode torch, "
                      "the toolkits of cpu: memory_bandwidth)")


@pytest.mark.parametrize("edit, expected", [
    pytest.param({"units": "B/s"}, "key 'units': unknown key (allowed: build, description, metric, peak, run, "
                                   "runs_on, unit)", id="unknown-key"),
    pytest.param({"unit": "GB/s"}, "key 'unit': 'GB/s' is not the unit of memory_bandwidth's figures (allowed: B/s)",
                 id="unit"),
    pytest.param({"peak": "memory_bytes"}, "key 'peak': 'memory_bytes' is not the peak memory_bandwidth is measured "
                                           "against (vendor.yaml hardware.<HW>.memory_bandwidth_bytes_s) (allowed: "
                                           "memory_bandwidth_bytes_s)", id="peak"),
    pytest.param({"run": ["{build}/stream", "{gpu}"]}, "key 'run[1]': '{gpu}': {gpu} is not a placeholder of run "
                                                       "(allowed: {build}, {device}, {local_rank}, {nproc}, {rank}, "
                                                       "{toolkit}, {world_size})", id="placeholder"),
    pytest.param({"build": ["cc", "-o", "{build}/stream", "streem.c"]},
                 "key 'build[3]': 'streem.c' is not a file of the toolkit's folder (memory_bandwidth/) (allowed: "
                 "stream.c)", id="source"),
    pytest.param({"runs_on": "host"}, "key 'runs_on': 'host' is not where the program runs (allowed: node, rank)",
                 id="runs-on"),
    pytest.param({"run": "stream 3"}, "key 'run': must be a non-empty argv list", id="shell-string"),
])
def test_a_bad_toolkit_yaml_is_refused_before_any_host_naming_the_key_and_the_file(root, edit, expected):
    import yaml

    path = root / TOOLKIT_YAML
    path.write_text(yaml.safe_dump({**yaml.safe_load(path.read_text()), **edit}))
    (error,) = plan_errors(root)
    message, _, allowed = expected.partition(" (allowed: ")
    assert error.startswith(f"{TOOLKIT_YAML}: {message} (mode toolkit, set in run overrides "), error
    assert error.endswith(f" (allowed: {allowed}" if allowed else ")"), error


def test_a_toolkit_that_runs_once_per_node_is_refused_on_several_nodes(root):
    path = root / TOOLKIT_YAML
    path.write_text(path.read_text().replace("runs_on: rank", "runs_on: node"))
    plan = make_plan({"task": "base", "vendor": "cpu", "cases": [
        {"case": "allreduce", "nnodes": 2, "nproc": 1, "overrides": {"mode": "toolkit"}}]}, check=True, root=root)
    assert any("ships no toolkit for allreduce" in e for e in plan["errors"]), plan["errors"]
    shutil.copytree(root / "vendor/cpu/base/toolkits/memory_bandwidth", root / "vendor/cpu/base/toolkits/allreduce")
    node = root / "vendor/cpu/base/toolkits/allreduce/toolkit.yaml"
    node.write_text(node.read_text().replace("memory_bandwidth_bytes_s", "interconnect_bytes_s"))
    plan = make_plan({"task": "base", "vendor": "cpu", "cases": [
        {"case": "allreduce", "nnodes": 2, "nproc": 1, "overrides": {"mode": "toolkit"}}]}, check=True, root=root)
    assert plan["errors"] == ["run vars: key 'perfplay_cases[0].nnodes': vendor/cpu/base/toolkits/allreduce/"
                              "toolkit.yaml runs once per node for the node's devices (runs_on: node): run it on one "
                              "node, got nnodes 2 (allowed: 1)"]


@pytest.mark.parametrize("line, expected", [
    ("PERFPLAY_RESULT kind=copy achieved=4.5e10 bytes=1024 iterations=3 seconds=1e-3",
     {"kind": "copy", "achieved": 4.5e10, "bytes": 1024, "iterations": 3, "seconds": 1e-3}),
    ("  PERFPLAY_RESULT kind=bf16 achieved=7.6e14 size=8192x8192x8192",
     {"kind": "bf16", "achieved": 7.6e14, "size": "8192x8192x8192"}),
    ("PERFPLAY_RESULT kind='all_reduce fp32' achieved=2e11 bytes=4096 algbw=1e11",
     {"kind": "all_reduce fp32", "achieved": 2e11, "bytes": 4096, "algbw": 1e11}),
    ("copy: 45 GB/s", None),
    ("PERFPLAY_RESULTS kind=copy", None),
])
def test_a_result_line_gives_its_fields_and_any_other_line_is_the_programs_log(line, expected):
    assert parse_result(line) == expected


@pytest.mark.parametrize("line, expected", [
    ("PERFPLAY_RESULT achieved=1e9", "lacks kind"),
    ("PERFPLAY_RESULT kind=copy achieved=fast", "achieved='fast' is not a number"),
    ("PERFPLAY_RESULT kind=copy achieved=nan", "achieved=nan is out of range"),
    ("PERFPLAY_RESULT kind=copy achieved=1e9 gbps=1", "unknown key 'gbps'"),
    ("PERFPLAY_RESULT kind=copy achieved=1e9 iterations=0", "iterations=0 is out of range"),
    ("PERFPLAY_RESULT kind=copy kind=triad achieved=1e9", "repeated"),
    ("PERFPLAY_RESULT kind='copy achieved=1e9", "No closing quotation"),
])
def test_a_malformed_result_line_is_named(line, expected):
    with pytest.raises(PerfplayError, match="toolkit result line") as info:
        parse_result(line)
    assert expected in str(info.value)


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs the host's C compiler (CI installs it: .ci/)")
def test_the_chips_c_toolkit_is_built_once_per_node_and_its_lines_are_measurements(root, tmp_path):
    toolkit = load_toolkit(root, "cpu", "memory_bandwidth")
    node_dir = tmp_path / "node"
    said: list[str] = []
    folders: list[Path] = []
    ranks = [threading.Thread(target=lambda: folders.append(build(toolkit, node_dir, said.append)))
             for _ in range(2)]
    for rank in ranks:
        rank.start()
    for rank in ranks:
        rank.join()
    assert folders == [build_dir(node_dir, toolkit)] * 2 and (folders[0] / "stream").is_file()
    assert [line for line in said if "building" in line] == [
        f"toolkit memory_bandwidth: building: cc -O2 -std=c99 -D_POSIX_C_SOURCE=199309L -o {folders[0]}/stream "
        "stream.c"], "the node's second rank used the first one's build"
    found = measure(toolkit, context(said, memory_bandwidth_bytes_s=100e9), DistEnv(), node_dir)
    assert [(m.kind, m.size, m.source, m.iterations) for m in found] == [
        ("copy", "64 MiB", "toolkit", 3), ("triad", "64 MiB", "toolkit", 3),
        ("copy", "128 MiB", "toolkit", 3), ("triad", "128 MiB", "toolkit", 3)]
    for m in found:
        moved = 2 if m.kind == "copy" else 3
        assert m.seconds and m.achieved == pytest.approx(moved * m.bytes / m.seconds, rel=1e-5)
        assert (m.peak, m.peak_key) == (100e9, "hardware.CPU.memory_bandwidth_bytes_s")
        assert m.fraction_of_peak == pytest.approx(m.achieved / 100e9)
        assert m.note.startswith(f"the vendor's toolkit ({TOOLKIT_YAML}): memory bandwidth")


def fake_toolkit(root: Path, build: str, run: str) -> None:
    folder = root / "vendor/cpu/base/toolkits/memory_bandwidth"
    (folder / "build.sh").write_text(build)
    (folder / "run.sh").write_text(run)
    (folder / "toolkit.yaml").write_text(textwrap.dedent("""\
        metric: memory bandwidth
        unit: B/s
        peak: memory_bandwidth_bytes_s
        build: [sh, build.sh, "{build}"]
        run: [sh, run.sh, "{device}", "{rank}"]
        """))


def test_a_failed_build_fails_every_rank_of_the_node_naming_its_command_and_output(root, tmp_path):
    fake_toolkit(root, "echo 'stream.c:3: error: expected ;' >&2\nexit 4\n", "exit 0\n")
    toolkit = load_toolkit(root, "cpu", "memory_bandwidth")
    for _ in range(2):  # the second rank reads the first one's stamp
        with pytest.raises(PerfplayError) as info:
            measure(toolkit, context([]), DistEnv(), tmp_path)
        assert str(info.value) == (f"{TOOLKIT_YAML}: the build exited with 4: sh build.sh "
                                   f"{build_dir(tmp_path, toolkit)}; its last output:\nstream.c:3: error: expected ;")
    assert (build_dir(tmp_path, toolkit) / STAMP).is_file()


@pytest.mark.parametrize("program, expected", [
    ("echo 'no device 0' >&2\nexit 3\n", "the program exited with 3: sh run.sh 0 0; its last output:\nno device 0"),
    ("echo 'copy: 45 GB/s'\n", "the program printed no result line (PERFPLAY_RESULT kind=<kind> achieved="),
    ("echo 'PERFPLAY_RESULT kind=copy achieved=45GB/s'\n", "toolkit result line 'PERFPLAY_RESULT kind=copy "
                                                           "achieved=45GB/s': achieved='45GB/s' is not a number"),
])
def test_a_program_that_fails_or_prints_no_good_result_line_fails_the_rank_by_name(root, tmp_path, program, expected):
    fake_toolkit(root, "exit 0\n", program)
    with pytest.raises(PerfplayError) as info:
        measure(load_toolkit(root, "cpu", "memory_bandwidth"), context([]), DistEnv(), tmp_path)
    assert str(info.value).startswith(f"{TOOLKIT_YAML}: {expected}")


def test_a_node_toolkit_runs_on_the_nodes_first_rank_only(root, tmp_path):
    fake_toolkit(root, "exit 0\n", "echo PERFPLAY_RESULT kind=copy achieved=2e9 bytes=1048576 algbw=1e9\n")
    path = root / TOOLKIT_YAML
    path.write_text(path.read_text() + "runs_on: node\n")
    toolkit = load_toolkit(root, "cpu", "memory_bandwidth")
    env = DistEnv(rank=1, local_rank=1, world_size=2, local_world_size=2)
    assert measure(toolkit, context([]), env, tmp_path) == []
    (m,) = measure(toolkit, context([]), DistEnv(world_size=2, local_world_size=2), tmp_path)
    assert (m.kind, m.size, m.achieved, m.algbw, m.iterations, m.seconds) == ("copy", "1 MiB", 2e9, 1e9, 1, None)


def test_a_toolkits_headlines_follow_the_torch_ones_of_its_kind_and_the_table_says_by_whom():
    peak = Peak(None, "hardware.CPU.memory_bandwidth_bytes_s", "the vendor gives no peak")
    torch_side = [measurement("memory_bandwidth", kind, "64 MiB", value, peak, iterations=1, seconds=1.0, nbytes=1)
                  for kind, value in (("copy", 3e9), ("triad", 4e9))]
    toolkit_side = [measurement("memory_bandwidth", kind, "64 MiB", value, peak, iterations=1, seconds=1.0, nbytes=1,
                                source="toolkit") for kind, value in (("copy", 5e9), ("triad", 6e9))]
    lines = headlines(torch_side + toolkit_side)
    assert [(h.kind, base_rows.source(h), h.achieved) for h in lines] == [
        ("copy", "torch", 3e9), ("copy", "toolkit", 5e9), ("triad", "torch", 4e9), ("triad", "toolkit", 6e9)]
    row = BaseRow(benchmark="memory_bandwidth", kind="copy", stat="best", size="64 MiB", unit="B/s",
                  achieved=Stat.of([5e9]), peak=None, peak_key=peak.key, fraction_of_peak=Stat.of([]),
                  reason=peak.reason, source="toolkit")
    assert BaseRow.from_json(row.to_json()) == row
    assert base_rows.source(row) == "toolkit"
