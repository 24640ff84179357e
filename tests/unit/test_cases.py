"""Standard cases: configs, FLOPs, data format checks, real loaders and tiny runs of each."""

import importlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from bert_shards import masked_rows, token_rows, write_shard
from case_runners.cases import case_dir, code_cases
from case_runners.core.errors import ConfigError
from case_runners.core.paths import project_root
from case_runners.plan.layering import load_case_base
from case_runners.rank.worker import main
from case_runners.tasks.training.case_api import TrainingCase
from process_helpers import SHORT_S
from record_helpers import resolved, write_resolved

REPO = Path(__file__).resolve().parents[2]
CASES = ("bert", "bert_hf", "bigtransfer", "detr", "digits_cnn", "distilbert", "efficientnet", "gpt2", "llama",
         "longformer", "mobilenetv2", "resnet50", "swin_transformer", "t5_small", "transformer", "vit", "wav2vec2")
COMMON_PARAMS = {"seed", "batch_size", "eval_batch_size", "max_epochs", "max_steps", "time_budget_s", "amp", "tf32",
                 "log_freq", "eval_every_epochs", "synthetic", "num_workers", "warmup_steps"}
TINY_RESNET = {"image_size": 32, "depths": [1, 1, 1, 1], "hidden_sizes": [16, 32, 64, 128], "embedding_size": 8,
               "batch_size": 4, "eval_batch_size": 8, "num_workers": 0, "log_freq": 1, "warmup_steps": 0}
TINY_BERT = {"seq_len": 32, "max_predictions_per_seq": 5, "hidden_size": 64, "num_layers": 2, "num_heads": 2,
             "intermediate_size": 128, "batch_size": 16, "eval_batch_size": 64, "eval_samples": 64,
             "num_workers": 0, "log_freq": 10, "warmup_steps": 0}


def base_config(case: str) -> dict:
    return load_case_base(case, project_root())[0]


def run_case(tmp_path: Path, case: str, data_dir=None, target=None, **params) -> dict:
    """Run one rank of `case` through worker.main on the CPU and return its result."""
    config = resolved(case, params=params, data_dir=data_dir)
    config["target"].update(target or {})
    path = write_resolved(tmp_path / f"{case}.json", config)
    code = main(str(path), str(tmp_path / "logs"))
    result = json.loads((tmp_path / "logs" / "rank0.result.json").read_text())
    assert code == 0, result.get("reason")
    return result


@pytest.fixture(autouse=True)
def single_rank(monkeypatch):
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)


# -- registry and configs --------------------------------------------------------------------------

def test_cases_are_listed_and_unknown_ones_rejected():
    assert code_cases() == list(CASES)
    with pytest.raises(ConfigError, match="unknown case.*allowed: aquila2_34b, .*, bert, bert_hf, bigtransfer, "
                                               "chatglm3_6b, detr, digits_cnn, distilbert, efficientnet, gpt2, llama, "
                                               "llama2_70b, .*, longformer, .*, t5_small, transformer, vit, wav2vec2"):
        case_dir("resnet")  # the packages and their model cases (test_model_cases.py)


@pytest.mark.parametrize("case", CASES)
def test_config_declares_target_flops_and_mutable_params(case):
    config = base_config(case)
    assert config["case"] == case and config["framework"] == "pytorch" and config["description"]
    assert set(config["target"]) == {"metric", "value", "higher_is_better"}
    # The FLOPs per sample: counted by rank 0, config.yaml's figure, or the case package's hook of the params
    # (llama's, per token).
    hooks = importlib.import_module(f"case_runners.cases.{case}")
    assert config.get("flops_per_sample") == "counted" or float(config.get("flops_per_sample", 0)) > 0 \
        or hooks.flops_per_sample(config["params"]) > 0
    assert COMMON_PARAMS <= set(config["params"])
    assert set(config["mutable"]) <= set(config["params"]), set(config["mutable"]) - set(config["params"])
    assert "tf32" in config["mutable"] and config["params"]["tf32"] is False
    # A vendor may not change the model (what the FLOPs figure assumes) nor the data: run-only, for smoke tests.
    assert {"synthetic", *config["flops_depend_on"]} <= set(config["run_only"])
    module = __import__(f"case_runners.cases.{case}.case", fromlist=["build_case"])
    case_class = next(c for c in vars(module).values()  # the case's own class, not a base it imports
                      if isinstance(c, type) and issubclass(c, TrainingCase) and c.__module__ == module.__name__)
    assert case_class.target_metric == config["target"]["metric"] and callable(module.build_case)
    assert (case_dir(case) / "README.md").is_file()


def data_checker(case: str):
    """The case's data.py check_data_dir(data_dir, params): its problems, [] when fine."""
    return importlib.import_module(f"case_runners.cases.{case}.data").check_data_dir


def test_data_checks_and_registry_import_no_torch_or_numpy():
    code = ("import importlib, sys, case_runners.cases as c, case_runners.host.data_check\n"
            "for name in c.code_cases(): importlib.import_module(f'case_runners.cases.{name}.data').check_data_dir\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'numpy', 'PIL', 'transformers'))\n"
            "print(bad); raise SystemExit(1 if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                          timeout=SHORT_S)
    assert done.returncode == 0, done.stdout + done.stderr


def count_forward_macs(model: nn.Module, inputs: torch.Tensor) -> int:
    macs = 0

    def hook(module, _inputs, output):
        nonlocal macs
        if isinstance(module, nn.Conv2d):
            k = module.kernel_size[0] * module.kernel_size[1] * module.in_channels // module.groups
            macs += output.numel() * k
        elif isinstance(module, nn.Linear):
            macs += output.numel() * module.in_features

    handles = [m.register_forward_hook(hook) for m in model.modules()]
    with torch.no_grad():
        model(inputs)
    for h in handles:
        h.remove()
    return macs


def test_flops_per_sample_match_the_architectures():
    """The hand figures (the counted cases' in their READMEs) against the modules' own MAC arithmetic."""
    from case_runners.cases.bert.case import BertPretraining, bert_config
    from case_runners.cases.digits_cnn.case import DigitsCNN
    from case_runners.cases.resnet50.case import ResNetClassifier

    assert count_forward_macs(DigitsCNN(), torch.zeros(1, 1, 8, 8)) == 337_536
    with torch.device("meta"):  # shapes only: no memory, no compute
        resnet_macs = count_forward_macs(ResNetClassifier(base_config("resnet50")["params"]).eval(),
                                         torch.zeros(1, 3, 224, 224))
    assert resnet_macs == pytest.approx(4.1e9, rel=0.01)
    params = base_config("bert")["params"]
    with torch.device("meta"):
        n_params = sum(p.numel() for p in BertPretraining(bert_config(params)).parameters())
    assert base_config("bert")["flops_per_sample"] == 6 * n_params * params["seq_len"]


# -- digits_cnn ------------------------------------------------------------------------------------

def test_digits_data_check_accepts_npz_and_names_bad_ones(tmp_path):
    check = data_checker("digits_cnn")
    assert check(None, {}) == []
    good = tmp_path / "digits.npz"
    np.savez(good, images=np.zeros((10, 8, 8)), labels=np.arange(10))
    assert check(str(good), {}) == [] and check(str(tmp_path), {}) == []  # the file, or its folder
    bad = tmp_path / "bad.npz"
    np.savez(bad, images=np.zeros((10, 28, 28)))
    problems = check(str(bad), {})
    assert any(str(bad) in p and "'labels'" in p for p in problems)
    np.savez(bad, images=np.zeros((10, 28, 28)), labels=np.arange(10))
    assert check(str(bad), {}) == [f"{bad}: 'images' has shape (10, 28, 28); expected (N, 8, 8)"]
    (tmp_path / "text.npz").write_text("not a zip")
    assert "not a readable .npz" in check(str(tmp_path / "text.npz"), {})[0]
    assert "not found" in check(str(tmp_path / "nothing.npz"), {})[0]


def test_digits_reads_an_npz_with_a_stratified_split(tmp_path):
    from case_runners.cases.digits_cnn.dataset import split_datasets

    np.savez(tmp_path / "digits.npz", images=np.random.rand(100, 8, 8) * 16, labels=np.arange(100) % 10)
    train, test = split_datasets(str(tmp_path), synthetic=False, seed=1)
    assert (len(train), len(test)) == (80, 20)
    assert sorted(test.tensors[1].tolist()) == sorted(list(range(10)) * 2)
    assert train.tensors[0].shape == (80, 1, 8, 8) and float(train.tensors[0].max()) <= 1.0


# -- resnet50 --------------------------------------------------------------------------------------

def make_image_folder(root: Path, classes=("n01", "n02"), per_class=4, size=(48, 40)) -> Path:
    from PIL import Image

    for split in ("train", "val"):
        for c, name in enumerate(classes):
            folder = root / split / name
            folder.mkdir(parents=True)
            for i in range(per_class):
                pixels = np.full((size[1], size[0], 3), 40 * c + 10 * i, dtype=np.uint8)
                Image.fromarray(pixels).save(folder / f"{name}_{i}.JPEG", format="JPEG")
    return root


def test_image_folder_loader_reads_jpegs(tmp_path):
    from case_runners.cases.imagenet.dataset import ImageFolder
    from case_runners.cases.imagenet.transforms import eval_transform, train_transform

    root = make_image_folder(tmp_path / "imagenet")
    assert data_checker("resnet50")(str(root), {"num_classes": 2}) == []
    train = ImageFolder(root / "train", train_transform(32))
    val = ImageFolder(root / "val", eval_transform(32))
    assert (train.classes, len(train), len(val)) == (["n01", "n02"], 8, 8)
    image, label = val[5]
    assert (image.shape, image.dtype, label) == ((3, 32, 32), torch.uint8, 1)
    assert train[0][0].shape == (3, 32, 32)


def test_image_folder_check_explains_wrong_layouts(tmp_path):
    from PIL import Image

    check = data_checker("resnet50")
    assert "synthetic: true" in check(None, {})[0]
    root = make_image_folder(tmp_path / "a")
    assert check(str(root), {"num_classes": 1000}) == [
        f"{root / 'train'}: 2 class folders but num_classes is 1000; set num_classes: 2 or fix the folder"]
    flat = tmp_path / "flat"
    (flat / "train" / "n01").mkdir(parents=True)
    (flat / "val").mkdir()
    Image.new("RGB", (8, 8)).save(flat / "train" / "n01" / "a.jpg")
    Image.new("RGB", (8, 8)).save(flat / "val" / "ILSVRC2012_val_00000001.JPEG")
    problems = check(str(flat), {"num_classes": 1})
    assert len(problems) == 1 and str(flat / "val") in problems[0] and "directly" in problems[0]
    empty = tmp_path / "empty"
    (empty / "train" / "n01").mkdir(parents=True)
    assert any("no image files" in p for p in check(str(empty), {}))
    assert any(f"{empty / 'val'}: missing" in p for p in check(str(empty), {}))
    assert check(str(tmp_path / "nowhere"), {})[0].endswith("not a directory; expected "
                                                           "<data_dir>/{train,val}/<class>/<image>.JPEG "
                                                           "(ImageFolder: one folder per class, e.g. n01440764)")


def test_resnet50_trains_on_a_tiny_image_folder(tmp_path):
    root = make_image_folder(tmp_path / "imagenet")
    result = run_case(tmp_path, "resnet50", data_dir=str(root), num_classes=2, max_steps=2, **TINY_RESNET)
    assert (result["status"], result["stop_reason"], result["steps"], result["samples"]) == \
        ("not_converged", "max_steps", 2, 8)
    assert 0 <= result["final_metric"] <= 100 and result["metrics_history"][-1]["acc5"] == 100.0


def test_resnet50_synthetic_smoke_run(tmp_path):
    result = run_case(tmp_path, "resnet50", synthetic=True, synthetic_samples=64, num_classes=10, max_steps=3,
                      amp=True, **TINY_RESNET)
    assert (result["stop_reason"], result["steps"], result["precision"]) == ("max_steps", 3, "bf16")
    assert result["p_core"] > 0
    # Its FLOPs counted after training at the run's shape (config.yaml: counted), as the modules' MACs say.
    from case_runners.cases.resnet50.case import ResNetClassifier

    with torch.device("meta"):
        model = ResNetClassifier({**base_config("resnet50")["params"], **TINY_RESNET, "num_classes": 10}).eval()
        macs = count_forward_macs(model, torch.zeros(1, 3, 32, 32))
    assert result["flops"]["per_sample"] == 3 * 2 * macs and result["flops"]["note"] is None


# -- bert ------------------------------------------------------------------------------------------

def make_shards(root: Path, rows: np.ndarray) -> Path:
    """Two training shards (one with attention_mask) and a compressed eval shard."""
    (root / "eval").mkdir(parents=True)
    half = len(rows) // 2
    np.savez(root / "part_000.npz", input_ids=rows[:half])
    np.savez(root / "part_001.npz", input_ids=rows[half:], attention_mask=np.ones_like(rows[half:], dtype=np.int8))
    np.savez_compressed(root / "eval" / "part_000.npz", input_ids=rows[:64])
    return root


def repeated_corpus(n: int = 256, distinct: int = 4, seq_len: int = 32) -> np.ndarray:
    """A few fixed sequences of words, repeated: a tiny model can learn to fill their masks."""
    words = np.random.default_rng(0).integers(1000, 1064, size=(distinct, seq_len)).astype(np.int32)
    words[:, 0], words[:, -1] = 101, 102
    return words[np.arange(n) % distinct]


def test_bert_shards_are_read_memory_mapped_or_compressed(tmp_path):
    from case_runners.cases.bert.data import shard_files
    from case_runners.cases.bert.dataset import TokenShards

    rows = repeated_corpus(n=20)
    rows[3, 20:] = 0  # padding
    root = make_shards(tmp_path / "shards", rows)
    assert data_checker("bert")(str(root), {"seq_len": 32}) == []
    train_files, eval_files = shard_files(str(root))
    train = TokenShards(train_files)
    assert len(train) == 20
    ids, mask = train[3]
    assert ids.tolist() == rows[3].tolist() and mask.tolist() == [1] * 20 + [0] * 12
    assert train[13][0].tolist() == rows[13].tolist() and train[13][1].sum() == 32
    held_out = TokenShards(eval_files)
    assert held_out[9][0].tolist() == rows[9].tolist()


def test_bert_data_check_rejects_malformed_shards(tmp_path):
    check = data_checker("bert")
    root = make_shards(tmp_path / "shards", repeated_corpus(n=20))
    assert "seq_len 128" in " ".join(check(str(root), {"seq_len": 128}))
    np.savez(root / "part_002.npz", tokens=np.zeros((4, 32), dtype=np.int32))
    assert check(str(root), {"seq_len": 32}) == [
        f"{root / 'part_002.npz'}: no 'input_ids' array (has: tokens); expected *.npz shards with 'input_ids' "
        "(N, seq_len) integers and optional 'attention_mask' (N, seq_len)"]
    np.savez(root / "part_002.npz", input_ids=np.zeros((4, 32), dtype=np.float32),
             attention_mask=np.ones((4, 16)))
    problems = check(str(root), {"seq_len": 32})
    assert any("dtype <f4" in p for p in problems) and any("'attention_mask' has shape (4, 16)" in p for p in problems)
    (root / "part_002.npz").write_bytes(b"garbage")
    assert "not a readable .npz" in check(str(root), {"seq_len": 32})[0]
    only = tmp_path / "one"
    only.mkdir()
    np.savez(only / "a.npz", input_ids=np.zeros((2, 32), dtype=np.int32))
    assert "at least one training shard and one held-out shard" in check(str(only), {"seq_len": 32})[0]
    assert "init_checkpoint not found" in check(None, {"synthetic": True, "init_checkpoint": "bert.pt"})[0]


def flagperf_shards(root: Path, seq_len: int = 32, max_predictions: int = 5) -> tuple[Path, list[dict]]:
    """FlagPerf's layout: two training shards (one contiguous, one gzip) and an eval shard; their datasets."""
    shards = [masked_rows(token_rows(n, seq_len, seed), max_predictions, seed)
              for n, seed in ((20, 1), (12, 2), (8, 3))]
    write_shard(root / "2048_shards_uncompressed" / "part_00000.hdf5", shards[0], compressed=False)
    write_shard(root / "2048_shards_uncompressed" / "part_00001.hdf5", shards[1], compressed=True)
    write_shard(root / "eval_set_uncompressed" / "part_eval_10k.hdf5", shards[2], compressed=False)
    return root, shards


def test_bert_reads_flagperf_hdf5_shards_as_written(tmp_path):
    import h5py

    from case_runners.cases.bert.data import shard_files
    from case_runners.cases.bert.dataset import IGNORE, MaskedShards, build_datasets, load_hdf5_array

    root, written = flagperf_shards(tmp_path / "bert")
    params = {**base_config("bert")["params"], **TINY_BERT, "synthetic": False}
    assert data_checker("bert")(str(root), params) == []
    train_files, eval_files = shard_files(str(root))
    assert [p.name for p in train_files + eval_files] == ["part_00000.hdf5", "part_00001.hdf5", "part_eval_10k.hdf5"]
    with h5py.File(train_files[0]) as contiguous, h5py.File(train_files[1]) as gzipped:
        assert isinstance(load_hdf5_array(contiguous, "input_ids"), np.memmap)
        assert isinstance(load_hdf5_array(gzipped, "input_ids"), h5py.Dataset)
    train = MaskedShards(train_files)
    assert len(train) == 32
    for index, (shard, row) in enumerate([(0, r) for r in range(20)] + [(1, r) for r in range(12)]):
        sample, w = train[index], written[shard]
        used = w["masked_lm_positions"][row] != 0
        assert sample["input_ids"].tolist() == w["input_ids"][row].tolist()
        assert sample["attention_mask"].tolist() == w["input_mask"][row].tolist()
        assert sample["token_type_ids"].tolist() == w["segment_ids"][row].tolist()
        assert sample["positions"].tolist() == w["masked_lm_positions"][row].tolist()
        assert sample["labels"].tolist() == np.where(used, w["masked_lm_ids"][row], IGNORE).tolist()
    _, eval_set = build_datasets(str(root), params)
    ids, attention, positions, labels, segments = eval_set.tensors
    assert ids.tolist() == written[2]["input_ids"].tolist() and segments.tolist() == written[2]["segment_ids"].tolist()
    assert labels[0][0].item() == written[2]["masked_lm_ids"][0][0] != IGNORE


def test_bert_data_check_rejects_malformed_hdf5_shards(tmp_path, monkeypatch):
    import importlib.util

    check = data_checker("bert")
    root, written = flagperf_shards(tmp_path / "bert")
    assert any("'masked_lm_positions' has shape (20, 5); expected (N, 76) for max_predictions_per_seq 76" in p
               for p in check(str(root), {"seq_len": 32}))
    bad = root / "2048_shards_uncompressed" / "part_00002.hdf5"
    write_shard(bad, {k: v for k, v in written[0].items() if k != "segment_ids"}, compressed=False)
    assert check(str(root), {"seq_len": 32, "max_predictions_per_seq": 5})[0].startswith(
        f"{bad}: no dataset segment_ids (has: input_ids, input_mask, masked_lm_ids, masked_lm_positions, "
        "next_sentence_labels); expected FlagPerf's *.hdf5 shards")
    bad.write_bytes(b"not hdf5" * 100)
    problem = f"{bad}: not an HDF5 file (no HDF5 signature)"
    assert check(str(root), {"seq_len": 32, "max_predictions_per_seq": 5})[0].startswith(problem)
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "h5py" else find_spec(name, *a))
    assert check(str(root), {"seq_len": 64})[0].startswith(problem), "without h5py: the signature only"
    bad.unlink()
    assert check(str(root), {"seq_len": 64}) == []
    monkeypatch.undo()
    np.savez(root / "eval_set_uncompressed" / "part_eval.npz", input_ids=np.zeros((2, 32), dtype=np.int32))
    assert check(str(root), {"seq_len": 32, "max_predictions_per_seq": 5}) == [
        f"the shards mix formats ({root / '2048_shards_uncompressed' / 'part_00000.hdf5'}, "
        f"{root / 'eval_set_uncompressed' / 'part_eval.npz'}); use one: *.npz shards with 'input_ids' (N, seq_len) "
        "integers and optional 'attention_mask' (N, seq_len), or FlagPerf's *.hdf5 shards (2048_shards_uncompressed/, "
        "eval_set_uncompressed/) with input_ids, input_mask, segment_ids (N, seq_len), masked_lm_positions, "
        "masked_lm_ids (N, max_predictions_per_seq) and next_sentence_labels (N,)"]


def test_bert_trains_on_flagperf_hdf5_shards(tmp_path):
    root, _ = flagperf_shards(tmp_path / "bert")
    result = run_case(tmp_path, "bert", data_dir=str(root), max_steps=3, eval_every_steps=3, **TINY_BERT)
    assert (result["status"], result["stop_reason"], result["steps"], result["samples"]) == \
        ("not_converged", "max_steps", 3, 48)
    assert 0 <= result["final_metric"] <= 1


def test_bert_masking_follows_the_80_10_10_rule():
    from case_runners.cases.mlm import IGNORE, MASK_ID, mask_tokens

    ids = torch.randint(1000, 30522, (512, 128))
    ids[:, 0], ids[:, 100], ids[:, 101:] = 101, 102, 0
    attention = (ids != 0).long()
    out = mask_tokens(ids, attention, 0.15, 20, 30522, torch.Generator().manual_seed(0))
    used = out["labels"] != IGNORE
    assert (used.sum(1) == 15).all()  # round(0.15 x 99 words)
    positions = out["positions"][used]
    assert positions.min() >= 1 and positions.max() <= 99  # never [CLS], [SEP] or padding
    assert torch.equal(out["labels"][used], ids.gather(1, out["positions"])[used])
    picked = out["input_ids"].gather(1, out["positions"])[used]
    masked, kept = (picked == MASK_ID).float().mean(), (picked == out["labels"][used]).float().mean()
    assert 0.77 < masked < 0.83 and 0.08 < kept < 0.12
    unmasked = torch.ones_like(ids, dtype=torch.bool).scatter_(1, out["positions"], ~used)
    assert torch.equal(out["input_ids"][unmasked], ids[unmasked])


def test_bert_synthetic_smoke_run(tmp_path):
    result = run_case(tmp_path, "bert", synthetic=True, synthetic_samples=64, max_steps=3, **TINY_BERT)
    assert (result["status"], result["stop_reason"], result["steps"], result["samples"]) == \
        ("not_converged", "max_steps", 3, 48)


def test_bert_learns_masked_words_from_shards(tmp_path):
    root = make_shards(tmp_path / "shards", repeated_corpus())
    result = run_case(tmp_path, "bert", data_dir=str(root), target={"value": 0.4}, max_steps=400, lr=0.003,
                      eval_every_steps=25, hidden_dropout=0.0, attention_dropout=0.0, **TINY_BERT)
    assert (result["status"], result["stop_reason"]) == ("success", "target_reached")
    assert result["final_metric"] >= 0.4 > result["metrics_history"][0]["mlm_accuracy"]


TINY_CLASSIFIERS = {"mobilenetv2": {"image_size": 32, "depth_multiplier": 0.35},
                    "vit": {"image_size": 32, "patch_size": 8, "hidden_size": 32, "num_layers": 2, "num_heads": 2,
                            "intermediate_size": 64, "ema_decay": 0.9}}


@pytest.mark.parametrize("case", sorted(TINY_CLASSIFIERS))
def test_image_classifiers_train_on_a_tiny_image_folder(tmp_path, case):
    """The classifier base end to end on JPEGs: its recipe (vit: RandAugment, mixup/cutmix, smoothing, clipping, and
    here an EMA) on a tiny model."""
    root = make_image_folder(tmp_path / "imagenet")
    result = run_case(tmp_path, case, data_dir=str(root), num_classes=2, max_steps=2, batch_size=4,
                      eval_batch_size=8, num_workers=0, log_freq=1, **TINY_CLASSIFIERS[case])
    assert (result["status"], result["stop_reason"], result["steps"], result["samples"]) == \
        ("not_converged", "max_steps", 2, 8)
    assert 0 <= result["final_metric"] <= 100 and result["metrics_history"][-1]["acc5"] == 100.0
