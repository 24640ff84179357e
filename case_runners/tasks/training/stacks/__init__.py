"""The built-in training stacks (plan/config/stacks.py declares them): each is a module stacks/<name>.py of trainer
adapter points (tasks/training/adapter.py: the same contract as a vendor's extern/trainer_adapter.py, helpers with
a leading underscore), imported only by a rank that runs on it. A vendor's extern/ adapter lies on top: a point
both define is the vendor's.
"""

from __future__ import annotations

import importlib

from case_runners.core.errors import PerfplayError
from case_runners.plan.config.stacks import PYTORCH, STACK_DIR, STACKS
from case_runners.tasks.training.adapter import POINTS, STANDARD, TrainerAdapter
from case_runners.vendors.plugin_source import loaded_points, unknown_functions


def stack_file(stack: str) -> str:
    return f"{STACK_DIR}/{stack}.py"


def load_stack(framework: str) -> TrainerAdapter:
    """The stack's points (STANDARD for pytorch, the trainer's own code); PerfplayError for an unknown stack or a
    module that breaks the contract."""
    if framework == PYTORCH:
        return STANDARD
    if framework not in STACKS:
        raise PerfplayError(f"unknown stack '{framework}' (built-in: {', '.join(STACKS)})")
    shown = stack_file(framework)
    module = importlib.import_module(f"{__name__}.{framework}")
    points, problems = loaded_points(module, POINTS, shown)
    problems = unknown_functions(module, POINTS, {}, shown) + problems
    if problems:
        raise PerfplayError("; ".join(problems))
    return TrainerAdapter(None, {}, stack=framework, stack_points=points, stack_shown=shown)
