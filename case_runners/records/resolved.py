"""resolved_config.json (`perfplay.resolved_config/1`): one case of a run, resolved by the plan on the controller
before any host is touched (plan/layering.py for training, plan/inference.py for inference), read by every step
after it: the launcher, the ranks, the record and the summary."""

from __future__ import annotations

import dataclasses
from typing import Any

from case_runners.plan.config.resolved import GENERATE, RESOLVED_SCHEMA, TASKS, TRAINING
from case_runners.plan.config.standard import NON_STANDARD, STANDARD, read_standard
from case_runners.records.schema import ABSENT, Absent, Document, choices

RUNTIMES = ("host", "docker")
SAMPLE = "sample"
SAMPLE_UNITS = (SAMPLE, "token")  # what a training case counts as one sample (config.yaml `sample`)
SAMPLES_PER_S = f"{SAMPLE}s/s"  # the throughput unit of most training cases
FLOPS_COUNTED = "counted"  # config.yaml `flops_per_sample: counted`: rank 0 counts them (tasks/training/flops.py)


@dataclasses.dataclass(kw_only=True)
class Target(Document):
    """The value of the case's metric a training round must reach."""
    metric: str
    value: float
    higher_is_better: bool

    def reached(self, value: float) -> bool:
        return value >= self.value if self.higher_is_better else value <= self.value


@dataclasses.dataclass(kw_only=True)
class VendorInfo(Document):
    """What a run needs of the vendor's description (vendor.yaml), for the config's hardware."""
    device: str
    dist_backend: str
    amp_dtype: str
    visible_devices_env: str  # "" when the vendor has no such variable
    visible_devices_scope: str = dataclasses.field(metadata=choices("node", "rank"))
    monitor: str | None  # the vendor's monitor file, if it has one
    hardware: dict[str, Any]  # vendor.yaml hardware.<HW>: memory_bytes, peak_flops, ...


@dataclasses.dataclass(kw_only=True)
class InferenceConfig(Document):
    """An inference case's resolved configuration (plan/inference_config.py resolve_inference): its three files,
    laid over one another and checked, and the run's overrides."""
    case: str
    package: str | Absent = ABSENT  # a model case's package (plan/inference_config.py inference_models); absent: case
    vendor: str
    # configurations.yaml's keys (inference_config.py CONFIG_KEYS, ranges in plan/config/shared_params.py), the vendor's
    # <vendor>_configurations.yaml and the run's overrides over them, and the keys the vendor's file adds; flops
    # per item as a number
    configurations: dict[str, Any]
    parameters: dict[str, Any]  # parameters.yaml's: the case's own (with functional: true, its small shape)
    sources: list[str]  # the files of the layers, in order
    provenance: dict[str, str]  # per key of configurations, the file that set it
    # plan/config/standard.py: false when a key of WORKLOAD_KEYS changed, or the shape is functional's (absent: a config
    # from before the flag)
    standard: bool | Absent = ABSENT
    non_standard: list[str] | Absent = ABSENT  # the keys that changed the workload

    @property
    def case_package(self) -> str:
        """The case package whose inference code runs the case."""
        return self.case if self.package is ABSENT else str(self.package)

    @property
    def compiler(self) -> str | None:
        """The vendor's engine (vendor/<vendor>/engines/<compiler>.py), or None: torch alone."""
        value = self.configurations["compiler"]
        return None if value is None else str(value)

    @property
    def flops(self) -> float:
        """FLOPs per item."""
        return float(self.configurations["flops"])

    def settings(self) -> dict[str, Any]:
        """The configurations and the parameters as one mapping: what the case's and the engine's code read."""
        return {**self.configurations, **self.parameters}


@dataclasses.dataclass(kw_only=True)
class Runtime(Document):
    kind: str = dataclasses.field(metadata=choices(*RUNTIMES))
    image: str | Absent = ABSENT  # docker: the image the rounds run in
    run: dict[str, Any] | Absent = ABSENT  # docker: the vendor's container run options


@dataclasses.dataclass(kw_only=True)
class ResolvedConfig(Document):
    SCHEMA = RESOLVED_SCHEMA

    task: str | Absent = dataclasses.field(default=ABSENT, metadata=choices(*TASKS))  # absent: training
    case: str
    # A model case's package, whose code runs it (case_runners/cases/<package>/models/<case>.yaml); absent: the case's
    package: str | Absent = ABSENT
    case_id: str
    framework: str
    framework_version: str | Absent = ABSENT  # of a versioned framework key (pytorch_1.8: 1.8), checked at preflight
    vendor: str
    hardware: str
    nnodes: int
    nproc: int
    repeat: int
    data_dir: str | None
    timeout_s: int
    sources: list[str]  # the files of the layers, in order
    provenance: dict[str, str]  # per param, the layer its value came from
    # The params of the round's stack (how it computes, not what: compare leaves them out): a built-in stack's
    # (plan/config/stacks.py) or a vendor stack's declared ones; absent: none, or a config from before the field.
    stack_params: list[str] | Absent = ABSENT
    standard: bool | Absent = ABSENT  # absent (a config from before the flag): standard
    non_standard: list[str] | Absent = ABSENT
    notes: list[str] | Absent = ABSENT  # (inference) the vendor file's changes
    inference: InferenceConfig | Absent = ABSENT  # (inference) the three files' resolved content
    checkpoint_case: str | Absent = ABSENT  # (generate, checkpoint "trained") the training case whose model it loads
    params: dict[str, Any]
    target: Target | None  # (inference: null)
    flops_per_sample: float | None
    flops_convention: str | Absent = ABSENT  # (inference)
    flops_note: str | None  # why flops_per_sample is null
    # flops_per_sample: counted: rank 0 counts them at the run's shape, cached by the case and these params (its
    # flops_depend_on); the round's MFU takes rank 0's figure. Absent: the figure is config.yaml's or the case hook's.
    flops_counted: list[str] | Absent = ABSENT
    # A training case's unit of samples/s and of flops_per_sample (config.yaml `sample`); absent: sample.
    sample: str | Absent = dataclasses.field(default=ABSENT, metadata=choices(*SAMPLE_UNITS))
    vendor_info: VendorInfo
    requirements: list[str] | Absent = ABSENT  # the vendor case's requirements files (set by the plan)
    runtime: Runtime | Absent = ABSENT  # set by the plan
    config_path: str | Absent = ABSENT  # where this file is (set when the plan writes it)

    @property
    def task_name(self) -> str:
        return TRAINING if self.task is ABSENT else str(self.task)

    @property
    def case_package(self) -> str:
        """The case package whose code runs the case: a model case's package, else the case's own."""
        return self.case if self.package is ABSENT else str(self.package)

    @property
    def throughput_unit(self) -> str:
        """The unit of a training case's samples/s: samples/s, or tokens/s."""
        return SAMPLES_PER_S if self.sample is ABSENT else f"{self.sample}s/s"

    @property
    def engine(self) -> str | None:
        """The engine the task runs on, whose pins it needs (vendors/layout.py engine_requirements): an inference
        config's compiler, a generate config's engine param (torch: its own path, with no pins file); None: none."""
        if isinstance(self.inference, InferenceConfig):
            return self.inference.compiler
        engine = self.params.get("engine") if self.task_name == GENERATE else None
        return None if engine is None else str(engine)

    @property
    def runtime_kind(self) -> str:
        """Where the ranks run: host (also a config from before the plan set runtime) or docker."""
        return "host" if self.runtime is ABSENT else self.runtime.kind

    def standard_fields(self) -> dict[str, Any]:
        """standard and non_standard (plan/config/standard.py), a config without them counting as standard."""
        return read_standard({key: value for key in (STANDARD, NON_STANDARD)
                              if (value := getattr(self, key)) is not ABSENT})
