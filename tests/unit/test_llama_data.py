"""The llama case's data layer: prepare-text on a generated tree, the token file check, packed sequences, sharded
sampling and synthetic tokens."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from case_runners.cases.llama.data import check_data_dir
from case_runners.cases.llama.dataset import (
    PackedSequences,
    ShardedSampler,
    TokenFile,
    build_datasets,
    held_out_loader,
    step_order,
    train_loader,
)
from case_runners.cases.llama.prepare import (
    BYTES_EOT,
    BYTES_VOCAB,
    held_out_rank,
    load_tokenizer,
    prepare_text,
    split_by_file,
    text_files,
)
from case_runners.cli.main import main as cli_main
from case_runners.tasks.training.dist import set_sampler_epoch
from process_helpers import SHORT_S

REPO = Path(__file__).resolve().parents[2]
WORDS = ("def", "return", "class", "import", "self", "value", "for", "in", "if", "else", "é", "日本", "λ")


def make_tree(root: Path, count: int = 16) -> dict[str, str]:
    """count .py files of generated code-like text under root (some in a subfolder), plus files the walk must
    leave out: a .txt, a .py under site-packages, a .py that is not UTF-8. Returns {relative path: text}."""
    rng = np.random.default_rng(0)
    texts = {}
    for i in range(count):
        rel = f"pkg{i % 3}/mod_{i:02d}.py" if i % 2 else f"mod_{i:02d}.py"
        lines = [" ".join(rng.choice(WORDS, size=int(rng.integers(2, 9)))) for _ in range(int(rng.integers(5, 30)))]
        texts[rel] = "\n".join(lines) + "\n"
    for rel, text in texts.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    (root / "notes.txt").write_text("not matched\n")
    (root / "site-packages" / "thirdparty").mkdir(parents=True)
    (root / "site-packages" / "thirdparty" / "x.py").write_text("installed, not stdlib\n")
    (root / "latin1.py").write_bytes("# caf\xe9\n".encode("latin-1"))
    return texts


def documents(tokens: np.ndarray, eot: int) -> list[list[int]]:
    """The ids between end-of-text tokens (every document ends with one)."""
    ends = np.flatnonzero(tokens == eot)
    assert len(ends) and ends[-1] == len(tokens) - 1
    return [tokens[start:end].tolist() for start, end in zip(np.r_[0, ends[:-1] + 1], ends)]


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("src")
    return root, make_tree(root)


@pytest.fixture(scope="module")
def bytes_dir(tree, tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("bytes")
    return out, prepare_text(tree[0], out, "bytes", held_out=0.25, log=lambda line: None)


@pytest.fixture(scope="module")
def bpe_dir(tree, tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("bpe")
    return out, prepare_text(tree[0], out, "bpe", vocab_size=320, held_out=0.25, log=lambda line: None)


def split_texts(tree, fraction: float = 0.25) -> dict[str, list[str]]:
    root, texts = tree
    utf8 = [p for p in text_files(root, "*.py") if p.as_posix() in texts]
    train, held = split_by_file(utf8, fraction)
    return {"train": [texts[p.as_posix()] for p in train], "val": [texts[p.as_posix()] for p in held]}


# -- prepare-text ---------------------------------------------------------------------------------------------

def test_bytes_round_trip(tree, bytes_dir):
    out, summary = bytes_dir
    assert check_data_dir(str(out), {"seq_len": 8, "vocab_size": BYTES_VOCAB}) == []
    assert not (out / "tokenizer.json").exists()
    expected = split_texts(tree)
    tokenizer = load_tokenizer(out, "bytes")
    for split in ("train", "val"):
        header = json.loads((out / f"{split}.json").read_text())
        assert header["format"] == "perfplay.tokens/1" and header["tokenizer"] == "bytes"
        assert (header["dtype"], header["vocab_size"], header["eot_id"]) == ("uint16", BYTES_VOCAB, BYTES_EOT)
        tokens = TokenFile(out, split).tokens
        assert header["tokens"] == len(tokens) and header["max_token_id"] == int(tokens.max()) == BYTES_EOT
        assert [tokenizer.decode(doc) for doc in documents(np.asarray(tokens), BYTES_EOT)] == expected[split]
    assert [(s.split, s.files) for s in summary["splits"]] == [(k, len(v)) for k, v in expected.items()]
    assert sum(s.skipped for s in summary["splits"]) == 1  # latin1.py
    assert 0 < summary["entropy"] < np.log(BYTES_VOCAB)


def test_bpe_round_trip_and_vocab(tree, bpe_dir):
    out, summary = bpe_dir
    assert (out / "tokenizer.json").is_file()
    tokenizer = load_tokenizer(out, "bpe")
    assert tokenizer.eot_id == 0 and tokenizer.vocab_size == summary["vocab_size"] <= 320
    assert check_data_dir(str(out), {"seq_len": 8, "vocab_size": 320}) == []
    expected = split_texts(tree)
    for split in ("train", "val"):
        header = json.loads((out / f"{split}.json").read_text())
        assert (header["tokenizer"], header["dtype"], header["vocab_size"]) == ("bpe", "uint16", tokenizer.vocab_size)
        tokens = np.asarray(TokenFile(out, split).tokens)
        assert [tokenizer.decode(doc) for doc in documents(tokens, tokenizer.eot_id)] == expected[split]
    # BPE merged something: fewer tokens than bytes
    train_bytes = sum(len(t.encode()) + 1 for t in expected["train"])
    assert summary["splits"][0].tokens < train_bytes


def test_split_is_by_file_and_deterministic(tree, bytes_dir, tmp_path):
    root, texts = tree
    files = text_files(root, "*.py")
    assert "site-packages/thirdparty/x.py" not in {p.as_posix() for p in files}
    assert files == sorted(files) and len(files) == len(texts) + 1  # + latin1.py
    train, held = split_by_file(files, 0.25)
    assert set(train).isdisjoint(held) and set(train) | set(held) == set(files)
    assert held == [p for p in files if held_out_rank(p) < 0.25]
    assert split_by_file(files, 0.25) == (train, held)
    # tiny trees still get one file in each split
    assert split_by_file(files[:2], 1e-9)[1] and split_by_file(files[:2], 1 - 1e-9)[0]
    again = tmp_path / "again"
    prepare_text(root, again, "bytes", held_out=0.25, log=lambda line: None)
    for name in ("train.bin", "val.bin", "train.json", "val.json"):
        assert (again / name).read_bytes() == (bytes_dir[0] / name).read_bytes(), name


def test_cli_prints_a_line_per_split_and_refuses_bad_options(tree, tmp_path, capsys):
    root, _ = tree
    assert cli_main(["prepare-text", str(root), str(tmp_path / "out"), "--tokenizer", "bytes",
                     "--held-out", "0.25"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("train: ") and "tokens" in lines[0] and lines[1].startswith("val: ")
    assert "unigram entropy" in lines[2] and "nats/token" in lines[2]
    bytes_vocab = ["--tokenizer", "bytes", "--vocab-size", "300"]
    assert cli_main(["prepare-text", str(root), str(tmp_path / "x"), *bytes_vocab]) == 2
    assert "bytes tokenizer's vocab is 257" in capsys.readouterr().err
    assert cli_main(["prepare-text", str(root / "nowhere"), str(tmp_path / "x")]) == 2
    assert "nowhere: not a directory" in capsys.readouterr().err
    assert cli_main(["prepare-text", str(root), str(tmp_path / "x"), "--held-out", "1.5"]) == 2
    assert "--held-out 1.5" in capsys.readouterr().err


# -- the check ------------------------------------------------------------------------------------------------

def copy_dir(src: Path, dst: Path) -> Path:
    dst.mkdir()
    for path in src.iterdir():
        (dst / path.name).write_bytes(path.read_bytes())
    return dst


def test_check_names_the_file_of_each_refusal(bytes_dir, tmp_path):
    good, _ = bytes_dir
    params = {"seq_len": 8, "vocab_size": BYTES_VOCAB}

    short = copy_dir(good, tmp_path / "short")
    data = (short / "train.bin").read_bytes()
    (short / "train.bin").write_bytes(data[:-2])
    tokens = len(data) // 2
    [problem] = check_data_dir(str(short), params)
    assert problem == (f"{short / 'train.bin'}: {len(data) - 2} bytes, but its header train.json says {tokens} "
                       f"uint16 tokens ({len(data)} bytes)")
    with pytest.raises(ValueError, match="train.bin: .* bytes, but its header"):
        TokenFile(short, "train")

    problems = check_data_dir(str(good), {**params, "vocab_size": 200})
    assert [p.split(":")[0] for p in problems] == [str(good / "train.json"), str(good / "val.json")]
    assert "vocab_size 257" in problems[0] and "vocab_size 200" in problems[0]

    val = json.loads((good / "val.json").read_text())["tokens"]
    [problem] = check_data_dir(str(good), {**params, "seq_len": val})
    assert problem.startswith(f"{good / 'val.bin'}: {val} tokens, fewer than one sequence of seq_len {val}")

    lying = copy_dir(good, tmp_path / "lying")
    header = json.loads((lying / "val.json").read_text())
    (lying / "val.json").write_text(json.dumps({**header, "max_token_id": 300, "dtype": "int8"}))
    problems = check_data_dir(str(lying), params)
    assert any("val.json: key 'dtype' is 'int8'; allowed: uint16, uint32" in p for p in problems), problems
    (lying / "val.json").write_text(json.dumps({**header, "max_token_id": 300}))
    [problem] = check_data_dir(str(lying), params)
    assert problem == f"{lying / 'val.json'}: max_token_id 300 is not below its vocab_size 257"

    # a header that hides a large id: TokenFile finds it when it opens the file
    hidden = copy_dir(good, tmp_path / "hidden")
    ids = np.fromfile(hidden / "val.bin", dtype="<u2")
    ids[3] = 1000
    ids.tofile(hidden / "val.bin")
    assert check_data_dir(str(hidden), params) == []
    with pytest.raises(ValueError, match=r"val\.bin: holds token id 1000, not below the vocab_size 257"):
        TokenFile(hidden, "val", BYTES_VOCAB)

    (hidden / "train.json").unlink()
    assert check_data_dir(str(hidden), params)[0].startswith(f"{hidden / 'train.json'}: missing; expected train.bin")
    assert check_data_dir(None, params)[0].startswith("llama needs data_dir")
    assert check_data_dir(None, {**params, "synthetic": True}) == []


def test_data_and_prepare_import_no_numpy_torch_or_tokenizers():
    code = ("import sys, case_runners.cases.llama.data, case_runners.cases.llama.prepare, case_runners.cli.main\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'numpy', 'tokenizers'))\n"
            "print(bad); raise SystemExit(1 if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                          timeout=SHORT_S)
    assert done.returncode == 0, done.stdout + done.stderr


# -- sequences and sampling -----------------------------------------------------------------------------------

def test_packed_sequences_shift_labels_by_one():
    tokens = np.arange(23, dtype=np.uint16)
    data = PackedSequences(tokens, seq_len=5)
    assert len(data) == 4  # (23 - 1) // 5
    input_ids, labels = data[1]
    assert input_ids.dtype == labels.dtype == torch.int64
    assert input_ids.tolist() == [5, 6, 7, 8, 9] and labels.tolist() == [6, 7, 8, 9, 10]
    assert data[3][1].tolist()[-1] == 20
    with pytest.raises(IndexError):
        data[4]


@pytest.mark.parametrize(("length", "world_size"), [(12, 1), (12, 3), (14, 4)])
def test_sharding_gives_ranks_disjoint_equal_shares(length, world_size):
    shares = [list(ShardedSampler(length, rank, world_size, seed=7)) for rank in range(world_size)]
    assert {len(s) for s in shares} == {length // world_size}
    seen = [i for s in shares for i in s]
    assert len(set(seen)) == len(seen) == length - length % world_size
    if length % world_size == 0:
        assert sorted(seen) == list(range(length))
    assert shares == [list(ShardedSampler(length, rank, world_size, seed=7)) for rank in range(world_size)]
    later = ShardedSampler(length, 0, world_size, seed=7)
    later.set_epoch(1)
    assert list(later) != shares[0] or length // world_size < 2


def test_loaders_cover_the_data_rank_by_rank():
    data = PackedSequences(np.arange(4 * 12 + 1), seq_len=4)
    batches = [list(train_loader(data, 2, rank, 2, seed=0)) for rank in range(2)]
    firsts = sorted(int(x[0]) for rank in batches for input_ids, _ in rank for x in input_ids)
    assert firsts == list(range(0, 48, 4)) and len(batches[0]) == len(batches[1]) == 3
    held = [[int(x[0]) for input_ids, _ in held_out_loader(data, 5, rank, 2) for x in input_ids] for rank in range(2)]
    assert held == [list(range(0, 48, 8)), list(range(4, 48, 8))]


def test_a_vendor_stacks_data_order_is_the_batches_the_trainer_draws():
    """step_order (a vendor stack's inputs: data.order) lists, step by step over three epochs, the sequences of the
    batches the pytorch stack's train_loader yields each rank with the trainer's epochs (1, 2, ...), the last batch
    of an epoch short."""
    data = PackedSequences(np.arange(4 * 11 + 1), seq_len=4)  # 11 sequences: 5 per rank, batches of 2, 2, 1
    for rank in range(2):
        loader, drawn = train_loader(data, 2, rank, 2, seed=3), []
        for epoch in (1, 2, 3):
            set_sampler_epoch(loader, epoch)
            drawn += [[int(x[0]) // 4 for x in input_ids] for input_ids, _ in loader]
        assert step_order(data, 2, rank, 2, seed=3, steps=8) == drawn[:8]
        assert [len(b) for b in drawn[:8]] == [2, 2, 1, 2, 2, 1, 2, 2] and drawn[:3] != drawn[3:6]


def test_synthetic_tokens_are_seeded_and_below_the_vocab():
    params = {"synthetic": True, "seq_len": 16, "vocab_size": 50, "seed": 3, "synthetic_samples": 10,
              "eval_samples": 4}
    train, val = build_datasets(None, params)
    assert (len(train), len(val)) == (10, 4)
    ids = np.asarray(train.tokens)
    assert ids.min() >= 0 and ids.max() < 50 and len(set(ids.tolist())) > 25
    again, _ = build_datasets(None, params)
    assert all((train[i][0] == again[i][0]).all() for i in range(10))
    assert not (train[0][0] == val[0][0]).all()
    other, _ = build_datasets(None, {**params, "seed": 4})
    assert not (train[0][0] == other[0][0]).all()


def test_build_datasets_reads_a_prepared_dir(bpe_dir):
    out, summary = bpe_dir
    train, val = build_datasets(str(out), {"seq_len": 8, "vocab_size": 320})
    assert len(train) == (summary["splits"][0].tokens - 1) // 8 and len(val) >= 1
    with pytest.raises(ValueError, match="larger than the model's vocab_size 100"):
        build_datasets(str(out), {"seq_len": 8, "vocab_size": 100})
