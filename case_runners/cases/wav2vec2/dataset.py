"""wav2vec2's data on a rank: LibriSpeech utterances of the fairseq manifests (data.py) decoded with `soundfile`,
or synthetic noise; batches cropped to a common length, with the time steps to mask and the negatives to contrast
drawn by transformers' own wav2vec 2.0 helpers (_compute_mask_indices, _sample_negative_indices).

Training batches hold utterances of similar length, as fairseq's batches by size do (LengthGroupedBatches); as
fairseq's (FlagPerf's) collater without padding, every utterance of a batch is cropped to the batch's shortest, at
most max_sample_size samples, at a random offset in training, from the start in evaluation. The held-out batches'
masks and negatives are drawn from a seed of the batch's utterances, so that every evaluation scores the same ones.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset, Sampler

from case_runners.cases.wav2vec2.data import (
    SAMPLE_RATE,
    TRAIN_MANIFEST,
    VALID_MANIFEST,
    check_data_dir,
    read_manifest,
)


def feature_frames(samples: int, kernels: list[int], strides: list[int]) -> int:
    """The feature encoder's output frames for `samples` input samples (each convolution unpadded)."""
    for kernel, stride in zip(kernels, strides):
        samples = (samples - kernel) // stride + 1
    return samples


class Utterances(Dataset):
    """A manifest's utterances of at least `min_samples` samples: a sample is (float32 waveform, index)."""

    def __init__(self, manifest: Path, min_samples: int = 0) -> None:
        self.root, rows = read_manifest(manifest)
        kept = [(path, samples) for path, samples in rows if samples >= min_samples]
        self.files, self.lengths = [path for path, _ in kept], [samples for _, samples in kept]

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        import soundfile  # type: ignore[import-untyped]

        path = self.root / self.files[index]
        audio, rate = soundfile.read(str(path), dtype="float32", always_2d=True)
        if rate != SAMPLE_RATE or audio.shape[1] != 1:
            raise ValueError(f"{path}: {rate} Hz, {audio.shape[1]} channel(s); expected {SAMPLE_RATE} Hz mono")
        return torch.from_numpy(audio[:, 0]), index


class SyntheticAudio(Dataset):
    """`count` utterances of Gaussian noise, min_samples to max_samples long, the same for a seed."""

    def __init__(self, count: int, min_samples: int, max_samples: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.lengths: list[int] = rng.integers(min_samples, max_samples + 1, size=count).tolist()
        self.seed = seed

    def __len__(self) -> int:
        return len(self.lengths)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        noise = np.random.default_rng((self.seed, index)).standard_normal(int(self.lengths[index]), dtype=np.float32)
        return torch.from_numpy(noise), index


class MaskingCollator:
    """Stacks utterances cropped to a common length and adds wav2vec 2.0's mask_time_indices (B, frames) and
    sampled_negative_indices (B, frames, num_negatives); `held_out`: crops from the start and draws the masks from
    a seed of the utterances' indices (fixed masks). Returns (input_values, mask_time_indices,
    sampled_negative_indices)."""

    def __init__(self, params: dict, held_out: bool, kernels: list[int], strides: list[int]) -> None:
        self.max_samples, self.held_out = int(params["max_sample_size"]), held_out
        self.mask_prob, self.mask_length = float(params["mask_prob"]), int(params["mask_length"])
        self.num_negatives, self.seed = int(params["num_negatives"]), int(params["seed"])
        self.kernels, self.strides = kernels, strides

    def __call__(self, samples: list[tuple[torch.Tensor, int]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        from transformers.models.wav2vec2.modeling_wav2vec2 import _compute_mask_indices, _sample_negative_indices

        length = min(self.max_samples, *(len(audio) for audio, _ in samples))
        crops = []
        for audio, _ in samples:
            start = 0 if self.held_out else int(torch.randint(0, len(audio) - length + 1, ()))
            crops.append(audio[start:start + length])
        frames = feature_frames(length, self.kernels, self.strides)
        state = np.random.get_state()
        if self.held_out:  # the helpers draw from numpy's global generator
            np.random.seed([self.seed, *(index for _, index in samples)])
        try:
            mask = _compute_mask_indices((len(samples), frames), self.mask_prob, self.mask_length, min_masks=2)
            negatives = _sample_negative_indices((len(samples), frames), self.num_negatives, mask)
        finally:
            if self.held_out:
                np.random.set_state(state)
        return torch.stack(crops), torch.from_numpy(mask), torch.from_numpy(negatives).long()


class LengthGroupedBatches(Sampler[list[int]]):
    """This rank's training batches, of utterances of similar length: each epoch, a permutation seeded by (seed,
    epoch) is cut into pools of `pool` batches, each pool sorted by length and cut into batches, and the batches
    shuffled; the rank takes every world_size-th. Ranks get disjoint batches, all the same count; incomplete ones are
    left out."""

    def __init__(self, lengths: Sequence[int], batch_size: int, rank: int, world_size: int, seed: int,
                 pool: int = 50) -> None:
        self.lengths, self.batch_size, self.pool = list(lengths), batch_size, pool
        self.rank, self.world_size, self.seed, self.epoch = rank, world_size, seed, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.lengths) // self.batch_size // self.world_size

    def __iter__(self) -> Iterator[list[int]]:
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        order = torch.randperm(len(self.lengths), generator=generator).tolist()
        span, batches = self.batch_size * self.pool, []
        for start in range(0, len(order), span):
            pool = sorted(order[start:start + span], key=self.lengths.__getitem__)
            batches += [pool[i:i + self.batch_size]
                        for i in range(0, len(pool) - self.batch_size + 1, self.batch_size)]
        shuffled = [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]
        return iter(shuffled[:len(self) * self.world_size][self.rank::self.world_size])


Audio = Utterances | SyntheticAudio


def build_datasets(data_dir: str | None, params: dict) -> tuple[Audio, Audio]:
    """(training utterances, held-out utterances): the data dir's manifests, checked first; or with synthetic, noise
    (synthetic_samples and eval_samples utterances). The first eval_samples held-out utterances are kept, sorted by
    length so that the evaluation's in-order batches crop little."""
    shortest, longest, seed = int(params["min_sample_size"]), int(params["max_sample_size"]), int(params["seed"])
    limit = int(params["eval_samples"])
    if params.get("synthetic"):
        return (SyntheticAudio(int(params["synthetic_samples"]), shortest, longest, seed),
                SyntheticAudio(limit, shortest, longest, seed + 1))
    problems = check_data_dir(data_dir, params)
    if problems:
        raise ValueError("; ".join(problems))
    assert data_dir is not None  # without synthetic, check_data_dir names a missing data_dir
    held_out = Utterances(Path(data_dir) / VALID_MANIFEST)
    kept = sorted(zip(held_out.lengths[:limit], held_out.files[:limit]))  # in-order batches of similar lengths
    held_out.lengths, held_out.files = [n for n, _ in kept], [path for _, path in kept]
    return Utterances(Path(data_dir) / TRAIN_MANIFEST, shortest), held_out


def collate_args(config: Any) -> tuple[list[int], list[int]]:
    """The feature encoder's kernels and strides of a Wav2Vec2Config."""
    return list(config.conv_kernel), list(config.conv_stride)
