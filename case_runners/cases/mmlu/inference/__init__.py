"""mmlu inference: 5-shot MMLU accuracy of a decoder LLM, as FlagPerf's llama2_7b_mmlu, llama3_8b_mmlu,
Aquila_7b_mmlu and deepseek_7b_mmlu measure it, with tokens/s beside it.

Each test question's prompt (data.build_prompt) goes through the model once; the answer is the argmax over the
whole vocab at the last position, decoded and kept to its A/B/C/D characters, right when that is the gold letter
(FlagPerf's evaluator.py of llama3_8b_mmlu). The accuracy is over every question (FlagPerf's correct / whole),
each subject's printed as FlagPerf's "ACC-<subject>" lines. Throughput counts prompt tokens (FlagPerf's tps).

The model is the weights folder's (transformers' AutoModelForCausalLM, as FlagPerf's model.py), or, when the folder
has no safetensors files or there is no data dir, random weights at the shape param `model` names: throughput
only, the accuracy means nothing (the model is then a RandomDecoder, which step b's event names). Without a data
dir the prompts are random token ids (no tokenizer), every answer wrong.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import torch
from torch.utils.data import DataLoader, Dataset

from case_runners.cases.llama.model import build_model
from case_runners.cases.mmlu.data import CHOICES, build_prompt, has_weights, load_subjects, mmlu_root
from case_runners.rank import stop_request

NO_LETTER = -1


class Prompts(Dataset):
    """The tokenized prompts (1-D ids), each with its gold letter's index and its subject's; `letters` maps every
    vocab id to the index of the letter its decoded text keeps (NO_LETTER for none)."""

    subjects: list[str]
    letters: torch.Tensor

    def __init__(self, config: dict[str, Any]) -> None:
        self.items: list[tuple[torch.Tensor, int, int]] = []
        if not config.get("data_dir"):
            self._random(config)
            return
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(Path(config["data_dir"]) / str(config["weight_dir"])))
        loaded = load_subjects(mmlu_root(config["data_dir"], config), int(config["few_shots"]))
        self.subjects = list(loaded)
        limit = int(config["max_prompt_tokens"])
        for index, (subject, (shots, questions)) in enumerate(loaded.items()):
            for question in questions:
                prompt = build_prompt(subject, shots, question, lambda text: len(tokenizer.tokenize(text)), limit)
                ids = tokenizer(prompt, return_tensors="pt").input_ids[0]
                self.items.append((ids, CHOICES.index(question.answer), index))
        print(f"mmlu: {len(self.items)} questions of {len(loaded)} subjects, {config['few_shots']}-shot, prompt "
              f"tokens {sum(len(ids) for ids, _, _ in self.items)}", flush=True)
        decoded = tokenizer.batch_decode([[i] for i in range(len(tokenizer))])
        kept = ["".join(c for c in text if c in CHOICES) for text in decoded]
        self.letters = torch.tensor([CHOICES.index(k) if k in CHOICES else NO_LETTER for k in kept])

    def _random(self, config: dict[str, Any]) -> None:
        from case_runners.cases.llama.shapes import shape_of

        vocab = shape_of({"model": config["model"]}).vocab
        generator = torch.Generator().manual_seed(int(config["seed"]))
        self.subjects = ["random"]
        for _ in range(int(config["synthetic_samples"])):
            ids = torch.randint(vocab, (int(config["synthetic_tokens"]),), generator=generator)
            self.items.append((ids, int(torch.randint(4, (1,), generator=generator)), 0))
        self.letters = torch.full((vocab,), NO_LETTER)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int, int]:
        return self.items[index]


def left_padded(batch: list[tuple[torch.Tensor, int, int]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(input_ids, attention_mask, labels): prompts padded on the left, so each one's last token is the batch's
    last position; labels are (gold letter, subject) per prompt."""
    longest = max(len(ids) for ids, _, _ in batch)
    input_ids = torch.zeros(len(batch), longest, dtype=torch.long)
    mask = torch.zeros(len(batch), longest, dtype=torch.long)
    for row, (ids, _, _) in enumerate(batch):
        input_ids[row, longest - len(ids):] = ids
        mask[row, longest - len(ids):] = 1
    return input_ids, mask, torch.tensor([[gold, subject] for _, gold, subject in batch])


def build_dataloader(config: dict[str, Any]) -> DataLoader:
    return DataLoader(Prompts(config), batch_size=int(config["batch_size"]), shuffle=False,
                      num_workers=int(config["num_workers"]), collate_fn=left_padded)


class LastLogits(torch.nn.Module):
    """A causal LM's logits at the last position (B x vocab): what the answer is read from."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, attention_mask=attention_mask, logits_to_keep=1).logits[:, -1, :]


class PretrainedDecoder(LastLogits):
    """The weights folder's model."""


class RandomDecoder(LastLogits):
    """Random weights at the shape: throughput only, the accuracy means nothing."""


def create_model(config: dict[str, Any]) -> torch.nn.Module:
    folder = Path(config["data_dir"]) / str(config["weight_dir"]) if config.get("data_dir") else None
    model: LastLogits
    if folder is not None and has_weights(folder):
        from transformers import AutoModelForCausalLM

        model = PretrainedDecoder(AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32))
    else:
        print(f"mmlu: no weights in {folder or 'a data dir'}: random weights at model '{config['model']}''s shape; "
              "throughput only, the accuracy means nothing", flush=True)
        torch.manual_seed(int(config["seed"]))
        model = RandomDecoder(build_model({"model": config["model"], "vocab_size": 0}))
    model = model.eval()
    return model.half() if config["fp16"] else model


def evaluator(outputs: list[torch.Tensor], labels: torch.Tensor) -> tuple[int, list[int]]:
    """outputs[0]: each prompt's answer letter (its index, NO_LETTER for none); labels[:, 0] the gold one's."""
    letters = outputs[0]
    return int((letters == labels[:, 0]).sum()), letters.tolist()


def answer_letters(letters: torch.Tensor, predicted: torch.Tensor) -> torch.Tensor:
    """The letter of each predicted id; NO_LETTER for an id past the tokenizer's vocab (a model's embedding may
    have more rows than its tokenizer has ids: DeepSeek's 102400 for 100015)."""
    known = predicted < len(letters)
    return torch.where(known, letters[predicted.clamp(max=len(letters) - 1)], NO_LETTER)


def answer_loop(run_batch: Callable, dataloader: DataLoader, evaluate: Callable, config: dict[str, Any],
                what: str) -> dict[str, Any]:
    """pipeline.forward_loop's figures with prompt tokens as items (whole and core time, foo_time left out of
    core) and the accuracy over questions; each subject's accuracy printed as FlagPerf's ACC lines."""
    dataset = cast(Prompts, dataloader.dataset)
    letters = dataset.letters
    core = foo_total = 0.0
    tokens = correct = questions = 0
    predictions: list[int] = []
    by_subject = torch.zeros(len(dataset.subjects), 2, dtype=torch.long)  # (right, asked)
    started = time.perf_counter()
    for epoch in range(int(config["repeat"])):
        for step, (input_ids, mask, labels) in enumerate(dataloader, 1):
            stop_request.check()
            tick = time.perf_counter()
            outputs, foo = run_batch([input_ids, mask])
            core += time.perf_counter() - tick - foo
            foo_total += foo
            answers = answer_letters(letters, outputs[0].float().argmax(dim=-1))
            right, predicted = evaluate([answers], labels)
            correct += right
            questions += len(labels)
            tokens += int(mask.sum())
            if epoch == 0:
                predictions += predicted
                asked = torch.ones_like(answers, dtype=torch.bool)
                by_subject.index_add_(0, labels[:, 1], torch.stack([answers == labels[:, 0], asked], 1).long())
            if step % int(config["log_freq"]) == 0:
                print(f"{what}: repeat {epoch + 1} step {step}: {tokens / (time.perf_counter() - started):.1f} "
                      "tokens/s", flush=True)
    for subject, (right, asked) in zip(dataset.subjects, by_subject.tolist()):
        print(f"{what}: ACC-{subject}: {right / max(asked, 1):.4f}", flush=True)
    print(f"{what}: MMLU {config['few_shots']}-shot ACC-all: {correct / max(questions, 1):.4f}", flush=True)
    return {"items": tokens, "whole_s": time.perf_counter() - started, "core_s": core, "foo_s": foo_total,
            "accuracy": correct / max(questions, 1), "predictions": predictions,
            "subjects": {s: r / max(a, 1) for s, (r, a) in zip(dataset.subjects, by_subject.tolist())}}


def model_forward(model: torch.nn.Module, dataloader: DataLoader, evaluate: Callable,
                  config: dict[str, Any]) -> dict:
    device = next(model.parameters()).device
    synchronize = config.get("synchronize") or (lambda: None)

    def run(inputs: list[torch.Tensor]) -> tuple[list[torch.Tensor], float]:
        with torch.inference_mode():
            logits = model(*[t.to(device, non_blocking=True) for t in inputs])
            synchronize()
            return [logits.cpu()], 0.0
    return answer_loop(run, dataloader, evaluate, config, "validation")


def export_model(model: torch.nn.Module, config: dict[str, Any]) -> Path:
    """No ONNX (FlagPerf's export_model returns None): mmlu's engines compile the torch model (nvidia's
    inductor); an engine that reads ONNX finds no file at this path at step e."""
    return Path(config["work_dir"]) / "mmlu-has-no-onnx"


def engine_forward(engine: Callable, dataloader: DataLoader, evaluate: Callable, config: dict[str, Any]) -> dict:
    return answer_loop(engine, dataloader, evaluate, config, "inference")
