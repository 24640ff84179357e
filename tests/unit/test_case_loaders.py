"""dist.case_loaders: the train and eval loaders every map-style training case builds from its params."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import TensorDataset

from case_context import cpu_context
from case_runners.tasks.training import dist

TWO_RANKS = cpu_context(rank=0, world_size=2)
PARAMS = {"batch_size": 2, "eval_batch_size": 2, "seed": 3, "num_workers": 1}


def rows(n: int) -> TensorDataset:
    return TensorDataset(torch.arange(n))


def test_a_rank_gets_its_shard_and_each_loader_its_own_collate_and_workers() -> None:
    def tag(name: str):  # noqa: ANN202
        return lambda items: (name, [int(i) for (i,) in items])

    train, held_out = dist.case_loaders(rows(8), rows(5), PARAMS, cpu_context(rank=1, world_size=2), "training rows",
                                        collate_fn=tag("train"), eval_collate_fn=tag("eval"))
    assert len(train) == 2 and train.num_workers == 1 and held_out.num_workers == 0
    assert [batch for batch in held_out] == [("eval", [1, 3])]  # rank 1 of 2, in order, unpadded
    seen = [i for name, batch in train for i in batch if name == "train"]
    assert len(seen) == 4 and set(seen) <= set(range(8))
    _, held_out = dist.case_loaders(rows(8), rows(5), PARAMS, cpu_context(), "training rows", eval_workers=True)
    assert held_out.num_workers == 1


def test_a_train_set_shorter_than_a_batch_is_named_with_what_it_holds() -> None:
    with pytest.raises(ValueError, match=r"^3 training pairs are fewer than one global batch \(2 x 2 ranks\)$"):
        dist.case_loaders(rows(3), rows(4), PARAMS, TWO_RANKS, "training pairs")
    with pytest.raises(ValueError, match=r"^0 training sentences are fewer than one batch per rank$"):
        dist.case_loaders(rows(0), rows(4), PARAMS, TWO_RANKS, "training sentences", drop_last=False)
    train, _ = dist.case_loaders(rows(3), rows(4), PARAMS, cpu_context(), "training sentences", drop_last=False)
    assert len(train) == 2  # the last batch short
