"""distilbert: the standard model (distilbert-base-uncased's parameters, the README's FLOPs, on the meta device), the
reader and data check of FlagPerf's SST-2 files (written in that format by tests/sst2_files.py), fine-tuning from
FlagPerf's checkpoint, the plan's refusal of a width its heads do not divide, and the importer mapping FlagPerf's
distilbert configs (its short real run: test_nlp_encoder_runs.py)."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from torch.utils.flop_counter import FlopCounterMode

from case_context import cpu_context
from case_runners.cases.distilbert.case import DistilBertCase, adamw_linear, distilbert, load_checkpoint
from case_runners.cases.distilbert.data import FORMAT, check_data_dir
from case_runners.cases.distilbert.dataset import SentenceSet, build_datasets
from case_runners.core.paths import project_root
from case_runners.plan.layering import load_case_base
from case_runners.plan.run_plan import make_plan
from flagperf_tree import import_nvidia_configs
from sst2_files import CLS, POSITIVE, SEP, VOCAB, VOCAB_SIZE, write_split, write_sst2

REPO = project_root()
# distilbert-base-uncased with a two-class head (DistilBertForSequenceClassification): its published count.
PARAMS = 66_955_010
# Training FLOPs per sample at seq_len 512, as the README gives them (3 x the forward FlopCounterMode counts).
STANDARD_FLOPS = 144_958_694_400
TINY = {"seq_len": 16, "vocab_size": VOCAB_SIZE, "dim": 32, "n_layers": 1, "n_heads": 2, "hidden_dim": 64}


def params(**overrides: object) -> dict:
    return {**load_case_base("distilbert", REPO)[0]["params"], "synthetic": False, "num_workers": 0, **overrides}


def case(data_dir: Path | None = None, **overrides: object) -> DistilBertCase:
    ctx = cpu_context(data_dir)
    return DistilBertCase(params(**overrides), ctx)


def test_the_standard_model_is_distilbert_base_and_the_readmes_flops() -> None:
    base = load_case_base("distilbert", REPO)[0]
    assert base["flops_per_sample"] == "counted" and base["params"]["seq_len"] == 512
    standard = case(synthetic=True)
    with torch.device("meta"):
        model = standard.build_model()
    assert sum(p.numel() for p in model.parameters()) == PARAMS
    batch = {"input_ids": torch.zeros(2, 512, dtype=torch.long, device="meta"),
             "attention_mask": torch.ones(2, 512, dtype=torch.long, device="meta"),
             "labels": torch.zeros(2, dtype=torch.long, device="meta")}
    with FlopCounterMode(display=False) as counter:
        _, samples = standard.train_step(model, batch)
    assert 3 * counter.get_total_flops() / samples == STANDARD_FLOPS


def test_the_reader_gives_flagperfs_rows_and_the_check_passes_them(tmp_path: Path) -> None:
    root = write_sst2(tmp_path, train=40, evaluated=8, seq_len=16)
    assert check_data_dir(str(root), params(seq_len=16, init_checkpoint="")) == []
    train, held_out = build_datasets(str(root), params(seq_len=16, init_checkpoint=""))
    assert (len(train), len(held_out)) == (40, 8)
    with np.load(root / "dataset" / "train_dataset.npz") as written:
        row = train[3]
        assert row["input_ids"].tolist() == written["input_ids"][3].tolist()
        assert row["input_ids"][0] == CLS and SEP in row["input_ids"].tolist()
        assert row["attention_mask"].tolist() == (written["input_ids"][3] != 0).astype(int).tolist()
        words = written["sentence"][3].split()
        assert int(row["labels"]) == written["label"][3] == int(any(w in POSITIVE for w in words))
        assert row["input_ids"][1:1 + len(words)].tolist() == [VOCAB[w] for w in words]
        shipped = pickle.dumps(train)  # as a data loader worker gets it: the path, not the token arrays
        assert len(shipped) < written["input_ids"].nbytes
        assert torch.equal(pickle.loads(shipped)[3]["input_ids"], row["input_ids"])


def test_the_check_names_the_file_and_what_is_wrong(tmp_path: Path) -> None:
    wanted = params(init_checkpoint="")
    (problem,) = check_data_dir(None, wanted)
    assert problem.startswith("distilbert needs data_dir with FlagPerf's distilbert layout")
    root = write_sst2(tmp_path, train=8, evaluated=4, seq_len=16)
    problems = check_data_dir(str(root), {**wanted, "seq_len": 512})
    assert problems == [f"{root}/dataset/{split}_dataset.npz: 'input_ids' has shape ({n}, 16); expected ({n}, 512) "
                        f"for seq_len 512" for split, n in (("train", 8), ("eval", 4))]
    (problem,) = check_data_dir(str(root), {**wanted, "seq_len": 16, "init_checkpoint": "model/pytorch_model.bin"})
    assert problem.startswith(f"{root}/model/pytorch_model.bin: init_checkpoint not found")
    np.savez(root / "dataset" / "eval_dataset.npz", input_ids=np.zeros((4, 16), np.int64))
    (problem,) = check_data_dir(str(root), {**wanted, "seq_len": 16})
    assert problem.startswith(f"{root}/dataset/eval_dataset.npz: no 'attention_mask', 'label' array (has: "
                              "input_ids); expected FlagPerf's distilbert layout")
    np.savez(root / "dataset" / "eval_dataset.npz")
    (problem,) = check_data_dir(str(root), {**wanted, "seq_len": 16})
    assert "eval_dataset.npz: no 'input_ids', 'attention_mask', 'label' array (has: nothing); expected" in problem
    (root / "dataset" / "eval_dataset.npz").write_text("not a zip")
    (problem,) = check_data_dir(str(root), {**wanted, "seq_len": 16})
    assert problem.startswith(f"{root}/dataset/eval_dataset.npz: not a readable .npz archive")
    assert problem.endswith("; expected " + FORMAT)
    (root / "dataset" / "eval_dataset.npz").unlink()
    (problem,) = check_data_dir(str(root), {**wanted, "seq_len": 16})
    assert problem.startswith(f"{root}/dataset/eval_dataset.npz: missing")
    assert check_data_dir(None, {**wanted, "synthetic": True}) == []


def test_a_label_that_is_not_a_class_is_named_with_its_file(tmp_path: Path) -> None:
    path = write_split(tmp_path / "eval_dataset.npz", 6, 16, seed=0)
    with np.load(path) as written:
        arrays = {k: written[k] for k in written.files}
    arrays["label"][2] = 5
    np.savez(path, **arrays)
    with pytest.raises(ValueError, match=rf"{path}: 'label' has 1 value\(s\) outside 0..1 \(e.g. 5\); num_classes "
                                         r"is 2"):
        SentenceSet(path, 2)


def test_fine_tuning_starts_from_flagperfs_checkpoint(tmp_path: Path) -> None:
    """FlagPerf's model/pytorch_model.bin is distilbert-base-uncased: a DistilBertForMaskedLM state dict. Its
    encoder is loaded, the classification head is new."""
    from transformers import DistilBertConfig, DistilBertForMaskedLM

    torch.manual_seed(0)
    pretrained = DistilBertForMaskedLM(DistilBertConfig(vocab_size=VOCAB_SIZE, dim=32, n_layers=1, n_heads=2,
                                                        hidden_dim=64))
    (tmp_path / "model").mkdir()
    torch.save(pretrained.state_dict(), tmp_path / "model" / "pytorch_model.bin")
    write_sst2(tmp_path, train=8, evaluated=4, seq_len=16)
    model = case(tmp_path, **TINY).build_model()
    assert torch.equal(model.distilbert.transformer.layer[0].ffn.lin1.weight,
                       pretrained.distilbert.transformer.layer[0].ffn.lin1.weight)
    assert torch.equal(model.distilbert.embeddings.word_embeddings.weight,
                       pretrained.distilbert.embeddings.word_embeddings.weight)
    torch.save({"bert.embeddings.word_embeddings.weight": torch.zeros(3)}, tmp_path / "bert.bin")
    with pytest.raises(ValueError, match=r"bert.bin: not a DistilBERT state dict for this config; missing "
                                         r"\['distilbert.embeddings"):
        load_checkpoint(distilbert(params(**TINY)), tmp_path / "bert.bin")


def test_the_optimizer_warms_up_then_decays_linearly_to_0_and_spares_biases_and_layer_norms() -> None:
    """FlagPerf's distilbert and longformer optimizer (longformer's case builds the same)."""
    model = distilbert(params(**TINY))
    opt, schedule = adamw_linear(model, params(lr=1e-3, weight_decay=0.1, warmup_steps=2, max_steps=0,
                                               max_epochs=2), steps_per_epoch=3)
    decayed, spared = opt.param_groups
    names = {id(w): name for name, w in model.named_parameters()}
    assert decayed["weight_decay"] == 0.1 and spared["weight_decay"] == 0.0
    assert {names[id(w)] for w in spared["params"]} == {
        name for name in names.values() if name.endswith(("bias", "LayerNorm.weight", "layer_norm.weight"))}
    assert len(decayed["params"]) + len(spared["params"]) == len(names)
    rates = []
    for _ in range(7):
        rates.append(opt.param_groups[0]["lr"])
        opt.step()
        schedule.step()
    assert rates == pytest.approx([5e-4, 1e-3, 1e-3, 7.5e-4, 5e-4, 2.5e-4, 0.0])  # 0 after max_epochs x 3 steps
    opt, schedule = adamw_linear(model, params(lr=1e-3, warmup_steps=0, max_steps=4, max_epochs=2), steps_per_epoch=3)
    for _ in range(4):
        opt.step()
        schedule.step()
    assert opt.param_groups[0]["lr"] == 0.0  # max_steps, where set, is the run's end


def test_a_width_its_heads_do_not_divide_is_refused_naming_the_key() -> None:
    plan = make_plan({"vendor": "cpu", "cases": [{"case": "distilbert", "overrides": {"dim": 64, "n_heads": 3}}]},
                     check=True)
    (error,) = [str(e) for e in plan["errors"]]
    assert "key 'n_heads' is 3, which does not divide dim 64" in error


# FlagPerf's own distilbert configs (training/nvidia/distilbert-pytorch/config/ and kunlunxin's sibling), as they are.
FLAGPERF_DISTILBERT = {"config_A100x1x1.py": "train_batch_size = 32\ngradient_accumulation_steps = 8\n",
                       "config_A100x1x8.py": "from config_common import *\n\ntrain_batch_size = 32\n",
                       "config_common.py": 'vendor = "kunlunxin"\n\ndist_backend = "xccl"\n'
                                           'dataloader_num_workers = 1'}


def test_import_flagperf_maps_flagperfs_distilbert_configs(tmp_path: Path) -> None:
    report = import_nvidia_configs(tmp_path, "distilbert-pytorch", FLAGPERF_DISTILBERT)
    out = tmp_path / "out/vendor/nvidia/cases/distilbert"
    # 32 a micro batch x 8: the batch of an optimizer step, as FlagPerf's A100x1x1 trains
    assert yaml.safe_load((out / "config_A100x1x1.yaml").read_text()) == {"batch_size": 256, "grad_accumulation": 8}
    assert yaml.safe_load((out / "config_A100x1x8.yaml").read_text()) == {"batch_size": 32, "num_workers": 1}
    accumulation = [line for line in report if "gradient_accumulation_steps" in line]
    assert [line.split(": ", 1)[1] for line in accumulation] == [
        "-> grad_accumulation: 8; micro batches of train_batch_size 32",
        "-> batch_size: 256; train_batch_size 32 x gradient_accumulation_steps 8, the batch of an optimizer step"]
