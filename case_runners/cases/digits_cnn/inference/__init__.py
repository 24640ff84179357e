"""digits_cnn inference: the training case's CNN, trained on the fly (or loaded from `checkpoint`), evaluated on
the held-out 20 % of scikit-learn's digits through torch (validation) and through the vendor's engine."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch.nn import functional as F
from torch.utils.data import DataLoader

from case_runners.cases.digits_cnn.case import DigitsCNN
from case_runners.cases.digits_cnn.dataset import split_datasets
from case_runners.tasks.inference.pipeline import forward_loop, torch_forward


def build_dataloader(config: dict[str, Any]) -> DataLoader:
    _, test = split_datasets(config.get("data_dir"), False, int(config["seed"]))
    return DataLoader(test, batch_size=int(config["batch_size"]), shuffle=False,
                      num_workers=int(config["num_workers"]))


def create_model(config: dict[str, Any]) -> torch.nn.Module:
    torch.manual_seed(int(config["seed"]))
    model = DigitsCNN()
    if config.get("checkpoint"):
        model.load_state_dict(torch.load(config["checkpoint"], map_location="cpu", weights_only=True))
        return model.eval()
    train, _ = split_datasets(config.get("data_dir"), False, int(config["seed"]))
    loader = DataLoader(train, batch_size=int(config["train_batch_size"]), shuffle=True,
                        generator=torch.Generator().manual_seed(int(config["seed"])))
    optimizer = torch.optim.SGD(model.parameters(), lr=float(config["train_lr"]), momentum=0.9)
    for _ in range(int(config["train_epochs"])):
        for images, labels in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(images), labels).backward()
            optimizer.step()
    return model.eval()


def evaluator(outputs: list[torch.Tensor], labels: torch.Tensor) -> tuple[int, list[int]]:
    predicted = outputs[0].argmax(dim=1)
    return int((predicted == labels).sum()), predicted.tolist()


def model_forward(model: torch.nn.Module, dataloader: DataLoader, evaluate: Callable,
                  config: dict[str, Any]) -> dict:
    return torch_forward(model, dataloader, evaluate, config)


def export_model(model: torch.nn.Module, config: dict[str, Any]) -> Path:
    path = Path(config["work_dir"]) / "digits_cnn.onnx"
    example = torch.zeros(2, 1, 8, 8, device=next(model.parameters()).device)
    torch.onnx.export(model, (example,), str(path), input_names=["images"], output_names=["logits"],
                      dynamic_shapes={"x": {0: torch.export.Dim("batch")}}, verbose=False)
    return path


def engine_forward(engine: Callable, dataloader: DataLoader, evaluate: Callable, config: dict[str, Any]) -> dict:
    return forward_loop(engine, dataloader, evaluate, config, print, "inference")
