"""gpt2 and wav2vec2: the standard models' sizes and FLOPs (meta device), FlagPerf's data layouts read from small
files the tests write in those formats (gpt2: a Megatron index, LAMBADA's JSON lines, a GPT-2 BPE's vocab and merges;
wav2vec2: LibriSpeech FLAC files and fairseq manifests), each case's metric as FlagPerf computes it, the data checks'
refusals, the schedules, a short real run of both through the direct runner, and the importer on FlagPerf's
configs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

import real_runs
from case_context import cpu_context
from case_runners.cases.gpt2.case import GPT2Case
from case_runners.cases.gpt2.data import check_data_dir
from case_runners.cases.gpt2.dataset import build_datasets, load_tokenizer
from case_runners.cases.gpt2.prepare import prepare_lambada
from case_runners.core.errors import PerfplayError
from case_runners.core.paths import project_root
from case_runners.plan.layering import load_case_base
from case_runners.tasks.training.flops import count_per_sample
from flagperf_tree import import_nvidia_configs
from megatron_indexed import write_indexed

REPO = project_root()
# Megatron-GPT2 345M with the vocab padded to 50,304: embeddings 50,304 x 1,024 + positions 1,024 x 1,024, 24 blocks
# of 12 x 1,024^2 + 13 x 1,024, the final LayerNorm; the output layer tied to the embeddings.
PARAMS_345M = 50_304 * 1024 + 1024 * 1024 + 24 * (12 * 1024**2 + 13 * 1024) + 2 * 1024
STANDARD_FLOPS = 2_481_148_919_808  # training FLOPs per sequence at seq 1024, as the README gives them
TINY = {"seq_len": 32, "hidden_size": 32, "num_layers": 2, "num_heads": 2, "ffn_hidden_size": 64,
        "hidden_dropout": 0.0, "attention_dropout": 0.0}
PASSAGES = ["the cat sat on the warm mat by the fire", "a dog ran to the old barn in the rain",
            "she read the long letter from her brother", "the ship sailed across the cold grey sea",
            "he planted seven tall trees near the river", "birds sang in the garden before dawn"]


def params(**overrides: object) -> dict:
    return {**load_case_base("gpt2", REPO)[0]["params"], "num_workers": 0, "synthetic": False, **overrides}


def test_the_standard_model_is_megatrons_345m_and_the_readmes_flops() -> None:
    case = GPT2Case(params(), cpu_context())
    with torch.device("meta"):
        model = case.build_model()
    assert sum(p.numel() for p in model.parameters()) == PARAMS_345M == 354_871_296
    assert model.lm.lm_head.weight is model.lm.transformer.wte.weight  # tied, as Megatron's
    batch = (torch.empty(1, 1024, dtype=torch.long, device="meta"),) * 2
    assert count_per_sample(case, batch) == STANDARD_FLOPS
    assert load_case_base("gpt2", REPO)[0]["flops_per_sample"] == "counted"


def flagperf_dir(root: Path, passages: list[str] = PASSAGES, copies: int = 40) -> Path:
    """A data dir in FlagPerf's gpt2 layout: a byte-level BPE trained on the passages (saved as gpt2-vocab.json and
    gpt2-merges.txt), the training index of `copies` shuffled copies of the passages (one document each, ended by
    <|endoftext|>), and lambada_test.json with the passages as JSON lines."""
    from tokenizers import ByteLevelBPETokenizer

    root.mkdir(parents=True)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(passages, vocab_size=300, min_frequency=1, special_tokens=["<|endoftext|>"])
    vocab, merges = bpe.save_model(str(root))
    Path(vocab).rename(root / "gpt2-vocab.json")
    Path(merges).rename(root / "gpt2-merges.txt")
    eod = bpe.token_to_id("<|endoftext|>")
    order = torch.Generator().manual_seed(0)
    documents = [bpe.encode(passages[i]).ids + [eod]
                 for _ in range(copies) for i in torch.randperm(len(passages), generator=order).tolist()]
    write_indexed(root / "lambada_train_text_document", documents)
    (root / "lambada_test.json").write_text("".join(json.dumps({"text": p}) + "\n" for p in passages))
    return root


def test_lambada_passages_are_scored_on_their_last_token(tmp_path: Path) -> None:
    root = flagperf_dir(tmp_path / "gpt2", passages=[*PASSAGES, "unbelievable"])
    assert check_data_dir(str(root), params(**TINY)) == []
    train, passages = build_datasets(str(root), params(**TINY))
    bpe = load_tokenizer(root)
    eod = bpe.token_to_id("<|endoftext|>")
    ids = bpe.encode(PASSAGES[1]).ids
    input_ids, position, label = passages[1]
    assert label == ids[-1] and position == len(ids) - 2  # the last BPE token, after the context's last token
    assert input_ids[:len(ids) - 1].tolist() == ids[:-1] and set(input_ids[len(ids) - 1:].tolist()) == {eod}
    word = bpe.encode("unbelievable").ids
    assert len(word) > 1 and passages[len(PASSAGES)][2] == word[-1]  # a word of pieces: its final piece is scored
    tokens = sum(len(bpe.encode(p).ids) + 1 for p in [*PASSAGES, "unbelievable"]) * 40  # each passage ends with EOD
    assert len(passages) == len(PASSAGES) + 1 and len(train) == (tokens - 1) // 32
    first, labels = train[0]
    assert first.shape == labels.shape == (32,) and torch.equal(first[1:], labels[:-1])


def test_gpt2_learns_to_complete_the_passages(tmp_path: Path, monkeypatch) -> None:
    """The whole data path and the metric in one rank: trained on the passages, the tiny GPT completes them."""
    from case_runners.rank.worker import main
    from record_helpers import resolved, write_resolved

    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    root = flagperf_dir(tmp_path / "gpt2")
    config = resolved("gpt2", data_dir=str(root), params={
        **TINY, "vocab_size": 384, "max_steps": 120, "batch_size": 8, "eval_batch_size": 8, "lr": 0.01, "lr_min": 0.001,
        "eval_every_steps": 20, "num_workers": 0, "log_freq": 50})
    config["target"]["value"] = 1.0
    assert main(str(write_resolved(tmp_path / "config.json", config)), str(tmp_path / "logs")) == 0
    result = json.loads((tmp_path / "logs" / "rank0.result.json").read_text())
    assert (result["metric"], result["stop_reason"]) == ("lambada_acc", "target_reached"), result["metrics_history"]
    assert result["final_metric"] == 1.0  # the target: every passage completed
    assert result["metrics_history"][0]["lambada_acc"] < 1.0  # it had to learn them


def test_the_data_check_names_the_file_and_the_layout(tmp_path: Path) -> None:
    root = flagperf_dir(tmp_path / "gpt2", copies=2)
    tiny = params(**TINY)
    assert check_data_dir(None, {**tiny, "synthetic": True}) == []
    (problem,) = check_data_dir(None, tiny)
    assert problem.startswith("gpt2 needs data_dir with lambada_train_text_document.bin")
    assert check_data_dir(str(root), {**tiny, "vocab_size": 256}) == [
        f"{root}/gpt2-vocab.json: holds id 299, not below the model's vocab_size 256; set vocab_size above 299"]
    (problem,) = check_data_dir(str(root), {**tiny, "seq_len": 4096})
    assert "lambada_train_text_document.bin" in problem and "fewer than one sequence of seq_len 4096" in problem
    (root / "lambada_test.json").write_text('{"text": "a passage"}\n["not", "an", "object"]\n')
    (problem,) = check_data_dir(str(root), tiny)
    assert problem == (f"{root}/lambada_test.json: line 2 is not a JSON object; "
                       "expected one {\"text\": \"...\"} a line")
    (root / "lambada_test.json").write_text('{"text": "a passage"}\n')
    with open(root / "lambada_train_text_document.bin", "ab") as f:
        f.write(b"\0\0")
    (problem,) = check_data_dir(str(root), tiny)
    assert problem.startswith(f"{root}/lambada_train_text_document.bin: ") and "but its index" in problem
    (root / "gpt2-merges.txt").unlink()
    assert f"{root}/gpt2-merges.txt: missing" in " ".join(check_data_dir(str(root), tiny))


def test_megatrons_schedule_warms_up_over_a_share_then_decays_to_lr_min(tmp_path: Path) -> None:
    case = GPT2Case(params(**TINY, synthetic=True, synthetic_samples=64, max_steps=1000, batch_size=4), cpu_context())
    case.build_data()
    model = case.build_model()
    opt, schedule = case.build_optimizer(model)
    lrs = []
    for _ in range(1000):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        schedule.step()
    lrs.append(opt.param_groups[0]["lr"])
    assert lrs[0] == 0 and lrs[5] == pytest.approx(0.5 * 1.5e-4) and lrs[10] == pytest.approx(1.5e-4)
    assert lrs[505] == pytest.approx((1.5e-4 + 1e-5) / 2) and lrs[1000] == pytest.approx(1e-5)
    decays = {len(g["params"]): g["weight_decay"] for g in opt.param_groups}
    assert sorted(decays.values()) == [0.0, 0.01]  # none on biases and LayerNorm weights
    assert opt.param_groups[0]["betas"] == (0.9, 0.999) and opt.param_groups[0]["eps"] == 1e-8


@pytest.fixture(scope="module")
def functional_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return real_runs.functional_run(tmp_path_factory.mktemp("nlp_gen_cases"), "gpt2", "wav2vec2")


METRICS = {"gpt2": ("lambada_acc", 0.6, "eval_last_token_loss"),
           "wav2vec2": ("contrastive_accuracy", 0.605, "eval_loss")}


@pytest.mark.parametrize("case", METRICS)
def test_a_short_run_records_throughput_mfu_and_the_cases_metric(functional_run: Path, case: str) -> None:
    record, evaluated = real_runs.short_round(functional_run, case)
    metrics, (metric, target, loss) = record["metrics"], METRICS[case]
    assert metrics["samples"] == 12 and (metrics["metric"], metrics["target"]) == (metric, target)
    assert 0 <= metrics["final_metric"] <= 1 and {metric, loss} <= set(evaluated)


# FlagPerf's own nvidia gpt2 configs (training/nvidia/gpt2-pytorch/config/), as they are.
FLAGPERF_GPT2 = {
    "config_common.py": "vendor = 'nvidia'\n\n# disable fp16\nfp16 = False\n\ndist_backend = \"nccl\"\n",
    "config_A100x1x1.py": "from config_common import *\n\ngradient_accumulation_steps = 8\nmax_steps = 15000",
    "config_A100x1x8.py": "from config_common import *\n",
}


def test_import_flagperf_maps_flagperfs_gpt2_configs(tmp_path: Path) -> None:
    report = import_nvidia_configs(tmp_path, "gpt2-pytorch", FLAGPERF_GPT2)
    written = tmp_path / "out/vendor/nvidia/cases/gpt2"
    assert yaml.safe_load((written / "config_A100x1x1.yaml").read_text()) == {"amp": False, "max_steps": 15000}
    assert yaml.safe_load((written / "config_A100x1x8.yaml").read_text()) == {"amp": False}
    (why,) = [line for line in report if "config_A100x1x1.py" in line and "gradient_accumulation_steps" in line]
    # gpt2's A100x1x1 sets no train_batch_size to multiply (FlagPerf's _base.py's is not perfplay's default)
    assert why.startswith("no counterpart") and "the config sets no train_batch_size to multiply" in why


# -- wav2vec2 ----------------------------------------------------------------------------------------------------

W2V_TINY = {"hidden_size": 32, "num_layers": 2, "num_heads": 2, "intermediate_size": 64, "conv_channels": 32,
            "conv_pos": 16, "conv_pos_groups": 4, "num_negatives": 10, "final_dim": 16, "latent_vars": 16,
            "min_sample_size": 4000, "max_sample_size": 16000, "dropout": 0.0, "attention_dropout": 0.0,
            "dropout_input": 0.0, "dropout_features": 0.0}
W2V_STANDARD_FLOPS = 722_278_299_648  # training FLOPs per 250,000-sample crop, as the README gives them


def w2v_params(**overrides: object) -> dict:
    return {**load_case_base("wav2vec2", REPO)[0]["params"], "num_workers": 0, "synthetic": False, **overrides}


def test_the_standard_wav2vec2_is_the_base_model_and_the_readmes_flops() -> None:
    from case_runners.cases.wav2vec2.case import Wav2Vec2Case
    from case_runners.cases.wav2vec2.dataset import feature_frames

    case = Wav2Vec2Case(w2v_params(), cpu_context())
    with torch.device("meta"):
        model = case.build_model()
    assert sum(p.numel() for p in model.parameters()) == 95_044_608  # wav2vec 2.0 base: 95M
    frames = feature_frames(250_000, list(model.w2v.config.conv_kernel), list(model.w2v.config.conv_stride))
    assert frames == int(model.w2v._get_feat_extract_output_lengths(torch.tensor(250_000))) == 781
    batch = (torch.empty(1, 250_000, device="meta"), torch.empty(1, frames, dtype=torch.bool, device="meta"),
             torch.empty(1, frames, 100, dtype=torch.long, device="meta"))
    assert count_per_sample(case, batch) == W2V_STANDARD_FLOPS


def librispeech_dir(root: Path, lengths: dict[str, list[int]]) -> dict[str, list[np.ndarray]]:
    """LibriSpeech-like FLAC files (16 kHz mono, 16-bit) and the fairseq manifests of FlagPerf's layout: per manifest
    its utterances of `lengths` samples under <root>/LibriSpeech/<subset>/, the folder written relative. The
    waveforms as written (int16)."""
    import soundfile

    written: dict[str, list[np.ndarray]] = {}
    rng = np.random.default_rng(0)
    for manifest, sizes in lengths.items():
        subset = manifest.removesuffix(".tsv")
        folder = root / "LibriSpeech" / subset / "19" / "198"
        folder.mkdir(parents=True)
        lines = ["LibriSpeech"]
        written[manifest] = []
        for i, size in enumerate(sizes):
            wave = rng.integers(-2000, 2000, size=size, dtype=np.int16)
            soundfile.write(folder / f"19-198-{i:04d}.flac", wave, 16000, format="FLAC", subtype="PCM_16")
            lines.append(f"{subset}/19/198/19-198-{i:04d}.flac\t{size}")
            written[manifest].append(wave)
        (root / manifest).write_text("\n".join(lines) + "\n")
    return written


def test_wav2vec2_reads_flac_through_fairseq_manifests(tmp_path: Path) -> None:
    from case_runners.cases.wav2vec2.data import check_data_dir as w2v_check
    from case_runners.cases.wav2vec2.dataset import build_datasets as w2v_datasets

    root = tmp_path / "librispeech"
    written = librispeech_dir(root, {"train-full-960.tsv": [6000, 3000, 9000, 5000], "dev-other.tsv": [7000, 4500]})
    params = w2v_params(**W2V_TINY)
    assert w2v_check(str(root), params) == []
    train, held_out = w2v_datasets(str(root), params)
    assert len(train) == 3 and len(held_out) == 2  # the 3,000-sample utterance is below min_sample_size
    assert held_out.lengths == [4500, 7000] and train.lengths == [6000, 9000, 5000]
    audio, index = train[1]
    assert index == 1 and audio.dtype == torch.float32
    assert torch.equal(audio, torch.from_numpy(written["train-full-960.tsv"][2] / 32768).float())
    import soundfile

    assert torch.equal(held_out[0][0], torch.from_numpy(written["dev-other.tsv"][1] / 32768).float())  # shortest first
    soundfile.write(root / "LibriSpeech/dev-other/19/198/19-198-0001.flac", written["dev-other.tsv"][1], 8000,
                    format="FLAC")
    with pytest.raises(ValueError, match=r"19-198-0001.flac: 8000 Hz, 1 channel\(s\); expected 16000 Hz mono"):
        held_out[0]


def test_wav2vec2_batches_crop_to_the_shortest_and_evaluate_on_fixed_masks() -> None:
    from case_runners.cases.wav2vec2.dataset import MaskingCollator, SyntheticAudio, feature_frames

    params = w2v_params(**W2V_TINY, mask_prob=0.5, mask_length=3)
    kernels, strides = [10, 3, 3, 3, 3, 2, 2], [5, 2, 2, 2, 2, 2, 2]
    audio = SyntheticAudio(4, 6000, 20000, seed=0)
    samples = [audio[i] for i in range(4)]
    shortest = int(min(audio.lengths))
    held_out = MaskingCollator(params, True, kernels, strides)
    values, mask, negatives = held_out(samples)
    frames = feature_frames(shortest, kernels, strides)
    assert values.shape == (4, shortest) and mask.shape == (4, frames) and negatives.shape == (4, frames, 10)
    assert torch.equal(values[0], samples[0][0][:shortest])  # held out: from the start
    assert mask.any(1).all() and mask.float().mean() < 1
    again = held_out(samples)
    assert torch.equal(again[1], mask) and torch.equal(again[2], negatives)  # the same masks every evaluation
    training = MaskingCollator(params, False, kernels, strides)
    draws = [training(samples)[1] for _ in range(3)]
    assert not all(torch.equal(draws[0], d) for d in draws[1:])  # training draws new masks each time


def test_wav2vec2s_loss_is_transformers_and_its_accuracy_flagperfs() -> None:
    from case_runners.cases.wav2vec2.case import Wav2Vec2Case
    from case_runners.cases.wav2vec2.dataset import MaskingCollator, SyntheticAudio

    torch.manual_seed(0)
    case = Wav2Vec2Case(w2v_params(**W2V_TINY), cpu_context())
    model = case.build_model().eval()  # no dropout, argmax codevectors: deterministic
    samples = [SyntheticAudio(3, 8000, 12000, seed=1)[i] for i in range(3)]
    values, mask, negatives = MaskingCollator(w2v_params(**W2V_TINY), True, [10, 3, 3, 3, 3, 2, 2],
                                              [5, 2, 2, 2, 2, 2, 2])(samples)
    with torch.no_grad():
        loss, correct, count = model(values, mask, negatives)
        reference = model.w2v(values, mask_time_indices=mask, sampled_negative_indices=negatives)
        assert loss.item() == pytest.approx(reference.loss.item(), rel=1e-5)  # transformers' own loss
        assert count == mask.sum() and 0 <= correct <= count
        # Every distractor the true latent itself: none can outrank it (masked to -inf), so every step counts.
        positions = torch.arange(mask.shape[0] * mask.shape[1]).view(mask.shape)
        own = positions[..., None].expand_as(negatives).contiguous()
        assert model(values, mask, own)[1] == count


def test_wav2vec2_data_check_names_the_file(tmp_path: Path) -> None:
    from case_runners.cases.wav2vec2.data import check_data_dir as w2v_check

    root = tmp_path / "librispeech"
    librispeech_dir(root, {"train-full-960.tsv": [6000], "dev-other.tsv": [4500]})
    params = w2v_params(**W2V_TINY)
    assert w2v_check(None, {**params, "synthetic": True}) == []
    assert w2v_check(None, params)[0].startswith("wav2vec2 needs data_dir with train-full-960.tsv and dev-other.tsv")
    assert w2v_check(str(root), {**params, "min_sample_size": 7000}) == [
        f"{root}/train-full-960.tsv: no utterance of at least min_sample_size 7000 samples (1 listed)"]
    (root / "dev-other.tsv").write_text("LibriSpeech\ndev-other/19/198/19-198-0000.flac 4500\n")
    assert w2v_check(str(root), params) == [
        f"{root}/dev-other.tsv: line 2 is 'dev-other/19/198/19-198-0000.flac 4500'; expected '<path>\\t<samples>'"]
    (root / "dev-other.tsv").write_text("LibriSpeech\ndev-other/19/198/gone.flac\t4500\n")
    assert w2v_check(str(root), params) == [f"{root}/dev-other.tsv: 1 of its first 1 audio files are missing under "
                                            f"{root}/LibriSpeech (the first: dev-other/19/198/gone.flac)"]
    (root / "train-full-960.tsv").unlink()
    assert w2v_check(str(root), params)[0].startswith(f"{root}/train-full-960.tsv: missing; expected")


def test_wav2vec2_anneals_the_gumbel_temperature_and_warms_up_linearly() -> None:
    from case_runners.cases.wav2vec2.case import Wav2Vec2Case

    case = Wav2Vec2Case(w2v_params(**W2V_TINY, synthetic=True, synthetic_samples=8, batch_size=2,
                                   warmup_steps=10, max_steps=110, latent_temp_decay=0.5), cpu_context())
    case.build_data()
    model = case.build_model()
    opt, schedule = case.build_optimizer(model)
    assert model.w2v.quantizer.temperature == 2.0
    case.after_step(model)
    assert model.w2v.quantizer.temperature == 1.0
    case.after_step(model)
    assert model.w2v.quantizer.temperature == 0.5  # the floor, latent_temp_min
    lrs = []
    for _ in range(110):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        schedule.step()
    assert lrs[0] == pytest.approx(5e-5) and lrs[9] == pytest.approx(5e-4) and lrs[60] == pytest.approx(2.5e-4)
    assert opt.param_groups[0]["betas"] == (0.9, 0.98) and {g["weight_decay"] for g in opt.param_groups} == {0.01}


def test_import_flagperf_maps_flagperfs_wav2vec2_config(tmp_path: Path) -> None:
    report = import_nvidia_configs(tmp_path, "wav2vec2-pytorch", {"config_A100x1x8.py":  # FlagPerf's, as it is
        'vendor = "nvidia"\n\ndist_backend: str = "nccl"\n\n# Batching\nnum_concat_batches = 4\nupdate_freq = 2\n'
        "max_sample_size = 250000\nmin_sample_size = 32000\nmax_tokens = 1400000\neval_steps = 100"})
    written = tmp_path / "out/vendor/nvidia/cases/wav2vec2/config_A100x1x8.yaml"
    assert yaml.safe_load(written.read_text()) == {"eval_every_steps": 100}
    (max_sample_size,) = [line for line in report if " max_sample_size: " in line]
    # FlagPerf's value is the case's standard (run-only): nothing to write
    assert max_sample_size.startswith("mapped")
    assert "perfplay's wav2vec2's standard: nothing to write" in max_sample_size
    (update_freq,) = [line for line in report if " update_freq: " in line]
    assert update_freq.startswith("no counterpart") and "has no param update_freq" in update_freq


def test_wav2vec2_batches_utterances_of_similar_length_rank_by_rank() -> None:
    from case_runners.cases.wav2vec2.dataset import LengthGroupedBatches

    lengths = np.random.default_rng(0).integers(32_000, 560_000, size=1000).tolist()
    ranks = [LengthGroupedBatches(lengths, 8, rank, 2, seed=3) for rank in range(2)]
    batches = [list(r) for r in ranks]
    assert [len(b) for b in batches] == [len(r) for r in ranks] == [62, 62]  # 125 full batches, even per rank
    seen = [i for rank in batches for batch in rank for i in batch]
    assert len(seen) == len(set(seen)) == 62 * 2 * 8  # disjoint
    spread = np.mean([(max(lengths[i] for i in b) - min(lengths[i] for i in b)) / max(lengths[i] for i in b)
                      for rank in batches for b in rank])
    assert spread < 0.1  # within a batch the lengths are close: crops to the shortest lose little audio
    ranks[0].set_epoch(1)
    assert list(ranks[0]) != batches[0]


def plan_errors(case: str, overrides: dict) -> list[str]:
    from case_runners.plan.run_plan import make_plan

    plan = make_plan({"vendor": "cpu", "cases": [{"case": case, "overrides": overrides}]}, check=True)
    return [str(e) for e in plan["errors"]]


def test_a_model_that_cannot_be_built_is_refused_naming_the_key() -> None:
    (error,) = plan_errors("gpt2", {"hidden_size": 100, "num_heads": 16})
    assert "key 'num_heads' is 16, which does not divide hidden_size 100" in error
    (error,) = plan_errors("wav2vec2", {"final_dim": 255})
    assert "key 'latent_groups' is 2, which does not divide final_dim 255" in error
    (error,) = plan_errors("wav2vec2", {"hidden_size": 784})
    assert "key 'num_heads' is 12, which does not divide hidden_size 784" in error
    (error,) = plan_errors("wav2vec2", {"min_sample_size": 300000})
    assert "key 'min_sample_size' is 300000, above max_sample_size 250000" in error
    assert plan_errors("wav2vec2", {}) == plan_errors("gpt2", {}) == []


def test_prepare_lambada_writes_what_megatrons_preprocess_data_writes(tmp_path: Path, capsys) -> None:
    from case_runners.cli.main import main as cli

    tokenizer_dir = flagperf_dir(tmp_path / "tokenizer", copies=1)  # its gpt2-vocab.json and gpt2-merges.txt
    src = tmp_path / "src"
    src.mkdir()
    (src / "lambada.train.json").write_text("".join(json.dumps({"text": p}) + "\n" for p in PASSAGES[:4]))
    (src / "lambada_test.json").write_text("".join(json.dumps({"text": p}) + "\n" for p in PASSAGES[4:]))
    out = tmp_path / "gpt2"
    assert cli(["prepare-lambada", str(src / "lambada.train.json"), str(src / "lambada_test.json"),
                str(tokenizer_dir / "gpt2-vocab.json"), str(tokenizer_dir / "gpt2-merges.txt"), str(out)]) == 0
    bpe = load_tokenizer(tokenizer_dir)
    eod = bpe.token_to_id("<|endoftext|>")
    expected = tmp_path / "expected"
    expected.mkdir()
    documents = [bpe.encode(p).ids + [eod] for p in PASSAGES[:4]]
    write_indexed(expected / "lambada_train_text_document", documents)  # the tests' own writer, from the format
    for suffix in (".bin", ".idx"):
        name = f"lambada_train_text_document{suffix}"
        assert (out / name).read_bytes() == (expected / name).read_bytes()
    assert (out / "lambada_test.json").read_text() == (src / "lambada_test.json").read_text()
    assert check_data_dir(str(out), params(**{**TINY, "seq_len": 8})) == []
    assert capsys.readouterr().out.strip() == f"{out}: 4 training documents, {sum(map(len, documents))} tokens"
    (src / "lambada.train.json").write_text('{"text": "fine"}\n{"txt": "no text"}\n')
    with pytest.raises(PerfplayError, match=r"lambada.train.json: line 2 has no 'text' string"):
        prepare_lambada(src / "lambada.train.json", src / "lambada_test.json", tokenizer_dir / "gpt2-vocab.json",
                        tokenizer_dir / "gpt2-merges.txt", out)


def test_wav2vec2_trains_on_flac_files_in_one_rank(tmp_path: Path, monkeypatch) -> None:
    """The whole data path of the case (manifests, FLAC through soundfile, batches of similar lengths, fixed
    held-out masks) in one rank."""
    from case_runners.rank.worker import main
    from record_helpers import resolved, write_resolved

    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    root = tmp_path / "librispeech"
    librispeech_dir(root, {"train-full-960.tsv": [6000, 9000, 7000, 8000, 12000, 5000, 11000, 10000],
                           "dev-other.tsv": [7000, 4500, 9000]})
    config = resolved("wav2vec2", data_dir=str(root), params={
        **W2V_TINY, "max_steps": 2, "batch_size": 4, "eval_batch_size": 2, "num_workers": 0, "warmup_steps": 1})
    assert main(str(write_resolved(tmp_path / "config.json", config)), str(tmp_path / "logs")) == 0
    result = json.loads((tmp_path / "logs" / "rank0.result.json").read_text())
    assert (result["metric"], result["steps"], result["samples"]) == ("contrastive_accuracy", 2, 8)
    evaluated = result["metrics_history"][-1]
    assert 0 <= evaluated["contrastive_accuracy"] <= 1 and evaluated["eval_loss"] > 0
