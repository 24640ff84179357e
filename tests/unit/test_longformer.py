"""longformer: the standard model (longformer-base-4096's parameters, the README's FLOPs on the meta device, which
count as real tensors do), the masking of transformers' DataCollatorForLanguageModeling (case_runners/cases/mlm.py),
the reader and data check of FlagPerf's .npz files (written in that format here), the fixed eval masks, the plan's
refusals, and the importer mapping FlagPerf's longformer configs (its short real run: test_nlp_encoder_runs.py)."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import torch
import yaml
from torch.utils.flop_counter import FlopCounterMode

from case_context import cpu_context
from case_runners.cases.longformer.case import LongformerCase
from case_runners.cases.longformer.data import check_data_dir
from case_runners.cases.longformer.dataset import build_datasets
from case_runners.cases.mlm import IGNORE, mask_each
from case_runners.core.paths import project_root
from case_runners.plan.layering import load_case_base
from case_runners.plan.run_plan import make_plan
from case_runners.vendors.flagperf.importer import import_flagperf

REPO = project_root()
PARAMS = 148_711_257  # LongformerForMaskedLM at longformer-base-4096's config
STANDARD_FLOPS = 849_615_519_744  # training FLOPs per sequence at 1,024 tokens, window 512, as the README gives them
TINY = {"seq_len": 64, "attention_window": 16, "vocab_size": 1000, "hidden_size": 32, "num_layers": 1,
        "num_heads": 2, "intermediate_size": 64, "mask_token_id": 999, "eval_samples": 4}


def params(**overrides: object) -> dict:
    return {**load_case_base("longformer", REPO)[0]["params"], "synthetic": False, "num_workers": 0, **overrides}


def case(data_dir: Path | None = None, **overrides: object) -> LongformerCase:
    ctx = cpu_context(data_dir)
    return LongformerCase(params(**overrides), ctx)


def counted(model_case: LongformerCase, seq_len: int, device: str) -> float:
    with torch.device(device):
        model = model_case.build_model()
        batch = {"input_ids": torch.randint(3, 900, (1, seq_len)), "attention_mask": torch.ones(1, seq_len,
                                                                                                dtype=torch.long),
                 "labels": torch.randint(3, 900, (1, seq_len))}
    with FlopCounterMode(display=False) as counter:
        model_case.train_step(model, batch)
    return 3 * counter.get_total_flops()


def test_the_standard_model_is_longformer_base_and_the_readmes_flops() -> None:
    base = load_case_base("longformer", REPO)[0]
    assert base["flops_per_sample"] == "counted" and base["params"]["seq_len"] == 1024
    standard = case(synthetic=True)
    with torch.device("meta"):
        assert sum(p.numel() for p in standard.build_model().parameters()) == PARAMS
    assert counted(standard, 1024, "meta") == STANDARD_FLOPS


def test_the_meta_count_is_the_real_tensors_count() -> None:
    tiny = case(**TINY)
    assert counted(tiny, 64, "meta") == counted(tiny, 64, "cpu") > 0


def test_the_masking_is_the_collators() -> None:
    ids = torch.randint(3, 50000, (64, 1024))
    special = torch.zeros_like(ids)
    special[:, 0] = special[:, -1] = 1
    masked, labels = mask_each(ids, special, 0.15, 50264, 50265, torch.Generator().manual_seed(0))
    chosen = labels != IGNORE
    assert not chosen[:, 0].any() and not chosen[:, -1].any(), "special tokens are never chosen"
    assert abs(chosen.float().mean().item() - 0.15 * 1022 / 1024) < 0.005
    assert torch.equal(labels[chosen], ids[chosen]) and torch.equal(masked[~chosen], ids[~chosen])
    as_mask = (masked[chosen] == 50264).float().mean().item()
    kept = (masked[chosen] == ids[chosen]).float().mean().item()
    assert abs(as_mask - 0.8) < 0.01 and abs(kept - 0.1) < 0.01


def write_split(path: Path, rows: int, seq_len: int, seed: int) -> Path:
    """FlagPerf's create_train_eval_data.py output for `rows` sequences: <s> ... </s> runs of text cut at seq_len."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(3, 1000, (rows, seq_len))
    ids[:, ::20], ids[:, 19::20] = 0, 2  # each line of text framed by <s> and </s>, lines run across sequences
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, input_ids=ids, attention_mask=np.ones_like(ids), special_tokens_mask=(ids < 3).astype(np.int64))
    return path


def test_the_reader_gives_flagperfs_rows_and_fixed_eval_masks(tmp_path: Path) -> None:
    write_split(tmp_path / "dataset" / "train_dataset.npz", 6, 64, seed=0)
    write_split(tmp_path / "dataset" / "eval_dataset.npz", 4, 64, seed=1)
    assert check_data_dir(str(tmp_path), params(**TINY)) == []
    train, held_out = build_datasets(str(tmp_path), params(**TINY))
    assert (len(train), len(held_out)) == (6, 4)
    with np.load(tmp_path / "dataset" / "train_dataset.npz") as written:
        ids, attention, special = train[2]
        assert ids.tolist() == written["input_ids"][2].tolist()
        assert special.tolist() == written["special_tokens_mask"][2].tolist()
        shipped = pickle.dumps(train)  # as a data loader worker gets it: the path, not the arrays
        assert len(shipped) < written["input_ids"].nbytes and torch.equal(pickle.loads(shipped)[2][0], ids)
    _, _, labels = held_out.tensors
    with np.load(tmp_path / "dataset" / "eval_dataset.npz") as written:
        special = torch.from_numpy(written["special_tokens_mask"]).bool()
    assert (labels != IGNORE).any() and (labels[special] == IGNORE).all(), "<s> and </s> are never masked"
    _, again = build_datasets(str(tmp_path), params(**TINY))
    assert all(torch.equal(a, b) for a, b in zip(held_out.tensors, again.tensors)), "the same masks every time"


def test_the_check_names_the_file_and_what_is_wrong(tmp_path: Path) -> None:
    (problem,) = check_data_dir(None, params())
    assert problem.startswith("longformer needs data_dir with FlagPerf's longformer layout")
    write_split(tmp_path / "dataset" / "train_dataset.npz", 6, 64, seed=0)
    np.savez(tmp_path / "dataset" / "eval_dataset.npz", input_ids=np.zeros((2, 64), np.int64))
    problems = check_data_dir(str(tmp_path), params())
    assert problems[0].startswith(f"{tmp_path}/dataset/train_dataset.npz: 'input_ids' has shape (6, 64); expected "
                                  "(6, 1024) for seq_len 1024")
    assert problems[-1].startswith(f"{tmp_path}/dataset/eval_dataset.npz: no 'attention_mask', "
                                   "'special_tokens_mask' array (has: input_ids)")


def test_a_layout_that_cannot_be_built_is_refused_naming_the_key() -> None:
    for overrides, wanted in (({"hidden_size": 64, "num_heads": 3}, "key 'num_heads' is 3, which does not divide"),
                              ({"attention_window": 15}, "key 'attention_window' is 15: Longformer needs an even")):
        plan = make_plan({"vendor": "cpu", "cases": [{"case": "longformer", "overrides": overrides}]}, check=True)
        (error,) = [str(e) for e in plan["errors"]]
        assert wanted in error


def test_import_flagperf_maps_flagperfs_longformer_configs(tmp_path: Path) -> None:
    folder = tmp_path / "FlagPerf" / "training" / "nvidia" / "longformer-pytorch" / "config"
    folder.mkdir(parents=True)
    (folder / "config_A100x1x8.py").write_text("train_batch_size = 16\ngradient_accumulation_steps = 1\n")
    import_flagperf(tmp_path / "FlagPerf", tmp_path / "out")
    written = tmp_path / "out/vendor/nvidia/cases/longformer/config_A100x1x8.yaml"
    assert yaml.safe_load(written.read_text()) == {"batch_size": 16}
