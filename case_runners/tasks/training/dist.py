"""The few collectives the trainer needs and the cases' data loaders, sharded by rank (the process group itself is
the rank runtime's: case_runners/rank/dist.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence, Sized
from typing import TYPE_CHECKING, Any, cast

import torch
import torch.distributed as dist

if TYPE_CHECKING:
    from torch.utils.data import DataLoader, Dataset

    from case_runners.tasks.training.case_api import RunContext


def is_distributed() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def collective_device(device: torch.device) -> torch.device:
    """Where tensors for collectives live: the CPU for gloo, the accelerator otherwise."""
    if is_distributed() and dist.get_backend() == "gloo":
        return torch.device("cpu")
    return device


def all_reduce_sum(values: Sequence[float], device: torch.device) -> list[float]:
    """Element-wise sum over all ranks (identity on one rank)."""
    if not is_distributed():
        return [float(v) for v in values]
    t = torch.tensor(list(values), dtype=torch.float64, device=collective_device(device))
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return t.tolist()


def any_rank(flag: bool, device: torch.device) -> bool:
    """True on every rank when `flag` is true on at least one rank."""
    if not is_distributed():
        return flag
    t = torch.tensor([1 if flag else 0], dtype=torch.int32, device=collective_device(device))
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return bool(t.item())


def gather_objects(obj: object) -> list:
    """Every rank's `obj` (picklable), in rank order, on every rank ([obj] on one rank)."""
    if not is_distributed():
        return [obj]
    out: list = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


def shard_indices(n: int, rank: int, world_size: int) -> range:
    """This rank's share of an eval set, without padding, so metrics count every sample once."""
    return range(rank, n, world_size)


def _unsized(dataset: object) -> TypeError:
    return TypeError(f"{type(dataset).__name__} has no len(): the loaders need a map-style dataset")


def train_loader(dataset: torch.utils.data.Dataset, batch_size: int, rank: int, world_size: int,
                 seed: int, num_workers: int = 0, drop_last: bool = False, pin_memory: bool = False,
                 collate_fn: Callable | None = None) -> torch.utils.data.DataLoader:
    """A shuffling loader; a DistributedSampler gives every rank the same number of batches."""
    from torch.utils.data import DataLoader, DistributedSampler, RandomSampler, Sampler

    if not isinstance(dataset, Sized):
        raise _unsized(dataset)
    sampler: Sampler[int]
    if world_size > 1:
        sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True,
                                     seed=seed, drop_last=drop_last)
    else:
        sampler = RandomSampler(dataset, generator=torch.Generator().manual_seed(seed))
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler, num_workers=num_workers,
                      drop_last=drop_last, pin_memory=pin_memory, collate_fn=collate_fn,
                      persistent_workers=num_workers > 0)


def eval_loader(dataset: torch.utils.data.Dataset, batch_size: int, rank: int, world_size: int,
                num_workers: int = 0, pin_memory: bool = False,
                collate_fn: Callable | None = None) -> torch.utils.data.DataLoader:
    """An in-order loader over this rank's unpadded shard of the eval set."""
    from torch.utils.data import DataLoader, Subset

    if not isinstance(dataset, Sized):
        raise _unsized(dataset)
    shard = Subset(dataset, shard_indices(len(dataset), rank, world_size))
    return DataLoader(shard, batch_size=batch_size, shuffle=False, num_workers=num_workers,
                      pin_memory=pin_memory, collate_fn=collate_fn, persistent_workers=num_workers > 0)


def case_loaders(train: Dataset, held_out: Dataset, p: dict[str, Any], ctx: RunContext, items: str, *,
                 drop_last: bool = True, collate_fn: Callable | None = None, eval_collate_fn: Callable | None = None,
                 eval_workers: bool = False) -> tuple[DataLoader, DataLoader]:
    """A case's (train loader, eval loader) at its params' batch_size, eval_batch_size, seed and num_workers (the
    eval loader's workers too where eval_workers); ValueError naming `items` (what the train set holds, e.g.
    "training sequences") where a rank would have no batch to train on."""
    workers = int(p["num_workers"])
    batches = train_loader(train, int(p["batch_size"]), ctx.rank, ctx.world_size, seed=int(p["seed"]),
                           num_workers=workers, drop_last=drop_last, pin_memory=ctx.pin_memory, collate_fn=collate_fn)
    if len(batches) == 0:
        batch = f"one global batch ({p['batch_size']} x {ctx.world_size} ranks)" if drop_last else "one batch per rank"
        raise ValueError(f"{len(cast(Sized, train))} {items} are fewer than {batch}")
    return batches, eval_loader(held_out, int(p["eval_batch_size"]), ctx.rank, ctx.world_size,
                                num_workers=workers if eval_workers else 0, pin_memory=ctx.pin_memory,
                                collate_fn=eval_collate_fn)


def set_sampler_epoch(loader: object, epoch: int) -> None:
    """Reshuffle a DistributedSampler for this epoch (no-op for other samplers)."""
    sampler = getattr(loader, "sampler", None)
    if sampler is not None and hasattr(sampler, "set_epoch"):
        sampler.set_epoch(epoch)
