"""`import-flagperf` on FlagPerf's LLM stack configs (megatron, deepspeed, flagscale, in_container), in small
FlagPerf-shaped trees the tests write in the real formats: the workload becomes the model case's params (the global
batch per rank, tokens as steps), the parallelism the stack's (deepspeed's ZeRO stage, a vendor stack's TP, PP and
micro batch), a config without a stack to run it is reported as needing one, and every name is reported."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from case_runners.cases.llama.shapes import SHAPES
from case_runners.cli.main import main
from case_runners.core.paths import project_root
from case_runners.plan.config.flagperf_names import CASE_NAMES, LLM_FRAMEWORKS, LLM_PARAMS, markdown_table
from case_runners.plan.run_plan import make_plan
from case_runners.vendors.flagperf.importer import import_flagperf
from flagperf_tree import checkout as copy_checkout
from flagperf_tree import lines, load, write

ROOT = project_root()
DOC = ROOT / "docs" / "flagperf-migration.md"
MEGATRON = "training/nvidia/llama3_8B-megatron/config"
DEEPSPEED = "training/nvidia/chatglm3_6b-deepspeed/config"
IN_CONTAINER = "training/nvidia/aquila2_7B_container-in_container"

LLM_TREE = {
    # as training/nvidia/llama3_8B-megatron/config/config_H100x1x8.py, with a recompute as llama2_70B's
    f"{MEGATRON}/config_H100x1x8.py": """\
        tokenizer_path = "llama3_8b_hf"
        localbs = 1
        train_steps = 300
        theoryflops = 989000000000000.0
        megatron_path = "/workspace/Megatron-LM" # need to be aligned with DockerFile
        tensor_parallel = 2
        pipeline_parallel = 1
        recompute = True
        """,
    f"{MEGATRON}/training_adapter.sh": 'echo "[Prompt] nvidia adaption is NULL, for other Vendors"\n',
    "training/benchmarks/llama3_8B/megatron/pretrain_llama3.sh": """\
        MODEL_ARGS=" \\
            --num-layers 32 \\
            --seq-length 8192 \\
            --global-batch-size 512 \\
            --attention-softmax-in-fp32"
        """,
    f"{DEEPSPEED}/config_H100x1x8.py": """\
        seqlength = 4096
        batchsize = 1
        datafilename = "openwebtext_chatglm3_100M.npy"
        theoryflops = 989000000000000.0
        epochs = 1
        flashattn = True
        """,
    f"{DEEPSPEED}/ds_config.json": """\
        {
            "gradient_accumulation_steps": 4,
            "zero_optimization": {"stage": 2, "overlap_comm": false},
            "bf16": {"enabled": true}
        }
        """,
    f"{IN_CONTAINER}/config.py": """\
        SSH_PORT = "60022"
        net_cmd = "export CUDA_DEVICE_MAX_CONNECTIONS=1"
        flops_16bit = "312000000000000"
        TENSOR_PARALLEL = 2
        """,
    "training/benchmarks/aquila2_7B_container/in_container/config.py": """\
        DATA_DIR = "/data/aquila2_pretrain"
        TRAINING_TOKENS = 1000000000
        TENSOR_PARALLEL = 1
        PIPELINE_PARALLEL = 1
        MICRO_BATCHSIZE = 1
        GLOBAL_BATCHSIZE = 72
        SEQLENGTH = 2048
        """,
    "training/nvidia/llava1.5_7b-flagscale/config/config_H100x4x8.py": "steps = 30\n",
}

STACK = """\
    name: {name}
    description: FlagPerf's Megatron runs, in the vendor's image
    cases: [llama]
    command: ["{{python}}", train.py]
    params:
      tensor_parallel: {{default: 1, min: 1, max: 64}}
      pipeline_parallel: {{default: 1, min: 1, max: 64}}
      micro_batch: {{default: 1, min: 1, max: 1024}}
    """


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return write(tmp_path / "FlagPerf", LLM_TREE)


def checkout(tmp_path: Path, *stacks: str) -> Path:
    """A checkout's copy (its vendor folders, its cases) with nvidia's vendor stacks of these names only (not the
    megatron stack it ships)."""
    root = copy_checkout(tmp_path / "checkout")
    shutil.rmtree(root / "vendor/nvidia/stacks")
    for name in stacks:
        write(root / "vendor/nvidia/stacks" / name, {"stack.yaml": STACK.format(name=name),
                                                     "train.py": "raise SystemExit('not run here')\n"})
    return root


def plans(root: Path, model: str, stack: str, config: dict, tmp_path: Path) -> dict:
    """The imported config as the model case's vendor config, planned: the plan's params of the round."""
    folder = root / "vendor/nvidia/cases" / model / stack
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config_H100x1x8.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    result = make_plan({"vendor": "nvidia", "cases": {f"{model}:{stack}:H100:1:8:1": str(tmp_path)},
                        "results_dir": str(tmp_path / "results")}, check=True, root=root)
    assert result["ok"], result["errors"]
    return result["cases"][0]["params"]


def test_a_deepspeed_config_is_the_deepspeed_stacks_with_the_global_batch_per_rank(tree, tmp_path):
    """chatglm3_6b-deepspeed: micro 1 x ds_config.json's accumulation 4 is 4 sequences per rank (the global batch of
    32 on 8 ranks) in 4 micro batches of 1, ZeRO stage 2, bf16; every other name reported, and the config is one the
    plan takes on the llama case at that shape."""
    root = checkout(tmp_path)
    report = import_flagperf(tree, root / "out", root=root)
    text = lines(report)
    written = load(root / "out/vendor/nvidia/cases/chatglm3_6b/deepspeed/config_H100x1x8.yaml")
    assert written == {"zero_stage": 2, "amp_dtype": "bf16", "amp": True, "batch_size": 4, "grad_accumulation": 4}
    shown = f"{DEEPSPEED}/config_H100x1x8.py"
    assert f"mapped          {shown}:1 seqlength: -> seq_len: 4096, perfplay's chatglm3_6b's standard: nothing to " \
           "write" in text
    assert f"mapped          {shown}:2 batchsize: -> batch_size: 4; the global batch 32 (micro 1 x accumulation 4 " \
           f"x 8 data-parallel ranks) / 8 ranks" in text
    assert f"mapped          {shown}:2 batchsize: -> grad_accumulation: 4; batch_size 4 in micro batches of 1" in text
    for name in ("datafilename", "theoryflops", "epochs", "flashattn"):
        assert any(line.startswith(f"no counterpart  {shown}:") and f" {name}: " in line for line in text), name
    assert f"no counterpart  {shown} zero_optimization.overlap_comm (from {DEEPSPEED}/ds_config.json): perfplay's " \
           f"chatglm3_6b has no param zero_optimization.overlap_comm" in text
    assert f"read            {DEEPSPEED}/ds_config.json: a DeepSpeed config of a vendor config's folder: read with " \
           f"{shown}" in text
    params = plans(root, "chatglm3_6b", "deepspeed", written, tmp_path)
    assert {k: params[k] for k in written} == written


def test_a_deepspeed_accumulation_the_vendor_leaves_out_is_the_benchmarks(tree, tmp_path):
    """FlagPerf lays the vendor's ds_config.json over the benchmark's: baichuan2_13b's accumulation 8 stands where
    the vendor's file sets only the ZeRO stage."""
    folder = "training/kunlunxin/baichuan2_13b-deepspeed/config"
    write(tree, {f"{folder}/config_R300x2x8.py": "seqlength = 2048\nbatchsize = 1\n",
                 f"{folder}/ds_config.json": '{"zero_optimization": {"stage": 1}}',
                 "training/benchmarks/baichuan2_13b/deepspeed/ds_config.json": '{"gradient_accumulation_steps": 8}'})
    out = tmp_path / "out"
    report = import_flagperf(tree / folder / "config_R300x2x8.py", out)
    # its global batch 128 is not the model case's (nvidia's 1024): reported, not written
    assert load(out / "vendor/kunlunxin/cases/baichuan2_13b/deepspeed/config_R300x2x8.yaml") == {"zero_stage": 1}
    assert f"no counterpart  {folder}/config_R300x2x8.py:2 batchsize: global_batch: the global batch 128 " \
           f"(micro 1 x accumulation 8 (training/benchmarks/baichuan2_13b/deepspeed/ds_config.json) x 16 " \
           f"data-parallel ranks) is not perfplay's baichuan2_13b's standard 1024: global_batch is run-only, a " \
           f"vendor config may not set it" in lines(report)


def test_a_megatron_config_without_a_vendor_stack_is_reported_as_needing_one(tree, tmp_path):
    """nvidia has no vendor stack: nothing is written for llama3_8B-megatron, the report says what stack it needs,
    and still maps the workload: the global batch from the benchmark's script per rank, the steps."""
    out = tmp_path / "out"
    report = import_flagperf(tree, out, root=checkout(tmp_path))
    text = lines(report)
    shown = f"{MEGATRON}/config_H100x1x8.py"
    assert not (out / "vendor/nvidia/cases/llama3_8b").exists()
    assert f"no counterpart  {shown}: needs a vendor stack: vendor/nvidia/stacks/<name>/stack.yaml whose cases list " \
           f"llama3_8b (or llama), running FlagPerf's megatron with params tensor_parallel, pipeline_parallel, " \
           f"micro_batch, recompute" in text
    assert f"mapped          {shown}:2 localbs: -> global_batch: 512 (training/benchmarks/llama3_8B/megatron/" \
           f"pretrain_llama3.sh:4 --global-batch-size), perfplay's llama3_8b's standard: nothing to write; 128 a " \
           f"rank over the 4 data-parallel ranks (8 / (TP 2 x PP 1))" in text
    assert f"mapped          {shown}:3 train_steps: -> max_steps: 300, perfplay's llama3_8b's standard: nothing to " \
           "write" in text
    assert any(line.startswith(f"no counterpart  {shown}:6 tensor_parallel: tensor_parallel: 2: a vendor stack's "
                               f"param") for line in text)
    # its global batch is the model case's: nothing mapped to write (micro_batch needs the stack)
    assert f"no counterpart  {shown}: a vendor config of FlagPerf's megatron: needs a vendor stack: llama3_8b, 0 " \
           f"params mapped, not written" in text
    llava = "training/nvidia/llava1.5_7b-flagscale/config/config_H100x4x8.py"
    assert any(line.startswith(f"no counterpart  {llava}: perfplay has no model case 'llava1.5_7b' (FlagPerf's LLMs "
                               f"it has: ") for line in text)


def test_a_megatron_config_becomes_the_vendor_stacks_with_tp_pp_and_micro_batch(tree, tmp_path):
    """With vendor/nvidia/stacks/megatron/ (TP, PP and micro batch its params), llama3_8B-megatron is its config for
    the model case; recompute, which the stack does not take, is reported by name; and the plan takes it."""
    root = checkout(tmp_path, "megatron")
    report = import_flagperf(tree, root / "out", root=root)
    shown = f"{MEGATRON}/config_H100x1x8.py"
    written = load(root / "out/vendor/nvidia/cases/llama3_8b/megatron/config_H100x1x8.yaml")
    # the model case's global batch 512 (FlagPerf's) over 4 data-parallel ranks: 128 micro batches of 1 each
    assert written == {"tensor_parallel": 2, "pipeline_parallel": 1, "micro_batch": 1, "grad_accumulation": 128}
    assert f"no counterpart  {shown}:8 recompute: recompute: True: vendor stack megatron has no param recompute " \
           f"(its params: tensor_parallel, pipeline_parallel, micro_batch): add it to " \
           f"vendor/nvidia/stacks/megatron/stack.yaml" in lines(report)
    params = plans(root, "llama3_8b", "megatron", written, tmp_path)
    assert {k: params[k] for k in written} == written


def test_an_in_container_config_is_laid_over_its_benchmarks_and_goes_to_the_one_vendor_stack(tree, tmp_path):
    """aquila2_7B_container-in_container/config.py over training/benchmarks/.../in_container/config.py, as FlagPerf
    merges them: TP 2 (the vendor's) on 1x8 of the vendor's default hardware, the global batch 72 as 18 micro batches
    of 1 on each of 4 data-parallel ranks,
    1e9 tokens of 2048 as 6782 steps of 72 (reported: not the model case's standard); the vendor's only stack for the
    case runs it."""
    root = checkout(tmp_path, "flagscale")
    report = import_flagperf(tree, root / "out", root=root)
    text = lines(report)
    written = load(root / "out/vendor/nvidia/cases/aquila2_7b/flagscale/config_A100x1x8.yaml")
    assert written == {"tensor_parallel": 2, "pipeline_parallel": 1, "micro_batch": 1, "grad_accumulation": 18}
    base = "training/benchmarks/aquila2_7B_container/in_container/config.py"
    # the container case's 1e9 tokens are not the model case's standard (FlagPerf's aquila2_7b: 1e8, 678 steps)
    assert f"no counterpart  {IN_CONTAINER}/config.py TRAINING_TOKENS (from {base}:2): -> max_steps: 6782, not " \
           f"perfplay's aquila2_7b's standard 678: max_steps is run-only, a vendor config may not set it; 1000000000 " \
           f"tokens / 2048 = 488281 samples / global batch 72, rounded up" in text
    assert f"no counterpart  {IN_CONTAINER}/config.py:2 net_cmd: the vendor's network environment: " \
           f"vendor/<vendor>/cases/<case>/environment_variables.sh" in text
    assert f"read            {base}: the base an in_container config is laid over: read with " \
           f"{IN_CONTAINER}/config.py" in text
    # one file of it imports the same
    out = tmp_path / "one"
    import_flagperf(tree / IN_CONTAINER / "config.py", out, root=root)
    assert load(out / "vendor/nvidia/cases/aquila2_7b/flagscale/config_A100x1x8.yaml") == written


def test_two_frameworks_configs_of_one_file_the_stacks_own_framework_wins(tree, tmp_path):
    """mixtral_8x7B-flagscale and -megatron on H100x4x8 both go to nvidia's one stack, megatron: its own
    framework's config is written, the other reported with the file it would have written."""
    write(tree, {"training/nvidia/mixtral_8x7B-flagscale/config/config_H100x4x8.py": "steps = 30\n",
                 "training/nvidia/mixtral_8x7B-megatron/config/config_H100x4x8.py":
                     "localbs = 3\ntrain_steps = 100\ntensor_parallel = 8\npipeline_parallel = 2\ngbs = 1200\n"})
    root = checkout(tmp_path, "megatron")
    report = import_flagperf(tree, root / "out", root=root)
    out = "vendor/nvidia/cases/mixtral_8x7b/megatron/config_H100x4x8.yaml"
    # FlagPerf's global batch 1200 over 2 data-parallel ranks (32 / (TP 8 x PP 2)): 200 micro batches of 3 each
    assert load(root / "out" / out) == {"tensor_parallel": 8, "pipeline_parallel": 2, "micro_batch": 3,
                                        "grad_accumulation": 200}
    assert f"no counterpart  training/nvidia/mixtral_8x7B-flagscale/config/config_H100x4x8.py: a vendor config whose " \
           f"file another framework's config writes: {out} is training/nvidia/mixtral_8x7B-megatron/config/" \
           f"config_H100x4x8.py's (FlagPerf's megatron); import this one alone (its path) to have it instead" \
           in lines(report)
    assert "mapped          training/nvidia/mixtral_8x7B-megatron/config/config_H100x4x8.py:5 gbs: -> global_batch: " \
           "1200 (FlagPerf's global batch), perfplay's mixtral_8x7b's standard: nothing to write; 600 a rank over " \
           "the 2 data-parallel ranks (32 / (TP 8 x PP 2))" in lines(report)


def test_flagperfs_expert_parallelism_goes_to_a_stack_that_takes_it_each_expert_whole_where_the_grid_needs(
        tree, tmp_path):
    """mixtral_8x7B's Megatron script passes --expert-model-parallel-size 8: on nvidia's shipped megatron stack (its
    param expert_parallel) it is written, with expert_tensor_parallel 1, since megatron-core's default (each expert
    over the TP 8 ranks) spans 8 x 8 x PP 2 = 128 of the 32 ranks: the parallelism of the shipped config. The
    vendor's training_adapter.sh wins over the benchmark's script."""
    config = "training/nvidia/mixtral_8x7B-megatron/config"
    write(tree, {f"{config}/config_H100x4x8.py": "localbs = 3\ntrain_steps = 100\ntensor_parallel = 8\n"
                                                 "pipeline_parallel = 2\n",
                 "training/benchmarks/mixtral_8x7B/megatron/megatron_main.sh":
                     'MOE_ARGS=" \\\n    --num-experts 8 \\\n    --expert-model-parallel-size 8 \\\n"\n'
                     'MODEL_ARGS=" \\\n    --global-batch-size 1200 \\\n"\n'})
    root = copy_checkout(tmp_path / "checkout")
    out = "vendor/nvidia/cases/mixtral_8x7b/megatron/config_H100x4x8.yaml"
    report = import_flagperf(tree, root / "out", root=root)
    written = load(root / "out" / out)
    assert written == {"tensor_parallel": 8, "pipeline_parallel": 2, "micro_batch": 3, "grad_accumulation": 200,
                       "expert_parallel": 8, "expert_tensor_parallel": 1}
    shipped = load(root / out)
    assert {k: shipped[k] for k in written} == written
    script = "training/benchmarks/mixtral_8x7B/megatron/megatron_main.sh:3 --expert-model-parallel-size"
    assert f"mapped          {script}: -> expert_parallel: 8" in lines(report)
    assert f"mapped          {script}: -> expert_tensor_parallel: 1; each expert whole on its rank: megatron-core's " \
           f"default makes expert_tensor_parallel 8 x expert_parallel 8 x pipeline_parallel 2 = 128 ranks, which 32 " \
           f"cannot hold" in lines(report)
    write(tree, {f"{config}/training_adapter.sh": "MOE_ARGS=\"--expert-model-parallel-size 4\"\n"
                                                  "# --transformer-impl transformer_engine\n"
                                                  "TRANSFORMER_ARGS=\"--transformer-impl local\"\n"})
    report = import_flagperf(tree, root / "again", root=root)
    again = load(root / "again" / out)
    assert again["expert_parallel"] == 4
    # metax's adapters' --transformer-impl local: megatron-core's own layers (the stack's param transformer_impl)
    assert again["transformer_impl"] == "local"
    assert f"mapped          {config}/training_adapter.sh:3 --transformer-impl: -> transformer_impl: \"local\"" \
        in lines(report)


@pytest.mark.parametrize("setup, message", [
    (lambda t: (t / DEEPSPEED / "ds_config.json").write_text('{"zero_optimization": {"stage": 2,}'),
     f"error: {DEEPSPEED}/ds_config.json: cannot be read as JSON (Expecting property name"),
    (lambda t: (t / DEEPSPEED / "ds_config.json").write_text("[1]"),
     f"error: {DEEPSPEED}/ds_config.json: must be a JSON object, got list"),
    (lambda t: (t / IN_CONTAINER / "config.py").write_text("TENSOR_PARALLEL = (\n"),
     f"error: {IN_CONTAINER}/config.py: cannot be read as a Python config"),
])
def test_an_unreadable_llm_config_is_exit_2_naming_the_file(tree, tmp_path, capsys, setup, message):
    setup(tree)
    out = tmp_path / "out"
    assert main(["import-flagperf", str(tree), "--out", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_a_value_out_of_range_is_reported_with_its_file_line_and_key(tree, tmp_path):
    """TP 0 (the stack's range is 1..64) and a sequence length other than the model case's standard: reported by
    name, not written."""
    config = tree / MEGATRON / "config_H100x1x8.py"
    config.write_text(config.read_text().replace("tensor_parallel = 2", "tensor_parallel = 0"))
    deepspeed = tree / DEEPSPEED / "config_H100x1x8.py"
    deepspeed.write_text(deepspeed.read_text().replace("seqlength = 4096", "seqlength = 65536"))
    root = checkout(tmp_path, "megatron")
    text = lines(import_flagperf(tree, root / "out", root=root))
    assert any(line.startswith(f"no counterpart  {MEGATRON}/config_H100x1x8.py:6 tensor_parallel: -> "
                               f"tensor_parallel: ") and "tensor_parallel" in line.split("->", 1)[1] for line in text)
    assert "tensor_parallel" not in load(root / "out/vendor/nvidia/cases/llama3_8b/megatron/config_H100x1x8.yaml")
    assert f"no counterpart  {DEEPSPEED}/config_H100x1x8.py:1 seqlength: -> seq_len: 65536, not perfplay's " \
           f"chatglm3_6b's standard 4096: seq_len is run-only, a vendor config may not set it; tokens per sequence" \
           in text


def test_the_llm_tables_are_the_docs_and_name_the_shapes():
    text = DOC.read_text(encoding="utf-8")
    for rows in (LLM_FRAMEWORKS, LLM_PARAMS):
        table = "\n".join(markdown_table(rows, files=False))
        assert table in text, f"{DOC.name} must show this table (from flagperf_names.py):\n{table}"
    llms = {name: model for name, model in CASE_NAMES.items() if model in SHAPES}
    assert set(llms.values()) == {"llama2_7b", "llama3_8b", "llama2_70b", "llama3_70b", "aquila2_7b", "aquila2_34b",
                                  "aquila2_70b", "mixtral_8x7b", "qwen1.5_moe", "chatglm3_6b", "baichuan2_13b"}
    for name, model in llms.items():
        assert f"| `{name}` | `{model}` |" in text, name
