"""The vendor runtime hook, vendor/<vendor>/runtime.py: what a chip needs before a case runs on it, and how shared
code times, measures and picks its devices. Every name is optional; where a hook says nothing, the default below
applies, through torch's module for the device type (torch.<device>: synchronize, max_memory_allocated, ...).

    IMPORTS = ["torch_musa"]           modules imported, in order, before anything else in a rank
    ENVIRONMENT = {"NAME": "value"}    set before the imports; the host's own values win
    def setup(): ...                   after the imports: register the device type or the distributed backend
    def device_count() -> int          devices of this vendor on the host (host preflight: devices >= nproc)
    def pick_device(index) -> torch.device     a rank's device; index: its device among those it sees
    def synchronize(device): ...       wait for the device's queued work (every timing in the trainer)
    def peak_memory_bytes(device) -> int | None   peak memory this process allocated on the device
    def reset_peak_memory(device): ...
    def allow_tf32(enabled): ...       TF32 or the chip's equivalent for fp32 matmuls and convolutions, on or off
    def versions() -> dict             software stack versions, recorded with every rank's result (beside
                                       torch's and Python's, which perfplay adds)
    def timing_event(device)           a new event timing the device's work: record(), synchronize(),
                                       elapsed_time(end) in ms (torch.cuda.Event's interface); None: no events
    def memory_info(device) -> (free, total) | None    the device's memory, bytes
    def empty_cache(device): ...       give the allocator's cached memory back to the device
    def pin_memory(tensor) -> tensor   page-locked host memory the device copies from directly
    OPLIBS = ["flag_gems"]             operator libraries enable_oplib can turn on (the operation task's oplibs)
    def enable_oplib(name): ...        turn one of OPLIBS on for the rest of the process (it replaces aten kernels)

A rank calls prepare() (environment, imports, setup) before it touches torch's device or backend. The module itself
must import with the standard library only: the host preflight loads it where torch may be absent (the docker
runtime's host side) to ask device_count(); import vendor libraries in IMPORTS or inside the functions.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import platform
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from case_runners.core.errors import PerfplayError
from case_runners.core.paths import display_path, project_root
from case_runners.vendors.layout import RUNTIME_FILE, VENDOR_FILE, vendor_dir
from case_runners.vendors.plugin_source import Point, check_source, contract, last_line, loaded_points

POINTS = contract(
    Point("setup", (), "after IMPORTS: register the device type or the distributed backend"),
    Point("device_count", (), "the number of this vendor's devices on the host"),
    Point("pick_device", ("index",), "the torch.device of a rank, given its device index"),
    Point("synchronize", ("device",), "wait for the device's queued work"),
    Point("peak_memory_bytes", ("device",), "peak device memory this process allocated, or None"),
    Point("reset_peak_memory", ("device",), "restart the peak memory count"),
    Point("allow_tf32", ("enabled",), "TF32 or the chip's equivalent for fp32 matmuls and convolutions"),
    Point("versions", (), "software stack versions: {name: version}"),
    Point("timing_event", ("device",), "a new event that times the device's work, or None"),
    Point("memory_info", ("device",), "(free, total) bytes of the device's memory, or None"),
    Point("empty_cache", ("device",), "give the allocator's cached memory back to the device"),
    Point("pin_memory", ("tensor",), "the tensor in page-locked host memory"),
    Point("enable_oplib", ("name",), "turn the operator library `name` (one of OPLIBS) on for this process"),
)
CONSTANTS = {"IMPORTS": "modules imported before the case", "ENVIRONMENT": "variables set before the imports",
             "OPLIBS": "the operator libraries enable_oplib turns on"}
NAME = re.compile(r"^[a-z][a-z0-9_]*$")  # the form of a torch device type and of a backend name


class RuntimeHookError(PerfplayError):
    """The vendor's hook, or torch after it, cannot give the device or backend the vendor names."""


def check_hook_source(vendor: str, root: Path | None = None) -> tuple[list[str], list[str]]:
    """(problems, names defined) of vendor/<vendor>/runtime.py from its source; no file: ([], [])."""
    root = root or project_root()
    path = vendor_dir(root, vendor) / RUNTIME_FILE
    if not path.is_file():
        return [], []
    return check_source(path, POINTS, CONSTANTS, display_path(path, root))


class VendorRuntime:
    """One vendor's hook, loaded from its file (or the defaults where there is none)."""

    def __init__(self, vendor: str | None, device_type: str, dist_backend: str, root: Path | None = None) -> None:
        """vendor None: torch's defaults for device_type, no hook."""
        self.vendor, self.device_type, self.dist_backend = vendor or "", device_type, dist_backend
        self.root = root or project_root()
        folder = vendor_dir(self.root, vendor or "_none_")
        self.path = folder / RUNTIME_FILE
        self.shown = display_path(self.path, self.root) if vendor else "(no vendor hook)"
        self.vendor_file = display_path(folder / VENDOR_FILE, self.root) if vendor else "vendor.yaml"
        self.points: dict[str, Any] = {}
        self.imports: list[str] = []
        self.environment: dict[str, str] = {}
        self.oplibs: list[str] = []  # the hook's OPLIBS
        self.prepared = False
        self.on_call: Callable[[str], None] = lambda call: None  # told "<file>: <call>" before each (vendor_calls)
        self._load()

    def _load(self) -> None:
        if not self.vendor or not self.path.is_file():
            return
        spec = importlib.util.spec_from_file_location(f"perfplay_vendor_{self.vendor.replace('-', '_')}_runtime",
                                                      self.path)
        if spec is None or spec.loader is None:
            raise RuntimeHookError(f"{self.shown}: cannot be loaded as a Python module")
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:  # noqa: BLE001 - any error of the vendor's file, named with the file
            raise RuntimeHookError(f"{self.shown}: importing it failed: {last_line(exc)}") from exc
        imports, environment = getattr(module, "IMPORTS", []), getattr(module, "ENVIRONMENT", {})
        if not isinstance(imports, (list, tuple)) or not all(isinstance(i, str) and i for i in imports):
            raise RuntimeHookError(f"{self.shown}: IMPORTS must be a list of module names, not {imports!r}")
        if not isinstance(environment, dict) or not all(isinstance(k, str) for k in environment):
            raise RuntimeHookError(f"{self.shown}: ENVIRONMENT must be a mapping of variable names to values")
        self.imports, self.environment = list(imports), {k: str(v) for k, v in environment.items()}
        oplibs = getattr(module, "OPLIBS", [])
        if not isinstance(oplibs, (list, tuple)) or not all(isinstance(o, str) and NAME.match(o) for o in oplibs):
            raise RuntimeHookError(f"{self.shown}: OPLIBS must be a list of library names, not {oplibs!r}")
        self.oplibs = list(oplibs)
        self.points, problems = loaded_points(module, POINTS, self.shown)
        if problems:
            raise RuntimeHookError("; ".join(problems))

    def _call(self, name: str, *args: Any) -> Any:
        self.on_call(f"{self.shown}: {name}()")
        try:
            return self.points[name](*args)
        except PerfplayError:
            raise
        except Exception as exc:  # noqa: BLE001 - the vendor's code failed: say where
            raise RuntimeHookError(f"{self.shown}: {name}() raised {last_line(exc)}") from exc

    def prepare(self) -> None:
        """Environment, imports and setup(), once per process, before torch's device or backend is used."""
        if self.prepared:
            return
        for name, value in self.environment.items():
            os.environ.setdefault(name, value)
        for name in self.imports:
            self.on_call(f"{self.shown}: IMPORTS: import {name}")
            try:
                importlib.import_module(name)
            except Exception as exc:  # noqa: BLE001 - ImportError, or the module's own failure
                raise RuntimeHookError(f"{self.shown}: IMPORTS: import {name} failed: {last_line(exc)}") from exc
        if "setup" in self.points:
            self._call("setup")
        self.prepared = True

    def _torch_module(self) -> Any:
        import torch

        return getattr(torch, self.device_type, None)

    def device_count(self) -> int:
        """The hook's count, or torch.<device>.device_count() after prepare()."""
        if "device_count" in self.points:
            count = self._call("device_count")
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise RuntimeHookError(f"{self.shown}: device_count() returned {count!r} "
                                       f"({type(count).__name__}), not a number of devices")
            return count
        try:
            self.prepare()
            module = self._torch_module()
        except ImportError as exc:
            message = (f"cannot count '{self.device_type}' devices without torch ({exc}): give {self.shown} a "
                       "device_count(), or set the host var perfplay_device_count")
            raise RuntimeHookError(message) from exc
        if module is None or not hasattr(module, "device_count"):
            raise RuntimeHookError(f"torch has no module torch.{self.device_type} to count devices with: give "
                                   f"{self.shown} a device_count()")
        return int(module.device_count())

    def pick_device(self, index: int) -> Any:
        """The hook's device for index, or torch.device(<device>, index) made current."""
        import torch

        if "pick_device" in self.points:
            device = self._call("pick_device", index)
            if not isinstance(device, torch.device):
                raise RuntimeHookError(f"{self.shown}: pick_device() returned {device!r}, not a torch.device")
            return device
        module = self._torch_module()
        if module is None or (hasattr(module, "is_available") and not module.is_available()):
            raise RuntimeHookError(f"{self.vendor_file}: key 'device': torch has no usable '{self.device_type}' "
                                   f"device here")
        if hasattr(module, "device_count") and index >= module.device_count():
            raise RuntimeHookError(f"device index {index} requested but only {module.device_count()} "
                                   f"'{self.device_type}' devices are visible")
        device = torch.device(self.device_type, index)
        if hasattr(module, "set_device"):
            module.set_device(device)
        return device

    def synchronizer(self, device: Any) -> Callable[[], Any]:
        """A function that waits for the device's queued work."""
        if "synchronize" in self.points:
            return lambda: self._call("synchronize", device)
        module = self._torch_module()
        if module is None or not hasattr(module, "synchronize"):
            return lambda: None
        return lambda: module.synchronize(device)

    def _from_torch(self, name: str, *args: Any) -> Any:
        """torch.<device>.<name>(*args), the default of a point the hook leaves out; None where torch's module for
        the device has no such function."""
        module = self._torch_module()
        return getattr(module, name)(*args) if hasattr(module, name) else None

    def peak_memory_bytes(self, device: Any) -> int | None:
        if "peak_memory_bytes" in self.points:
            value = self._call("peak_memory_bytes", device)
        else:
            value = self._from_torch("max_memory_allocated", device)
        return None if value is None else int(value)

    def reset_peak_memory(self, device: Any) -> None:
        if "reset_peak_memory" in self.points:
            self._call("reset_peak_memory", device)
        else:
            self._from_torch("reset_peak_memory_stats", device)

    def allow_tf32(self, enabled: bool) -> None:
        """On or off, always set: fp32 is fp32 unless the config allows TF32 (MFU uses the peak of what ran)."""
        if "allow_tf32" in self.points:
            self._call("allow_tf32", bool(enabled))
            return
        import torch

        torch.set_float32_matmul_precision("high" if enabled else "highest")

    def timing_event(self, device: Any) -> Any:
        """A new event that times the device's queued work (record(), synchronize(), elapsed_time(end) in ms): the
        hook's, else torch.<device>.Event(enable_timing=True) where torch has one for a device that is not the host's
        CPU. None: time with perf_counter around synchronize() (the base task's timing.py)."""
        if "timing_event" in self.points:
            return self._call("timing_event", device)
        module = self._torch_module()
        if getattr(device, "type", "cpu") == "cpu" or not hasattr(module, "Event"):
            return None
        return module.Event(enable_timing=True)

    def memory_info(self, device: Any) -> tuple[int, int] | None:
        """(free, total) bytes of the device's memory: the hook's, else torch.<device>.mem_get_info; None when
        neither says."""
        if "memory_info" in self.points:
            found = self._call("memory_info", device)
        else:
            found = self._from_torch("mem_get_info", device)
        if found is None:
            return None
        try:
            free, total = (int(v) for v in found)
        except (TypeError, ValueError):
            raise RuntimeHookError(f"{self.shown}: memory_info() returned {found!r}, not (free, total)") from None
        return free, total

    def empty_cache(self, device: Any) -> None:
        if "empty_cache" in self.points:
            self._call("empty_cache", device)
        else:
            self._from_torch("empty_cache")

    def pin_memory(self, tensor: Any) -> Any:
        """The tensor in page-locked host memory: the hook's, else torch's pin_memory() (the current accelerator's);
        the error says when the device has none."""
        if "pin_memory" in self.points:
            return self._call("pin_memory", tensor)
        return tensor.pin_memory()

    def enable_oplib(self, name: str) -> None:
        """Turn the operator library `name` on (the hook's enable_oplib); "native", plain PyTorch, is always on."""
        if name == "native":
            return
        if name not in self.oplibs or "enable_oplib" not in self.points:
            raise RuntimeHookError(f"{self.shown}: no operator library '{name}' (its OPLIBS: "
                                   f"{', '.join(self.oplibs) or 'none'}, with enable_oplib)")
        self._call("enable_oplib", name)

    def versions(self) -> dict[str, str]:
        """torch's and this Python's versions, and the hook's (the vendor's software stack)."""
        import torch

        found: dict[str, str] = {"torch": torch.__version__, "python": platform.python_version()}
        if "versions" in self.points:
            extra = self._call("versions")
            if not isinstance(extra, dict):
                raise RuntimeHookError(f"{self.shown}: versions() returned {type(extra).__name__}, not a mapping")
            found.update({str(k): str(v) for k, v in extra.items()})
        return found

    def check(self) -> list[str]:
        """What keeps ranks from running here, after prepare(): torch cannot make the vendor's device, its backend is
        not available (torch.distributed.is_backend_available: a name torch lists is not enough, it lists xccl, ucc
        and mpi whether or not it was built with them), or the hook fails. Each names the vendor file, the key and
        what torch said."""
        try:
            self.prepare()
            import torch
            import torch.distributed as dist
        except (PerfplayError, ImportError) as exc:
            return [str(exc)]
        problems = []
        try:
            torch.device(self.device_type)
        except RuntimeError as exc:
            problems.append(f"{self.vendor_file}: key 'device': torch cannot make a '{self.device_type}' device "
                            f"after {self.shown} ran: {last_line(exc)}")
        if not dist.is_available():
            problems.append(f"{self.vendor_file}: key 'dist_backend': this torch has no torch.distributed")
        elif not dist.is_backend_available(self.dist_backend.lower()):
            listed = self.dist_backend.lower() in dist.Backend.backend_list
            available = [b for b in dist.Backend.backend_list if b != "undefined" and dist.is_backend_available(b)]
            why = "lists the backend '{}' but was not built with it" if listed else "does not know the backend '{}'"
            problems.append(f"{self.vendor_file}: key 'dist_backend': torch {why.format(self.dist_backend)} after "
                            f"{self.shown} ran (available here: {', '.join(available)})")
        if problems:
            return problems
        try:
            device = self.pick_device(0)
            torch.empty(1, device=device)
            self.synchronizer(device)()
            self.versions()
        except PerfplayError as exc:
            problems.append(str(exc))
        except Exception as exc:  # noqa: BLE001 - what torch said
            problems.append(f"{self.vendor_file}: key 'device': a tensor on '{self.device_type}' failed: "
                            f"{last_line(exc)}")
        return problems
