"""The environment of a round (a round record's `environment`): what a reader needs to reproduce or distrust its
figures. The perfplay checkout that ran (its git commit), rank 0's Python, torch and vendor software stack and thread
settings, node 0's host and device names. Built on the controller with the record (case_runners/records/round_build.py);
absent from records written before it.
"""

from __future__ import annotations

import dataclasses

from case_runners.records.schema import ABSENT, Absent, Document


@dataclasses.dataclass(kw_only=True)
class Perfplay(Document):
    """The perfplay that built the record: its version, and the git commit of its checkout and whether the checkout
    had changes (null when it is not a git checkout, or git could not tell)."""
    version: str
    commit: str | None
    dirty: bool | None


@dataclasses.dataclass(kw_only=True)
class HostInfo(Document):
    """Node 0's host, as its host monitor's sys_info.json has it (null where the monitor could not tell)."""
    hostname: str | None
    os: str | None
    kernel: str | None
    arch: str | None
    cpu_model: str | None
    cpu_packages: int | None
    logical_cpus: int | None
    mem_total_bytes: int | None


@dataclasses.dataclass(kw_only=True)
class Threads(Document):
    """A rank's thread settings as it ran, which a CPU-backed round's throughput depends on most."""
    intra_op: int | None  # torch.get_num_threads() at the rank's end; null when the rank never imported torch
    omp_num_threads: str | None  # the rank's OMP_NUM_THREADS (a CPU-backed device's share: rank/start.py); null: unset


@dataclasses.dataclass(kw_only=True)
class Environment(Document):
    perfplay: Perfplay
    python: str | None  # rank 0's platform.python_version()
    torch: str | None  # rank 0's torch.__version__
    software: dict[str, str]  # rank 0's vendor stack: the runtime hook's versions() (nvidia: cuda, cudnn, driver)
    host: HostInfo | None  # null when node 0 left no host sys_info.json
    devices: list[str]  # node 0's device names, from its vendor monitor's sys_info; [] when unknown
    threads: Threads | Absent = ABSENT  # rank 0's; absent: rank 0 left no result with them (or a record from before)
