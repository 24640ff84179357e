"""The collective benchmarks (allreduce, allgather, p2p): nccl-tests' bus-bandwidth arithmetic, their plan-time
refusals, and real runs of each on two gloo ranks through `python -m case_runners run`."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from case_runners.plan.config.benchmarks import BENCHMARKS, COLLECTIVE, PAIR
from case_runners.plan.run_plan import make_plan
from case_runners.tasks.base.collectives import (
    ALLGATHER,
    ALLREDUCE,
    COLLECTIVES,
    P2P,
    SENT_TYPES,
    bandwidths,
    collective_bytes,
    footprint,
    plan_problems,
)
from process_helpers import REAPED_S, RUN_S

PROJECT = Path(__file__).resolve().parents[2]
MiB = 2**20


def test_every_collective_of_the_catalog_is_defined_once_here() -> None:
    assert set(COLLECTIVES) == {name for name, b in BENCHMARKS.items() if b.ranks in (COLLECTIVE, PAIR)}


@pytest.mark.parametrize("n", [2, 3, 4, 8])
def test_bus_bandwidth_follows_nccl_tests(n: int) -> None:
    seconds = 0.5
    assert bandwidths(ALLREDUCE, 4 * MiB, n, seconds) == (4 * MiB / seconds, 4 * MiB / seconds * 2 * (n - 1) / n)
    gathered = n * 4 * MiB  # S: the gathered total
    assert collective_bytes(ALLGATHER, 4 * MiB, n) == gathered
    assert bandwidths(ALLGATHER, 4 * MiB, n, seconds) == (gathered / seconds, gathered / seconds * (n - 1) / n)
    assert bandwidths(P2P, 4 * MiB, 2, seconds) == (4 * MiB / seconds, 4 * MiB / seconds)


def test_on_two_ranks_an_allreduce_moves_its_message_once_each_way() -> None:
    algbw, busbw = bandwidths(ALLREDUCE, MiB, 2, 1.0)
    assert algbw == busbw == MiB


def test_the_footprint_is_what_one_rank_holds() -> None:
    params = {"sizes": [MiB, 16 * MiB], "dtype": "fp32"}
    assert footprint(ALLREDUCE, params, 8) == [("allreduce 1 MiB", MiB), ("allreduce 16 MiB", 16 * MiB)]
    assert footprint(P2P, params, 2)[-1] == ("p2p 16 MiB", 16 * MiB)
    assert footprint(ALLGATHER, params, 8)[-1] == ("allgather of 16 MiB per rank on 8 ranks", 9 * 16 * MiB)


def test_plan_problems_name_the_param() -> None:
    assert plan_problems({"sizes": [MiB], "dtype": "fp32"}, {}, "CPU", 2) == []
    ((param, message),) = plan_problems({"sizes": [MiB], "dtype": "int4"}, {}, "CPU", 2)
    assert param == "dtype" and "'int4'" in message and all(d in message for d in SENT_TYPES)
    ((param, message),) = plan_problems({"sizes": [MiB, 6], "dtype": "fp32"}, {}, "CPU", 2)
    assert param == "sizes" and message.startswith("6 bytes")
    assert plan_problems({"sizes": [6], "dtype": "fp16"}, {}, "CPU", 2) == []


def _plan_errors(case: dict, vendor: str = "cpu") -> list[str]:
    result = make_plan({"vendor": vendor, "task": "base", "cases": [case]}, check=True)
    assert not result["ok"]
    return result["errors"]


@pytest.mark.parametrize("name", [ALLREDUCE, ALLGATHER])
def test_a_collective_on_one_rank_is_refused(name: str) -> None:
    (error,) = _plan_errors({"case": name, "nproc": 1})
    assert "perfplay_cases[0].nproc" in error and "at least 2 ranks" in error and "got 1" in error


def test_p2p_on_three_ranks_is_refused() -> None:
    (error,) = _plan_errors({"case": "p2p", "nproc": 3})
    assert "perfplay_cases[0].nproc" in error and "two ranks" in error and "got 3" in error


def test_a_bad_dtype_or_size_is_refused_naming_the_key_and_file() -> None:
    (error,) = _plan_errors({"case": "allgather", "nproc": 2, "overrides": {"dtype": "int3"}})
    assert "perfplay_cases[0].overrides" in error and "key 'dtype'" in error and "fp32" in error
    (error,) = _plan_errors({"case": "allreduce", "nproc": 2, "overrides": {"sizes": [65536, 6]}})
    assert "key 'sizes'" in error and "6 bytes" in error


def test_an_allgather_beyond_the_device_memory_is_refused() -> None:
    (error,) = _plan_errors({"case": "allgather", "hardware": "H100", "nproc": 8,
                             "overrides": {"sizes": [MiB, 16 * 2**30]}}, vendor="nvidia")
    assert "allgather of 16 GiB per rank on 8 ranks" in error and "memory_bytes" in error


@pytest.mark.parametrize("name", [ALLREDUCE, ALLGATHER, P2P])
def test_two_gloo_ranks_measure_every_size(name: str, tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "case_runners", "run", name, "--task", "base", "--nproc", "2",
                             "--results-dir", str(tmp_path), "--no-monitors"], cwd=PROJECT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        output, _ = proc.communicate(timeout=RUN_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=REAPED_S)
    assert proc.returncode == 0, output[-3000:]
    (path,) = tmp_path.glob(f"run*/{name}_base_CPUx1x2/round1/round_record.json")
    record = json.loads(path.read_text())
    assert record["status"] == "success", record["reason"]
    measurements = record["metrics"]["measurements"]
    n = 2
    sizes = [m["bytes"] for m in measurements]
    messages = [65536, 262144, MiB, 4 * MiB, 16 * MiB]  # vendor/cpu/base.yaml
    assert sizes == [collective_bytes(name, s, n) for s in messages]
    for m in measurements:
        assert m["benchmark"] == name and m["kind"] == f"{COLLECTIVES[name].operation} fp32"
        assert m["unit"] == "B/s" and m["iterations"] == 5
        for key in ("seconds", "achieved", "algbw"):
            assert math.isfinite(m[key]) and m[key] > 0, (key, m)
        assert m["algbw"] == m["bytes"] / m["seconds"]
        assert m["achieved"] == m["algbw"] * COLLECTIVES[name].bus_factor(n)
        if name == ALLREDUCE:
            assert m["achieved"] == m["algbw"] * 2 * (n - 1) / n
        assert m["peak_key"] == "hardware.CPU.interconnect_bytes_s.intra"
        assert m["fraction_of_peak"] is None and "interconnect_bytes_s.intra" in m["reason"]
        assert f"n = {n} ranks" in m["note"]
    # Every rank reports the slowest rank's time: rank 1's figures are rank 0's.
    ranks = {r["rank"]: r["measurements"] for r in record["per_rank"]}
    assert set(ranks) == {0, 1} and ranks[0] == ranks[1] == measurements
