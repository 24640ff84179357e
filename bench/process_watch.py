"""What the process a bench side measures in (the harness's rank, a bare loop) went through while its steps ran,
watched from outside through /proc while the side runs: its minor page faults (each a page the kernel maps and
zero-fills on first touch, so a step that takes freed heap back from the OS shows as thousands), its CPU time (against
the wall time: the share of a core the host left it) and its main thread's involuntary context switches (each time
the scheduler gave its core to another process); and the environment it started with, to prove what reached it."""

from __future__ import annotations

import bisect
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from types import TracebackType

from case_runners.core.processes import read_argv, read_environ

POLL_S = 0.02  # a step of a bench shape takes hundreds of ms: the window's ends are placed to a small part of one
TICK_S = 1 / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Usage:
    """A process's counters (since its start, or over a window)."""
    faults: float  # minor page faults, its threads' included
    cpu_s: float  # user + system CPU seconds, its threads' included
    preempted: float  # its main thread's involuntary context switches


def usage(pid: int) -> Usage | None:
    """The process's counters now (/proc/<pid>/stat and status), or None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    values = stat[stat.rfind(b")") + 2:].split()  # "pid (comm) state ppid ...": comm may hold spaces
    preempted = next((int(line.split()[1]) for line in status.splitlines()
                      if line.startswith("nonvoluntary_ctxt_switches:")), 0)
    return Usage(int(values[7]), (int(values[11]) + int(values[12])) * TICK_S, preempted)


def descendants(pid: int) -> list[int]:
    """The processes below pid, parents before their children (Linux /proc/<pid>/task/<tid>/children)."""
    found, queue = [], [pid]
    while queue:
        parent = queue.pop(0)
        try:  # a process (or thread) that ends while it is read has no children
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                children = [int(c) for c in Path(f"/proc/{parent}/task/{task}/children").read_text().split()]
            except OSError:
                continue
            found += children
            queue += children
    return found


class ProcessWatch:
    """While entered: the first process below this one whose argv `match` accepts is found, its environment read,
    and its counters sampled every POLL_S with time.time(), until it ends or the watch is left."""

    def __init__(self, match: Callable[[list[str]], bool]) -> None:
        self.match = match
        self.pid: int | None = None
        self.environ: dict[str, str] = {}
        self.times: list[float] = []
        self.samples: list[Usage] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="process-watch", daemon=True)

    def __enter__(self) -> ProcessWatch:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        me = os.getpid()
        while not self._stop.wait(POLL_S):
            if self.pid is None:
                self.pid = next((pid for pid in descendants(me) if self.match(read_argv(pid))), None)
                if self.pid is None:
                    continue
                self.environ = read_environ(self.pid)
            now, sample = time.time(), usage(self.pid)
            if sample is None:
                return
            self.times.append(now)
            self.samples.append(sample)

    def at(self, when: float) -> Usage:
        """The process's counters at time.time() `when`, interpolated between samples (held at either end)."""
        if not self.samples:
            raise ValueError("no sample: the process was never found")
        i = bisect.bisect_left(self.times, when)
        if i in (0, len(self.times)):
            return self.samples[min(i, len(self.times) - 1)]
        share = (when - self.times[i - 1]) / (self.times[i] - self.times[i - 1])
        before, after = self.samples[i - 1], self.samples[i]
        return Usage(*(getattr(before, f.name) + (getattr(after, f.name) - getattr(before, f.name)) * share
                       for f in fields(Usage)))

    def between(self, start: float, end: float) -> Usage:
        """The counters' growth from time.time() start to end."""
        first, last = self.at(start), self.at(end)
        return Usage(*(getattr(last, f.name) - getattr(first, f.name) for f in fields(Usage)))
