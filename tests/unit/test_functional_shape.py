"""The functional shape: each case declares, in one place, the small, short workload check-vendor --functional runs
(a training case's config.yaml `functional:` block, an inference case's parameters.yaml one), checked as the plan
checks a run override, applied only by a selection's `functional: true`, and always non-standard."""

import itertools

import pytest

from case_runners.cases import case_dir, code_cases
from case_runners.core.errors import ConfigError
from case_runners.core.paths import project_root
from case_runners.plan import layering
from case_runners.plan.inference_config import inference_cases, inference_dir, resolve_inference
from case_runners.plan.run_plan import make_plan
from case_runners.rank.stop_request import Checked

ROOT = project_root()
TRAINING = [c for c in code_cases() if (case_dir(c) / "config.yaml").is_file()]  # a model case: its package's block
# Where the shipped vendors' configs give the standard shape: a functional round must be smaller.
SIZES = {"bert": ("seq_len", "hidden_size", "num_layers"), "resnet50": ("image_size",),
         "llama": ("eval_samples", "synthetic_samples"), "digits_cnn": (),
         "mobilenetv2": ("image_size", "depth_multiplier"), "vit": ("image_size", "num_layers"),
         "efficientnet": ("image_size", "width_mult", "depth_mult"), "swin_transformer": ("image_size", "embed_dim"),
         "bigtransfer": ("image_size", "embedding_size"),
         "detr": ("eval_size", "synthetic_samples"), "distilbert": ("seq_len", "dim", "n_layers"),
         "bert_hf": ("seq_len", "hidden_size", "num_layers"),
         "longformer": ("seq_len", "attention_window", "hidden_size", "num_layers"),
         "t5_small": ("source_len", "target_len", "d_model", "num_layers"),
         "transformer": ("max_len", "d_model", "num_layers"), "gpt2": ("seq_len", "hidden_size", "num_layers"),
         "wav2vec2": ("max_sample_size", "hidden_size", "num_layers")}


def plan(cases, **kw):
    result = make_plan({"vendor": "cpu", "cases": cases, **kw}, check=True)
    assert result["ok"], result["errors"]
    return result["cases"]


@pytest.mark.parametrize("case", TRAINING)
def test_every_training_case_declares_a_bounded_functional_shape_its_plan_applies(case):
    base, _ = layering.load_case_base(case, ROOT)
    block = base["functional"]
    assert block["max_steps"] > 0 and block["eval_max_batches"] > 0, "the shape bounds the steps and the eval"
    (standard,), (functional,) = plan([case]), plan([{"case": case, "functional": True}])
    for key, value in block.items():
        assert functional["params"][key] == value
        assert functional["provenance"][key] == f"case_runners/cases/{case}/config.yaml (functional)"
    for key in SIZES[case]:
        assert functional["params"][key] < standard["params"][key]
    assert standard["standard"] is True
    assert functional["standard"] is False and "eval_max_batches" in functional["non_standard"]


def test_the_runs_overrides_go_over_the_functional_shape():
    (config,) = plan([{"case": "bert", "functional": True, "overrides": {"max_steps": 3, "num_layers": 1}}])
    assert (config["params"]["max_steps"], config["params"]["num_layers"], config["params"]["seq_len"]) == (3, 1, 64)


@pytest.mark.parametrize("case", ["bert", "resnet50", "digits_cnn", "stable_diffusion_v1_4", "sam_h"])
def test_every_inference_case_declares_a_functional_shape_its_plan_applies(case):
    assert case in inference_cases(ROOT)
    (standard,) = plan([{"case": case, "task": "inference"}])
    (functional,) = plan([{"case": case, "task": "inference", "functional": True}])
    changed = sorted(k for k, v in functional["inference"]["parameters"].items()
                     if v != standard["inference"]["parameters"][k])
    assert changed and functional["non_standard"] == changed and functional["standard"] is False
    assert standard["standard"] is True and "functional" not in standard["inference"]["parameters"]
    if case == "bert":
        assert functional["params"]["seq_len"] == 64 and functional["params"]["num_layers"] == 2


@pytest.mark.parametrize("line, message", [
    ("  lr: 0.1\n", "key 'lr': is immutable"),  # the case's own mutable params are no part of a shape
    ("  vocab_size: 100\n", "key 'vocab_size': is immutable"),
    ("  mask_prob: 2.0\n", "key 'mask_prob': 2.0 is out of range"),
    ("  layers: 2\n", "key 'layers': unknown config key"),
])
def test_a_bad_functional_block_names_its_key_and_file(tmp_path, monkeypatch, line, message):
    text = (case_dir("bert") / "config.yaml").read_text()
    (tmp_path / "config.yaml").write_text(text.replace("functional:\n", "functional:\n" + line))
    monkeypatch.setattr(layering, "case_dir", lambda case: tmp_path)
    with pytest.raises(ConfigError) as error:
        layering.load_case_base("bert", tmp_path)
    assert str(error.value).startswith(f"config.yaml (functional): {message}")


@pytest.mark.parametrize("line, message", [
    ("  temperature: 2\n", "key 'temperature': is not a parameter of the case"),
    ("  embedding_size: 0\n", "key 'embedding_size': 0 is out of range"),
])
def test_a_bad_inference_functional_block_names_its_key_and_file(tmp_path, line, message):
    folder = inference_dir(tmp_path, "resnet50")
    folder.mkdir(parents=True)
    for path in inference_dir(ROOT, "resnet50").glob("*.yaml"):
        text = path.read_text()
        (folder / path.name).write_text(text.replace("functional:\n", "functional:\n" + line))
    with pytest.raises(ConfigError) as error:
        resolve_inference("resnet50", "cpu", tmp_path)
    assert str(error.value).startswith(f"case_runners/cases/resnet50/inference/parameters.yaml (functional): "
                                       f"{message}")


@pytest.mark.parametrize("selection, message", [
    ({"case": "digits_cnn", "functional": "yes"}, "key 'perfplay_cases[0].functional': must be true or false"),
    ({"case": "gemm", "task": "base", "functional": True}, "true only for a task of training, inference"),
])
def test_a_selections_functional_is_a_boolean_of_training_or_inference(selection, message):
    result = make_plan({"vendor": "cpu", "cases": [selection]}, check=True)
    assert not result["ok"] and message in result["errors"][0], result["errors"]


def test_an_eval_loop_stops_at_its_limit_and_says_so_in_its_len():
    batches = list(range(10))
    assert list(Checked(batches, limit=2)) == [0, 1] and len(Checked(batches, limit=2)) == 2
    assert list(Checked(batches)) == batches and len(Checked(batches, limit=50)) == 10
    assert list(Checked(itertools.count(), limit=3)) == [0, 1, 2]
