"""`import-flagperf` on a small FlagPerf-shaped tree the tests write: the configs are read without being run, every
item is reported, the inventory, run vars and vendor configs it writes are what the plan accepts, and the mapping
table is the one docs/flagperf-migration.md shows."""

from __future__ import annotations

import re
import shutil
import textwrap
from pathlib import Path

import pytest

from case_runners.cases import list_cases
from case_runners.cases.llama.shapes import SHAPES
from case_runners.cli.main import main
from case_runners.core.paths import project_root
from case_runners.launch.container.image import BUILD_KEYS
from case_runners.plan.config import adapter_points
from case_runners.plan.config.adapter_points import ADAPTER_SIGNATURES
from case_runners.plan.config.flagperf_names import (
    ADAPTER_POINTS,
    CASE_NAMES,
    FLAGPERF_RUN_VARS,
    PARAMS,
    RUN_SETTINGS,
    markdown_table,
)
from case_runners.plan.config.shared_params import SHARED_PARAMS
from case_runners.plan.inference_config import inference_cases
from case_runners.plan.layering import load_case_base
from case_runners.plan.run_plan import make_plan
from case_runners.plan.run_vars import DOCUMENTED_RUN_VARS, QUERIED_NAMES, RUN_VAR_PREFIX
from case_runners.tasks.training.adapter import POINTS
from case_runners.vendors.description import load_vendor
from case_runners.vendors.flagperf.importer import HOST_VARS, import_flagperf
from case_runners.vendors.flagperf.pyconfig import read_config
from case_runners.vendors.flagperf.vendor_facts import container_options
from flagperf_tree import lines, load, write

ROOT = project_root()
DOC = ROOT / "docs" / "flagperf-migration.md"
CONFIG = "training/run_benchmarks/config"
RESNET = "training/nvidia/resnet50-pytorch/config"
BERT = "training/nvidia/bert-pytorch/config"

TREE = {
    f"{CONFIG}/cluster_conf.py": """\
        '''Cluster configs'''
        HOSTS = ["10.1.2.2", "10.1.2.3"]
        HOSTS_PORTS = ["2222"]
        MASTER_PORT = "29501"
        SSH_PORT = "2200"
        """,
    f"{CONFIG}/test_conf.py": """\
        '''Test Configs'''
        import os
        VENDOR = "nvidia"
        ACCE_CONTAINER_OPT = " --gpus all"
        ACCE_VISIBLE_DEVICE_ENV_NAME = "CUDA_VISIBLE_DEVICES"
        PIP_SOURCE = "https://mirror.example.com/pypi/simple"
        FLAGPERF_PATH = "/home/FlagPerf/training"
        FLAGPERF_LOG_PATH = FLAGPERF_PATH + "/result/"
        FLAGPERF_LOG_LEVEL = os.environ.get("LEVEL", "debug")
        SHM_SIZE = "32G"
        CLEAR_CACHES = True
        CASES = {
            "resnet50:pytorch_1.8:A100:1:8:1": "/raid/dataset/ImageNet_1k_2012/",
            # "bert:pytorch_1.8:A100:1:8:1": "/raid/bert/",
            "bert:pytorch_1.8:A100:1:1:2": "/raid/bert/",
            "glm:pytorch_1.8:A100:1:8:1": "/raid/glm/",
            "llama1_7B:paddle_2.5.1:TP1PP1SH2SP8A10040G:1:8:1": "/raid/llama/",
        }
        """,
    "inference/configs/host.yaml": """\
        FLAGPERF_PATH: "/home/FlagPerf/inference"
        VENDOR: "nvidia"
        HOSTS: ["10.1.2.59"]
        SSH_PORT: "22"
        LOG_CALL_INFORMATION: True
        CLEAR_CACHES: False
        CASES:
          "resnet50:pytorch_1.13": "/raid/dataset/ImageNet/val"
          "llama3_70b:tensorrt-llm": "/data/llama3_infer"
        """,
    f"{RESNET}/config_common.py": """\
        vendor = "nvidia"
        dist_backend = "nccl"
        fp16 = True
        """,
    f"{RESNET}/config_A100x1x8.py": """\
        from config_common import *

        train_batch_size = 256
        eval_batch_size = train_batch_size
        max_steps = 10000 * 1000
        max_samples_termination = 43912600*1000
        learning_rate = 0.1
        seed = 23333
        """,
    f"{BERT}/config_A100x1x1.py": """\
        from torch.cuda.amp import GradScaler
        train_batch_size = 8
        gradient_accumulation_steps = 4
        learning_rate = 3.5e-4
        grad_scaler = GradScaler(init_scale=2**20)
        weight_decay_rate = 0.01
        target_mlm_accuracy = 0.72
        """,
}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return write(tmp_path / "FlagPerf", TREE)


def test_the_inventory_lists_the_hosts_in_order_with_the_ssh_port(tree, tmp_path):
    out = tmp_path / "out"
    import_flagperf(tree, out)
    group = load(out / "inventory/flagperf/hosts.yml")["all"]["children"]["perfplay_hosts"]
    assert list(group["hosts"]) == ["10.1.2.2", "10.1.2.3"]
    # the host vars at inventory/sample's paths, read from there
    assert group["vars"] == {"ansible_port": 2200, "perfplay_project_dir": "/opt/perfplay/src",
                             "perfplay_venv": "/opt/perfplay/venv",
                             "perfplay_host_results_dir": "/opt/perfplay/results"}
    assert set(group["vars"]) == {"ansible_port", *HOST_VARS}
    inference = load(out / "inventory/flagperf_inference/hosts.yml")["all"]["children"]["perfplay_hosts"]
    assert list(inference["hosts"]) == ["10.1.2.59"] and inference["vars"]["ansible_port"] == 22


def test_the_run_vars(tree, tmp_path):
    out = tmp_path / "out"
    import_flagperf(tree, out)
    assert load(out / "flagperf_training.yml") == {
        "perfplay_vendor": "nvidia",
        "perfplay_image": {"pip_index_url": "https://mirror.example.com/pypi/simple"},
        "perfplay_clear_caches": True,
        "perfplay_cases": {"resnet50:pytorch_1.8:A100:1:8:1": "/raid/dataset/ImageNet_1k_2012/",
                           "bert:pytorch_1.8:A100:1:1:2": "/raid/bert/"},
        "perfplay_master_port": 29501}
    assert load(out / "flagperf_inference.yml") == {
        "perfplay_task": "inference", "perfplay_vendor": "nvidia", "perfplay_clear_caches": False,
        "perfplay_cases": {"resnet50:pytorch_1.13": "/raid/dataset/ImageNet/val"}}
    assert (out / "flagperf_training.yml").read_text().startswith(
        "---\n# Run vars from FlagPerf training/run_benchmarks/config/test_conf.py and\n")


def test_the_vendor_configs(tree, tmp_path):
    out = tmp_path / "out"
    import_flagperf(tree, out)
    # config_common.py's fp16, then the file's own keys; the name assigned earlier is its value
    assert load(out / "vendor/nvidia/cases/resnet50/config_A100x1x8.yaml") == {
        "amp": True, "batch_size": 256, "eval_batch_size": 256, "max_steps": 10000000, "lr": 0.1, "seed": 23333}
    # train_batch_size 8 x gradient_accumulation_steps 4: the batch of an optimizer step, in 4 micro batches
    assert load(out / "vendor/nvidia/cases/bert/config_A100x1x1.yaml") == {
        "batch_size": 32, "grad_accumulation": 4, "lr": 3.5e-4, "weight_decay": 0.01}


def test_the_report_names_every_item(tree, tmp_path):
    out = tmp_path / "out"
    found = lines(import_flagperf(tree, out))
    conf, common, resnet, bert = (f"{CONFIG}/test_conf.py", f"{RESNET}/config_common.py",
                                  f"{RESNET}/config_A100x1x8.py", f"{BERT}/config_A100x1x1.py")
    expected = [
        f"skipped         {conf}:2: `import os`: an import of another module is not followed",
        f"skipped         {conf}:9: `FLAGPERF_LOG_LEVEL = os.environ.get('LEVEL', 'debug')`: a call is not evaluated "
        f"(configs are read, never run)",
        f"mapped          {conf}:3 VENDOR: -> perfplay_vendor: nvidia",
        f"mapped          {conf}:10 SHM_SIZE: -> vendor/nvidia/vendor.yaml container.run.shm_size: 32G (as it is "
        f"there)",
        f"mapped          {conf}:5 ACCE_VISIBLE_DEVICE_ENV_NAME: -> vendor/nvidia/vendor.yaml visible_devices.env: "
        f"CUDA_VISIBLE_DEVICES (as it is there)",
        f"mapped          {conf}:4 ACCE_CONTAINER_OPT: -> vendor/nvidia/vendor.yaml container.run.gpus: all (as it is "
        f"there)",
        f"mapped          {common}:2: -> vendor/nvidia/vendor.yaml dist_backend: nccl (as it is there)",
        f"no counterpart  {conf}:7 FLAGPERF_PATH: perfplay ships its own checkout to every host (host var "
        f"perfplay_project_dir)",
        f"mapped          {conf}:11 CLEAR_CACHES: -> perfplay_clear_caches: true",
        f"mapped          {conf}:12 CASES['resnet50:pytorch_1.8:A100:1:8:1']: -> "
        f"perfplay_cases['resnet50:pytorch_1.8:A100:1:8:1']: /raid/dataset/ImageNet_1k_2012/",
        f"no counterpart  {conf}:12 CASES['glm:pytorch_1.8:A100:1:8:1']: perfplay has no case 'glm' (its cases: "
        f"{', '.join(list_cases())})",
        f"no counterpart  {conf}:12 CASES['llama1_7B:paddle_2.5.1:TP1PP1SH2SP8A10040G:1:8:1']: framework "
        f"paddle_2.5.1: perfplay's cases are written for pytorch",
        f"mapped          {CONFIG}/cluster_conf.py:2 HOSTS: -> inventory: perfplay_hosts: 10.1.2.2, 10.1.2.3",
        f"mapped          {CONFIG}/cluster_conf.py:5 SSH_PORT: -> inventory: ansible_port: 2200",
        f"mapped          {CONFIG}/cluster_conf.py:4 MASTER_PORT: -> perfplay_master_port: 29501",
        "no counterpart  inference/configs/host.yaml CASES['llama3_70b:tensorrt-llm']: framework tensorrt-llm: "
        "perfplay's cases are written for pytorch",
        "no counterpart  inference/configs/host.yaml LOG_CALL_INFORMATION: every perfplay event carries its rank "
        "and time already",
        f"no counterpart  {resnet} dist_backend (from {common}:2): the vendor's: vendor/<vendor>/vendor.yaml "
        f"dist_backend",
        f"mapped          {resnet} fp16 (from {common}:3): -> amp: true; autocast to the vendor's amp_dtype "
        f"(vendor.yaml; fp16 adds a GradScaler)",
        f"mapped          {resnet}:4 eval_batch_size: -> eval_batch_size: 256",
        f"no counterpart  {resnet}:6 max_samples_termination: a run stops at max_steps, max_epochs or time_budget_s",
        f"skipped         {bert}:1: `from torch.cuda.amp import GradScaler`: an import of another module "
        f"(torch.cuda.amp) is not followed; only a sibling file (from config_common import *) is",
        f"skipped         {bert}:5: `grad_scaler = GradScaler(init_scale=2 ** 20)`: a call is not evaluated (configs "
        f"are read, never run)",
        f"mapped          {bert}:3 gradient_accumulation_steps: -> grad_accumulation: 4; micro batches of "
        f"train_batch_size 8",
        f"mapped          {bert}:3 gradient_accumulation_steps: -> batch_size: 32; train_batch_size 8 x "
        f"gradient_accumulation_steps 4, the batch of an optimizer step",
        f"no counterpart  {bert}:7 target_mlm_accuracy: the target is the case's (its config.yaml target), not a "
        f"vendor's",
        f"wrote           {out}/vendor/nvidia/cases/resnet50/config_A100x1x8.yaml: new",
    ]
    missing = [line for line in expected if line not in found]
    assert not missing, "\n".join(["missing:", *missing, "report:", *found])


def test_the_output_passes_the_plan(tree, tmp_path):
    """Imported into a checkout's copy (--out there, --force over its own configs), the run vars and the inventory
    are a run the plan accepts, with the imported configs and the framework versions."""
    root = tmp_path / "checkout"
    shutil.copytree(ROOT / "vendor", root / "vendor")
    (root / "case_runners").symlink_to(ROOT / "case_runners")  # its cases (inference's are looked up under root)
    report = import_flagperf(tree, root, force=True)
    assert f"wrote           {root}/vendor/nvidia/cases/resnet50/config_A100x1x8.yaml: replaced" in lines(report)
    hosts = list(load(root / "inventory/flagperf/hosts.yml")["all"]["children"]["perfplay_hosts"]["hosts"])
    for name in ("flagperf_training.yml", "flagperf_inference.yml"):
        run_vars = load(root / name)
        request = {key.removeprefix(RUN_VAR_PREFIX): value for key, value in run_vars.items()}
        result = make_plan({**request, "hosts": hosts, "run_var_names": sorted(run_vars),
                            "results_dir": str(tmp_path / "results")}, check=True, root=root)
        assert result["ok"], (name, result["errors"])
    training = make_plan({"vendor": "nvidia", "cases": load(root / "flagperf_training.yml")["perfplay_cases"],
                          "results_dir": str(tmp_path / "results")}, check=True, root=root)["cases"]
    resnet = next(c for c in training if c["case"] == "resnet50")
    assert resnet["framework_version"] == "1.8"
    assert {k: resnet["params"][k] for k in ("batch_size", "amp", "lr", "seed", "max_steps")} == \
        {"batch_size": 256, "amp": True, "lr": 0.1, "seed": 23333, "max_steps": 10000000}
    assert resnet["sources"][1] == "vendor/nvidia/cases/resnet50/config_A100x1x8.yaml"


def test_existing_files_are_kept_without_force(tree, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["import-flagperf", str(tree), "--out", str(out)]) == 0
    # the next command runs each suite's vars on the hosts of its own FlagPerf file, inference on host.yaml's
    assert f"(inference: -i {out}/inventory/flagperf_inference/hosts.yml -e @{out}/flagperf_inference.yml; base: " \
           f"-i {out}/inventory/flagperf_base/hosts.yml -e @{out}/flagperf_base.yml)" in capsys.readouterr().out
    written = {p: p.read_text() for p in out.rglob("*.y*ml")}
    assert len(written) == 6
    for path in written:
        path.write_text("mine\n")
    capsys.readouterr()
    assert main(["import-flagperf", str(tree), "--out", str(out)]) == 1, "nothing written"
    text = capsys.readouterr().out
    assert f"kept            {out}/flagperf_training.yml: exists already (--force replaces it)" in text
    assert text.rstrip().endswith("nothing written")
    assert all(p.read_text() == "mine\n" for p in written)
    assert main(["import-flagperf", str(tree), "--out", str(out), "--force"]) == 0
    assert {p: p.read_text() for p in written} == written


def test_one_config_file(tree, tmp_path):
    out = tmp_path / "out"
    report = import_flagperf(tree / RESNET / "config_A100x1x8.py", out)
    assert [p.relative_to(out).as_posix() for p in report.written] == [
        "vendor/nvidia/cases/resnet50/config_A100x1x8.yaml"]
    report = import_flagperf(tree / CONFIG / "cluster_conf.py", out)
    assert sorted(p.relative_to(out).as_posix() for p in report.written) == [
        "flagperf_training.yml", "inventory/flagperf/hosts.yml"]
    # no CASES read: an empty selection, which the plan refuses, not none, which would plan the default case
    assert load(out / "flagperf_training.yml") == {"perfplay_master_port": 29501, "perfplay_cases": {}}


@pytest.mark.parametrize("setup, message", [
    (lambda t: (t / CONFIG / "test_conf.py").write_text("VENDOR = (\n"),
     "error: training/run_benchmarks/config/test_conf.py: cannot be read as a Python config ('(' was never closed"),
    (lambda t: (t / "inference/configs/host.yaml").write_text("CASES: [\n"),
     "error: inference/configs/host.yaml: malformed YAML"),
    (lambda t: shutil.rmtree(t / "training") or shutil.rmtree(t / "inference"), "is not a FlagPerf checkout"),
])
def test_unreadable_input_is_exit_2_and_writes_nothing(tree, tmp_path, capsys, setup, message):
    setup(tree)
    out = tmp_path / "out"
    assert main(["import-flagperf", str(tree), "--out", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_a_vendor_config_outside_the_layout_is_refused(tmp_path, capsys):
    stray = tmp_path / "config_A100x1x8.py"
    stray.write_text("train_batch_size = 1\n")
    assert main(["import-flagperf", str(stray), "--out", str(tmp_path / "out")]) == 2
    assert "cannot tell its vendor and case" in capsys.readouterr().err


def test_the_reader_evaluates_literals_and_skips_the_rest(tmp_path):
    (tmp_path / "config_common.py").write_text("base = 2\nshared = [1, 2]\n")
    (tmp_path / "other.py").write_text("named = 'n'\n")
    (tmp_path / "config.py").write_text(textwrap.dedent("""\
        '''doc'''
        from config_common import *
        from other import named as alias
        a = base * 3 + 1
        b: float = -a / 4
        c = d = (a, "x" + "y", None, True)
        e = {"k": [a, {1: 2.5}], "n": not False}
        shared += [3]
        big = 10 ** 100000
        f = len("x")
        g = [i for i in range(3)]
        h = base.real
        i = undefined + 1
        j = f"{a}"
        if a:
            k = 1
        """))
    config = read_config(tmp_path / "config.py", "cfg/config.py")
    assert config.values == {"base": 2, "shared": [1, 2, 3], "alias": "n", "a": 7, "b": -1.75,
                             "c": (7, "xy", None, True), "d": (7, "xy", None, True),
                             "e": {"k": [7, {1: 2.5}], "n": True}}
    assert config.where["base"] == "cfg/config_common.py:1" and config.where["shared"] == "cfg/config.py:8"
    assert [str(s) for s in config.skipped] == [
        "cfg/config.py:9: `big = 10 ** 100000` skipped: a number that large is not read",
        "cfg/config.py:10: `f = len('x')` skipped: a call is not evaluated (configs are read, never run)",
        "cfg/config.py:11: `g = [i for i in range(3)]` skipped: a comprehension is not evaluated (configs are read, "
        "never run)",
        "cfg/config.py:12: `h = base.real` skipped: an attribute is not evaluated (configs are read, never run)",
        "cfg/config.py:13: `i = undefined + 1` skipped: uses undefined, which is not assigned earlier",
        "cfg/config.py:14: `j = f'{a}'` skipped: an f-string is not evaluated (configs are read, never run)",
        "cfg/config.py:15: `if a: k = 1` skipped: a If statement is not read (configs are read, never run)"]


def test_a_sibling_import_cycle_is_reported(tmp_path):
    (tmp_path / "a.py").write_text("from b import *\nx = 1\n")
    (tmp_path / "b.py").write_text("from a import *\ny = 2\n")
    config = read_config(tmp_path / "a.py", "a.py")
    assert config.values == {"y": 2, "x": 1}
    assert [str(s) for s in config.skipped] == ["b.py:1: `from a import *` skipped: a.py imports itself in a cycle"]


# -- the mapping table ------------------------------------------------------------------------------------------


def test_the_docs_table_is_the_mapping():
    text = DOC.read_text(encoding="utf-8")
    for rows, files in ((RUN_SETTINGS, True), (PARAMS, False), (ADAPTER_POINTS, False)):
        table = "\n".join(markdown_table(rows, files=files))
        assert table in text, \
            f"{DOC.name} must show this table (from case_runners/plan/config/flagperf_names.py):\n{table}"


def test_the_perfplay_side_of_the_mapping_exists():
    for row in RUN_SETTINGS:
        assert row.flagperf.isupper() and re.search(QUERIED_NAMES, row.flagperf), row
        target = row.perfplay or ""
        if target.startswith(RUN_VAR_PREFIX):
            var, _, key = target.partition(".")
            assert var in DOCUMENTED_RUN_VARS, row
            assert not key or key in BUILD_KEYS, row
    assert FLAGPERF_RUN_VARS == {row.flagperf for row in RUN_SETTINGS}
    mutable = set()
    for case in list_cases():
        base, _ = load_case_base(case, ROOT)
        mutable.update(base["mutable"])
    for row in PARAMS:
        if row.perfplay:
            assert row.perfplay in SHARED_PARAMS and row.perfplay in mutable, row
    # FlagPerf's LLMs: the llama case's shapes; its MMLU cases: mmlu's model cases
    assert set(CASE_NAMES.values()) <= set(list_cases()) | set(SHAPES) | set(inference_cases(ROOT))
    assert {row.perfplay for row in ADAPTER_POINTS if row.perfplay} <= set(POINTS)



def test_the_adapter_signatures_the_import_names_are_the_trainers(monkeypatch):
    """One table of adapter signatures: the trainer checks adapters against it and import-flagperf's notes quote it
    (a point given another argument changes both)."""
    assert [(p.name, p.params, p.doc) for p in POINTS.values()] == list(ADAPTER_SIGNATURES)
    for row in ADAPTER_POINTS:
        if row.perfplay and row.perfplay != "autocast":
            assert row.note.startswith(f"{POINTS[row.perfplay].call}: "), row
    refused = next(row for row in ADAPTER_POINTS if row.perfplay is None)
    for point in ("train_step", "backward", "update_model_params"):
        assert POINTS[point].call in refused.note
    monkeypatch.setattr(adapter_points, "_PARAMS", {**adapter_points._PARAMS, "backward": ("loss", "ctx")})
    assert adapter_points.adapter_call("backward") == "backward(loss, ctx)"

# -- every config file is named, at any depth of sibling imports ------------------------------------------------


def test_detrs_vendor_configs_map_to_the_detr_case(tree, tmp_path):
    """FlagPerf's detr configs as its tree has them (training/<vendor>/detr-pytorch/config/): batch sizes only."""
    detr = "training/kunlunxin/detr-pytorch/config"
    write(tree, {f"{detr}/config_common.py": 'vendor = "kunlunxin"\ndist_backend = "xccl"\n',
                     f"{detr}/config_R300x2x8.py": "from config_common import *\n\ntrain_batch_size = 4\n"
                                                   "eval_batch_size = 4\n"})
    out = tmp_path / "out"
    report = import_flagperf(tree / detr / "config_R300x2x8.py", out)
    assert "vendor/kunlunxin/cases/detr/config_R300x2x8.yaml" in [p.relative_to(out).as_posix() for p in report.written]
    assert load(out / "vendor/kunlunxin/cases/detr/config_R300x2x8.yaml") == {"batch_size": 4, "eval_batch_size": 4}


def test_every_config_file_is_reported_once_with_its_outcome(tree, tmp_path, capsys):
    """iluvatar's BI-V100 and dcu's 9100 names are read; every other file of a config folder is named with why."""
    ilu = "training/iluvatar/resnet50-pytorch/config"
    write(tree, {
        f"{ilu}/config_BI-V100x1x8.py": "train_batch_size = 32\n",
        "training/dcu/resnet50-pytorch/config/config_9100x1x8.py": "train_batch_size = 16\n",
        f"{BERT}/config_A100x2x8.example": "train_batch_size = 1\n",
        f"{BERT}/layers/mha.py": "import torch\n",
        "training/nvidia/glm-pytorch/config/config_A100x1x8.py": "train_batch_size = 8\n",
        "training/nvidia/glm-pytorch/config/net.sh": "echo\n",
        "inference/configs/resnet50/parameters.yaml": "batch_size: 1\n",
        "operation/configs/host.yaml": "VENDOR: nvidia\n"})
    out = tmp_path / "out"
    assert main(["import-flagperf", str(tree), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert load(out / "vendor/iluvatar/cases/resnet50/config_BI-V100x1x8.yaml") == {"batch_size": 32}
    assert load(out / "vendor/dcu/cases/resnet50/config_9100x1x8.yaml") == {"batch_size": 16}
    report = import_flagperf(tree, tmp_path / "again")
    every = sorted(str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file())
    assert sorted(report.files) == every
    outcomes = {name: (o.status, o.why) for name, o in report.files.items()}
    assert outcomes[f"{ilu}/config_BI-V100x1x8.py"] == ("mapped", "a vendor config")
    assert outcomes[f"{RESNET}/config_common.py"] == ("read", "a sibling a vendor config imports")
    assert outcomes[f"{BERT}/config_A100x2x8.example"] == (
        "skipped", "not named config_<HW>x<N>x<P>.py: FlagPerf does not read it as a config either")
    assert outcomes[f"{BERT}/layers/mha.py"] == (
        "skipped", "a Python module no config imports (the vendor's case code)")
    assert outcomes["training/nvidia/glm-pytorch/config/config_A100x1x8.py"] == (
        "no counterpart", "a vendor config of a case perfplay does not run")
    assert outcomes["training/nvidia/glm-pytorch/config/net.sh"] == (
        "skipped", "in the folder of a FlagPerf case perfplay does not run")
    assert outcomes["operation/configs/host.yaml"][0] == "skipped"
    # one line per file, and the counts
    for name in every:
        assert any(line[16:].startswith(f"{name}: ") for line in text.splitlines()), name
    # an inference case's parameters are compared with perfplay's (test_import_flagperf_inference.py)
    assert outcomes["inference/configs/resnet50/parameters.yaml"] == (
        "read", "an inference case's FlagPerf parameters, compared with perfplay's")
    assert f"{len(every)} config files: 7 mapped, 2 read, 1 no counterpart, 4 skipped" in text


def test_sibling_star_imports_are_followed_to_any_depth_and_a_missing_one_is_named(tmp_path):
    write(tmp_path, {
        "config_A100x1x8.py": "from config_Ampere_common import *\nfrom config_gone import *\nfrom gone import *\n"
                              "lr = base_lr * 2\n",
        "config_Ampere_common.py": "from config_common import *\nunpad = True\n",
        "config_common.py": "from config_base import *\nfp16 = True\n",
        "config_base.py": "base_lr = 0.5\n"})
    config = read_config(tmp_path / "config_A100x1x8.py", "cfg/config_A100x1x8.py")
    assert config.values == {"base_lr": 0.5, "fp16": True, "unpad": True, "lr": 1.0}
    assert config.where["base_lr"] == "cfg/config_base.py:1"
    assert config.siblings == ["cfg/config_Ampere_common.py", "cfg/config_common.py", "cfg/config_base.py"]
    assert [str(s) for s in config.skipped] == [
        "cfg/config_A100x1x8.py:2: `from config_gone import *` skipped: the sibling file cfg/config_gone.py is missing",
        "cfg/config_A100x1x8.py:3: `from gone import *` skipped: the sibling file cfg/gone.py is missing"]


def test_vars_without_a_case_perfplay_has_refuse_instead_of_planning_the_default(tree, tmp_path):
    conf = tree / CONFIG / "test_conf.py"
    conf.write_text(conf.read_text().replace('"resnet50:', '"glm:').replace('"bert:', '"cpm:'))
    out = tmp_path / "out"
    found = lines(import_flagperf(tree, out))
    run_vars = load(out / "flagperf_training.yml")
    assert run_vars["perfplay_cases"] == {}
    assert "names no case perfplay has" in (out / "flagperf_training.yml").read_text()
    assert f"no counterpart  {CONFIG}/test_conf.py:12 CASES: no case of CASES has a perfplay counterpart: " \
           f"perfplay_cases: {{}} (a run with these vars refuses: 'no case selected'; add the cases to run, " \
           f"docs/running.md)" in found
    request = {key.removeprefix(RUN_VAR_PREFIX): value for key, value in run_vars.items()}
    result = make_plan({**request, "run_var_names": sorted(run_vars), "results_dir": str(tmp_path / "results")},
                       check=True, root=ROOT)
    assert not result["ok"] and not result["cases"]
    assert any("no case selected" in str(error) for error in result["errors"]), result["errors"]


# -- vendor folders: vendor.yaml settings, set-up files, extern adapters -----------------------------------------

CHIP = "training/chipx"
CHIP_TREE = {
    f"{CHIP}/resnet50-pytorch/config/config_common.py": "dist_backend = 'mccl'\n",
    f"{CHIP}/resnet50-pytorch/config/config_CX-1x1x8.py": "from config_common import *\ntrain_batch_size = 64\n",
    f"{CHIP}/resnet50-pytorch/config/environment_variables.sh": "#!/bin/bash\nexport CX_FAST=1\n",
    f"{CHIP}/resnet50-pytorch/config/requirements.txt": "cx-extras==1.2\n",
    f"{CHIP}/resnet50-pytorch/extern/trainer_adapter.py": """\
        import torch
        def convert_model(model):
            return model
        def create_grad_scaler():
            return torch.musa.amp.GradScaler()
        def train_step(model, batch, optimizer, scaler=None):
            with torch.musa.amp.autocast(enabled=True):
                loss = model(batch)
            loss.backward()
            optimizer.step()
            return loss
        def helper():
            pass
        def backward(step, loss, optimizer, grad_scaler=None):
            loss.backward()
            update_model_params(loss, optimizer, grad_scaler)
        def update_model_params(loss, optimizer, grad_scaler=None):
            optimizer.step()
        """,
    f"{CHIP}/chipx_monitor.py": "cmd = 'mthreads-gmi -q | grep Util'\n",
    f"{CHIP}/docker_image/pytorch_2.0/Dockerfile": "FROM registry.example.com/chipx/pytorch:2.0\nRUN true\n",
}


def chip_tree(tree: Path) -> Path:
    write(tree, CHIP_TREE)
    conf = tree / CONFIG / "test_conf.py"
    conf.write_text(conf.read_text().replace('VENDOR = "nvidia"', 'VENDOR = "chipx"')
                    .replace('" --gpus all"', '"--env CX_VISIBLE=all --device=/dev/cx0 -v /lib/modules:/lib/modules"')
                    .replace('"CUDA_VISIBLE_DEVICES"', '"CX_VISIBLE_DEVICES"'))
    return tree


def test_a_vendor_perfplay_lacks_gets_a_folder_filled_from_flagperf(tree, tmp_path):
    """The new-vendor scaffold, with what FlagPerf's tree says: hardware, dist_backend, device, visible-devices
    variable, container options, shm size, base image, monitor tool; and it loads as a vendor."""
    root = tmp_path / "checkout"
    shutil.copytree(ROOT / "vendor", root / "vendor")
    (root / "case_runners").symlink_to(ROOT / "case_runners")
    found = lines(import_flagperf(chip_tree(tree), root))
    vendor = load_vendor("chipx", root)
    assert (vendor.device, vendor.dist_backend, vendor.visible_devices_env) == (
        "musa", "mccl", "CX_VISIBLE_DEVICES")
    assert set(vendor.hardware) == {"CX-1"} and vendor.default_hardware == "CX-1"
    assert vendor.container["run"]["environment"] == {"CX_VISIBLE": "all"}
    assert vendor.container["run"]["devices"] == ["/dev/cx0"]
    assert vendor.container["run"]["shm_size"] == "32G"
    assert vendor.container["build"]["base_image"] == "registry.example.com/chipx/pytorch:2.0"
    text = (root / "vendor/chipx/vendor.yaml").read_text()
    assert "TODO(vendor): the variable" not in text and "# TODO(vendor): -v /lib/modules:/lib/modules has no " \
                                                        "container.run key" in text
    assert "calls mthreads-gmi" in (root / "vendor/chipx/monitor.py").read_text()
    case = root / "vendor/chipx/cases/resnet50"
    assert load(case / "config_CX-1x1x8.yaml") == {"batch_size": 64}
    assert (case / "environment_variables.sh").read_text().startswith(
        f"#!/bin/bash\n# From FlagPerf's {CHIP}/resnet50-pytorch/config/environment_variables.sh")
    assert (case / "requirements.txt").read_text().endswith("cx-extras==1.2\n")
    adapter = f"{CHIP}/resnet50-pytorch/extern/trainer_adapter.py"
    target = "vendor/chipx/cases/resnet50/extern/trainer_adapter.py"
    for line in [
            f"to port         {adapter}:2: FlagPerf's convert_model(model) -> perfplay's convert_model(model, ctx): "
            f"the model with the vendor's layers, in {target}",
            f"to port         {adapter}:4: FlagPerf's create_grad_scaler() -> perfplay's create_grad_scaler(ctx): the "
            f"gradient scaler, or None, in {target}",
            f"no counterpart  {adapter}:6: train_step(model, batch, optimizer, scaler): refused: FlagPerf's train_step "
            f"runs forward, backward and the optimizer step in one: split it into perfplay's train_step(model, batch, "
            f"ctx) (the forward pass and loss), backward(step, loss, optimizer, scaler, ctx) and "
            f"update_model_params(step, optimizer, scheduler, scaler, ctx)",
            f"to port         {adapter}:7: `with torch.musa.amp.autocast(enabled=True):` -> perfplay's autocast "
            f"point: the vendor's autocast context (torch.<device>.amp.autocast), in {target}",
            f"skipped         {adapter}:12: helper(): not one of FlagPerf's adapter points (a helper: port it with "
            f"the points that call it)",
            f"to port         {adapter}:14: FlagPerf's backward(step, loss, optimizer, grad_scaler) -> perfplay's "
            f"backward(step, loss, optimizer, scaler, ctx): the backward pass only (FlagPerf's backward also calls "
            f"update_model_params: that part goes there), in {target}",
            f"to port         {adapter}:17: FlagPerf's update_model_params(loss, optimizer, grad_scaler) -> perfplay's "
            f"update_model_params(step, optimizer, scheduler, scaler, ctx): clipping, the optimizer step, the "
            f"scaler's update and the scheduler step (FlagPerf's bert backward calls it), in {target}",
            f"mapped          {CHIP}/resnet50-pytorch/config/requirements.txt: -> "
            f"vendor/chipx/cases/resnet50/requirements.txt"]:
        assert line in found, "\n".join([line, "not in", *found])
    assert not (root / target).exists()  # listed to port, never copied: its signatures are FlagPerf's


COMMENTS = """\
# possible value of ACCE_CONTAINER_OPT are:
#   iluvatar:
#       ' -v /lib/modules:/lib/modules '
#   chipx:
#       " --device=/dev/cx0 --device=/dev/cx1" + \\
#       " --device=/dev/cxctrl"
#   nvidia:
#       " --gpus all"
ACCE_CONTAINER_OPT = " --gpus all"
# XXX_VISIBLE_DEVICE item name in env
# possible value of ACCE_VISIBLE_DEVICE_ENV_NAME are:
#   CUDA_VISIBLE_DEVICES for nvidia, iluvatar
#   CX_VISIBLE_DEVICES for chipx
#   MLU_VISIBLE_DEVICES for cambricon
"""


def test_a_vendor_no_settings_file_names_gets_what_test_confs_comments_list_for_it(tree, tmp_path):
    """FlagPerf's test_conf.py lists each vendor's visible-devices variable and container options in comments (read
    as text, never run): a folder written for a vendor the settings' VENDOR is not holds them, with their line."""
    write(tree, CHIP_TREE)
    conf = tree / CONFIG / "test_conf.py"
    conf.write_text(conf.read_text().replace('ACCE_CONTAINER_OPT = " --gpus all"\n', COMMENTS))
    root = tmp_path / "checkout"
    shutil.copytree(ROOT / "vendor", root / "vendor")
    (root / "case_runners").symlink_to(ROOT / "case_runners")
    found = lines(import_flagperf(tree, root))
    vendor = load_vendor("chipx", root)
    assert vendor.visible_devices_env == "CX_VISIBLE_DEVICES"
    assert vendor.container["run"]["devices"] == ["/dev/cx0", "/dev/cx1", "/dev/cxctrl"]
    text = (root / "vendor/chipx/vendor.yaml").read_text()
    assert f"env: CX_VISIBLE_DEVICES  # FlagPerf: {CONFIG}/test_conf.py:16 (commented)\n" in text
    assert f"# FlagPerf's ACCE_CONTAINER_OPT ({CONFIG}/test_conf.py:7 (commented))" in text
    assert "TODO(vendor): the variable" not in text
    assert f"mapped          {CONFIG}/test_conf.py:16 (commented): -> vendor/chipx/vendor.yaml visible_devices.env: " \
           f"CX_VISIBLE_DEVICES" in found
    assert load_vendor("nvidia", root).visible_devices_env == "CUDA_VISIBLE_DEVICES"  # perfplay's, untouched


def test_a_hardware_name_of_digits_is_a_string_in_the_vendor_folder_written(tree, tmp_path):
    """FlagPerf names some chips by a number (ascend's config_9100x1x8.py): vendor.yaml must hold it as a string, or
    the folder written does not load (default_hardware: 9100 is an int) and no case of it plans."""
    write(tree, {name.replace("CX-1", "9100"): text for name, text in CHIP_TREE.items()})
    root = tmp_path / "checkout"
    shutil.copytree(ROOT / "vendor", root / "vendor")
    (root / "case_runners").symlink_to(ROOT / "case_runners")
    import_flagperf(tree, root)
    vendor = load_vendor("chipx", root)
    assert (vendor.default_hardware, list(vendor.hardware)) == ("9100", ["9100"])
    plan = make_plan({"vendor": "chipx", "cases": [{"case": "resnet50", "hardware": "9100", "nproc": 8}],
                      "results_dir": str(tmp_path / "results")}, check=True, root=root)
    assert plan["ok"], plan["errors"]


def test_a_vendor_perfplay_has_is_compared_not_rewritten(tree, tmp_path):
    conf = tree / CONFIG / "test_conf.py"
    conf.write_text(conf.read_text().replace('"CUDA_VISIBLE_DEVICES"', '"NV_DEVICES"'))
    out = tmp_path / "out"
    found = lines(import_flagperf(tree, out))
    assert f"no counterpart  {CONFIG}/test_conf.py:5 ACCE_VISIBLE_DEVICE_ENV_NAME: FlagPerf's visible_devices.env " \
           f"is NV_DEVICES, vendor/nvidia/vendor.yaml has CUDA_VISIBLE_DEVICES: change it there if FlagPerf's is " \
           f"right for this lab" in found
    assert not (out / "vendor/nvidia/vendor.yaml").exists()


def test_container_options():
    assert container_options(" --gpus all --device=/dev/a --device /dev/b -e K=V --env=L=W --ipc=host "
                             "--privileged --cap-add SYS_PTRACE --shm-size 8g -v /x:/x --group-add video") == (
        {"gpus": "all", "devices": ["/dev/a", "/dev/b"], "environment": {"K": "V", "L": "W"}, "ipc_mode": "host",
         "privileged": True, "cap_add": ["SYS_PTRACE"], "shm_size": "8g"}, ["-v /x:/x", "--group-add video"])


def test_a_local_flagperf_host_is_reached_without_ssh(tree, tmp_path):
    host_yaml = tree / "inference/configs/host.yaml"
    host_yaml.write_text(host_yaml.read_text().replace('["10.1.2.59"]', '["127.0.0.1", "10.1.2.59"]'))
    out = tmp_path / "out"
    found = lines(import_flagperf(tree, out))
    hosts = load(out / "inventory/flagperf_inference/hosts.yml")["all"]["children"]["perfplay_hosts"]["hosts"]
    assert hosts == {"127.0.0.1": {"ansible_connection": "local"}, "10.1.2.59": None}
    assert "mapped          inference/configs/host.yaml: HOSTS 127.0.0.1 -> inventory: ansible_connection: local " \
           "(this machine)" in found


LIST_CONF = """\
    VENDOR = "nvidia"
    TEST_TYPE = "default"
    CASES = ['RESNET50_TORCH_DEMO_A100_1X8', 'BERT_PADDLE_DEMO_A100_1X8', 'NOT_THERE']
    RESNET50_TORCH_DEMO_A100_1X8 = {
        "model": "resnet50",
        "framework": "pytorch",
        "config": "config_A100x1x8",
        "repeat": 2,
        "nnodes": 1,
        "nproc": 8,
        "data_dir_host": "/home/datasets/imagenet/",
        "data_dir_container": "/mnt/data/imagenet/",
    }
    BERT_PADDLE_DEMO_A100_1X8 = {"model": "bert", "framework": "paddle", "config": "config_A100x1x8",
                                 "data_dir_host": "/home/bert/"}
    """


def test_the_list_form_of_cases_is_converted(tree, tmp_path):
    """FlagPerf before 2023-04 (the example of FlagPerf's user manual): CASES names mappings of the same file."""
    (tree / CONFIG / "test_conf.py").write_text(textwrap.dedent(LIST_CONF))
    out = tmp_path / "out"
    found = lines(import_flagperf(tree, out))
    run_vars = load(out / "flagperf_training.yml")
    assert run_vars["perfplay_cases"] == {"resnet50:pytorch:A100:1:8:2": "/home/datasets/imagenet/"}
    conf = f"{CONFIG}/test_conf.py:3 CASES"
    for line in [
            f"mapped          {conf}['RESNET50_TORCH_DEMO_A100_1X8']: the list form of CASES -> "
            f"CASES['resnet50:pytorch:A100:1:8:2']: /home/datasets/imagenet/",
            f"no counterpart  {conf}['bert:paddle:A100:1:8:1']: framework paddle: perfplay's cases are written for "
            f"pytorch",
            f"no counterpart  {conf}['NOT_THERE']: the list form of CASES names 'NOT_THERE', which this file does not "
            f"assign a mapping {{model, framework, config, ...}}"]:
        assert line in found, "\n".join([line, "not in", *found])
    assert not [line for line in found if "RESNET50_TORCH_DEMO_A100_1X8:" in line]  # not an unknown setting
    request = {key.removeprefix(RUN_VAR_PREFIX): value for key, value in run_vars.items()}
    result = make_plan({**request, "run_var_names": sorted(run_vars), "results_dir": str(tmp_path / "results")},
                       check=True, root=ROOT)
    assert result["ok"], result["errors"]
    assert [(c["case_id"], c["repeat"]) for c in result["cases"]] == [("resnet50_A100x1x8", 2)]


@pytest.mark.parametrize("where", ["base/configs/host.yaml", "elsewhere/host.yaml"])
def test_a_base_host_file_is_mapped_as_the_base_suites_run_vars_and_hosts(tmp_path, capsys, where):
    """FlagPerf's base/configs/host.yaml (by its folder, or elsewhere by its keys) is the base suite's: its CASES as
    base selections at their scale, TOOLKIT as mode toolkit, its hosts an inventory; not an inference host file."""
    host = tmp_path / "FlagPerf" / where
    host.parent.mkdir(parents=True)
    host.write_text('VENDOR: "nvidia"\nBENCHMARKS_OR_TOOLKITS: "TOOLKIT"\nHOSTS: ["10.0.0.1", "10.0.0.2"]\n'
                    'NPROC_PER_NODE: 8\nSSH_PORT: "22"\nCASES:\n  "computation-BF16:H100": "pytorch_2.3"\n'
                    '  "main_memory-bandwidth": "pytorch_2.3"\n  "interconnect-MPI_interserver": "pytorch_ssh"\n'
                    '  "interconnect-P2P_intraserver": "pyorch_2.3"\n  "computation-FP4": "pytorch_2.3"\n')
    out = tmp_path / "out"
    assert main(["import-flagperf", str(host), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    run_vars = load(out / "flagperf_base.yml")
    assert run_vars == {"perfplay_task": "base", "perfplay_vendor": "nvidia", "perfplay_cases": [
        {"case": "gemm", "hardware": "H100", "nnodes": 1, "nproc": 8,
         "overrides": {"precisions": ["bf16"], "mode": "toolkit"}},
        {"case": "memory_bandwidth", "nnodes": 1, "nproc": 8, "overrides": {"mode": "toolkit"}},
        {"case": "allreduce", "nnodes": 2, "nproc": 8, "overrides": {"mode": "toolkit"}},
        {"case": "p2p", "nnodes": 1, "nproc": 2, "overrides": {"mode": "toolkit"}}]}
    hosts = load(out / "inventory/flagperf_base/hosts.yml")["all"]["children"]["perfplay_hosts"]
    assert list(hosts["hosts"]) == ["10.0.0.1", "10.0.0.2"] and hosts["vars"]["ansible_port"] == 22
    assert not (out / "flagperf_inference.yml").exists(), "not taken for an inference host file"
    shown = where if where.startswith("base/") else "host.yaml"
    for line in (f"mapped          {shown} BENCHMARKS_OR_TOOLKITS: -> perfplay_cases: mode toolkit",
                 f"mapped          {shown} CASES['computation-BF16:H100']: -> perfplay_cases: gemm 1x8, overrides "
                 "{'precisions': ['bf16'], 'mode': 'toolkit'}; FlagPerf's 8192^3 is in perfplay's shapes",
                 f"mapped          {shown} CASES['main_memory-bandwidth']: -> perfplay_cases: memory_bandwidth 1x8, "
                 "overrides {'mode': 'toolkit'}; perfplay's vendor/nvidia/ ships no toolkit for memory_bandwidth yet: "
                 "the plan refuses mode toolkit until one is written (docs/base.md)",
                 f"mapped          {shown} CASES['interconnect-MPI_interserver']: -> perfplay_cases: allreduce 2x8, "
                 "overrides {'mode': 'toolkit'}; bus bandwidth across the hosts",
                 f"mapped          {shown} CASES['interconnect-P2P_intraserver']: -> perfplay_cases: p2p 1x2, "
                 "overrides {'mode': 'toolkit'}; framework 'pyorch_2.3': perfplay's base benchmarks are written for "
                 "pytorch; perfplay's vendor/nvidia/ ships no toolkit for p2p yet",
                 f"no counterpart  {shown} CASES['computation-FP4']: perfplay has no base benchmark for FlagPerf's "
                 "'computation-FP4' (its base cases: computation-FP64, "):
        assert any(found.startswith(line) for found in text.splitlines()), f"{line!r} not in:\n{text}"
    # the plan reads the vars: nvidia's gemm toolkit resolves; the toolkits nvidia lacks, and its one-node allreduce
    # toolkit across two hosts, are refused by name
    request = {key.removeprefix(RUN_VAR_PREFIX): value for key, value in run_vars.items()}
    errors = make_plan({**request, "run_var_names": sorted(run_vars), "results_dir": str(tmp_path / "results")},
                       check=True, root=ROOT)["errors"]
    assert [e.split(": ")[0] for e in errors] == [
        "vendor/nvidia/base/toolkits/memory_bandwidth/toolkit.yaml", "run vars",
        "vendor/nvidia/base/toolkits/p2p/toolkit.yaml"], errors
    assert "allreduce/toolkit.yaml runs once per node" in errors[1]


def test_the_host_file_of_a_suite_perfplay_does_not_import_is_refused(tmp_path, capsys):
    host = tmp_path / "FlagPerf" / "operation" / "configs" / "host.yaml"
    host.parent.mkdir(parents=True)
    host.write_text('VENDOR: "nvidia"\nHOSTS: ["10.0.0.1"]\n')
    out = tmp_path / "out"
    assert main(["import-flagperf", str(host), "--out", str(out)]) == 2
    assert "is the host file of FlagPerf's operation suite: import the checkout it is in" in capsys.readouterr().err
    assert not out.exists()
