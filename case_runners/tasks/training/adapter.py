"""Vendor adapters of the trainer, FlagPerf's extern/: the one place where a vendor's code replaces steps of the
standard training loop. This docstring is the reference a vendor engineer reads.

    vendor/<vendor>/cases/<case>/extern/
        trainer_adapter.py   the points below, each optional; any other public function is refused
        converter.py         optional: the layer swaps of convert_model (replace_modules below)
        layers/              optional: the vendor's own layers (a fused layernorm, ...)

extern/ is imported as a package of its own (perfplay_extern_<vendor>_<case>), so the adapter reaches its
neighbours relatively (`from .converter import convert`, `from .layers.fused import FusedLayerNorm`); nothing is
put on sys.path. Helpers take a leading underscore. The files may import torch and the vendor's libraries: they are
imported after runtime.py's IMPORTS and the case's requirements are installed.

Points, each called with exactly these positional arguments; where a point is absent the trainer runs its own code:

    convert_model(model, ctx) -> nn.Module
        after the case built the model, on the CPU, before it moves to the device: swap layers for the vendor's
    model_to_fp16(model, ctx) -> nn.Module
        amp only, on the device, before the optimizer is made (standard: the model as it is; autocast casts)
    create_optimizer(model, ctx, standard) -> (optimizer, scheduler or None)
        standard() returns the case's own pair for model, to wrap or tune. The optimizer's type stays the case's
        (a standard result); both class names are recorded (optimizer, standard_optimizer)
    create_grad_scaler(ctx) -> scaler or None
        amp only (standard: torch.amp.GradScaler with fp16, None with bf16)
    autocast(dtype, ctx) -> context manager
        amp only: the mixed-precision context the forward pass (train_step) and the evaluation run in, as a new
        context each time, for dtype (ctx.amp_dtype) (standard: torch.autocast(device_type, dtype); FlagPerf's
        mthreads adapters use torch.musa.amp.autocast)
    model_to_ddp(model, ctx) -> nn.Module
        world_size > 1 with data_parallel ddp only: the model wrapped for data-parallel training (standard:
        DistributedDataParallel); data_parallel fsdp shards the model with fully_shard, and this point is not called
    train_step(model, batch, ctx) -> (loss, samples)
        the forward pass in place of the case's, inside the trainer's autocast (or the adapter's); the batch is on
        the device
    backward(step, loss, optimizer, scaler, ctx) -> None
        in place of loss.backward(), or scaler.scale(loss).backward() with a scaler
    update_model_params(step, optimizer, scheduler, scaler, ctx) -> None
        in place of gradient clipping (ctx.max_grad_norm > 0), optimizer.step() (through the scaler),
        scaler.update() and scheduler.step()

ctx, an AdapterContext (read-only): device, rank, local_rank, world_size, params (a copy of the case's params),
precision ("fp32", "tf32", "fp16" or "bf16"), amp, amp_dtype (the autocast torch dtype, or None), max_grad_norm,
case (the standard case: ctx.case.train_step(model, batch) is its forward) and log (the rank's EventLogger).

A built-in stack (tasks/training/stacks/<name>.py, the run's framework: deepspeed) is a module of the same points;
a vendor's adapter lies over it, its points replacing the stack's (its create_optimizer's standard() is then the
stack's pair).

The trainer keeps what makes results comparable: zero_grad, every synchronize and timer, evaluation, the stop
conditions. train_step, backward and update_model_params run inside the timed step (p_core). step: 1-based.

What ran is shown: the rank log says `vendor adapter <file> replaces: <points>` and the VENDOR_ADAPTER event names the
file and the points it defines; the rank result and the round record carry `adapted: [points]`, the points the
trainer called (an fp32 round calls no create_grad_scaler, one rank no model_to_ddp), and the rank result
`adapter: <file>`.

Checked before any rank starts: on the controller from the source (the plan refuses a syntax error in extern/, a
public function that is not a point and a point with other positional parameters, naming the file and the line),
and where the ranks run by importing it (host preflight, container prepare): an import that fails names the file,
the line and the traceback's last line. A point that raises fails the round, naming the point and the file.

Example, a fused layernorm:

    # extern/trainer_adapter.py
    from .converter import convert

    def convert_model(model, ctx):
        convert(model)
        return model

    # extern/converter.py
    from torch import nn
    from case_runners.tasks.training.adapter import replace_modules
    from .layers.fused import FusedLayerNorm

    def convert(model):
        return replace_modules(model, {nn.LayerNorm: FusedLayerNorm.from_layernorm})
"""

from __future__ import annotations

import copy
import importlib
import importlib.machinery
import importlib.util
import re
import sys
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from case_runners.core.errors import PerfplayError
from case_runners.core.paths import display_path, project_root
from case_runners.plan.config.adapter_points import ADAPTER_SIGNATURES
from case_runners.vendors.layout import adapter_file
from case_runners.vendors.plugin_source import (
    Point,
    check_source,
    contract,
    last_line,
    loaded_points,
    parse_source,
    unknown_functions,
)

if TYPE_CHECKING:
    import torch
    from torch import nn

    from case_runners.rank.driver.events import EventLogger
    from case_runners.tasks.training.case_api import TrainingCase

POINTS = contract(*(Point(*row) for row in ADAPTER_SIGNATURES))  # the table: plan/config/adapter_points.py


class AdapterError(PerfplayError):
    """A vendor adapter that cannot be imported, breaks the contract, or fails when the trainer calls it."""


@dataclass(frozen=True)
class AdapterContext:
    """What an adapter point may read about its rank and round."""
    device: torch.device
    rank: int
    local_rank: int
    world_size: int
    params: dict[str, Any]  # a copy: changing it changes nothing
    precision: str  # what the round computes in: fp32, tf32, fp16, bf16
    amp: bool
    amp_dtype: torch.dtype | None  # the trainer's autocast dtype, None without amp
    max_grad_norm: float  # > 0: the standard update clips gradients to this norm
    case: TrainingCase
    log: EventLogger

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", copy.deepcopy(self.params))


def package_name(vendor: str, case: str) -> str:
    """The module name extern/ is imported under: one per vendor and case."""
    return re.sub(r"\W", "_", f"perfplay_extern_{vendor}_{case}")


class TrainerAdapter:
    """A loaded adapter: the points it defines, called by the trainer; shown: its file (None: the standard code).
    Under it, a built-in stack's points (tasks/training/stacks/): stack, its name, and stack_shown, its file."""

    def __init__(self, shown: str | None = None, points: Mapping[str, Callable] | None = None,
                 folder: Path | None = None, root: Path | None = None, *, stack: str | None = None,
                 stack_points: Mapping[str, Callable] | None = None, stack_shown: str | None = None) -> None:
        self.shown, self.points = shown, dict(points or {})
        self._folder, self._root = folder, root
        self.stack, self.stack_points, self.stack_shown = stack, dict(stack_points or {}), stack_shown
        self._called: set[str] = set()

    def under(self, stack: TrainerAdapter) -> TrainerAdapter:
        """This (vendor's) adapter over a stack's points: where both define a point, this one's is called."""
        if stack.stack is None:
            return self
        return TrainerAdapter(self.shown, self.points, self._folder, self._root, stack=stack.stack,
                              stack_points=stack.stack_points, stack_shown=stack.stack_shown)

    @property
    def defined(self) -> list[str]:
        """The points the adapter defines (not its stack's)."""
        return sorted(self.points)

    @property
    def adapted(self) -> list[str]:
        """The points the trainer called so far (what the records carry)."""
        return sorted(self._called)

    def __contains__(self, name: str) -> bool:
        return name in self.points or name in self.stack_points

    def call(self, name: str, *args: Any) -> Any:
        """The vendor's point, else the stack's; its failure becomes an AdapterError naming the point, the file and
        where it raised."""
        self._called.add(name)
        vendors = name in self.points
        if vendors and name == "create_optimizer" and name in self.stack_points:
            # the vendor's standard() is the stack's pair (DeepSpeed's engine is made there), not the case's
            model, ctx, standard = args
            args = (model, ctx, lambda: self.call_stack(name, model, ctx, standard))
        if not vendors:
            return self.call_stack(name, *args)
        try:
            return self.points[name](*args)
        except PerfplayError:
            raise
        except Exception as exc:  # noqa: BLE001 - the vendor's code failed: say which point and where
            where = _where(exc, self._folder, self._root, self.shown)
            raise AdapterError(f"{self.shown}: {name}() raised {last_line(exc)}{f' (at {where})' if where else ''}"
                               ) from exc

    def call_stack(self, name: str, *args: Any) -> Any:
        """The stack's point, beneath the vendor's; its failure names the stack's file."""
        try:
            return self.stack_points[name](*args)
        except PerfplayError:
            raise
        except Exception as exc:  # noqa: BLE001 - say which point of which stack
            raise AdapterError(f"{self.stack_shown}: {name}() raised {last_line(exc)}") from exc


STANDARD = TrainerAdapter()  # no adapter: the trainer's own code everywhere


def _where(exc: BaseException, folder: Path | None, root: Path | None, shown: str | None) -> str | None:
    """'[<file> ]line N' of the innermost frame in extern/ (of a syntax error, its line), the file left out when it
    is `shown`; None when no frame lies in extern/."""
    line: int | None
    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
        file, line = exc.filename, exc.lineno
    else:
        inside = [f for f in traceback.extract_tb(exc.__traceback__)
                  if folder is not None and Path(f.filename).is_relative_to(folder)]
        if not inside:
            return None
        file, line = inside[-1].filename, inside[-1].lineno
    file = display_path(Path(file), root)
    return f"line {line}" if file == shown else f"{file} line {line}"


def adapter_source(root: Path, vendor: str, case: str) -> tuple[list[str], list[str]]:
    """(problems, points defined) that the controller can tell from extern/'s source without importing it:
    trainer_adapter.py against the contract, and a syntax error in any of extern/'s Python files. Each problem names
    the file and the line. No adapter: ([], [])."""
    path = adapter_file(root, vendor, case)
    if not path.is_file():
        return [], []
    problems, points = check_source(path, POINTS, {}, display_path(path, root))
    for other in sorted(path.parent.rglob("*.py")):
        if other != path and "__pycache__" not in other.parts:
            _, unparsed = parse_source(other, display_path(other, root))
            problems += [unparsed] if unparsed else []
    return problems, points


def check_adapter_source(root: Path, vendor: str, case: str) -> list[str]:
    """adapter_source's problems."""
    return adapter_source(root, vendor, case)[0]


def _forget(name: str) -> None:
    for key in [k for k in sys.modules if k == name or k.startswith(f"{name}.")]:
        del sys.modules[key]


def _import_package(name: str, folder: Path) -> None:
    """extern/ as package `name` (its __init__.py run where there is one), registered in sys.modules."""
    init = folder / "__init__.py"
    if init.is_file():
        spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(folder)])
        if spec is None:  # not for a .py file
            raise ImportError(f"{init}: Python cannot import it")
    else:
        spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
        spec.submodule_search_locations = [str(folder)]
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    if spec.loader is not None:
        spec.loader.exec_module(module)


def load_adapter(vendor: str, case: str, root: Path | None = None) -> TrainerAdapter:
    """Import vendor/<vendor>/cases/<case>/extern/trainer_adapter.py and check its points; STANDARD where there is
    no such file. AdapterError (nothing left in sys.modules) when it fails to import or breaks the contract."""
    root = root or project_root()
    path = adapter_file(root, vendor, case)
    if not path.is_file():
        return STANDARD
    shown, folder, name = display_path(path, root), path.parent.resolve(), package_name(vendor, case)
    _forget(name)  # a fresh import: the files as they are now
    importlib.invalidate_caches()
    try:
        _import_package(name, folder)
        module = importlib.import_module(f"{name}.{path.stem}")
    except Exception as exc:  # noqa: BLE001 - any error of the vendor's files, named with the file and line
        _forget(name)
        where = _where(exc, folder, root, shown)
        raise AdapterError(f"{shown}: importing it failed{f' at {where}' if where else ''}: {last_line(exc)}"
                           ) from exc
    points, problems = loaded_points(module, POINTS, shown)
    problems = unknown_functions(module, POINTS, {}, shown) + problems
    if problems:
        _forget(name)
        raise AdapterError("; ".join(problems))
    return TrainerAdapter(shown, points, folder, root)


def replace_modules(model: nn.Module, factories: Mapping[type, Callable[[nn.Module], nn.Module]]) -> int:
    """Swap, at any depth below model, each submodule whose type is a key of factories (exactly: not a subclass)
    for factory(old module), e.g. {nn.LayerNorm: FusedLayerNorm.from_layernorm}; the factory copies what it keeps
    (weights, eps). A module shared by several parents is swapped once and stays shared. Returns the number of
    modules swapped. model itself is not swapped."""
    from torch import nn

    done: dict[int, tuple[nn.Module, nn.Module]] = {}  # id(old): (old, kept alive so ids stay unique; new)

    def visit(parent: nn.Module) -> None:
        for key, child in list(parent.named_children()):
            factory = factories.get(type(child))
            if factory is None:
                visit(child)
                continue
            if id(child) not in done:
                new = factory(child)
                if not isinstance(new, nn.Module):
                    raise TypeError(f"the factory for {type(child).__name__} returned {type(new).__name__}, "
                                    f"not a torch.nn.Module")
                done[id(child)] = (child, new)
            setattr(parent, key, done[id(child)][1])

    visit(model)
    return len(done)
