"""import-flagperf on FlagPerf's inference configs (inference/configs/<case>/): a vendor's file becomes perfplay's
vendor/<vendor>/cases/<case>/<vendor>_configurations.yaml with only what differs from perfplay's standard (compilers
by perfplay's engine names, engine settings reported), the written files resolve through the real plan, and the
case's own configurations.yaml and parameters.yaml are compared with perfplay's standard."""

from __future__ import annotations

from case_runners.plan.config.flagperf_names import (
    INFERENCE_ENGINES,
    INFERENCE_PARAMS,
    INFERENCE_SETTINGS,
    markdown_table,
)
from case_runners.plan.inference_config import CONFIG_KEYS
from case_runners.plan.run_plan import make_plan
from case_runners.vendors.flagperf.importer import import_flagperf
from flagperf_tree import ROOT, checkout, lines, load, write

DOC = ROOT / "docs" / "flagperf-migration.md"
CONFIGS = "inference/configs"
# FlagPerf's files as its tree has them (inference/configs/<case>/...), trimmed of their comments.
STANDARD = """\
    batch_size: {batch}
    flops: {flops}
    fp16: {fp16}
    compiler: {compiler}
    num_workers: 8
    log_freq: 30
    repeat: 5
    no_validation: false
    exist_onnx_path: null
    exist_compiler_path: null
    """
TRT = "trt_tmp_path: nvidia_tmp/resnet50.trt\nhas_dynamic_axis: false\ntorchtrt_full_compile: true\n"
DYNAMO = 'dynamo_mode: "reduce-overhead"\ndynamo_dynamic: true\ndynamo_wamrup_iters: 10\ndynamo_wamrup_times: 10\n'
TREE = {
    f"{CONFIGS}/resnet50/configurations.yaml": STANDARD.format(batch=256, flops="4.12e9", fp16="true",
                                                              compiler="tensorrt"),
    f"{CONFIGS}/resnet50/parameters.yaml": "# There is no parameters for resnet50 case.\n",
    f"{CONFIGS}/resnet50/vendor_config/nvidia_configurations.yaml": TRT,
    f"{CONFIGS}/resnet50/vendor_config/kunlunxin_configurations.yaml": """\
        fp16: false
        compiler: xtcl
        no_validation: true
        exist_onnx_path: onnxs/resnet50_bs256_pytorch_fp16False.onnx
        resnet50_fuse: true
        """,
    f"{CONFIGS}/resnet50/vendor_config/iluvatar_configurations.yaml": "has_dynamic_axis: false\nrepeat: 1\n"
                                                                       "image_size: 224\n",
    # kunlunxin's swinTransformer file is a whole copy of the standard with its changes
    f"{CONFIGS}/swinTransformer/configurations.yaml": STANDARD.format(batch=256, flops="1.55e10", fp16="true",
                                                                     compiler="tensorrt"),
    f"{CONFIGS}/swinTransformer/vendor_config/kunlunxin_configurations.yaml": STANDARD.format(
        batch=256, flops="1.55e10", fp16="false", compiler="xtcl"),
    f"{CONFIGS}/stable_diffusion_v1_4/vendor_config/kunlunxin_configurations.yaml": "fp16: false\ncompiler: xtcl\n"
                                                                                    "no_validation: true\n",
    f"{CONFIGS}/stable_diffusion_v1_4/parameters.yaml": "weights: weights_v1_4\nrandom_seed: 0\nheight: 512\n"
                                                        "num_inference_steps: 40\n",
    f"{CONFIGS}/yolov5/vendor_config/nvidia_configurations.yaml": "trt_tmp_path: nvidia_tmp/yolov5.trt\n"
                                                                 "batch_size: 96\n",
    f"{CONFIGS}/llama3_8b_mmlu/configurations.yaml": STANDARD.format(batch=1, flops="2*8e9", fp16="true",
                                                                    compiler="inductor"),
    f"{CONFIGS}/llama3_8b_mmlu/vendor_config/nvidia_configurations.yaml": DYNAMO,
    f"{CONFIGS}/Aquila_7b_mmlu/vendor_config/nvidia_configurations.yaml": DYNAMO,  # its standard: torch alone
    f"{CONFIGS}/glm_mmlu/vendor_config/nvidia_configurations.yaml": "batch_size: 2\n",
    # a kunlunxin training config, so that the import writes kunlunxin's vendor folder
    "training/kunlunxin/resnet50-pytorch/config/config_R300x1x8.py": "train_batch_size = 64\n",
}
RESNET, SWIN, SD = (f"{CONFIGS}/{case}" for case in ("resnet50", "swinTransformer", "stable_diffusion_v1_4"))


def test_vendor_files_carry_only_what_differs_from_perfplay_s_standard(tmp_path):
    out = tmp_path / "out"
    report = import_flagperf(write(tmp_path / "FlagPerf", TREE), out)
    text = "\n".join(lines(report))
    vendor = out / "vendor"
    # nvidia's TensorRT wrapper settings have no counterpart: no file; yolov5's batch does
    assert not (vendor / "nvidia/cases/resnet50/nvidia_configurations.yaml").exists()
    assert load(vendor / "nvidia/cases/yolov5/nvidia_configurations.yaml") == {"batch_size": 96}
    # torch.compile's mode is the inductor engine's inductor_mode, where the case compiles with inductor
    assert load(vendor / "nvidia/cases/llama3_8b_mmlu/nvidia_configurations.yaml") == {
        "inductor_mode": "reduce-overhead", "inductor_dynamic": True}
    assert not (vendor / "nvidia/cases/aquila_7b_mmlu/nvidia_configurations.yaml").exists()
    assert load(vendor / "kunlunxin/cases/resnet50/kunlunxin_configurations.yaml") == {
        "fp16": False, "compiler": "xtcl", "no_validation": True,
        "exist_onnx_path": "onnxs/resnet50_bs256_pytorch_fp16False.onnx"}
    # a copy of FlagPerf's standard: only its changes (flops never: FlagPerf counts multiply-adds)
    assert load(vendor / "kunlunxin/cases/swin_transformer/kunlunxin_configurations.yaml") == {
        "fp16": False, "compiler": "xtcl"}
    # fp16 false is perfplay's standard; no_validation without exist_onnx_path is refused by perfplay
    assert load(vendor / "kunlunxin/cases/stable_diffusion_v1_4/kunlunxin_configurations.yaml") == {
        "compiler": "xtcl"}
    # image_size is a parameter, at its standard value; repeat differs
    assert load(vendor / "iluvatar/cases/resnet50/iluvatar_configurations.yaml") == {"repeat": 1}
    nvidia, kunlunxin = f"{RESNET}/vendor_config/nvidia_configurations.yaml", \
        f"{RESNET}/vendor_config/kunlunxin_configurations.yaml"
    for line in (
        f"no counterpart  {nvidia} trt_tmp_path: \"nvidia_tmp/resnet50.trt\": where FlagPerf's tensorrt engine writes "
        "its engine file: perfplay's tensorrt engine serializes it in the round's inference_work/",
        f"no counterpart  {kunlunxin} resnet50_fuse: true: kunlunxin's xtcl: a setting of the vendor's own engine",
        f"mapped          {kunlunxin} compiler: -> vendor/kunlunxin/cases/resnet50/kunlunxin_configurations.yaml "
        "compiler: \"xtcl\" (perfplay's standard \"tensorrt\")",
        f"to port         {kunlunxin}: compiler xtcl: perfplay ships no vendor/kunlunxin/engines/xtcl.py: the vendor "
        "brings it (an InferModel, docs/adapting-a-chip.md); until then the plan refuses this case on kunlunxin",
        f"mapped          {RESNET}/vendor_config/iluvatar_configurations.yaml image_size: -> image_size: 224, "
        "perfplay's resnet50's parameter: nothing to write",
        f"mapped          {SWIN}/vendor_config/kunlunxin_configurations.yaml num_workers: -> num_workers: 8, "
        "perfplay's swin_transformer's standard: nothing to write",
        f"no counterpart  {SWIN}/vendor_config/kunlunxin_configurations.yaml flops: 15500000000.0: FlagPerf's "
        "standard's figure, repeated; perfplay's swin_transformer counts 3.1e+10 per item",
        f"no counterpart  {SD}/vendor_config/kunlunxin_configurations.yaml no_validation: true: not written: perfplay "
        "refuses it over its standard:",
        f"no counterpart  {CONFIGS}/Aquila_7b_mmlu/vendor_config/nvidia_configurations.yaml dynamo_mode: "
        "\"reduce-overhead\": torch.compile's mode (reduce-overhead: CUDA graphs), which perfplay's inductor engine "
        "reads: a key the vendor's file adds (the plan warns), where the case's compiler is inductor; this case's "
        "compiler is null, which does not read it",
        f"no counterpart  {CONFIGS}/glm_mmlu/vendor_config/nvidia_configurations.yaml: perfplay has no inference case "
        "'glm_mmlu'",
    ):
        assert line in text, f"missing: {line}\n{text}"
    files = {name: (o.status, o.why) for name, o in report.files.items() if name.startswith(CONFIGS)}
    assert files[nvidia] == ("read", "an inference vendor configuration: nothing differs from perfplay's standard "
                                     "that perfplay takes")
    assert files[kunlunxin] == ("mapped", "an inference vendor configuration")


def test_flagperf_s_standard_is_compared_with_perfplay_s(tmp_path):
    report = import_flagperf(write(tmp_path / "FlagPerf", TREE), tmp_path / "out")
    text = "\n".join(lines(report))
    assert (f"no counterpart  {RESNET}/configurations.yaml flops: FlagPerf's standard 4120000000.0, perfplay's "
            "8200000000.0 (case_runners/cases/resnet50/inference/configurations.yaml): perfplay's standard "
            "stands") in text
    # a model case's standard is its model file's
    assert "(case_runners/cases/mmlu/inference/models/llama3_8b_mmlu.yaml): perfplay's standard stands" in text
    assert (f"no counterpart  {SD}/parameters.yaml num_inference_steps: FlagPerf's standard 40, perfplay's "
            "num_inference_steps 50: "
            "perfplay's standard stands") in text
    # FlagPerf's names perfplay spells otherwise (INFERENCE_PARAMS)
    assert f"mapped          {SD}/parameters.yaml random_seed: -> seed: 0, perfplay's standard" in text
    outcomes = {name: (o.status, o.detail) for name, o in report.files.items()}
    assert outcomes[f"{RESNET}/configurations.yaml"] == ("read", "differs: flops")
    assert outcomes[f"{SWIN}/configurations.yaml"] == ("read", "differs: flops")
    assert outcomes[f"{RESNET}/parameters.yaml"] == ("read", "none")
    assert outcomes[f"{SD}/parameters.yaml"] == ("read", "differs: num_inference_steps")


def test_the_written_files_pass_the_plan(tmp_path):
    """Imported into a checkout's copy: nvidia's files resolve through the real plan; kunlunxin's (its folder
    written by the import) is refused naming the engine it must bring, and resolves once that engine is there."""
    root = checkout(tmp_path / "checkout")
    import_flagperf(write(tmp_path / "FlagPerf", TREE), root, force=True)
    results = str(tmp_path / "results")
    plan = make_plan({"vendor": "nvidia", "task": "inference", "cases": ["yolov5", "llama3_8b_mmlu"],
                      "results_dir": results}, check=True, root=root)
    assert plan["ok"], plan["errors"]
    yolov5, llama = plan["cases"]
    assert yolov5["inference"]["configurations"]["batch_size"] == 96
    assert llama["inference"]["configurations"]["inductor_mode"] == "reduce-overhead"
    assert llama["inference"]["configurations"]["inductor_dynamic"] is True
    assert "vendor/nvidia/cases/llama3_8b_mmlu/nvidia_configurations.yaml" in llama["sources"]
    request = {"vendor": "kunlunxin", "task": "inference", "cases": ["resnet50", "swin_transformer"],
               "results_dir": results}
    refused = make_plan(request, check=True, root=root)
    assert not refused["ok"]
    assert len(refused["errors"]) == 2 and all(
        "vendor 'kunlunxin' has no engine 'xtcl'" in str(error) for error in refused["errors"]), refused["errors"]
    write(root / "vendor" / "kunlunxin" / "engines", {"xtcl.py": """\
        class InferModel:
            def __init__(self, config, onnx_path, model=None):
                self.config = config

            def __call__(self, inputs):
                return inputs, 0.0
        """})
    accepted = make_plan(request, check=True, root=root)
    assert accepted["ok"], accepted["errors"]
    resnet = accepted["cases"][0]["inference"]["configurations"]
    assert (resnet["compiler"], resnet["fp16"], resnet["no_validation"]) == ("xtcl", False, True)


def test_the_docs_tables_are_the_inference_mapping():
    text = DOC.read_text(encoding="utf-8")
    for rows in (INFERENCE_ENGINES, INFERENCE_SETTINGS, INFERENCE_PARAMS):
        table = "\n".join(markdown_table(rows, files=False))
        assert table in text, f"{DOC.name} must show this table:\n{table}"
    # an engine setting is never a key of perfplay's configurations (those map by name)
    assert not {row.flagperf for row in INFERENCE_SETTINGS} & set(CONFIG_KEYS)
