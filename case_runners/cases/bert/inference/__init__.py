"""bert inference: masked-token top-1 accuracy of BERT-large (the training case's model) on the held-out token
shards of the training case's data dir (data.shard_files: .npz with 'input_ids' and optional 'attention_mask', or
FlagPerf's .hdf5 masked when written), or on synthetic sequences. Each .npz or synthetic sequence is masked the same
way in every run (seeded by its index), so the torch and the engine paths see the same inputs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset

from case_runners.cases.bert.case import BertPretraining, bert_config, load_checkpoint
from case_runners.cases.bert.data import is_hdf5, shard_files
from case_runners.cases.bert.dataset import MaskedShards, SyntheticTokens, TokenShards
from case_runners.cases.mlm import IGNORE, mask_tokens
from case_runners.tasks.inference.pipeline import forward_loop, torch_forward

INPUTS = ("input_ids", "attention_mask", "positions", "token_type_ids")


class MaskedSequences(Dataset):
    """The INPUTS and labels of one sequence, masked by a generator seeded with its index, or as it was written
    (MaskedShards); token_type_ids are 0 but in .hdf5 shards."""

    def __init__(self, sequences: TokenShards | SyntheticTokens | MaskedShards, config: dict[str, Any]) -> None:
        self.sequences, self.config = sequences, config

    def __len__(self) -> int:
        return len(self.sequences)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, ...]:
        c = self.config
        sample = self.sequences[index]
        if isinstance(sample, dict):
            return tuple(sample[k] for k in (*INPUTS, "labels"))
        ids, attention = sample
        generator = torch.Generator().manual_seed(int(c["seed"]) * 1_000_003 + index)
        masked = mask_tokens(ids[None], attention[None], float(c["mask_prob"]), int(c["max_predictions_per_seq"]),
                             int(c["vocab_size"]), generator)
        masked["token_type_ids"] = torch.zeros_like(ids)[None]
        return tuple(masked[k][0] for k in (*INPUTS, "labels"))


def build_dataloader(config: dict[str, Any]) -> DataLoader:
    if config.get("data_dir"):
        _, held_out = shard_files(config["data_dir"])
        if not held_out:
            raise ValueError(f"{config['data_dir']}: no token shards (*.npz, *.hdf5) to evaluate")
        sequences: TokenShards | SyntheticTokens | MaskedShards = \
            MaskedShards(held_out) if is_hdf5(held_out) else TokenShards(held_out)
    else:
        sequences = SyntheticTokens(int(config["synthetic_samples"]), int(config["seq_len"]),
                                    int(config["vocab_size"]), int(config["seed"]))
    return DataLoader(MaskedSequences(sequences, config), batch_size=int(config["batch_size"]), shuffle=False,
                      num_workers=int(config["num_workers"]))


def create_model(config: dict[str, Any]) -> torch.nn.Module:
    torch.manual_seed(int(config["seed"]))
    model = BertPretraining(bert_config(config))
    if config.get("checkpoint"):
        load_checkpoint(model, Path(config["checkpoint"]))
    model = model.eval()
    return model.half() if config["fp16"] else model


def evaluator(outputs: list[torch.Tensor], labels: torch.Tensor) -> tuple[int, list[int], int]:
    """(correct masked tokens, predicted ids at the masked positions, masked tokens)."""
    predicted = outputs[0].float().argmax(dim=-1)
    used = labels != IGNORE
    return int(((predicted == labels) & used).sum()), predicted[used].tolist(), int(used.sum())


def model_forward(model: torch.nn.Module, dataloader: DataLoader, evaluate: Callable,
                  config: dict[str, Any]) -> dict:
    return torch_forward(model, dataloader, evaluate, config)


def export_model(model: torch.nn.Module, config: dict[str, Any]) -> Path:
    path = Path(config["work_dir"]) / "bert.onnx"
    seq_len, predictions = int(config["seq_len"]), int(config["max_predictions_per_seq"])
    device = next(model.parameters()).device
    example = (torch.ones(2, seq_len, dtype=torch.long, device=device),
               torch.ones(2, seq_len, dtype=torch.long, device=device),
               torch.zeros(2, predictions, dtype=torch.long, device=device),
               torch.zeros(2, seq_len, dtype=torch.long, device=device))
    batch = torch.export.Dim("batch")
    torch.onnx.export(model, example, str(path), input_names=list(INPUTS), output_names=["logits"],
                      dynamic_shapes={name: {0: batch} for name in INPUTS}, verbose=False)
    return path


def engine_forward(engine: Callable, dataloader: DataLoader, evaluate: Callable, config: dict[str, Any]) -> dict:
    return forward_loop(engine, dataloader, evaluate, config, print, "inference")
