"""The sequence-to-sequence cases (t5_small, transformer) and their shared generation (tasks/training/seq2seq.py):
the models at the standard shape (parameters against the published figures, FLOPs against the READMEs, on the meta
device), greedy generation, the ROUGE and BLEU evaluators, FlagPerf's data layouts read and checked, the importer
mapping FlagPerf's configs, and a short real run of each through the direct runner (a record with throughput, the
FLOPs and the metric)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

import real_runs
from case_context import cpu_context
from case_runners.cases.t5_small import case as t5_case
from case_runners.cases.t5_small.case import T5SmallCase, padding_mask
from case_runners.cases.t5_small.data import check_data_dir
from case_runners.cases.t5_small.dataset import EOS_ID, PAD_ID
from case_runners.cases.transformer import case as transformer_case
from case_runners.cases.transformer.case import TransformerCase, detokenize
from case_runners.cases.transformer.data import check_data_dir as check_wmt_dir
from case_runners.cases.transformer.dataset import IndexedSentences
from case_runners.core.paths import project_root
from case_runners.plan.layering import load_case_base
from case_runners.tasks.training.flops import count_per_sample, meta_like
from case_runners.tasks.training.seq2seq import IGNORE, Decoding, generate, texts
from case_runners.vendors.flagperf.importer import import_flagperf

REPO = project_root()
CASES = ("t5_small", "transformer")
T5_SMALL_PARAMS = 60_506_624  # t5-small's model card (transformers' T5ForConditionalGeneration, embeddings tied)
T5_SMALL_FLOPS = 208_926_670_848  # training FLOPs per sample at 1024 + 128 tokens (README.md)
TINY_T5 = {"source_len": 16, "target_len": 8, "max_gen_length": 8, "vocab_size": 200, "d_model": 32, "d_kv": 8,
           "d_ff": 64, "num_layers": 2, "num_heads": 4}
LOAD_CHECKPOINT = t5_case.load_checkpoint
WORDS = ["the", "cat", "sat", "on", "mat", "dog", "ran", "home", "a", "red"]


def params(case: str, **overrides: object) -> dict:
    return {**load_case_base(case, REPO)[0]["params"], "num_workers": 0, **overrides}


def test_t5_small_is_t5_smalls_size_and_the_readmes_flops() -> None:
    case = T5SmallCase(params("t5_small"), cpu_context())
    with torch.device("meta"):
        assert sum(p.numel() for p in case.build_model().parameters()) == T5_SMALL_PARAMS
    batch = {"input_ids": torch.zeros(2, 1024, dtype=torch.long), "attention_mask": torch.ones(2, 1024),
             "labels": torch.zeros(2, 128, dtype=torch.long)}
    assert count_per_sample(case, meta_like(batch)) == T5_SMALL_FLOPS
    base = load_case_base("t5_small", REPO)[0]
    assert (base["params"]["source_len"], base["params"]["target_len"]) == (1024, 128)
    assert base["flops_per_sample"] == "counted"


def tiny_t5(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return T5SmallCase(params("t5_small", **TINY_T5), cpu_context()).build_model().eval()


def test_the_padding_mask_is_the_one_transformers_builds() -> None:
    model = tiny_t5()
    ids, labels = torch.randint(3, 200, (2, 16)), torch.randint(3, 200, (2, 8))
    mask = torch.ones(2, 16, dtype=torch.long)
    mask[0, 9:] = 0
    ids[0, 9:] = PAD_ID
    ours = model(input_ids=ids, attention_mask=padding_mask(mask), labels=labels).loss
    assert ours.item() == pytest.approx(model(input_ids=ids, attention_mask=mask, labels=labels).loss.item())
    assert ours.item() != pytest.approx(model(input_ids=ids, labels=labels).loss.item())  # the mask does mask


def test_greedy_generation_picks_the_likeliest_token_at_each_step() -> None:
    model = tiny_t5(seed=3)
    ids = torch.randint(3, 200, (3, 16))
    mask = torch.ones_like(ids)
    out = generate(torch.nn.DataParallel(model), ids, mask, Decoding(max_length=6))  # unwrapped: the model's own
    decoded = torch.zeros(3, 1, dtype=torch.long)  # the decoder's start token, <pad>
    finished = torch.zeros(3, dtype=torch.bool)
    with torch.no_grad():
        for _ in range(5):
            logits = model(input_ids=ids, attention_mask=mask, decoder_input_ids=decoded).logits[:, -1]
            step = torch.where(finished, PAD_ID, logits.argmax(-1))
            finished |= step == EOS_ID
            decoded = torch.cat([decoded, step[:, None]], 1)
    assert torch.equal(out, decoded[:, :out.shape[1]])
    assert out.shape[1] == 6 or finished.all()
    beams = generate(model, ids, mask, Decoding(max_length=6, num_beams=4))
    assert beams.shape[0] == 3 and beams[:, 0].eq(PAD_ID).all()


def test_texts_drop_the_special_ids_and_the_ignored_labels() -> None:
    rows = torch.tensor([[0, 7, 8, 1, 0, 0], [9, 1, IGNORE, IGNORE, IGNORE, IGNORE]])
    assert texts(rows, (PAD_ID, EOS_ID), None) == ["7 8", "9"]
    assert texts(rows, (PAD_ID, EOS_ID), lambda ids: f" w{ids} ") == ["w[7, 8]", "w[9]"]


def word_tokenizer(path: Path) -> dict[str, int]:
    """A tokenizer.json (tokenizers' format, as FlagPerf's model/ has t5-small's) over WORDS, t5's special ids."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    vocab = {"<pad>": PAD_ID, "</s>": EOS_ID, "<unk>": 2, **{w: 3 + i for i, w in enumerate(WORDS)}}
    tokenizer = Tokenizer(WordLevel(vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = Whitespace()
    tokenizer.add_special_tokens(["<pad>", "</s>", "<unk>"])
    path.parent.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(path))
    return vocab


def test_rouge_is_rouge_scores_f_measure_of_the_decoded_summaries(tmp_path: Path, monkeypatch) -> None:
    vocab = word_tokenizer(tmp_path / "model" / "tokenizer.json")
    case = T5SmallCase(params("t5_small", **TINY_T5, batch_size=4), cpu_context(str(tmp_path)))
    monkeypatch.setattr(t5_case, "build_datasets", lambda data_dir, p: ([0] * 8, [0] * 2))
    case.build_data()

    def words(text: str, width: int, pad: int) -> list[int]:
        ids = [vocab[w] for w in text.split()] + [EOS_ID]
        return ids + [pad] * (width - len(ids))

    labels = torch.tensor([words("the cat sat on the mat", 8, IGNORE), words("a red dog ran home", 8, IGNORE)])
    summaries = torch.tensor([[PAD_ID, *words("the cat sat on the mat", 7, PAD_ID)],
                              [PAD_ID, *words("the dog ran", 7, PAD_ID)]])
    monkeypatch.setattr(t5_case, "generate", lambda model, ids, mask, decoding: summaries)
    batch = {"input_ids": torch.zeros(2, 16, dtype=torch.long), "attention_mask": torch.ones(2, 16), "labels": labels}
    scores = case.evaluate(torch.nn.Identity(), [batch])
    # Pair 1 matches exactly; pair 2 shares 2 of its 3 words with a 5-word reference: P 2/3, R 2/5, F 1/2.
    assert scores["rouge1"] == pytest.approx((100 + 50) / 2)
    assert scores["rouge2"] == pytest.approx((100 + 100 * (2 * 0.5 * 0.25 / 0.75)) / 2)  # "dog ran": P 1/2, R 1/4
    assert scores["rougeL"] == pytest.approx(scores["rouge1"])


def flagperf_t5_dir(root: Path, rows: int = 12) -> Path:
    """FlagPerf's t5_small_train layout at the tiny shape: the .npz splits, tokenizer.json and model.safetensors."""
    from safetensors.torch import save_file

    vocab = word_tokenizer(root / "model" / "tokenizer.json")
    rng = np.random.default_rng(0)
    (root / "dataset").mkdir(parents=True)
    for split in ("train", "eval"):
        ids = rng.integers(3, len(vocab), (rows, 16))
        mask = np.ones_like(ids)
        ids[::2, 10:], mask[::2, 10:] = PAD_ID, 0
        labels = np.full((rows, 8), IGNORE)
        labels[:, :4], labels[:, 4] = rng.integers(3, len(vocab), (rows, 4)), EOS_ID
        np.savez(root / "dataset" / f"{split}_dataset.npz", input_ids=ids, attention_mask=mask, labels=labels)
    state = {k: v.contiguous() for k, v in tiny_t5(seed=5).state_dict().items() if k not in t5_case.TIED_KEYS}
    save_file(state, str(root / "model" / "model.safetensors"))
    return root


def test_t5_small_fine_tunes_from_flagperfs_layout(tmp_path: Path, monkeypatch) -> None:
    """The whole data path in one rank: FlagPerf's .npz splits, its checkpoint and tokenizer, ROUGE on the eval."""
    from case_runners.rank.worker import main
    from record_helpers import resolved, write_resolved

    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    root = flagperf_t5_dir(tmp_path / "t5_small_train")
    assert check_data_dir(str(root), params("t5_small", **TINY_T5)) == []
    loaded: list[Path] = []
    monkeypatch.setattr(t5_case, "load_checkpoint", lambda model, path: loaded.append(path) or
                        LOAD_CHECKPOINT(model, path))
    config = resolved("t5_small", data_dir=str(root), params={**TINY_T5, "max_steps": 2, "batch_size": 4,
                                                                "eval_batch_size": 8, "num_workers": 0})
    assert main(str(write_resolved(tmp_path / "config.json", config)), str(tmp_path / "logs")) == 0
    assert loaded == [root / "model" / "model.safetensors"]
    result = json.loads((tmp_path / "logs" / "rank0.result.json").read_text())
    assert (result["metric"], result["steps"], result["samples"]) == ("rouge1", 2, 8)
    evaluated = result["metrics_history"][-1]
    assert {"rouge1", "rouge2", "rougeL"} <= set(evaluated) and 0 <= evaluated["rouge1"] <= 100
    assert result["flops"]["per_sample"] > 0


def test_t5_small_refuses_a_checkpoint_of_another_shape(tmp_path: Path) -> None:
    root = flagperf_t5_dir(tmp_path / "t5")
    model = T5SmallCase(params("t5_small", **{**TINY_T5, "d_ff": 48}), cpu_context()).build_model()
    with pytest.raises(ValueError, match=r"model.safetensors: a T5 of another shape than this config's: "
                                         r"decoder.block.0.layer.2.DenseReluDense.wi.weight \(64, 32\) \(this "
                                         r"config's: \(48, 32\)\)"):
        t5_case.load_checkpoint(model, root / "model" / "model.safetensors")


def test_t5_small_data_check_names_the_file_the_key_and_the_shape(tmp_path: Path) -> None:
    root = flagperf_t5_dir(tmp_path / "t5")
    wanted = params("t5_small", **TINY_T5)
    assert check_data_dir(str(root), {**wanted, "target_len": 9}) == [
        f"{root}/dataset/train_dataset.npz: 'labels' has shape (12, 8); expected (N, 9) for target_len 9, "
        "N = 12 as 'input_ids'",
        f"{root}/dataset/eval_dataset.npz: 'labels' has shape (12, 8); expected (N, 9) for target_len 9, "
        "N = 12 as 'input_ids'"]
    (root / "model" / "tokenizer.json").unlink()
    (root / "dataset" / "eval_dataset.npz").unlink()
    np.savez(root / "dataset" / "train_dataset.npz", input_ids=np.zeros((2, 16), dtype=np.int64))
    problems = check_data_dir(str(root), wanted)
    assert problems[0].startswith(f"{root}/model/tokenizer.json: missing: the tokenizer")
    assert problems[1].startswith(f"{root}/dataset/train_dataset.npz: no 'attention_mask', 'labels' array "
                                  "(has: input_ids); expected FlagPerf's t5_small_train layout")
    assert problems[2].startswith(f"{root}/dataset/eval_dataset.npz: missing")
    (root / "model" / "model.safetensors").unlink()
    assert "init_checkpoint not found" in check_data_dir(str(root), wanted)[0]
    assert check_data_dir(str(root), {**wanted, "synthetic": True}) == []


def test_import_flagperf_maps_flagperfs_t5_small_configs(tmp_path: Path) -> None:
    folder = tmp_path / "FlagPerf" / "training" / "nvidia" / "t5_small-pytorch" / "config"
    folder.mkdir(parents=True)
    (folder / "config_A100x1x8.py").write_text("train_batch_size = 32\neval_batch_size = 32\n")
    import_flagperf(tmp_path / "FlagPerf", tmp_path / "out")
    written = yaml.safe_load((tmp_path / "out/vendor/nvidia/cases/t5_small/config_A100x1x8.yaml").read_text())
    assert written == {"batch_size": 32, "eval_batch_size": 32}


@pytest.fixture(scope="module")
def functional_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return real_runs.functional_run(tmp_path_factory.mktemp("seq2seq_cases"), *CASES)


@pytest.mark.parametrize("case", CASES)
def test_a_short_run_records_throughput_flops_and_the_cases_metric(functional_run: Path, case: str) -> None:
    record, evaluated = real_runs.short_round(functional_run, case)
    metrics = record["metrics"]
    # t5_small's sample is a pair (3 batches of 4); transformer's a target token, 4 to 24 a pair (max_len 24)
    assert metrics["samples"] == 12 if case == "t5_small" else metrics["samples"] in range(12 * 4, 12 * 24 + 1)
    assert 0 <= metrics["final_metric"] <= 100
    assert {"rouge1", "rouge2", "rougeL"} <= set(evaluated) if case == "t5_small" else evaluated["sentences"] == 16


# -- transformer ---------------------------------------------------------------------------------------------------

TRANSFORMER_PARAMS = 212_975_616  # 210,878,464 trained, and the two sinusoidal position tables (1024 x 1024 each)
TRANSFORMER_FLOPS = 1_271_169_024  # training FLOPs per target token, pairs of 32 + 32 tokens (README.md)
TINY_TRANSFORMER = {"max_len": 16, "max_gen_length": 10, "num_beams": 2, "vocab_size": 24, "d_model": 32,
                    "num_layers": 2, "num_heads": 4, "ffn_dim": 64}
# A joined BPE dictionary as fairseq writes it ("<symbol> <count>"; ids from 4, after its specials).
BPE_SYMBOLS = ["das", "ist", "ein", "Fa@@", "hr@@", "rad", "@-@", "Weg", "&quot;", "gut", ".", "the", "bike", "is",
               "good", "path"]
SENTENCES = [("the bike is good .", "das ist ein Fa@@ hr@@ rad ."), ("the path is good .", "das ist ein Weg ."),
             ("the bike path", "Fa@@ hr@@ rad @-@ Weg"), ("is good", "ist &quot; gut &quot;")]


def test_transformer_is_transformer_bigs_size_and_the_readmes_flops() -> None:
    case = TransformerCase(params("transformer"), cpu_context())
    with torch.device("meta"):
        model = case.build_model()
    assert sum(p.numel() for p in model.parameters()) == TRANSFORMER_PARAMS
    assert sum(p.numel() for p in model.parameters() if p.requires_grad) == 210_878_464
    batch = {"input_ids": torch.zeros(2, 32, dtype=torch.long), "attention_mask": torch.ones(2, 32),
             "labels": torch.zeros(2, 32, dtype=torch.long), "ntokens": 64}
    assert count_per_sample(case, meta_like(batch)) == TRANSFORMER_FLOPS


def test_detokenize_joins_subwords_and_undoes_moses_escapes() -> None:
    assert detokenize("das ist ein Fa@@ hr@@ rad @-@ Weg &quot; gut &quot; .") == 'das ist ein Fahrrad-Weg " gut " .'


def write_fairseq_split(prefix: Path, sentences: list[list[int]]) -> None:
    """One side of a split as fairseq's IndexedDatasetBuilder writes it: int32 ids + 1, then the .idx."""
    np.concatenate([np.array(s) + 1 for s in sentences]).astype("<i4").tofile(f"{prefix}.bin")
    sizes = np.array([len(s) for s in sentences], dtype="<i8")
    with open(f"{prefix}.idx", "wb") as f:
        f.write(b"TNTIDX\x00\x00" + struct.pack("<QQQQQ", 1, 4, 4, len(sentences), len(sentences)))
        f.write(np.arange(len(sentences) + 1, dtype="<i8").tobytes())
        f.write(np.concatenate([[0], np.cumsum(sizes)]).astype("<i8").tobytes())
        f.write(sizes.tobytes())


def flagperf_wmt_dir(root: Path) -> Path:
    """FlagPerf's WMT14 en-de dir at a tiny scale: dictionaries, fairseq's binarised splits, raw references."""
    root.mkdir(parents=True)
    ids = {symbol: 4 + i for i, symbol in enumerate(BPE_SYMBOLS)}
    for lang in ("en", "de"):
        (root / f"dict.{lang}.txt").write_text("".join(f"{s} {100 - i}\n" for i, s in enumerate(BPE_SYMBOLS)))
    for split, repeat in (("train", 4), ("test", 1)):
        for side, lang in enumerate(("en", "de")):
            write_fairseq_split(root / f"{split}.en-de.{lang}",
                                [[ids[w] for w in pair[side].split()] + [2] for pair in SENTENCES * repeat])
    (root / "test.raw.de").write_text("".join(f"{detokenize(de)}\n" for _, de in SENTENCES))
    return root


def test_transformer_reads_fairseqs_binarised_splits(tmp_path: Path) -> None:
    root = flagperf_wmt_dir(tmp_path / "wmt14")
    sentences = IndexedSentences(root / "test.en-de.de.idx", root / "test.en-de.de.bin")
    assert len(sentences) == 4
    assert sentences[2].tolist() == [7, 8, 9, 10, 11, 2]  # Fa@@ hr@@ rad @-@ Weg </s>
    assert check_wmt_dir(str(root), params("transformer", **TINY_TRANSFORMER)) == []


def test_bleu_is_sacrebleus_on_the_translations_in_the_test_splits_order(tmp_path: Path, monkeypatch) -> None:
    root = flagperf_wmt_dir(tmp_path / "wmt14")
    case = TransformerCase(params("transformer", **TINY_TRANSFORMER, batch_size=4), cpu_context(str(root)))
    _, test = case.build_data()
    batches = list(test)
    assert [b["index"].tolist() for b in batches] == [[0, 1, 2, 3]]
    translations = {0: "das ist ein Fa@@ hr@@ rad .", 1: "das ist ein Weg .", 2: "das ist ein Weg .",
                    3: "ist &quot; gut &quot;"}
    ids = {symbol: 4 + i for i, symbol in enumerate(BPE_SYMBOLS)}

    def beams(model: object, source: torch.Tensor, mask: torch.Tensor, decoding: Decoding) -> torch.Tensor:
        rows = [[2, *(ids[w] for w in translations[i].split()), 2] for i in range(4)]
        return torch.tensor([row + [1] * (10 - len(row)) for row in rows])  # </s> starts, <pad> after the end

    monkeypatch.setattr(transformer_case, "generate", beams)
    scores = case.evaluate(torch.nn.Identity(), reversed(batches))
    import sacrebleu

    references = (root / "test.raw.de").read_text().splitlines()
    expected = sacrebleu.corpus_bleu(["das ist ein Fahrrad .", "das ist ein Weg .", "das ist ein Weg .", 'ist " gut "'],
                                     [references], lowercase=True).score
    assert scores == {"bleu": pytest.approx(expected), "sentences": 4.0} and 30 < expected < 100


def test_transformer_trains_on_flagperfs_layout(tmp_path: Path, monkeypatch) -> None:
    from case_runners.rank.worker import main
    from record_helpers import resolved, write_resolved

    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    root = flagperf_wmt_dir(tmp_path / "wmt14")
    config = resolved("transformer", data_dir=str(root), params={**TINY_TRANSFORMER, "max_steps": 2, "batch_size": 4,
                                                                 "eval_batch_size": 2, "num_workers": 0})
    assert main(str(write_resolved(tmp_path / "config.json", config)), str(tmp_path / "logs")) == 0
    result = json.loads((tmp_path / "logs" / "rank0.result.json").read_text())
    assert (result["metric"], result["steps"]) == ("bleu", 2)
    assert result["samples"] in range(2 * 4 * 5, 2 * 4 * 8 + 1)  # target tokens: 5 to 8 a pair, </s> included
    assert result["metrics_history"][-1]["sentences"] == 4 and result["flops"]["per_sample"] > 0


def test_transformer_data_check_names_the_file_and_the_key(tmp_path: Path) -> None:
    root = flagperf_wmt_dir(tmp_path / "wmt14")
    wanted = params("transformer", **TINY_TRANSFORMER)
    assert check_wmt_dir(str(root), {**wanted, "vocab_size": 16}) == [
        f"{root}/dict.en.txt: 20 ids (with fairseq's 4 specials), more than the key vocab_size 16",
        f"{root}/dict.de.txt: 20 ids (with fairseq's 4 specials), more than the key vocab_size 16"]
    (root / "test.raw.de").write_text("one line\n")
    (root / "train.en-de.de.idx").write_bytes(b"not an index")
    assert check_wmt_dir(str(root), wanted) == [
        f"{root}/train.en-de.de.idx: not a fairseq .idx (no b'TNTIDX\\x00\\x00' header); expected FlagPerf's WMT14 "
        "en-de dir (fairseq's preprocess.py, joined dictionary): dict.en.txt, dict.de.txt, "
        "{train,test}.en-de.{en,de}.idx/.bin and test.raw.de",
        f"{root}/test.raw.de: 1 lines for the test split's 4 sentences"]
    assert check_wmt_dir(None, wanted)[0].startswith("transformer needs data_dir with FlagPerf's WMT14 en-de dir")
    assert check_wmt_dir(None, {**wanted, "synthetic": True}) == []


def test_import_flagperf_maps_flagperfs_transformer_config(tmp_path: Path) -> None:
    folder = tmp_path / "FlagPerf" / "training" / "nvidia" / "transformer-pytorch" / "config"
    folder.mkdir(parents=True)
    (folder / "config_common.py").write_text('vendor = "nvidia"\ndist_backend = "nccl"\n')
    (folder / "config_A100x1x8.py").write_text("from config_common import *\n\nmax_tokens = 10240\nmax_epoch = 30\n"
                                               "lr = [0.000846]\n")
    kunlunxin = tmp_path / "FlagPerf" / "training" / "kunlunxin" / "transformer-pytorch" / "config"
    kunlunxin.mkdir(parents=True)
    (kunlunxin / "config_R300x1x1.py").write_text("max_update = 6500\n")  # fairseq's max steps, as kunlunxin's
    report = [str(item) for item in import_flagperf(tmp_path / "FlagPerf", tmp_path / "out").items]
    written = yaml.safe_load((tmp_path / "out/vendor/nvidia/cases/transformer/config_A100x1x8.yaml").read_text())
    assert written == {"max_tokens": 10240, "max_epochs": 30, "lr": 0.000846}  # fairseq's lr list: its one value
    written = yaml.safe_load((tmp_path / "out/vendor/kunlunxin/cases/transformer/config_R300x1x1.yaml").read_text())
    assert written == {"max_steps": 6500}
    assert not [line for line in report if line.startswith("no counterpart") and "config_A100x1x8.py:" in line]


STORY = """{article}

@highlight

{first}

@highlight

{second}
"""


def test_prepare_summaries_writes_flagperfs_layout_from_story_files(tmp_path: Path) -> None:
    """CNN/DailyMail's .story files (abisee's format) through `prepare-summaries` into the layout the case reads."""
    from tokenizers import Tokenizer

    from case_runners.cli.main import main as cli

    words = ["the", "council", "voted", "on", "a", "new", "park", "near", "river", "city", "plan", "money"]
    rng = np.random.default_rng(0)
    for i in range(12):
        sentence = lambda n: " ".join(rng.choice(words, n)) + " ."  # noqa: E731 - a story's line
        folder = tmp_path / "stories" / ("cnn" if i % 2 else "dailymail") / "stories"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{i:04x}.story").write_text(STORY.format(article=f"{sentence(30)}\n\n{sentence(20)}",
                                                            first=sentence(3), second=sentence(2)))
    (tmp_path / "stories" / "cnn" / "stories" / "empty.story").write_text("@highlight\n\nno article\n")
    out = tmp_path / "t5_small_train"
    assert cli(["prepare-summaries", str(tmp_path / "stories"), str(out), "--vocab-size", "40", "--source-len", "64",
                "--target-len", "96"]) == 0
    wanted = params("t5_small", **{**TINY_T5, "source_len": 64, "target_len": 96}, init_checkpoint="")
    assert check_data_dir(str(out), wanted) == []
    tokenizer = Tokenizer.from_file(str(out / "model" / "tokenizer.json"))
    assert [tokenizer.id_to_token(i) for i in range(3)] == ["<pad>", "</s>", "<unk>"]
    train, held = (np.load(out / "dataset" / f"{split}_dataset.npz") for split in ("train", "eval"))
    assert len(train["input_ids"]) + len(held["input_ids"]) == 12 and len(held["input_ids"]) >= 1  # the empty one left
    source = tokenizer.decode(train["input_ids"][0].tolist(), skip_special_tokens=True)
    assert source.startswith("summarize: ") and train["attention_mask"][0].sum() == (train["input_ids"][0] != 0).sum()
    labels = train["labels"][0]
    kept = labels[labels != -100].tolist()
    assert kept[-1] == 1 and (labels == -100).any()  # </s> ends the summary, -100 pads it
    assert tokenizer.decode(kept, skip_special_tokens=True).count(" .") == 2  # the two highlights


def test_transformer_batches_pairs_of_like_length_within_max_tokens_as_fairseq() -> None:
    from case_runners.cases.transformer.dataset import TokenBatches

    lengths = np.array([5, 30, 6, 29, 7, 31, 5, 100, 8, 28])
    batches = TokenBatches(lengths, max_tokens=64, max_sentences=3, rank=0, world_size=1, seed=0)
    padded = [len(b) * max(lengths[b]) for b in batches.batches]
    assert sorted(sorted(lengths[b].tolist()) for b in batches.batches) == [
        [5, 5, 6], [7, 8], [28, 29], [30, 31], [100]]  # like lengths together; the long pair alone
    assert all(p <= 64 for p, b in zip(padded, batches.batches) if len(b) > 1)
    one, two = (TokenBatches(lengths, 64, 3, rank, 2, seed=0) for rank in (0, 1))
    assert len(one) == len(two) == 2 and not {i for b in one for i in b} & {i for b in two for i in b}
    epochs = []
    for epoch in range(6):
        one.set_epoch(epoch)
        epochs.append(list(one))
    assert len({str(e) for e in epochs}) > 1, "the batches are shuffled each epoch"
