"""A rank stops on SIGTERM (the launcher's timeout or abort) or SIGINT (Ctrl-C, forwarded), wherever it is.

The signal handler only records the request: the signal, when, and the phase the rank was in. The trainer and
the inference pipeline call check() at their step and phase boundaries (Checked wraps a loader that case code
iterates); the first check after a request raises Stopped, which the worker turns into a failed result.

A check can be far off (`import torch`, a long C call, case code) or its exception lost (a finalizer, a bare
except). So a watchdog thread, woken by the signal itself (signal.set_wakeup_fd: it works while the main thread
is in C), gives the main thread GRACE_SHARE of the launcher's grace, then writes the failed result itself and
ends the process with os._exit. The launcher's SIGKILL at the end of its grace stays the backstop (for a main
thread that holds the GIL in C). The worker's own result goes through write_result, under the lock the
watchdog takes, so the two never both write; then a stopped rank ends at once (end_if_requested), as the
watchdog is frozen once the interpreter's teardown begins.
"""

from __future__ import annotations

import itertools
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sized
from dataclasses import dataclass
from typing import Any

from case_runners.core import files

SIGNALS = (signal.SIGTERM, signal.SIGINT)
GRACE_SHARE = 0.5  # of the launcher's grace: the rank's time to stop; the rest is the margin before SIGKILL


@dataclass(frozen=True)
class Request:
    signum: int
    at: float  # time.monotonic() when it arrived
    phase: str  # what the rank was doing
    why: str | None = None  # a request the rank made itself (its deadline), in place of the signal's name

    @property
    def reason(self) -> str:
        if self.why:
            return f"{self.why} during {self.phase}"
        name = signal.Signals(self.signum).name
        if self.signum == signal.SIGINT:
            return f"interrupted by {name} during {self.phase}"
        return f"terminated by signal {name} during {self.phase}"

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class Stopped(BaseException):
    """Raised by check() after a stop request. A BaseException, like KeyboardInterrupt, so that an
    `except Exception` in case or library code lets it through."""

    def __init__(self, request: Request) -> None:
        super().__init__(request.reason)
        self.request = request


class _State:
    phase = "import"
    request: Request | None = None
    exit_code: int | None = None  # of the result the worker wrote


_state = _State()
_result_lock = threading.Lock()


def check(phase: str | None = None) -> None:
    """A boundary: raise Stopped if a stop was requested, else note that the rank is now in `phase`
    (None: still in the current one)."""
    if _state.request is not None:
        raise Stopped(_state.request)
    if phase is not None:
        _state.phase = phase


class Checked:
    """An iterable with a check before each item, so that a loop in case code stops between batches, and at most
    `limit` items when one is given; the wrapped object's other attributes (dataset, sampler) pass through."""

    def __init__(self, iterable: Iterable, phase: str | None = None, limit: int | None = None) -> None:
        self.iterable, self.phase, self.limit = iterable, phase, limit

    def __iter__(self) -> Iterator:
        check(self.phase)
        for item in self.iterable if self.limit is None else itertools.islice(self.iterable, self.limit):
            check(self.phase)
            yield item

    def __len__(self) -> int:
        if not isinstance(self.iterable, Sized):  # len() of the wrapped object, as if not wrapped
            raise TypeError(f"object of type '{type(self.iterable).__name__}' has no len()")
        return len(self.iterable) if self.limit is None else min(len(self.iterable), self.limit)

    def __getattr__(self, name: str) -> Any:
        if name == "iterable":  # not set yet (a copy being made)
            raise AttributeError(name)
        return getattr(self.iterable, name)


def write_result(write: Callable[[], None], exit_code: int) -> None:
    """Write the rank's result (exit_code goes with it) under the watchdog's lock. Once the watchdog has taken
    it, it never gives it back: it writes its own result and ends the process."""
    with _result_lock:
        write()
        _state.exit_code = exit_code


def end_if_requested(exit_code: int) -> None:
    """After the result is written: a rank asked to stop ends here, without the interpreter's teardown (half a
    second with torch, seconds on a loaded host), which no watchdog thread can bound."""
    if _state.request is not None:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(exit_code)


def install(launcher_grace_s: float, write_failed: Callable[[str], None], deadline: float | None = None) -> None:
    """For the rest of this process (call once, from the main thread): SIGTERM and SIGINT record a stop request,
    and GRACE_SHARE x launcher_grace_s after one the watchdog calls write_failed(reason) unless a result was
    written, then ends the process with the exit code of that result. deadline (a time.time()): the rank makes
    that request itself then, for a launcher that did not stop it (stopped with SIGSTOP, hung)."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    previous = {s: signal.signal(s, _on_signal) for s in SIGNALS}
    signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    threading.Thread(target=_watch, args=(read_fd, launcher_grace_s * GRACE_SHARE, write_failed),
                     name="perfplay-stop-watchdog", daemon=True).start()
    if deadline is not None:
        threading.Thread(target=_at_deadline, args=(deadline, write_fd), name="perfplay-deadline",
                         daemon=True).start()

    def forget_in_child() -> None:  # a forked child (a DataLoader worker) gets the signals' old handlers back
        signal.set_wakeup_fd(-1)
        for s, handler in previous.items():
            signal.signal(s, handler)
        os.close(read_fd)
        os.close(write_fd)
    os.register_at_fork(after_in_child=forget_in_child)


def _record(signum: int) -> Request:
    if _state.request is None:  # the first signal counts; a second one changes nothing
        _state.request = Request(signum, time.monotonic(), _state.phase)
    return _state.request


def _on_signal(signum: int, _frame: object) -> None:
    _record(signum)


def _at_deadline(deadline: float, wake_fd: int) -> None:
    """At `deadline`, a stop request of the rank's own, handled like SIGTERM (the watchdog is woken for it)."""
    while time.time() < deadline:
        time.sleep(min(1.0, deadline - time.time()))
    if _state.request is None:
        _state.request = Request(signal.SIGTERM, time.monotonic(), _state.phase,
                                 why="past the round's deadline (case timeout plus grace) and not stopped by its "
                                     "launcher: ended by the rank itself")
    os.write(wake_fd, bytes([signal.SIGTERM]))


def _watch(read_fd: int, bound_s: float, write_failed: Callable[[str], None]) -> None:
    received = b""
    while not any(s in SIGNALS for s in received):
        received = os.read(read_fd, 64)  # the numbers of the signals that arrived
    request = _record(next(s for s in received if s in SIGNALS))
    time.sleep(max(0.0, request.at + bound_s - time.monotonic()))
    with _result_lock:
        files.remove_pending()  # a write the main thread is in the middle of (a checkpoint) leaves no temporary
        if _state.exit_code is None:
            reason = f"{request.reason} (ended by the worker's watchdog: no stop check within {bound_s:g} s)"
            os.write(2, f"perfplay worker: {reason}\n".encode())
            try:
                write_failed(reason)
            finally:
                os._exit(request.exit_code)
        os._exit(_state.exit_code)
