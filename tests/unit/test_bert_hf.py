"""bert_hf: the standard model (bert-large-uncased's parameters, the README's FLOPs, on the meta device), FlagPerf's
static masking (case_runners/cases/mlm.py), the reader and data check of FlagPerf's flat .npy streams (written in
that format here), the weights from a save_pretrained folder, the accuracy at the masked positions only, and the
importer mapping FlagPerf's bert_hf configs (its short real run: test_nlp_encoder_runs.py)."""

from __future__ import annotations

import pickle
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch
import yaml
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from case_context import cpu_context
from case_runners.cases.bert_hf.case import BertHfCase
from case_runners.cases.bert_hf.data import check_data_dir
from case_runners.cases.bert_hf.dataset import MaskedStream, build_datasets
from case_runners.cases.mlm import MASK_ID, mask_static
from case_runners.core.paths import project_root
from case_runners.plan.layering import load_case_base
from case_runners.vendors.flagperf.importer import import_flagperf

REPO = project_root()
PARAMS = 335_174_458  # BertForMaskedLM at bert-large-uncased's config (the bert case's model)
STANDARD_FLOPS = 1_104_257_482_752  # training FLOPs per sequence at 512 tokens, as the README gives them
TINY = {"seq_len": 32, "vocab_size": 1000, "hidden_size": 32, "num_layers": 1, "num_heads": 2,
        "intermediate_size": 64}


def params(**overrides: object) -> dict:
    return {**load_case_base("bert_hf", REPO)[0]["params"], "synthetic": False, "num_workers": 0, **overrides}


def case(data_dir: Path | None = None, **overrides: object) -> BertHfCase:
    ctx = cpu_context(data_dir)
    return BertHfCase(params(**overrides), ctx)


def write_streams(root: Path, train: int, held_out: int, dtype: str = "int32") -> Path:
    """FlagPerf's two streams (numpy.save of flat token ids) under root: word ids 999 up, never [MASK]."""
    rng = np.random.default_rng(0)
    root.mkdir(parents=True, exist_ok=True)
    np.save(root / "openwebtext_bert_100M.npy", rng.integers(999, 30522, train).astype(dtype))
    np.save(root / "openwebtext_bert_10M.npy", rng.integers(999, 30522, held_out).astype(dtype))
    return root


def test_the_standard_model_is_bert_large_and_the_readmes_flops() -> None:
    base = load_case_base("bert_hf", REPO)[0]
    assert base["flops_per_sample"] == "counted" and base["params"]["seq_len"] == 512
    standard = case(synthetic=True)
    with torch.device("meta"):
        model = standard.build_model()
    assert sum(p.numel() for p in model.parameters()) == PARAMS
    batch = (torch.zeros(2, 512, dtype=torch.long, device="meta"), torch.zeros(2, 512, dtype=torch.long, device="meta"))
    with FlopCounterMode(display=False) as counter:
        _, samples = standard.train_step(model, batch)
    assert 3 * counter.get_total_flops() / samples == STANDARD_FLOPS


def test_flagperfs_masking_puts_mask_at_a_tenth_of_the_positions_and_nothing_else() -> None:
    ids = torch.arange(1000, 1512)
    masked = mask_static(ids, 0.1, torch.Generator().manual_seed(3))
    changed = masked != ids
    assert changed.sum() == 51 and (masked[changed] == MASK_ID).all()  # int(0.1 x 512), every one [MASK]
    assert torch.equal(masked, mask_static(ids, 0.1, torch.Generator().manual_seed(3)))


def test_the_reader_cuts_flagperfs_stream_and_masks_it_statically(tmp_path: Path) -> None:
    root = write_streams(tmp_path, train=32 * 10 + 7, held_out=32 * 3, dtype="int64")
    assert check_data_dir(str(root), params(**TINY, weight_dir="")) == []
    train, held_out = build_datasets(str(root), params(**TINY, weight_dir=""))
    assert (len(train), len(held_out)) == (10, 3)  # the remainder (7 tokens) dropped
    stream = np.load(root / "openwebtext_bert_100M.npy")
    input_ids, labels = train[4]
    assert labels.tolist() == stream[4 * 32:5 * 32].tolist()
    assert ((input_ids == MASK_ID) == (input_ids != labels)).all() and (input_ids == MASK_ID).sum() == 3
    again, _ = train[4]
    assert torch.equal(input_ids, again), "the same masks every epoch"
    assert not torch.equal(train[5][0] == MASK_ID, input_ids == MASK_ID)
    shipped = pickle.dumps(train)  # as a data loader worker gets it: the path, not the stream
    assert len(shipped) < stream.nbytes and torch.equal(pickle.loads(shipped)[4][1], labels)


def test_the_check_names_the_file_the_key_and_what_is_wrong(tmp_path: Path) -> None:
    wanted = params(**TINY)
    (problem,) = check_data_dir(None, wanted)
    assert problem.startswith("bert_hf needs data_dir with FlagPerf's bert_hf layout")
    root = write_streams(tmp_path, train=100, held_out=10)
    problems = check_data_dir(str(root), wanted)
    assert problems[0].startswith(f"{root}/weights: no model.safetensors or pytorch_model.bin (weight_dir")
    assert problems[1:] == [f"{root}/openwebtext_bert_10M.npy: 10 tokens, fewer than one sequence of seq_len 32"]
    np.save(root / "openwebtext_bert_100M.npy", np.zeros((4, 32), np.float32))
    (root / "openwebtext_bert_10M.npy").unlink()
    assert check_data_dir(str(root), {**wanted, "weight_dir": ""}) == [
        f"{root}/openwebtext_bert_100M.npy: shape (4, 32); expected one flat stream (N,) of token ids",
        f"{root}/openwebtext_bert_10M.npy: missing (valdatafilename); expected FlagPerf's bert_hf layout: "
        "datafilename and valdatafilename, each a .npy of one flat stream of token ids (integers)"]
    assert check_data_dir(None, {**wanted, "synthetic": True}) == []


def test_training_starts_from_the_weights_folder(tmp_path: Path) -> None:
    from transformers import BertForMaskedLM

    from case_runners.cases.bert.case import bert_config

    root = write_streams(tmp_path, train=64, held_out=64)
    torch.manual_seed(0)
    pretrained = BertForMaskedLM(bert_config(params(**TINY)))
    pretrained.save_pretrained(root / "weights")  # model.safetensors and config.json, as FlagPerf's README asks
    model = case(root, **TINY).build_model()
    assert torch.equal(model.bert.encoder.layer[0].output.dense.weight,
                       pretrained.bert.encoder.layer[0].output.dense.weight)


class Echo(nn.Module):
    """Predicts each position's input token: right wherever the input is not masked, wrong at every [MASK]."""

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor) -> SimpleNamespace:
        return SimpleNamespace(logits=nn.functional.one_hot(input_ids, 30522).float(), loss=torch.tensor(0.5))


def test_the_accuracy_counts_the_masked_positions_only() -> None:
    evaluator = case(**TINY)
    stream = MaskedStream(np.random.default_rng(0).integers(999, 30522, 32 * 6), 32, 0.1, seed=0)
    batches = [tuple(torch.stack(x) for x in zip(*(stream[i] for i in range(j, j + 3)))) for j in (0, 3)]
    metrics = evaluator.evaluate(Echo(), batches)
    assert metrics == {"mlm_accuracy": 0.0, "eval_loss": 0.5}  # unmasked positions are all right, and not counted

    class Oracle(Echo):
        def forward(self, input_ids: torch.Tensor, labels: torch.Tensor) -> SimpleNamespace:
            return super().forward(labels, labels)

    assert evaluator.evaluate(Oracle(), batches)["mlm_accuracy"] == 1.0


# FlagPerf's own bert_hf configs (training/nvidia/bert_hf-pytorch/config/), as they are.
FLAGPERF_BERT_HF = {"config_A100x1x1.py": "train_batch_size = 16\neval_batch_size = 16\n\nlr = 6.25e-06",
                    "config_A100x1x8.py": "train_batch_size = 12\neval_batch_size = 12\n"}


def test_import_flagperf_maps_flagperfs_bert_hf_configs(tmp_path: Path) -> None:
    folder = tmp_path / "FlagPerf" / "training" / "nvidia" / "bert_hf-pytorch" / "config"
    folder.mkdir(parents=True)
    for name, text in FLAGPERF_BERT_HF.items():
        (folder / name).write_text(text)
    import_flagperf(tmp_path / "FlagPerf", tmp_path / "out")
    out = tmp_path / "out/vendor/nvidia/cases/bert_hf"
    assert yaml.safe_load((out / "config_A100x1x1.yaml").read_text()) == {"batch_size": 16, "eval_batch_size": 16,
                                                                          "lr": 6.25e-06}
    assert yaml.safe_load((out / "config_A100x1x8.yaml").read_text()) == {"batch_size": 12, "eval_batch_size": 12}


def test_a_stream_of_floats_is_refused(tmp_path: Path) -> None:
    root = write_streams(tmp_path, train=64, held_out=64, dtype="float32")
    problems = check_data_dir(str(root), params(**TINY, weight_dir=""))
    assert problems == [f"{root}/{name}: dtype <f4; expected integers (token ids)"
                        for name in ("openwebtext_bert_100M.npy", "openwebtext_bert_10M.npy")]
