"""`python -m case_runners prepare-text SRC OUT`: a tree of text files as a llama data dir (the format of data.py).

The files under SRC that match a glob (sorted; site-packages and dist-packages left out, so a Python's stdlib tree
is the same wherever packages are installed) are split into train and held-out BY FILE: a file is held out when
the hash of its relative path falls below the held-out fraction, the same on every machine. Each file is a document
(UTF-8 text; a file that is not is skipped and counted), tokenized and followed by the end-of-text token:
    bytes  its UTF-8 bytes, ids 0-255, end-of-text 256: vocab 257, uint16
    bpe    a byte-level BPE (the `tokenizers` package, ByteLevel pre-tokenizer) trained here on the train files only,
           vocab --vocab-size with <|endoftext|> as id 0, saved as tokenizer.json; uint16 up to 65536 ids, else uint32
Each .bin and its sidecar are written atomically (the .bin first). The summary gives each split's files and tokens,
and the held-out set's unigram entropy in nats per token: the loss of a model that learned only token frequencies.
Importing this module imports neither numpy nor tokenizers (the CLI reads its defaults).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from case_runners.cases.llama.data import FORMAT_NAME, SPLITS, TOKENIZER_FILE, TOKENIZERS, header_path
from case_runners.cases.llama.data import bin_path as split_bin_path
from case_runners.core import files
from case_runners.core.errors import PerfplayError

if TYPE_CHECKING:
    import numpy as np

DEFAULT_GLOB = "*.py"
DEFAULT_HELD_OUT = 0.05
DEFAULT_VOCAB_SIZE = 4096
EXCLUDED_DIRS = ("site-packages", "dist-packages")
EOT_TEXT = "<|endoftext|>"
BYTES_EOT, BYTES_VOCAB = 256, 257
UINT16_IDS = 1 << 16
ENCODE_BATCH = 64  # documents per tokenizers.encode_batch call: bounds the Encoding objects alive at once


def text_files(src: Path, glob: str) -> list[Path]:
    """The files under src matching glob, as sorted relative paths, outside EXCLUDED_DIRS."""
    found = (p.relative_to(src) for p in src.rglob(glob) if p.is_file())
    return sorted(p for p in found if not set(p.parts[:-1]) & set(EXCLUDED_DIRS))


def held_out_rank(relative: Path) -> float:
    """Where a file falls in [0, 1): the first 8 bytes of the SHA-256 of its relative POSIX path."""
    return int.from_bytes(hashlib.sha256(relative.as_posix().encode()).digest()[:8], "big") / 2 ** 64


def split_by_file(relative: list[Path], fraction: float) -> tuple[list[Path], list[Path]]:
    """(train, held-out) files: held out where held_out_rank < fraction; with none there (a small tree), the file
    of lowest rank, and with none left to train, the file of highest rank goes back."""
    held = [p for p in relative if held_out_rank(p) < fraction]
    if not held and len(relative) > 1:
        held = [min(relative, key=held_out_rank)]
    if len(held) == len(relative) and len(relative) > 1:
        held.remove(max(held, key=held_out_rank))
    kept = set(held)
    return [p for p in relative if p not in kept], held


def read_documents(src: Path, relative: list[Path]) -> tuple[list[str], int]:
    """(the UTF-8 texts of the files, how many were skipped as not UTF-8)."""
    texts, skipped = [], 0
    for path in relative:
        try:
            texts.append((src / path).read_bytes().decode("utf-8"))
        except UnicodeDecodeError:
            skipped += 1
    return texts, skipped


class ByteTokenizer:
    """UTF-8 bytes as ids 0-255 and end-of-text 256."""

    eot_id, vocab_size = BYTES_EOT, BYTES_VOCAB

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))

    def decode(self, ids: Iterable[int]) -> str:
        return bytes(i for i in ids if i != BYTES_EOT).decode("utf-8", "replace")


class BpeTokenizer:
    """A tokenizers.Tokenizer (tokenizer.json) with its end-of-text id."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        eot = tokenizer.token_to_id(EOT_TEXT)
        if eot is None:
            raise ValueError(f"the tokenizer has no {EOT_TEXT} token")
        self.eot_id, self.vocab_size = int(eot), int(tokenizer.get_vocab_size())

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text).ids)

    def decode(self, ids: Iterable[int]) -> str:
        return str(self.tokenizer.decode(list(ids), skip_special_tokens=True))

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return [list(e.ids) for e in self.tokenizer.encode_batch(texts)]


Tokenizer = ByteTokenizer | BpeTokenizer


def train_bpe(texts: list[str], vocab_size: int) -> BpeTokenizer:
    """A byte-level BPE of vocab_size ids (<|endoftext|> first) learned from texts."""
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import decoders, models, pre_tokenizers, trainers

    tokenizer = HFTokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[EOT_TEXT], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(texts, trainer=trainer, length=len(texts))
    return BpeTokenizer(tokenizer)


def load_tokenizer(data_dir: str | Path, kind: str) -> Tokenizer:
    """The tokenizer of a data dir whose sidecars say `kind` (a value of data.TOKENIZERS)."""
    if kind == "bytes":
        return ByteTokenizer()
    from tokenizers import Tokenizer as HFTokenizer

    return BpeTokenizer(HFTokenizer.from_file(str(Path(data_dir) / TOKENIZER_FILE)))


def dtype_for(vocab_size: int) -> str:
    return "uint16" if vocab_size <= UINT16_IDS else "uint32"


def pack(tokenizer: Tokenizer, texts: list[str], dtype: str) -> np.ndarray:
    """The documents' ids back to back, each followed by end-of-text."""
    import numpy as np

    parts: list[np.ndarray] = []
    eot = np.array([tokenizer.eot_id], dtype=dtype)
    for start in range(0, len(texts), ENCODE_BATCH):
        batch = texts[start:start + ENCODE_BATCH]
        encoded = (tokenizer.encode_batch(batch) if isinstance(tokenizer, BpeTokenizer)
                   else [np.frombuffer(t.encode("utf-8"), dtype=np.uint8) for t in batch])
        for ids in encoded:
            parts += [np.asarray(ids, dtype=dtype), eot]
    return np.concatenate(parts) if parts else np.zeros(0, dtype)


def write_split(out: Path, split: str, tokens: np.ndarray, header: dict[str, Any]) -> None:
    """The .bin (little-endian), then its sidecar, each atomically."""
    import numpy as np

    with files.replacing(split_bin_path(out, split)) as handle:
        handle.write(tokens.astype(np.dtype(header["dtype"]).newbyteorder("<"), copy=False).tobytes())
    files.atomic_write_json(header_path(out, split), header)


@dataclass(frozen=True)
class SplitSummary:
    split: str
    files: int
    skipped: int
    tokens: int

    def line(self) -> str:
        skipped = f" ({self.skipped} not UTF-8, skipped)" if self.skipped else ""
        return f"{self.split}: {self.files} files{skipped}, {self.tokens} tokens"


def prepare_text(src: str | Path, out: str | Path, tokenizer_kind: str = "bpe", vocab_size: int | None = None,
                 glob: str = DEFAULT_GLOB, held_out: float = DEFAULT_HELD_OUT,
                 log: Callable[[str], None] = print) -> dict[str, Any]:
    """Write out/ from the text files of src; log each split's summary line and the held-out unigram entropy.
    Returns {"splits": [SplitSummary...], "vocab_size", "dtype", "entropy"}."""
    from case_runners.cases.llama.dataset import unigram_entropy

    src, out = Path(src), Path(out)
    if tokenizer_kind not in TOKENIZERS:
        raise PerfplayError(f"--tokenizer {tokenizer_kind!r}: allowed: {', '.join(TOKENIZERS)}")
    if tokenizer_kind == "bytes" and vocab_size not in (None, BYTES_VOCAB):
        raise PerfplayError(f"--vocab-size {vocab_size}: the bytes tokenizer's vocab is {BYTES_VOCAB} "
                            f"(256 bytes and end-of-text); leave it out")
    vocab_size = DEFAULT_VOCAB_SIZE if vocab_size is None else vocab_size
    if tokenizer_kind == "bpe" and not BYTES_VOCAB < vocab_size <= 1 << 32:
        raise PerfplayError(f"--vocab-size {vocab_size}: a byte-level BPE needs more than {BYTES_VOCAB} ids "
                            f"(256 bytes and end-of-text) and at most 2**32")
    if not 0 < held_out < 1:
        raise PerfplayError(f"--held-out {held_out}: expected a fraction between 0 and 1 (exclusive)")
    if not src.is_dir():
        raise PerfplayError(f"{src}: not a directory (SRC is a tree of text files)")
    relative = text_files(src, glob)
    if len(relative) < 2:
        raise PerfplayError(f"{src}: {len(relative)} files match {glob!r} (outside {', '.join(EXCLUDED_DIRS)}); "
                            f"train and held-out need at least one each")
    by_split = dict(zip(SPLITS, split_by_file(relative, held_out)))
    documents = {split: read_documents(src, paths) for split, paths in by_split.items()}
    for split, (texts, _) in documents.items():
        if not texts:
            raise PerfplayError(f"{src}: no UTF-8 text among the {split} files ({len(by_split[split])} matching "
                                f"{glob!r})")
    tokenizer: Tokenizer = (ByteTokenizer() if tokenizer_kind == "bytes"
                            else train_bpe(documents["train"][0], vocab_size))
    dtype = dtype_for(tokenizer.vocab_size)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PerfplayError(f"cannot create OUT: {files.describe_os_error(exc, out)}") from None
    if isinstance(tokenizer, BpeTokenizer):
        files.atomic_write_text(out / TOKENIZER_FILE, tokenizer.tokenizer.to_str())
    else:
        (out / TOKENIZER_FILE).unlink(missing_ok=True)  # a bpe dir's, stale now
    summaries, entropy = [], 0.0
    for split, (texts, skipped) in documents.items():
        tokens = pack(tokenizer, texts, dtype)
        write_split(out, split, tokens, {
            "format": FORMAT_NAME, "dtype": dtype, "tokens": int(len(tokens)), "vocab_size": tokenizer.vocab_size,
            "max_token_id": int(tokens.max()), "tokenizer": tokenizer_kind, "eot_id": tokenizer.eot_id,
            "source": f"{src.resolve()} ({glob}, {len(by_split[split])} files)"})
        summary = SplitSummary(split, len(by_split[split]) - skipped, skipped, int(len(tokens)))
        summaries.append(summary)
        log(summary.line())
        if split == "val":
            entropy = unigram_entropy(tokens)
    log(f"val unigram entropy: {entropy:.4f} nats/token ({tokenizer_kind}, vocab {tokenizer.vocab_size}, {dtype})")
    return {"splits": summaries, "vocab_size": tokenizer.vocab_size, "dtype": dtype, "entropy": entropy}
