"""FlagPerf's names and perfplay's, in one table: the run settings of training/run_benchmarks/config/test_conf.py,
cluster_conf.py and inference/configs/host.yaml (RUN_SETTINGS), the case params of the vendor configs
config_<HW>x<N>x<P>.py (PARAMS), the trainer adapter points of extern/trainer_adapter.py (ADAPTER_POINTS), and
the case names (CASE_NAMES).

A row whose perfplay side is None has no counterpart; its note says why and where the setting lives instead.
The importer (case_runners/vendors/flagperf/importer.py), the plan's refusal of FlagPerf run vars (plan/run_vars.py) and
docs/flagperf-migration.md (checked by tests/unit/test_import_flagperf.py) all read these tables.
"""

from __future__ import annotations

from dataclasses import dataclass

from case_runners.plan.config.adapter_points import adapter_call

TEST_CONF = "test_conf.py"
CLUSTER_CONF = "cluster_conf.py"
HOST_YAML = "host.yaml"
FRAMEWORK = "pytorch"  # the one framework perfplay's cases are written for
TARGET_PREFIX = "target_"  # FlagPerf's target_<metric> params
COMMAND = "python -m case_runners import-flagperf"
VENDOR_YAML = "vendor/<vendor>/vendor.yaml"  # where a vendor's settings go: compared there, or written (a new one)
VENDOR_SETTINGS = ("SHM_SIZE", "ACCE_CONTAINER_OPT", "ACCE_VISIBLE_DEVICE_ENV_NAME")  # run settings that are these


@dataclass(frozen=True)
class Name:
    flagperf: str
    perfplay: str | None  # None: no counterpart
    note: str
    files: tuple[str, ...] = ()  # (run settings) the FlagPerf files that set it


_ALL = (TEST_CONF, HOST_YAML)
_CLUSTER = (CLUSTER_CONF, HOST_YAML)

RUN_SETTINGS: tuple[Name, ...] = (
    Name("VENDOR", "perfplay_vendor", "a folder under vendor/", _ALL),
    Name("CASES", "perfplay_cases", "FlagPerf's mapping {'case:framework:HW:nnodes:nproc:repeat': data_dir} as it is "
         "(a versioned framework such as pytorch_1.8 included); host.yaml's 'case:framework' keys with "
         "perfplay_task: inference", _ALL),
    Name("CLEAR_CACHES", "perfplay_clear_caches", "drop the page cache before each round", _ALL),
    Name("PIP_SOURCE", "perfplay_image.pip_index_url", "the index the docker runtime's image build installs from "
         "(the host runtime's venv uses pip's own configuration)", _ALL),
    Name("MASTER_PORT", "perfplay_master_port", "the rendezvous port of multi-node rounds (0: picked free at "
         "preflight)", _CLUSTER),
    Name("HOSTS", "inventory: perfplay_hosts", "the group's hosts in order: a case with nnodes=N runs on the first N",
         _CLUSTER),
    Name("SSH_PORT", "inventory: ansible_port", "a group var of perfplay_hosts", _CLUSTER),
    Name("SHM_SIZE", f"{VENDOR_YAML} container.run.shm_size", "the VENDOR's (docker runtime)", _ALL),
    Name("ACCE_CONTAINER_OPT", f"{VENDOR_YAML} container.run", "the VENDOR's: --gpus, --device, --env, --cap-add, "
         "--ipc, --shm-size, --privileged as options, never a shell string (-v and --group-add have no key)", _ALL),
    Name("ACCE_VISIBLE_DEVICE_ENV_NAME", f"{VENDOR_YAML} visible_devices.env", "the VENDOR's", _ALL),
    Name("HOSTS_PORTS", None, "TensorFlow's multi-worker ports; perfplay runs pytorch cases only", _CLUSTER),
    Name("FLAGPERF_PATH", None, "perfplay ships its own checkout to every host (host var perfplay_project_dir)",
         _ALL),
    Name("FLAGPERF_LOG_PATH", None, "results go to perfplay_results_dir on the controller, "
         "<run id>/<case id>/round<N>/ (a remote host's node dirs to perfplay_host_results_dir first)", _ALL),
    Name("FLAGPERF_LOG_LEVEL", None, "perfplay logs every level to files; ansible-playbook -v shows more", _ALL),
    Name("LOG_CALL_INFORMATION", None, "every perfplay event carries its rank and time already", (HOST_YAML,)),
    Name("EXEC_IN_CONTAINER", None, "perfplay_runtime: host runs in whatever the host is (a container, a pod)",
         (TEST_CONF,)),
    Name("FLAGPERF_PATH_HOST", None, "FlagPerf's old (2022) name of FLAGPERF_PATH", (TEST_CONF,)),
    Name("FLAGPERF_PATH_CONTAINER", None, "FlagPerf's old (2022) container path; perfplay mounts its checkout",
         (TEST_CONF,)),
    Name("FLAGPERF_LOG_PATH_HOST", None, "FlagPerf's old (2022) name of FLAGPERF_LOG_PATH", (TEST_CONF,)),
    Name("FLAGPERF_LOG_PATH_CONTAINER", None, "FlagPerf's old (2022) container log path", (TEST_CONF,)),
)

_RECIPE = "the image classifiers' recipe is the case's (config.yaml, run-only): "

PARAMS: tuple[Name, ...] = (
    Name("train_batch_size", "batch_size", "per rank in both"),
    Name("eval_batch_size", "eval_batch_size", "per rank in both"),
    Name("max_epoch", "max_epochs", "the run's epochs (0: off)"),
    Name("max_epochs", "max_epochs", "the run's epochs (0: off)"),
    Name("epochs", "max_epochs", "the run's epochs (0: off); torchvision's reference recipes' name (vit)"),
    Name("max_steps", "max_steps", "the run's optimizer steps (0: off)"),
    Name("learning_rate", "lr", "a case may scale it with the global batch (resnet50: lr_scaling_batch)"),
    Name("lr", "lr", "a case may scale it with the global batch (resnet50: lr_scaling_batch)"),
    Name("seed", "seed", "the same seed on every rank"),
    Name("fp16", "amp", "autocast to the vendor's amp_dtype (vendor.yaml; fp16 adds a GradScaler)"),
    Name("amp", "amp", "autocast to the vendor's amp_dtype (vendor.yaml)"),
    Name("weight_decay_rate", "weight_decay", "where the case has weight decay"),
    Name("weight_decay", "weight_decay", "where the case has weight decay"),
    Name("momentum", "momentum", "where the case's optimizer has momentum (resnet50, digits_cnn, mobilenetv2)"),
    Name("warmup_steps", "warmup_steps", "linear warmup steps"),
    Name("train_warmup_epochs", "warmup_epochs", "linear warmup epochs (swin_transformer)"),
    Name("train_crop_size", None, "the case's image_size: run-only, the standard shape is the case's"),
    Name("val_crop_size", None, "the case's eval_image_size: run-only, the standard shape is the case's"),
    Name("val_resize_size", None, "the case's eval_resize: run-only, the standard shape is the case's"),
    Name("random_erase", None, "not in perfplay's image recipe (the case README lists its departures)"),
    Name("ra_reps", None, "repeated augmentation is not in perfplay's image recipe (the case README)"),
    Name("cfg", None, "the model is the case's (its config.yaml params), not a vendor's"),
    Name("num_workers", "num_workers", "data loader processes per rank"),
    Name("log_freq", "log_freq", "steps between two training log lines"),
    Name("dist_backend", None, "the vendor's: vendor/<vendor>/vendor.yaml dist_backend"),
    Name("vendor", None, "the vendor is the folder the config is in"),
    Name("gradient_accumulation_steps", None, "perfplay's trainer steps the optimizer every batch"),
    Name("max_samples_termination", None, "a run stops at max_steps, max_epochs or time_budget_s"),
    Name("warmup", None, "warmup as a share of the run: set warmup_steps"),
    Name("warmup_proportion", None, "warmup as a share of the run: set warmup_steps"),
    Name("opt", None, f"{_RECIPE}optimizer"),
    Name("lr_scheduler", None, f"{_RECIPE}lr_schedule (cosine, step, constant)"),
    Name("lr_warmup_method", None, f"{_RECIPE}a linear warmup from warmup_start"),
    Name("lr_warmup_epochs", None, f"{_RECIPE}warmup_epochs"),
    Name("lr_warmup_decay", None, f"{_RECIPE}warmup_start"),
    Name("lr_steps", None, f"{_RECIPE}lr_step_epochs (mobilenetv2)"),
    Name("ra_sampler", None, "no repeated-augmentation sampler: each image once per epoch"),
    Name("eval_interval_samples", None, "evaluation every eval_every_steps or eval_every_epochs"),
    Name("eval_iter_samples", None, "evaluation every eval_every_steps or eval_every_epochs"),
    Name("eval_iter_start_samples", None, "evaluation every eval_every_steps or eval_every_epochs"),
    Name("eval_steps", "eval_every_steps", "evaluation every so many optimizer steps (wav2vec2's)"),
    Name(f"{TARGET_PREFIX}<metric>", None, "the target is the case's (its config.yaml target), not a vendor's"),
    Name("loss_scale", None, "amp in fp16 scales the loss with torch's dynamic GradScaler"),
    Name("loss_scale_window", None, "amp in fp16 scales the loss with torch's dynamic GradScaler"),
    Name("min_scale", None, "amp in fp16 scales the loss with torch's dynamic GradScaler"),
    Name("data_dir", None, "a selection's data_dir in perfplay_cases"),
    Name("init_checkpoint", None, "run-only where a case has it (bert): a selection's overrides"),
    Name("local_rank", None, "set by perfplay's launcher"),
    Name("use_env", None, "set by perfplay's launcher"),
    Name("distributed", None, "set by perfplay's launcher"),
    Name("device", None, "the vendor's: vendor/<vendor>/vendor.yaml device"),
    Name("n_device", None, "set by perfplay's launcher (nproc of the selection)"),
    Name("do_train", None, "a training case always trains"),
)

# FlagPerf's extern/trainer_adapter.py functions and perfplay's adapter points (case_runners/tasks/training/adapter.py
# POINTS, from plan/config/adapter_points.py; docs/adapting-a-chip.md, 6.). FlagPerf's signatures differ (no ctx), so an
# adapter is ported by hand.
ADAPTER_POINTS: tuple[Name, ...] = (
    Name("convert_model", "convert_model", f"{adapter_call('convert_model')}: the model with the vendor's layers"),
    Name("create_optimizer", "create_optimizer", f"{adapter_call('create_optimizer')}: (optimizer, scheduler)"),
    Name("model_to_fp16", "model_to_fp16",
         f"{adapter_call('model_to_fp16')}: the model prepared for mixed precision"),
    Name("model_to_ddp", "model_to_ddp",
         f"{adapter_call('model_to_ddp')}: the model wrapped for data-parallel training"),
    Name("create_grad_scaler", "create_grad_scaler",
         f"{adapter_call('create_grad_scaler')}: the gradient scaler, or None"),
    Name("backward", "backward", f"{adapter_call('backward')}: the backward pass only (FlagPerf's backward also "
         f"calls update_model_params: that part goes there)"),
    Name("update_model_params", "update_model_params", f"{adapter_call('update_model_params')}: clipping, the "
         f"optimizer step, the scaler's update and the scheduler step (FlagPerf's bert backward calls it)"),
    Name("train_step", None, f"FlagPerf's train_step runs forward, backward and the optimizer step in one: split it "
         f"into perfplay's {adapter_call('train_step')} (the forward pass and loss), {adapter_call('backward')} "
         f"and {adapter_call('update_model_params')}"),
    Name("autocast", "autocast", "autocast point: the vendor's autocast context (torch.<device>.amp.autocast)"),
)
AUTOCAST = "autocast"  # a FlagPerf adapter that uses torch.<device>.amp.autocast maps to this point

# FlagPerf case name -> perfplay's, where it is the same model (training or inference).
CASE_NAMES: dict[str, str] = {"resnet50": "resnet50", "bert": "bert", "bertLarge": "bert", "mobilenetv2": "mobilenetv2",
                              "vit": "vit", "efficientnet": "efficientnet", "swin_transformer": "swin_transformer",
                              "bigtransfer": "bigtransfer", "detr": "detr"}

FLAGPERF_RUN_VARS: frozenset[str] = frozenset(n.flagperf for n in RUN_SETTINGS)
_RUN_SETTINGS = {n.flagperf: n for n in RUN_SETTINGS}
_PARAMS = {n.flagperf: n for n in PARAMS}
_ADAPTER_POINTS = {n.flagperf: n for n in ADAPTER_POINTS}


def adapter_point(name: str) -> Name | None:
    """The row of a function of FlagPerf's trainer_adapter.py; None: not one of FlagPerf's points."""
    return _ADAPTER_POINTS.get(name)


def run_setting(name: str) -> Name | None:
    return _RUN_SETTINGS.get(name)


def param(name: str) -> Name | None:
    """The row of a FlagPerf param; target_<metric> has one row."""
    if name.startswith(TARGET_PREFIX):
        return _PARAMS[f"{TARGET_PREFIX}<metric>"]
    return _PARAMS.get(name)


def markdown_table(rows: tuple[Name, ...], *, files: bool) -> list[str]:
    """The rows as the Markdown table docs/flagperf-migration.md shows."""
    head = ["| FlagPerf | perfplay | note |", "|---|---|---|"]
    if files:
        head = ["| FlagPerf | in | perfplay | note |", "|---|---|---|---|"]
    lines = []
    for row in rows:
        target = f"`{row.perfplay}`" if row.perfplay else "no counterpart"
        where = f" {', '.join(row.files)} |" if files else ""
        lines.append(f"| `{row.flagperf}` |{where} {target} | {row.note} |")
    return head + lines
