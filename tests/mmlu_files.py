"""An mmlu data dir in the real formats, written by a test: MMLU's CSV layout (dev/ and test/, no header) and a
weights folder in transformers' format (config.json, model.safetensors, tokenizer.json) at the tiny shape.

The tokenizer is a word-level one over the questions' words. The model is constructed so that its answer is known:
every layer's output projections are zero, so the last position's logits are the tied embedding's scores of the last
token, ":" (of "Answer:"), whose embedding is B's. It answers B to every question: the accuracy is the share of
questions whose gold answer is B (EXPECTED)."""

from __future__ import annotations

import csv
from pathlib import Path

SHOT = ("What is {n} plus {n}?", "one", "two", "three", "four", "B")
# subject: the gold answers of its test questions
ANSWERS = {"college_biology": "BBAC", "high_school_physics": "BDB"}
EXPECTED = {subject: answers.count("B") / len(answers) for subject, answers in ANSWERS.items()}
EXPECTED_ALL = sum(a.count("B") for a in ANSWERS.values()) / sum(len(a) for a in ANSWERS.values())
QUESTIONS = sum(len(a) for a in ANSWERS.values())


def write_rows(path: Path, rows: list[tuple[str, ...]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as handle:
        csv.writer(handle).writerows(rows)


def write_mmlu(root: Path, shots: int = 5) -> Path:
    """<root>/dev and <root>/test for ANSWERS' subjects; a question with a comma tests the CSV quoting."""
    for subject, answers in ANSWERS.items():
        write_rows(root / "dev" / f"{subject}_dev.csv",
                   [tuple(f.format(n=k) for f in SHOT) for k in range(shots)])
        write_rows(root / "test" / f"{subject}_test.csv",
                   [(f"Which, of these, is item {k}?", "red", "green", "blue", "black", gold)
                    for k, gold in enumerate(answers)])
    return root


def words(root: Path) -> list[str]:
    """Every word and punctuation mark of the prompts (the tokenizer's vocab), letters first."""
    import re

    text = " ".join(p.read_text() for p in sorted(root.rglob("*.csv")))
    text += " The following are multiple choice questions (with answers) about . Answer: A. B. C. D. "
    text += " ".join(subject.replace("_", " ") for subject in ANSWERS)
    found = sorted(set(re.findall(r"\w+|[^\w\s]+", text)) - {"A", "B", "C", "D"})
    return ["A", "B", "C", "D", *found]


def write_weights(folder: Path, vocab: list[str], answer_b: bool = True) -> Path:
    """The tiny shape's weights and a word-level tokenizer over `vocab`; answer_b: the constructed model that
    answers B (else random weights)."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from case_runners.cases.llama.model import build_model

    ids = {"[UNK]": 0, "[PAD]": 1, **{w: i + 2 for i, w in enumerate(dict.fromkeys(vocab))}}
    tokenizer = Tokenizer(models.WordLevel(ids, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]", pad_token="[PAD]").save_pretrained(folder)
    torch.manual_seed(0)
    model = build_model({"model": "tiny", "vocab_size": 0})
    if answer_b:
        with torch.no_grad():
            for layer in model.model.layers:
                layer.self_attn.o_proj.weight.zero_()
                layer.mlp.down_proj.weight.zero_()
            embedding = model.model.embed_tokens.weight
            embedding[ids[":"]] = embedding[ids["B"]]
    model.save_pretrained(folder)
    return folder


def write_data_dir(root: Path, weight_dir: str = "tiny_hf", answer_b: bool = True) -> Path:
    """FlagPerf's layout: <root>/<weight_dir> and <root>/mmlu_dataset/data."""
    mmlu = write_mmlu(root / "mmlu_dataset" / "data")
    write_weights(root / weight_dir, words(mmlu), answer_b)
    return root
