"""FlagPerf's names and perfplay's, in one table: the run settings of training/run_benchmarks/config/test_conf.py,
cluster_conf.py and inference/configs/host.yaml (RUN_SETTINGS), the case params of the vendor configs
config_<HW>x<N>x<P>.py (PARAMS), the trainer adapter points of extern/trainer_adapter.py (ADAPTER_POINTS), the
case names (CASE_NAMES), the base suite's cases (BASE_CASES, from base/configs/host.yaml), and the inference
compilers, engine settings and parameters of inference/configs/<case>/ (INFERENCE_ENGINES, INFERENCE_SETTINGS,
INFERENCE_PARAMS).

A row whose perfplay side is None has no counterpart; its note says why and where the setting lives instead.
The importer (case_runners/vendors/flagperf/importer.py), the plan's refusal of FlagPerf run vars (plan/run_vars.py) and
docs/flagperf-migration.md (checked by tests/unit/test_import_flagperf.py) all read these tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from case_runners.plan.config.adapter_points import adapter_call

TEST_CONF = "test_conf.py"
CLUSTER_CONF = "cluster_conf.py"
HOST_YAML = "host.yaml"
FRAMEWORK = "pytorch"  # the one framework perfplay's cases are written for
TARGET_PREFIX = "target_"  # FlagPerf's target_<metric> params
ACCUMULATION_STEPS = "gradient_accumulation_steps"  # FlagPerf's micro batches per optimizer step (train_batch_size's)
COMMAND = "python -m case_runners import-flagperf"
VENDOR_YAML = "vendor/<vendor>/vendor.yaml"  # where a vendor's settings go: compared there, or written (a new one)
VENDOR_SETTINGS = ("SHM_SIZE", "ACCE_CONTAINER_OPT", "ACCE_VISIBLE_DEVICE_ENV_NAME")  # run settings that are these


@dataclass(frozen=True)
class Name:
    flagperf: str
    perfplay: str | None  # None: no counterpart
    note: str
    files: tuple[str, ...] = ()  # (run settings) the FlagPerf files that set it
    role: str = ""  # (LLM params) what it is in the global batch or the run's length, computed with the others


BASE_HOST_YAML = "base/configs/host.yaml"  # FlagPerf's base suite's run settings (HOST_YAML in its folder)
_ALL = (TEST_CONF, HOST_YAML)
_CLUSTER = (CLUSTER_CONF, HOST_YAML)

RUN_SETTINGS: tuple[Name, ...] = (
    Name("VENDOR", "perfplay_vendor", "a folder under vendor/", _ALL),
    Name("CASES", "perfplay_cases", "FlagPerf's mapping {'case:framework:HW:nnodes:nproc:repeat': data_dir} as it is "
         "(a versioned framework such as pytorch_1.8 included); host.yaml's 'case:framework' keys with "
         "perfplay_task: inference; base/configs/host.yaml's base cases as base selections (docs/base.md)", _ALL),
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
    Name("BENCHMARKS_OR_TOOLKITS", "perfplay_cases", "each base case's overrides.mode: BENCHMARK, perfplay's torch "
         "benchmarks (mode torch, the default); TOOLKIT, the vendor's toolkits, "
         "vendor/<vendor>/base/toolkits/<benchmark>/ (mode toolkit, docs/base.md)", (BASE_HOST_YAML,)),
    Name("NPROC_PER_NODE", "perfplay_cases", "each base case's nproc (p2p: its pair, 1x2 or 2x1)",
         (BASE_HOST_YAML,)),
)

_RECIPE = "the image classifiers' recipe is the case's (config.yaml, run-only): "

PARAMS: tuple[Name, ...] = (
    Name("train_batch_size", "batch_size", "per rank in both"),
    Name("eval_batch_size", "eval_batch_size", "per rank in both"),
    Name("max_epoch", "max_epochs", "the run's epochs (0: off)"),
    Name("max_epochs", "max_epochs", "the run's epochs (0: off)"),
    Name("epochs", "max_epochs", "the run's epochs (0: off); torchvision's reference recipes' name (vit)"),
    Name("max_steps", "max_steps", "the run's optimizer steps (0: off)"),
    Name("max_update", "max_steps", "the run's optimizer steps (0: off); fairseq's name (transformer)"),
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
    Name("dataloader_num_workers", "num_workers", "data loader processes per rank (distilbert, longformer)"),
    Name("log_freq", "log_freq", "steps between two training log lines"),
    Name("dist_backend", None, "the vendor's: vendor/<vendor>/vendor.yaml dist_backend"),
    Name("vendor", None, "the vendor is the folder the config is in"),
    Name(ACCUMULATION_STEPS, "grad_accumulation", "with the config's train_batch_size: batch_size is the batch of an "
         "optimizer step (train_batch_size x it), grad_accumulation its micro batches (it)"),
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

# FlagPerf case name -> perfplay's, where it is the same model (training or inference). FlagPerf's LLMs map to their
# model case, named by the llama case's shape (cases/llama/shapes.py SHAPES): LLM_MODELS, a part of this table.
LLM_MODELS: dict[str, str] = {"llama2_7b": "llama2_7b", "llama3_8B": "llama3_8b", "llama2_70B": "llama2_70b",
                              "llama3_70B": "llama3_70b", "aquila2_7b": "aquila2_7b",
                              "aquila2_7B_container": "aquila2_7b", "aquila2_34B_container": "aquila2_34b",
                              "aquila2_70B_container": "aquila2_70b", "mixtral_8x7B": "mixtral_8x7b",
                              "qwen1.5_MoE": "qwen1.5_moe", "chatglm3_6b": "chatglm3_6b",
                              "baichuan2_13b": "baichuan2_13b"}
CASE_NAMES: dict[str, str] = {"resnet50": "resnet50", "bert": "bert", "bertLarge": "bert", "mobilenetv2": "mobilenetv2",
                              "swinTransformer": "swin_transformer",  # its inference case
                              "vit": "vit", "efficientnet": "efficientnet", "swin_transformer": "swin_transformer",
                              "bigtransfer": "bigtransfer", "detr": "detr", "distilbert": "distilbert",
                              "bert_hf": "bert_hf", "longformer": "longformer", "t5_small": "t5_small",
                              "transformer": "transformer", "gpt2": "gpt2", "wav2vec2": "wav2vec2",
                              "Aquila_7b_mmlu": "aquila_7b_mmlu", **LLM_MODELS}  # mmlu's model cases: lower case

# FlagPerf's LLM training frameworks (the <framework> of training/<vendor>/<case>-<framework>/) and the stack a config
# of each becomes (plan/config/stacks.py): deepspeed is a built-in stack; the others are Megatron forks a vendor
# brings as a vendor stack (vendor/<vendor>/stacks/<name>/stack.yaml, vendors/vendor_stacks.py), megatron being no
# built-in stack.
VENDOR_STACK = "vendor/<vendor>/stacks/<name>/"
LLM_FRAMEWORKS: tuple[Name, ...] = (
    Name("deepspeed", "deepspeed", "the built-in stack; zero_stage from the folder's ds_config.json"),
    Name("megatron-deepspeed", VENDOR_STACK, "Megatron-DeepSpeed: a vendor stack"),
    Name("megatron", VENDOR_STACK, "Megatron-LM (megatron-core) in the vendor's image: a vendor stack"),
    Name("flagscale", VENDOR_STACK, "FlagScale, BAAI's Megatron fork: a vendor stack"),
    Name("in_container", VENDOR_STACK, "the Megatron fork (FlagScale) the vendor's image carries: a vendor stack; "
         "<case>-in_container/config.py laid over training/benchmarks/<case>/in_container/config.py, as FlagPerf "
         "does"),
)
DS_CONFIG = "ds_config.json"  # a deepspeed folder's DeepSpeed config (config/ds_config.json), its keys dotted below
# The parallelism params a vendor stack takes under these names (its stack.yaml params) where it has them; a built-in
# stack has none of them (deepspeed's is zero_stage).
STACK_PARALLELISM = ("tensor_parallel", "pipeline_parallel", "micro_batch", "recompute")
# The roles of LLM_PARAMS' rows computed together: batch_size = the global batch (given, or micro x accumulation x
# data-parallel ranks) / ranks; max_steps = the steps, or the tokens / seq_len / the global batch.
GLOBAL, MICRO, ACCUMULATION, STEPS, TOKENS = "global", "micro", "accumulation", "steps", "tokens"
_GLOBAL = "the global batch (sequences per optimizer step): the model case's global_batch (checked against it), or " \
          "batch_size = it / data-parallel ranks where the model case has none"
_MICRO = "the micro batch per rank: the vendor stack's micro_batch; the global batch is micro x accumulation x " \
         "data-parallel ranks (ranks / (TP x PP))"
_DATA = "the data is perfplay's: the selection's data_dir (the llama case reads Megatron's .bin/.idx as they are)"
_PEAK = "the chip's peak is vendor.yaml's hardware flops; perfplay's FLOPs per token give MFU"
_HOME = "where the vendor's stack lives in its image: the vendor stack's command (stack.yaml)"
_SCALE = "FlagScale's own launcher settings: its train yaml (outside FlagPerf's tree) holds the parallelism, " \
         "a vendor stack runs it"

# The names of FlagPerf's LLM configs (config_<HW>x<N>x<P>.py of the frameworks above, in_container's config.py, the
# keys of a deepspeed folder's ds_config.json) and perfplay's: the model case's params, the stack's (zero_stage,
# STACK_PARALLELISM) or none.
LLM_PARAMS: tuple[Name, ...] = (
    Name("seqlength", "seq_len", "tokens per sequence"),
    Name("SEQLENGTH", "seq_len", "tokens per sequence (in_container)"),
    Name("GLOBAL_BATCHSIZE", "global_batch", f"{_GLOBAL} (in_container)", role=GLOBAL),
    Name("gbs", "global_batch", _GLOBAL, role=GLOBAL),
    Name("batchsize", "batch_size", f"deepspeed: the micro batch per rank, x its ds_config.json's "
         f"gradient_accumulation_steps = batch_size, in grad_accumulation micro batches of it; the others: {_MICRO}",
         role=MICRO),
    Name("localbs", "micro_batch", f"{_MICRO}; Megatron's global batch is its script's --global-batch-size",
         role=MICRO),
    Name("MICRO_BATCHSIZE", "micro_batch", f"{_MICRO} (in_container)", role=MICRO),
    Name("accumulate_steps", "grad_accumulation", "gradient accumulation: the global batch is micro x it x "
         "data-parallel ranks; grad_accumulation is the data-parallel rank's share / micro", role=ACCUMULATION),
    Name("gradient_accumulation_steps", "grad_accumulation", f"({DS_CONFIG}) the same as accumulate_steps",
         role=ACCUMULATION),
    Name("train_steps", "max_steps", "the run's optimizer steps", role=STEPS),
    Name("steps", "max_steps", "the run's optimizer steps (FlagScale)", role=STEPS),
    Name("TRAINING_TOKENS", "max_steps", "tokens / seq_len = FlagPerf's --train-samples; / the global batch = "
         "max_steps, rounded up (in_container)", role=TOKENS),
    Name("train_tokens", "max_steps", "tokens / seq_len = samples; / the global batch = max_steps, rounded up",
         role=TOKENS),
    Name("tensor_parallel", "tensor_parallel", "TP: a vendor stack's param"),
    Name("TENSOR_PARALLEL", "tensor_parallel", "TP: a vendor stack's param (in_container)"),
    Name("pipeline_parallel", "pipeline_parallel", "PP: a vendor stack's param"),
    Name("PIPELINE_PARALLEL", "pipeline_parallel", "PP: a vendor stack's param (in_container)"),
    Name("recompute", "recompute", "activation recomputation: a vendor stack's param"),
    Name("gradient_checkpointing_enable", "activation_checkpointing", "the trainer's"),
    Name("zero_optimization.stage", "zero_stage", f"({DS_CONFIG}) the deepspeed stack's ZeRO stage"),
    Name("precision", "amp_dtype", "bf16 or fp16, with amp: true"),
    Name("bf16.enabled", "amp_dtype", f"({DS_CONFIG}) bf16, with amp: true"),
    Name("fp16.enabled", "amp_dtype", f"({DS_CONFIG}) fp16, with amp: true"),
    Name("epochs", None, "FlagPerf's passes over its data file: the run stops at max_steps (the model case's)"),
    Name("flashattn", None, "the attention kernel is the stack's (it owns the kernels)"),
    Name("padlength", None, "sequences are seq_len tokens of the flat data, never padded"),
    Name("theoryflops", None, _PEAK),
    Name("flops_16bit", None, _PEAK),
    Name("flops", None, _PEAK),
    Name("FLOPS_DIR", None, _PEAK),
    Name("tokenizer_path", None, _DATA),
    Name("tokenizer", None, _DATA),
    Name("datafilename", None, _DATA),
    Name("dataset", None, _DATA),
    Name("DATA_DIR", None, _DATA),
    Name("DATASET", None, _DATA),
    Name("megatron_path", None, _HOME),
    Name("mixtral_iluvatar_path", None, _HOME),
    Name("FLAGSCALE_HOME", None, _HOME),
    Name("scale_parent", None, _HOME),
    Name("scale_home", None, _HOME),
    Name("scale_download_cmd", None, _HOME),
    Name("scale_install_cmd", None, _HOME),
    Name("scale_conf_dir", None, _SCALE),
    Name("configyaml", None, _SCALE),
    Name("trainyaml", None, _SCALE),
    Name("datasetyaml", None, _SCALE),
    Name("cmds", None, _SCALE),
    Name("flagscale_chip_type", None, _SCALE),
    Name("flagscale_ssh_port", None, _SCALE),
    Name("ckpt", None, "a continued training's checkpoint: perfplay's model cases train from the seed"),
    Name("load_ckpt_dir", None, "a continued training's checkpoint: perfplay's model cases train from the seed"),
    Name("prompt", None, "llava's prompts: not a case perfplay has"),
    Name("energon_locate_cmd", None, "llava's data: not a case perfplay has"),
    Name("SSH_PORT", None, "the inventory's ansible_port (cluster_conf.py's SSH_PORT)"),
    Name("net_cmd", None, "the vendor's network environment: vendor/<vendor>/cases/<case>/environment_variables.sh"),
    Name("env_cmd", None, "the vendor's environment: vendor/<vendor>/cases/<case>/environment_variables.sh"),
    Name("BKCL_SOCKET_IFNAME", None, "the vendor's network environment: environment_variables.sh"),
    Name("WORLD_SIZE", None, "ranks are the selection's nnodes x nproc, set by perfplay's launcher"),
    Name("DP_SIZE", None, "data-parallel ranks: ranks / (TP x PP), the stack's"),
    Name("NUM_MICROBATCHES", None, "micro batches per step: the global batch / (micro batch x data-parallel ranks), "
         "the stack's"),
    Name("train_micro_batch_size_per_gpu", None, f"({DS_CONFIG}) the config's batchsize is the micro batch"),
    Name("train_batch_size", None, f"({DS_CONFIG}) the global batch: batchsize x accumulation x ranks"),
)

# FlagPerf's base cases (base/benchmarks/<case>/, base/toolkits/<case>/<vendor>/) as perfplay's base benchmarks: the
# benchmark, its overrides, and its scale (BaseCase.scale).
NODE_SCALE, HOSTS_SCALE, PAIR_IN_NODE, PAIR_ACROSS_NODES = "node", "hosts", "1x2", "2x1"


@dataclass(frozen=True)
class BaseCase:
    flagperf: str
    benchmark: str  # plan/config/benchmarks.py BENCHMARKS
    overrides: tuple[tuple[str, Any], ...]
    scale: str  # NODE_SCALE: 1 x NPROC_PER_NODE; HOSTS_SCALE: len(HOSTS) x NPROC_PER_NODE; a pair: 1x2 or 2x1
    note: str = ""


BASE_CASES: dict[str, BaseCase] = {c.flagperf: c for c in (
    *(BaseCase(f"computation-{p.upper()}", "gemm", (("precisions", [p]),), NODE_SCALE, "FlagPerf's 8192^3 is in "
               "perfplay's shapes") for p in ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8")),
    BaseCase("main_memory-bandwidth", "memory_bandwidth", (), NODE_SCALE),
    BaseCase("main_memory-capacity", "memory_capacity", (), NODE_SCALE),
    BaseCase("interconnect-h2d", "h2d", (), NODE_SCALE),
    BaseCase("interconnect-MPI_intraserver", "allreduce", (), NODE_SCALE, "bus bandwidth within a node"),
    BaseCase("interconnect-MPI_interserver", "allreduce", (), HOSTS_SCALE, "bus bandwidth across the hosts"),
    BaseCase("interconnect-P2P_intraserver", "p2p", (), PAIR_IN_NODE),
    BaseCase("interconnect-P2P_interserver", "p2p", (), PAIR_ACROSS_NODES),
)}
BENCHMARK, TOOLKIT_MODE = "BENCHMARK", "TOOLKIT"  # BENCHMARKS_OR_TOOLKITS's values

# FlagPerf's inference compilers (inference/inference_engine/<vendor>/<compiler>.py) that perfplay's nvidia vendor ships
# as an engine (vendor/<vendor>/engines/<engine>.py); any other keeps its name, an engine the vendor brings.
INFERENCE_ENGINES: tuple[Name, ...] = (
    Name("tensorrt", "tensorrt", "TensorRT on the exported ONNX file (vendor/nvidia/engines/tensorrt.py)"),
    Name("torchtrt", "torch_tensorrt", "torch-TensorRT on the torch model (vendor/nvidia/engines/torch_tensorrt.py)"),
    Name("inductor", "inductor", "torch.compile on the torch model (vendor/nvidia/engines/inductor.py)"),
)
_VENDOR_ENGINE = "a setting of the vendor's own engine (inference/inference_engine/<vendor>/<compiler>.py): the " \
                 "vendor's vendor/<vendor>/engines/<compiler>.py reads it, added to this file by the vendor (a new " \
                 "key: a warning)"
_WARMUP = "FlagPerf's inductor warm-up calls: perfplay's inductor engine compiles on the first call of each input " \
          "shape, outside the core time (foo_time)"
# The keys of FlagPerf's inference vendor files (vendor_config/<vendor>_configurations.yaml) that its engines read,
# not a key of the case's configurations.yaml.
INFERENCE_SETTINGS: tuple[Name, ...] = (
    Name("trt_tmp_path", None, "where FlagPerf's tensorrt engine writes its engine file: perfplay's tensorrt engine "
         "serializes it in the round's inference_work/ (<ONNX file's name>.plan)"),
    Name("has_dynamic_axis", None, "FlagPerf's trtexec shape switch: perfplay's tensorrt engine builds one profile "
         "for batch sizes 1..batch_size"),
    Name("torchtrt_full_compile", None, "FlagPerf's torchtrt require_full_compilation: perfplay's torch_tensorrt "
         "engine compiles with torch-TensorRT's defaults"),
    Name("dynamo_mode", "inductor_mode", "torch.compile's mode (reduce-overhead: CUDA graphs), which perfplay's "
         "inductor engine reads: a key the vendor's file adds (the plan warns), where the case's compiler is "
         "inductor"),
    Name("dynamo_dynamic", "inductor_dynamic", "torch.compile's dynamic shapes, which perfplay's inductor engine "
         "reads: a key the vendor's file adds (the plan warns), where the case's compiler is inductor"),
    Name("dynamo_wamrup_iters", None, _WARMUP),
    Name("dynamo_wamrup_times", None, _WARMUP),
    Name("ixrt_tmp_path", None, f"iluvatar's ixrt: {_VENDOR_ENGINE}"),
    Name("vm_enable", None, f"kunlunxin's xtcl: {_VENDOR_ENGINE}"),
    Name("build_config", None, f"kunlunxin's xtcl: {_VENDOR_ENGINE}"),
    Name("disabled_pass", None, f"kunlunxin's xtcl: {_VENDOR_ENGINE}"),
    Name("resnet50_fuse", None, f"kunlunxin's xtcl: {_VENDOR_ENGINE}"),
    Name("zixiao_test_batch_size", None, f"zixiao's zxrt: {_VENDOR_ENGINE}"),
)

_WEIGHTS = "a weights folder under the data dir: where perfplay's case has no parameter of this name, its checkpoint " \
           "names the weights (the case's README)"
_FLAGAI = "FlagAI's AquilaChat checkpoint (Aquila_7b_mmlu): perfplay's mmlu reads weights in transformers' format " \
          "from weight_dir"
# The parameters of FlagPerf's inference/configs/<case>/parameters.yaml that perfplay's case names otherwise, or has
# none of (a name perfplay's case has is compared as it is).
INFERENCE_PARAMS: tuple[Name, ...] = (
    Name("random_seed", "seed", "the seed of the case's generators (bertLarge, stable_diffusion_v1_4)"),
    Name("seq_length", "seq_len", "tokens per sequence (bertLarge)"),
    Name("mask_ratio", "mask_prob", "the share of tokens masked (bertLarge)"),
    Name("in_channels", "latent_channels", "the UNet's latent channels (stable_diffusion_v1_4)"),
    Name("embed_hidden_size", "text_hidden_size", "the text encoder's width (stable_diffusion_v1_4)"),
    Name("ntrain", "few_shots", "shots per prompt (Aquila_7b_mmlu)"),
    Name("scale_size", None, "the VAE's downscale (stable_diffusion_v1_4): perfplay's follows from vae_channels, 8 "
         "for its 4 blocks"),
    Name("number_boxes", None, "values per box, 5 + the classes (yolov5): perfplay's yolov5 derives them from "
         "num_classes"),
    Name("hidden_size", None, "where perfplay's case has no hidden_size: yolov5's boxes at 640, 3 x (80² + 40² + "
         "20²) = 25200, which perfplay's yolov5 derives from image_size"),
    Name("weight_dir", None, _WEIGHTS),
    Name("weights", None, _WEIGHTS),
    Name("eval_file", None, "bertLarge's evaluation text: perfplay's bert reads eval/*.npz or FlagPerf's "
         "eval_set_uncompressed/*.hdf5 under the data dir (its README)"),
    Name("state_dict", None, _FLAGAI),
    Name("model_name", None, f"{_FLAGAI}; the shape is its param model"),
    Name("download_path", None, _FLAGAI),
    Name("max_gen_len", None, "tokens generated per prompt (1): perfplay's mmlu takes the next token's prediction"),
)

FLAGPERF_RUN_VARS: frozenset[str] = frozenset(n.flagperf for n in RUN_SETTINGS)
_RUN_SETTINGS = {n.flagperf: n for n in RUN_SETTINGS}
_PARAMS = {n.flagperf: n for n in PARAMS}
_ADAPTER_POINTS = {n.flagperf: n for n in ADAPTER_POINTS}
_LLM_PARAMS = {n.flagperf: n for n in LLM_PARAMS}
_INFERENCE_ENGINES = {n.flagperf: n for n in INFERENCE_ENGINES}
_INFERENCE_SETTINGS = {n.flagperf: n for n in INFERENCE_SETTINGS}
_INFERENCE_PARAMS = {n.flagperf: n for n in INFERENCE_PARAMS}


def inference_engine(compiler: Any) -> Any:
    """perfplay's engine name of a FlagPerf inference compiler (its own name where perfplay ships none; None: torch
    alone)."""
    row = _INFERENCE_ENGINES.get(compiler) if isinstance(compiler, str) else None
    return row.perfplay if row is not None else compiler


def inference_param(name: str) -> Name | None:
    """The row of a parameter of FlagPerf's inference parameters.yaml that perfplay's case names otherwise."""
    return _INFERENCE_PARAMS.get(name)


def inference_setting(name: str) -> Name | None:
    """The row of a FlagPerf inference engine's setting (a key of a vendor's <vendor>_configurations.yaml)."""
    return _INFERENCE_SETTINGS.get(name)


def llm_param(name: str) -> Name | None:
    """The row of a name of FlagPerf's LLM configs (a ds_config.json key dotted: zero_optimization.stage)."""
    return _LLM_PARAMS.get(name)


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
