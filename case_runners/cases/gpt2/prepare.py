"""`python -m case_runners prepare-lambada TRAIN TEST VOCAB MERGES OUT`: LAMBADA's JSON lines as gpt2's data dir
(FlagPerf's layout, data.py), as Megatron-LM's tools/preprocess_data.py --tokenizer-type GPT2BPETokenizer
--append-eod --dataset-impl mmap writes it, without Megatron.

TRAIN: the `lambada` dataset's train split as JSON lines {"text": ...} (FlagPerf's README writes it with
`datasets`' to_json); each line a document, tokenised with GPT-2's byte-level BPE (VOCAB, MERGES: GPT-2's
vocab.json and merges.txt) and followed by <|endoftext|>, one sequence a document, written as
lambada_train_text_document.bin (uint16 ids) and its .idx (MMIDIDX version 1: the llama case's data.py). TEST, VOCAB
and MERGES are copied beside them under FlagPerf's names; the written dir is checked as a run checks it.
Every file is written atomically.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

from case_runners.cases.gpt2.data import (
    EOD,
    MERGES_FILE,
    TEST_FILE,
    TRAIN_PREFIX,
    VOCAB_FILE,
    check_data_dir,
    passage_problems,
)
from case_runners.cases.llama.data import INDEX_BIN_SUFFIX, INDEX_HEADER, INDEX_MAGIC, INDEX_SUFFIX, INDEX_VERSION
from case_runners.core import files
from case_runners.core.errors import PerfplayError

UINT16_CODE = 8  # Megatron's dtype code of uint16 (data.py INDEX_DTYPES): GPT-2's 50,257 ids fit
ENCODE_BATCH = 16  # documents per tokenizers.encode_batch call (a LAMBADA document is a novel)


def read_texts(path: Path) -> list[str]:
    """The 'text' of each JSON line; PerfplayError naming the file and line otherwise."""
    problems = passage_problems(path)
    if problems:
        raise PerfplayError(problems[0])
    return [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def index_bytes(lengths: list[int]) -> bytes:
    """A Megatron .idx for uint16 sequences of `lengths`, one document each, back to back in the .bin."""
    pointers, offset = [], 0
    for length in lengths:
        pointers.append(offset)
        offset += 2 * length
    count = len(lengths)
    return (INDEX_HEADER.pack(INDEX_MAGIC, INDEX_VERSION, UINT16_CODE, count, count + 1)
            + struct.pack(f"<{count}i", *lengths) + struct.pack(f"<{count}q", *pointers)
            + struct.pack(f"<{count + 1}q", *range(count + 1)))


def prepare_lambada(train: Path, test: Path, vocab: Path, merges: Path, out: Path, vocab_size: int = 50304) -> dict:
    """Write gpt2's data dir; {"documents", "tokens"} of the training index."""
    import numpy as np
    from tokenizers import ByteLevelBPETokenizer

    for path in (train, test, vocab, merges):
        if not path.is_file():
            raise PerfplayError(f"{path}: not a file")
    texts = read_texts(train)
    tokenizer = ByteLevelBPETokenizer.from_file(str(vocab), str(merges))
    eod = tokenizer.token_to_id(EOD)
    if eod is None:
        raise PerfplayError(f"{vocab}: no {EOD} token (the end of every document)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PerfplayError(f"cannot create OUT: {files.describe_os_error(exc, out)}") from None
    prefix, lengths = out / TRAIN_PREFIX, []
    with files.replacing(prefix.with_name(prefix.name + INDEX_BIN_SUFFIX)) as handle:
        for start in range(0, len(texts), ENCODE_BATCH):
            for encoding in tokenizer.encode_batch(texts[start:start + ENCODE_BATCH]):
                ids = np.asarray([*encoding.ids, eod], dtype="<u2")
                handle.write(ids.tobytes())
                lengths.append(len(ids))
    files.atomic_write_bytes(prefix.with_name(prefix.name + INDEX_SUFFIX), index_bytes(lengths))
    for source, name in ((test, TEST_FILE), (vocab, VOCAB_FILE), (merges, MERGES_FILE)):
        with files.replacing(out / name) as handle, source.open("rb") as copied:
            shutil.copyfileobj(copied, handle)
    problems = check_data_dir(str(out), {"seq_len": 1, "vocab_size": vocab_size})
    if problems:
        raise PerfplayError("; ".join(problems))
    return {"documents": len(lengths), "tokens": sum(lengths)}
