"""The mmlu inference case: FlagPerf's 5-shot prompt, MMLU's CSV layout and its errors, the accuracy of a model
whose answers are known, its model cases (FlagPerf's llama3_8b_mmlu, ...) and their FLOPs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from case_runners.cases.llama import shapes
from case_runners.cases.mmlu import data
from case_runners.cases.mmlu import inference as mmlu
from case_runners.core.errors import ConfigError
from case_runners.core.paths import project_root
from case_runners.plan.config.yaml_io import load_mapping
from case_runners.plan.inference_config import inference_cases, inference_dir, resolve_inference
from case_runners.tasks.inference.pipeline import load_case, run_pipeline
from mmlu_files import ANSWERS, EXPECTED, EXPECTED_ALL, QUESTIONS, write_data_dir, write_mmlu, write_rows

ROOT = project_root()
PARAMS = {"model": "tiny", "weight_dir": "tiny_hf", "mmlu_dir": "mmlu_dataset/data", "few_shots": 5}
SHOTS = [data.Question("1+1?", ("1", "2", "3", "4"), "B"),
         data.Question("Sky, at noon?", ("red", "blue", "x", "y"), "B")]
QUESTION = data.Question("2+2?", ("2", "3", "4", "5"), "C")
# FlagPerf's gen_prompt + format_example (inference/benchmarks/llama3_8b_mmlu/pytorch/dataloader.py) on these rows
FLAGPERF_PROMPT = ("The following are multiple choice questions (with answers) about  college biology.\n\n"
                   "1+1?\nA. 1\nB. 2\nC. 3\nD. 4\nAnswer: B\n\n"
                   "Sky, at noon?\nA. red\nB. blue\nC. x\nD. y\nAnswer: B\n\n"
                   "2+2?\nA. 2\nB. 3\nC. 4\nD. 5\nAnswer:")


def words(text: str) -> int:
    return len(text.split())


def test_the_prompt_is_flagperfs_five_shot_format():
    assert data.build_prompt("college_biology", SHOTS, QUESTION, words, 2048) == FLAGPERF_PROMPT


def test_a_long_prompt_loses_its_shots_from_the_first_as_flagperfs_loop_does():
    limit = words(FLAGPERF_PROMPT) - 2  # one shot too many
    prompt = data.build_prompt("college_biology", SHOTS, QUESTION, words, limit)
    assert "1+1?" not in prompt and "Sky, at noon?" in prompt and prompt.endswith("Answer:")
    assert words(prompt) + 1 <= limit


def test_the_loader_reads_quoted_rows_and_keeps_the_first_shots(tmp_path: Path):
    root = write_mmlu(tmp_path, shots=6)
    loaded = data.load_subjects(root, 5)
    assert list(loaded) == sorted(ANSWERS)
    shots, questions = loaded["college_biology"]
    assert len(shots) == 5 and [q.answer for q in questions] == list(ANSWERS["college_biology"])
    assert questions[0].question == "Which, of these, is item 0?" and questions[0].options[3] == "black"


@pytest.mark.parametrize("break_it, message", [
    (lambda root: shutil.rmtree(root / "dev"), "dev: missing folder; expected <data_dir>/<mmlu_dir>/dev/"),
    (lambda root: (root / "dev" / "college_biology_dev.csv").unlink(), "college_biology_dev.csv: missing"),
    (lambda root: write_rows(root / "test" / "college_biology_test.csv", [("q", "a", "b", "c", "B")]),
     "college_biology_test.csv: row 1 has 5 fields; expected question,A,B,C,D,answer"),
    (lambda root: write_rows(root / "test" / "college_biology_test.csv", [("q", "a", "b", "c", "d", "E")]),
     "college_biology_test.csv: row 1: answer 'E' is not one of A, B, C, D"),
    (lambda root: write_rows(root / "dev" / "college_biology_dev.csv", [("q", "a", "b", "c", "d", "A")]),
     "college_biology_dev.csv: 1 rows, fewer than few_shots (5)"),
])
def test_the_preflight_names_a_missing_folder_or_a_malformed_row(tmp_path: Path, break_it, message: str):
    (tmp_path / "tiny_hf").mkdir()
    (tmp_path / "tiny_hf" / "tokenizer.json").write_text("{}")  # weights-less: random at the shape
    root = write_mmlu(tmp_path / "mmlu_dataset" / "data")
    assert data.check_data_dir(str(tmp_path), PARAMS) == []
    break_it(root)
    problems = data.check_data_dir(str(tmp_path), PARAMS)
    assert len(problems) == 1 and message in problems[0], problems


def test_the_preflight_names_a_missing_weights_folder_and_a_shape_the_model_param_does_not_name(tmp_path: Path):
    write_mmlu(tmp_path / "mmlu_dataset" / "data")
    assert data.check_data_dir(str(tmp_path), PARAMS) == [
        f"{tmp_path / 'tiny_hf'}: missing; expected {data.WEIGHTS_LAYOUT}"]
    folder = tmp_path / "tiny_hf"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"")
    (folder / "config.json").write_text('{"hidden_size": 256, "intermediate_size": 704, "num_hidden_layers": 4, '
                                        '"num_attention_heads": 8, "num_key_value_heads": 4, "vocab_size": 32000}')
    assert data.check_data_dir(str(tmp_path), PARAMS) == [
        f"{folder}: no tokenizer.json or tokenizer.model; expected {data.WEIGHTS_LAYOUT}",
        f"{folder / 'config.json'}: vocab_size is 32000, but model 'tiny' has 4096 (param 'model', "
        "case_runners/cases/llama/shapes.py)"]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    return write_data_dir(tmp_path_factory.mktemp("mmlu"))


def conf(data_dir: Path | None, **changes) -> dict:
    resolved, _ = resolve_inference("mmlu", "cpu", ROOT)
    return {**resolved.settings(), "data_dir": str(data_dir) if data_dir else None, "work_dir": "/nonexistent",
            **changes}


def independent_answers(data_dir: Path) -> list[str]:
    """Each test question's answer computed here: FlagPerf's prompt written out, the weights folder's model, the
    argmax over the whole vocab at the last position decoded."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(data_dir / "tiny_hf")
    model = AutoModelForCausalLM.from_pretrained(data_dir / "tiny_hf").eval()
    answers = []
    root = data_dir / "mmlu_dataset" / "data"
    for subject in sorted(ANSWERS):
        shots, questions = data.load_subjects(root, 5)[subject]
        header = f"The following are multiple choice questions (with answers) about  {subject.replace('_', ' ')}.\n\n"
        def written(q: data.Question) -> str:
            a, b, c, d = q.options
            return f"{q.question}\nA. {a}\nB. {b}\nC. {c}\nD. {d}\nAnswer:"
        for q in questions:
            prompt = header + "".join(f"{written(s)} {s.answer}\n\n" for s in shots) + written(q)
            with torch.no_grad():
                logits = model(tokenizer(prompt, return_tensors="pt").input_ids).logits[0, -1]
            answers.append(tokenizer.decode([int(logits.argmax())]))
    return answers


def test_the_accuracy_is_flagperfs_per_subject_and_overall_and_equals_an_independent_computation(data_dir: Path,
                                                                                                  capsys):
    config = conf(data_dir)
    loader = mmlu.build_dataloader(config)
    model = mmlu.create_model(config)
    assert type(model).__name__ == "PretrainedDecoder"
    result = mmlu.model_forward(model, loader, mmlu.evaluator, config)
    answers = independent_answers(data_dir)
    gold = [g for subject in sorted(ANSWERS) for g in ANSWERS[subject]]
    assert answers == ["B"] * QUESTIONS, "the constructed model answers B"
    assert result["accuracy"] == pytest.approx(EXPECTED_ALL) == sum(a == g for a, g in zip(answers, gold)) / len(gold)
    assert result["subjects"] == pytest.approx(EXPECTED)
    assert result["items"] == sum(len(ids) for ids, _, _ in loader.dataset.items), "prompt tokens, not questions"
    out = capsys.readouterr().out
    assert "validation: ACC-college_biology: 0.5000" in out and "ACC-all: 0.5714" in out


def test_batches_left_padded_answer_as_single_prompts_do(data_dir: Path):
    config = conf(data_dir)
    model = mmlu.create_model(config)
    single = mmlu.build_dataloader(config)
    batched = mmlu.build_dataloader({**config, "batch_size": 3})
    with torch.no_grad():
        logits = torch.cat([model(ids, mask) for ids, mask, _ in batched])
        one = torch.cat([model(ids[None], torch.ones_like(ids)[None]) for ids, _, _ in single.dataset.items])
    torch.testing.assert_close(logits, one, atol=1e-4, rtol=1e-4)


def test_without_weights_the_model_is_random_at_the_shape_and_says_the_accuracy_means_nothing(capsys):
    config = conf(None, synthetic_samples=3, synthetic_tokens=16)
    model = mmlu.create_model(config)
    assert type(model).__name__ == "RandomDecoder"
    assert "throughput only, the accuracy means nothing" in capsys.readouterr().out
    result = mmlu.model_forward(model, mmlu.build_dataloader(config), mmlu.evaluator, config)
    assert result["items"] == 3 * 16 and result["accuracy"] == 0.0


def test_a_weights_folder_without_safetensors_is_random_at_the_shape_on_the_real_prompts(data_dir: Path,
                                                                                         tmp_path: Path):
    shutil.copytree(data_dir / "mmlu_dataset", tmp_path / "mmlu_dataset")
    (tmp_path / "tiny_hf").mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(data_dir / "tiny_hf" / name, tmp_path / "tiny_hf" / name)
    config = conf(tmp_path)
    model = mmlu.create_model(config)
    assert type(model).__name__ == "RandomDecoder"
    result = mmlu.model_forward(model, mmlu.build_dataloader(config), mmlu.evaluator, config)
    assert len(result["predictions"]) == QUESTIONS, "ids past the tokenizer's vocab (4096 > its ids) are no letter"
    assert all(p in (mmlu.NO_LETTER, 0, 1, 2, 3) for p in result["predictions"])


def test_flagperfs_four_cases_are_model_cases_of_mmlu_with_the_shapes_flops_per_token():
    assert {"mmlu", "llama2_7b_mmlu", "llama3_8b_mmlu", "aquila_7b_mmlu", "deepseek_7b_mmlu"} <= set(
        inference_cases(ROOT))
    for case, model in (("mmlu", "tiny"), ("llama2_7b_mmlu", "llama2_7b"), ("llama3_8b_mmlu", "llama3_8b"),
                        ("aquila_7b_mmlu", "aquila2_7b"), ("deepseek_7b_mmlu", "deepseek_7b")):
        resolved, _ = resolve_inference(case, "nvidia", ROOT)
        assert resolved.case_package == "mmlu" and resolved.parameters["model"] == model
        forward = shapes.flops_per_token(shapes.SHAPES[model], 0) / 3  # the llama case's, forward, no attention
        assert resolved.flops == forward == 2 * shapes.matmul_weights(shapes.SHAPES[model]), case
        assert load_case(resolved.case_package) is mmlu
    llama3, _ = resolve_inference("llama3_8b_mmlu", "nvidia", ROOT)
    assert (llama3.configurations["compiler"], llama3.parameters["weight_dir"]) == ("inductor", "llama3_8b_hf")
    assert llama3.provenance["flops"] == "case_runners/cases/mmlu/inference/models/llama3_8b_mmlu.yaml"
    aquila, _ = resolve_inference("aquila_7b_mmlu", "nvidia", ROOT)
    assert aquila.compiler is None, "FlagPerf's Aquila_7b_mmlu runs torch alone"


def test_flagperfs_case_names_map_onto_the_model_cases():
    from case_runners.plan.config.flagperf_names import CASE_NAMES

    for name in ("llama2_7b_mmlu", "llama3_8b_mmlu", "Aquila_7b_mmlu", "deepseek_7b_mmlu"):
        assert CASE_NAMES.get(name, name) in inference_cases(ROOT), name


def test_the_model_param_takes_the_llama_shapes():
    raw = load_mapping(inference_dir(ROOT, "mmlu") / "parameters.yaml", ROOT)
    assert tuple(raw["model"]["choices"]) == shapes.MODEL_CHOICES


@pytest.mark.parametrize("text, message", [
    ("parameters: {modle: llama3_8b}\n", "key 'modle': is not a parameter of the case"),
    ("configurations: {flop: 2}\n", "key 'flop': is not a key of configurations.yaml"),
    ("params: {}\n", "key 'params': unknown key of a model case's file"),
    ("parameters: {model: gpt5}\n", "key 'model': .*'gpt5'"),
])
def test_a_bad_model_case_file_is_an_error_naming_the_key_and_the_file(tmp_path: Path, text: str, message: str):
    folder = inference_dir(tmp_path, "mmlu")
    (folder / "models").mkdir(parents=True)
    for path in inference_dir(ROOT, "mmlu").glob("*.yaml"):
        shutil.copy(path, folder / path.name)
    (tmp_path / "vendor" / "nvidia" / "engines").mkdir(parents=True)
    (tmp_path / "vendor" / "nvidia" / "engines" / "inductor.py").write_text("")
    (folder / "models" / "bad_mmlu.yaml").write_text(text)
    with pytest.raises(ConfigError, match=message) as err:
        resolve_inference("bad_mmlu", "nvidia", tmp_path)
    assert "bad_mmlu.yaml" in str(err.value) or "parameters.yaml" in str(err.value)


def test_the_pipeline_runs_the_case_without_an_engine_on_the_cpu(data_dir: Path, tmp_path: Path):
    resolved, _ = resolve_inference("mmlu", "cpu", ROOT)
    result = run_pipeline(resolved, ROOT, tmp_path, str(data_dir), log=lambda line: None)
    assert result["steps"] == ["a", "b", "c", "g"]
    assert result["validation_accuracy"] == pytest.approx(EXPECTED_ALL)
    assert result["flops_per_item"] == 2 * shapes.matmul_weights(shapes.SHAPES["tiny"])
