"""The llama case's Megatron indexed datasets (.bin + .idx): files written here byte for byte per megatron-core's
layout (write_indexed), read into the same samples as perfplay's token files; each broken file refused by the
host's check with its name, and again by the rank."""

from __future__ import annotations

import pickle
import struct
from pathlib import Path

import numpy as np
import pytest

from case_runners.cases.llama.data import check_data_dir, split_ranges
from case_runners.cases.llama.dataset import IndexedDataset, build_datasets
from case_runners.cases.llama.prepare import write_split
from case_runners.host.data_check import data_problems
from case_runners.plan.run_plan import make_plan
from megatron_indexed import write_indexed

EOT = 256


def texts(count: int, seed: int) -> list[list[int]]:
    """count documents of byte ids, each ended by end-of-text (prepare-text's bytes tokens)."""
    rng = np.random.default_rng(seed)
    return [[*rng.integers(32, 127, size=int(rng.integers(20, 60))).tolist(), EOT] for _ in range(count)]


TRAIN, VAL = texts(16, 0), texts(4, 1)
PARAMS = {"seq_len": 8, "vocab_size": 320, "data_split": [16, 4, 0]}


@pytest.fixture
def megatron_dir(tmp_path: Path) -> Path:
    """One prefix of the 20 documents; data_split [16, 4, 0] holds out the last 4 (round(0.8 x 20) = 16)."""
    out = tmp_path / "megatron"
    out.mkdir()
    write_indexed(out / "corpus_text_document", TRAIN + VAL)
    return out


def test_the_same_tokens_give_the_same_samples_in_both_formats(megatron_dir: Path, tmp_path: Path):
    perfplay = tmp_path / "perfplay"
    perfplay.mkdir()
    for split, docs in (("train", TRAIN), ("val", VAL)):
        tokens = np.concatenate([np.asarray(d, np.uint16) for d in docs])
        write_split(perfplay, split, tokens, {"format": "perfplay.tokens/1", "dtype": "uint16", "tokens": len(tokens),
                                              "vocab_size": 257, "max_token_id": int(tokens.max()),
                                              "tokenizer": "bytes", "source": "test"})
    assert check_data_dir(str(megatron_dir), PARAMS) == [] == check_data_dir(str(perfplay), PARAMS)
    for ours, theirs in zip(build_datasets(str(megatron_dir), PARAMS), build_datasets(str(perfplay), PARAMS)):
        assert len(ours) == len(theirs) > 0
        for i in range(len(ours)):
            assert all((a == b).all() for a, b in zip(ours[i], theirs[i]))
    train, val = build_datasets(str(megatron_dir), PARAMS)
    assert val[0][0].tolist() == VAL[0][:8]  # the held-out part starts at its first document
    # a data loader worker maps the part again from its file and range (the held-out part starts mid-file)
    again = pickle.loads(pickle.dumps(val))
    assert [again[i][1].tolist() for i in range(len(val))] == [val[i][1].tolist() for i in range(len(val))]


def test_the_split_cuts_sequences_as_megatron_does(tmp_path: Path):
    """Megatron splits by sequence (a document of several sequences may be cut), each bound round(share x count)."""
    assert split_ranges(10, {"data_split": [969, 30, 1]}) == {"train": (0, 10), "val": (10, 10)}
    assert split_ranges(1000, {"data_split": []}) == {"train": (0, 969), "val": (969, 999)}
    assert split_ranges(10, {"data_split": [85, 15]}) == {"train": (0, 8), "val": (8, 10)}  # round(8.5) = 8
    out = tmp_path / "sentences"
    out.mkdir()
    sentences = [TRAIN[i][j:j + 10] for i in range(4) for j in (0, 10)]
    write_indexed(out / "doc", sentences, document_starts=[0, 2, 4, 6])
    train, val = build_datasets(str(out), {**PARAMS, "data_split": [3, 1]})
    assert val.tokens.tolist() == sum(sentences[6:], [])
    [problem] = check_data_dir(str(out), {**PARAMS, "data_split": []})
    assert problem == (f"{out / 'doc.bin'}: its val part (data_split [969, 30, 1]) holds 0 tokens, fewer "
                       f"than one sequence of seq_len 8 + 1 (9)")


@pytest.mark.parametrize("dtype", ["int16", "int32", "int64"])
def test_every_integer_dtype_reads(dtype: str, tmp_path: Path):
    write_indexed(tmp_path / "d", TRAIN + VAL, dtype=dtype)
    train, _ = build_datasets(str(tmp_path), PARAMS)
    assert train.tokens.dtype == np.dtype(dtype).newbyteorder("<")
    assert train[0][0].tolist() == TRAIN[0][:8]


def test_the_check_names_the_file_of_each_broken_index(megatron_dir: Path, tmp_path: Path):
    prefix = megatron_dir / "corpus_text_document"
    idx, binary = prefix.with_suffix(".idx"), prefix.with_suffix(".bin")
    good = idx.read_bytes()

    def problem_with(index: bytes) -> str:
        idx.write_bytes(index)
        [problem] = check_data_dir(str(megatron_dir), PARAMS)
        with pytest.raises(ValueError) as refused:
            build_datasets(str(megatron_dir), PARAMS)
        assert str(refused.value) == problem
        return problem

    assert problem_with(b"MMIDIDY\x00\x00" + good[9:]) == (
        f"{idx}: starts with b'MMIDIDY\\x00\\x00', not b'MMIDIDX\\x00\\x00': not a Megatron indexed dataset's index; "
        f"expected one Megatron indexed dataset <prefix>.bin + <prefix>.idx (MMIDIDX version 1, integer token ids), "
        f"its sequences split per data_split")
    allowed = "allowed: 1 (uint8), 2 (int8), 3 (int16), 4 (int32), 5 (int64), 8 (uint16)"
    code = 17  # the dtype code's byte: after the magic (9) and the version (8)
    assert problem_with(good[:code] + bytes([9]) + good[code + 1:]) == f"{idx}: dtype code 9; {allowed}"
    assert problem_with(good[:code] + bytes([7]) + good[code + 1:]) == (f"{idx}: dtype code 7 (float32: not token "
                                                                         f"ids); {allowed}")
    assert problem_with(good[:9] + struct.pack("<Q", 2) + good[17:]) == f"{idx}: version 2; allowed: 1"
    assert problem_with(good[:20]).startswith(f"{idx}: 20 bytes, shorter than the 34-byte header")
    assert problem_with(good[:-8]) == (f"{idx}: {len(good) - 8} bytes, but its header says 20 sequences and 21 "
                                       f"document indices ({len(good)} bytes) (truncated?)")
    multimodal = good + bytes(20)  # an int8 mode per sequence after the document indices
    assert problem_with(multimodal).endswith("(a mode per sequence follows: a multimodal dataset, not text)")
    idx.write_bytes(good)

    tokens = binary.read_bytes()
    binary.write_bytes(tokens[:-2])
    [problem] = data_problems("llama", PARAMS, str(megatron_dir))  # the host preflight's check, before any launch
    assert problem == (f"{binary}: {len(tokens) - 2} bytes, but its index corpus_text_document.idx says "
                       f"{len(tokens) // 2} uint16 tokens ({len(tokens)} bytes)")
    with pytest.raises(ValueError, match="bytes, but its index"):
        IndexedDataset(megatron_dir, PARAMS, 320)
    binary.unlink()
    assert check_data_dir(str(megatron_dir), PARAMS) == [f"{binary}: missing; expected one Megatron indexed dataset "
                                                         f"<prefix>.bin + <prefix>.idx (MMIDIDX version 1, integer "
                                                         f"token ids), its sequences split per data_split"]


def test_a_data_dir_holds_one_format_and_one_dataset(megatron_dir: Path):
    write_indexed(megatron_dir / "other", VAL)
    [problem] = check_data_dir(str(megatron_dir), PARAMS)
    assert problem.startswith(f"{megatron_dir}: holds 2 Megatron indexed datasets (corpus_text_document.idx, "
                              f"other.idx)")
    for name in ("other.idx", "other.bin"):
        (megatron_dir / name).unlink()
    (megatron_dir / "train.json").write_text("{}")
    [problem] = check_data_dir(str(megatron_dir), PARAMS)
    assert problem.startswith(f"{megatron_dir}: holds both train.json and a Megatron index "
                              f"(corpus_text_document.idx); use one")


def test_the_rank_refuses_ids_the_index_cannot_vouch_for(tmp_path: Path):
    """No sidecar states the largest id: the rank reads every id of both parts at open (the check passes)."""
    write_indexed(tmp_path / "big", TRAIN + VAL[:3] + [[*VAL[3][:-1], 400]])
    assert check_data_dir(str(tmp_path), PARAMS) == []
    with pytest.raises(ValueError, match=r"big\.bin: holds token id 400, not below the vocab_size 320"):
        build_datasets(str(tmp_path), PARAMS)
    write_indexed(tmp_path / "big", [[*TRAIN[0][:-1], -3], *TRAIN[1:], *VAL], dtype="int32")
    with pytest.raises(ValueError, match=r"big\.bin: holds token id -3, below 0"):
        build_datasets(str(tmp_path), PARAMS)


def test_sequences_not_back_to_back_are_refused(megatron_dir: Path):
    idx = megatron_dir / "corpus_text_document.idx"
    index = bytearray(idx.read_bytes())
    pointer_3 = 34 + 20 * 4 + 3 * 8
    struct.pack_into("<q", index, pointer_3, struct.unpack_from("<q", index, pointer_3)[0] + 2)
    idx.write_bytes(bytes(index))
    with pytest.raises(ValueError, match=r"corpus_text_document\.idx: sequence 3 starts at byte \d+ of "
                                         r"corpus_text_document\.bin, not \d+: its sequences do not lie back to back"):
        build_datasets(str(megatron_dir), PARAMS)


def test_a_data_split_without_a_held_out_part_is_refused_at_plan_time():
    for split in ([100, 0, 0], [1], [1, 1, 1, 1], [-1, 1]):
        result = make_plan({"vendor": "cpu", "cases": [{"case": "llama", "overrides": {"data_split": split}}]},
                           check=True)
        assert not result["ok"]
        text = " ".join(result["errors"])
        assert "key 'data_split" in text and "run overrides" in text, text
