"""MMLU's data in its CSV layout, the 5-shot prompts FlagPerf builds from it, and the host preflight's check of the
data dir (standard library only: the preflight runs it without torch).

The layout (MMLU's data.tar, as FlagPerf's llama3_8b_mmlu README lays it out): under <data_dir>/<mmlu_dir>,
`dev/<subject>_dev.csv` (the shots) and `test/<subject>_test.csv` (the questions), no header, each row
`question,A,B,C,D,answer` with the answer one of A, B, C, D. The weights are <data_dir>/<weight_dir>: a
transformers folder (config.json, safetensors, tokenizer files), checked here against the shape param `model`
names (shapes.py).

The prompt is FlagPerf's (inference/benchmarks/llama3_8b_mmlu/pytorch/dataloader.py gen_prompt, format_example):
"The following are multiple choice questions (with answers) about <subject words>.\\n\\n", then each shot as
"<question>\\nA. <a>\\nB. <b>\\nC. <c>\\nD. <d>\\nAnswer: <answer>\\n\\n", then the question without its answer,
ending "Answer:". A prompt longer than max_prompt_tokens less one (the BOS token) loses its first shot, then the
next, as FlagPerf's while loop does.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from case_runners.cases.llama.shapes import SHAPES, Shape, canonical

CHOICES = ("A", "B", "C", "D")
ROW = "question,A,B,C,D,answer (no header; answer one of A, B, C, D)"
LAYOUT = (f"<data_dir>/<mmlu_dir>/dev/<subject>_dev.csv and <data_dir>/<mmlu_dir>/test/<subject>_test.csv, "
          f"rows {ROW}")
WEIGHTS_LAYOUT = "<data_dir>/<weight_dir>: a transformers folder with config.json, *.safetensors and tokenizer files"
SHAPE_KEYS = {"hidden_size": "hidden", "intermediate_size": "intermediate", "num_hidden_layers": "layers",
              "num_attention_heads": "heads", "num_key_value_heads": "kv_heads", "vocab_size": "vocab"}


@dataclass(frozen=True)
class Question:
    question: str
    options: tuple[str, str, str, str]
    answer: str  # A, B, C or D


def read_questions(path: Path) -> list[Question]:
    """The rows of one MMLU CSV file; ValueError naming the file, the row and the expected format."""
    questions = []
    with path.open(newline="", encoding="utf-8") as handle:
        for number, row in enumerate(csv.reader(handle), 1):
            if len(row) != 6:
                raise ValueError(f"{path}: row {number} has {len(row)} fields; expected {ROW}")
            if row[5].strip() not in CHOICES:
                raise ValueError(f"{path}: row {number}: answer {row[5]!r} is not one of A, B, C, D; expected {ROW}")
            questions.append(Question(row[0], (row[1], row[2], row[3], row[4]), row[5].strip()))
    if not questions:
        raise ValueError(f"{path}: no rows; expected {ROW}")
    return questions


def mmlu_root(data_dir: str, params: dict[str, Any]) -> Path:
    return Path(data_dir) / str(params["mmlu_dir"])


def subjects(root: Path) -> list[str]:
    """The subjects of <root>/test (MMLU's 57), sorted."""
    return sorted(p.name.removesuffix("_test.csv") for p in (root / "test").glob("*_test.csv"))


def load_subjects(root: Path, shots: int) -> dict[str, tuple[list[Question], list[Question]]]:
    """{subject: (its first `shots` dev questions, its test questions)}; ValueError for a missing folder or file,
    a malformed row, or fewer dev rows than shots."""
    for split in ("dev", "test"):
        if not (root / split).is_dir():
            raise ValueError(f"{root / split}: missing folder; expected {LAYOUT}")
    found = subjects(root)
    if not found:
        raise ValueError(f"{root / 'test'}: no <subject>_test.csv files; expected {LAYOUT}")
    loaded = {}
    for subject in found:
        dev_path = root / "dev" / f"{subject}_dev.csv"
        if not dev_path.is_file():
            raise ValueError(f"{dev_path}: missing (the shots of {subject}); expected {LAYOUT}")
        dev = read_questions(dev_path)
        if len(dev) < shots:
            raise ValueError(f"{dev_path}: {len(dev)} rows, fewer than few_shots ({shots})")
        loaded[subject] = (dev[:shots], read_questions(root / "test" / f"{subject}_test.csv"))
    return loaded


def format_subject(subject: str) -> str:
    """FlagPerf's: each word of the subject after a space ("college_biology" -> " college biology")."""
    return "".join(" " + word for word in subject.split("_"))


def format_example(question: Question, include_answer: bool = True) -> str:
    text = question.question + "".join(f"\n{c}. {o}" for c, o in zip(CHOICES, question.options)) + "\nAnswer:"
    return text + (f" {question.answer}\n\n" if include_answer else "")


def build_prompt(subject: str, shots: list[Question], question: Question,
                 count_tokens: Callable[[str], int], max_tokens: int) -> str:
    """The few-shot prompt of one test question, its shots dropped from the first while it has more than
    max_tokens - 1 tokens (FlagPerf's loop: one place is the BOS token's)."""
    prompt = (f"The following are multiple choice questions (with answers) about {format_subject(subject)}.\n\n"
              + "".join(format_example(shot) for shot in shots) + format_example(question, include_answer=False))
    while count_tokens(prompt) + 1 > max_tokens:
        parts = prompt.split("\n\n")
        if len(parts) <= 2:  # the header and the question alone: nothing left to drop
            break
        parts.pop(1)
        prompt = "\n\n".join(parts)
    return prompt


def shape_problems(config: dict[str, Any], shape: Shape, model: str, where: Path) -> list[str]:
    """Where a transformers config.json differs from the shape param `model` names: the FLOPs would be wrong."""
    problems = []
    for key, field in SHAPE_KEYS.items():
        value = config.get(key, config.get("num_attention_heads")) if key == "num_key_value_heads" else config.get(key)
        if value != getattr(shape, field):
            problems.append(f"{where}: {key} is {value!r}, but model '{model}' has {getattr(shape, field)} "
                            f"(param 'model', case_runners/cases/llama/shapes.py)")
    return problems


def has_weights(path: Path) -> bool:
    """Whether the folder holds weights (*.safetensors); without them the model is random at the shape."""
    return any(path.glob("*.safetensors"))


def check_weights(path: Path, params: dict[str, Any]) -> list[str]:
    """The weights folder: a tokenizer, and with safetensors files a config.json of the shape `model` names."""
    if not path.is_dir():
        return [f"{path}: missing; expected {WEIGHTS_LAYOUT}"]
    problems = []
    if not any((path / name).is_file() for name in ("tokenizer.json", "tokenizer.model")):
        problems.append(f"{path}: no tokenizer.json or tokenizer.model; expected {WEIGHTS_LAYOUT}")
    if not has_weights(path):
        return problems  # random weights at the shape: throughput only
    config_path = path / "config.json"
    try:
        config = json.loads(config_path.read_text())
    except (OSError, ValueError) as exc:
        return [*problems, f"{config_path}: unreadable ({exc}); expected {WEIGHTS_LAYOUT}"]
    model = str(params["model"])
    return problems + shape_problems(config, SHAPES[canonical(model)], model, config_path)


def check_data_dir(data_dir: str | None, params: dict[str, Any]) -> list[str]:
    """The host preflight's check: the MMLU folders and rows, and the weights folder; [] without a data dir
    (random weights on random token ids: throughput only)."""
    if not data_dir:
        return []
    problems = check_weights(Path(data_dir) / str(params["weight_dir"]), params)
    try:
        load_subjects(mmlu_root(data_dir, params), int(params["few_shots"]))
    except (OSError, ValueError) as exc:
        problems.append(str(exc))
    return problems


check_inference_data_dir = check_data_dir
