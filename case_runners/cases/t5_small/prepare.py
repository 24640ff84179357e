"""`python -m case_runners prepare-summaries SRC OUT`: CNN/DailyMail's story files as a t5_small data dir (data.py's
layout, FlagPerf's), for a machine without FlagPerf's prepared archive.

SRC holds the stories (`*.story` anywhere below it, as github.com/abisee/cnn-dailymail distributes them: the article's
lines, then each highlight after an `@highlight` line). They are split into train and held-out BY FILE, by a hash of
the path (llama's prepare-text rule, the same on every machine). A SentencePiece-style Unigram tokenizer (the
`tokenizers` package: NFKC, Metaspace) is trained here on the training pairs as encoded, with t5's special ids
(<pad> 0, </s> 1, <unk> 2), and saved as model/tokenizer.json. Each pair is written as FlagPerf's preprocessing
does: "summarize: " + the article (its lines joined by spaces) to source_len ids, the highlights (joined by
newlines) to target_len, </s> last, sources padded with 0 and labels with -100. There are no pretrained weights:
train with init_checkpoint "".
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from case_runners.cases.llama.prepare import split_by_file
from case_runners.cases.t5_small.data import EVAL_FILE, TOKENIZER_FILE, TRAIN_FILE
from case_runners.core import files
from case_runners.core.errors import PerfplayError

DEFAULT_VOCAB_SIZE = 32000  # t5's SentencePiece vocabulary (its 100 sentinels make the model's 32,128)
DEFAULT_HELD_OUT = 0.05
SPECIAL_TOKENS = ("<pad>", "</s>", "<unk>")  # ids 0, 1, 2 as t5's
PREFIX = "summarize: "  # FlagPerf's source prefix
HIGHLIGHT = "@highlight"


def read_story(path: Path) -> tuple[str, str]:
    """(article, highlights) of a .story file: the article's lines joined by spaces, the highlights by newlines."""
    article: list[str] = []
    highlights: list[str] = []
    next_is_highlight = False
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line:
            continue
        if line == HIGHLIGHT:
            next_is_highlight = True
        elif next_is_highlight:
            highlights.append(line)
            next_is_highlight = False
        else:
            article.append(line)
    return " ".join(article), "\n".join(highlights)


def train_unigram(texts: list[str], vocab_size: int) -> Any:
    """A Unigram tokenizer (SentencePiece's model) trained on `texts`, t5's special ids first."""
    from tokenizers import Tokenizer, decoders, normalizers, pre_tokenizers
    from tokenizers.models import Unigram
    from tokenizers.trainers import UnigramTrainer

    tokenizer = Tokenizer(Unigram())
    tokenizer.normalizer = normalizers.NFKC()
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    tokenizer.decoder = decoders.Metaspace()
    trainer = UnigramTrainer(vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS), unk_token="<unk>",
                             show_progress=False)
    tokenizer.train_from_iterator(texts, trainer)
    return tokenizer


def encode_pairs(tokenizer: Any, pairs: list[tuple[str, str]], source_len: int, target_len: int) -> dict[str, Any]:
    """FlagPerf's arrays of `pairs`: input_ids and attention_mask (N, source_len), labels (N, target_len)."""
    import numpy as np

    eos = SPECIAL_TOKENS.index("</s>")
    input_ids = np.zeros((len(pairs), source_len), dtype=np.int64)
    labels = np.full((len(pairs), target_len), -100, dtype=np.int64)
    sources = tokenizer.encode_batch([PREFIX + article for article, _ in pairs])
    targets = tokenizer.encode_batch([summary for _, summary in pairs])
    for row, (source, target) in enumerate(zip(sources, targets)):
        ids = source.ids[:source_len - 1] + [eos]
        input_ids[row, :len(ids)] = ids
        ids = target.ids[:target_len - 1] + [eos]
        labels[row, :len(ids)] = ids
    return {"input_ids": input_ids, "attention_mask": (input_ids != 0).astype(np.int64), "labels": labels}


def prepare_summaries(src: str | Path, out: str | Path, vocab_size: int = DEFAULT_VOCAB_SIZE,
                      held_out: float = DEFAULT_HELD_OUT, source_len: int = 1024, target_len: int = 128,
                      log: Callable[[str], None] = print) -> dict[str, int]:
    """Write out/ from the .story files of src; log and return the pairs of each split and the vocabulary."""
    import numpy as np

    src, out = Path(src), Path(out)
    if not 0 < held_out < 1:
        raise PerfplayError(f"--held-out {held_out}: expected a fraction between 0 and 1 (exclusive)")
    if not len(SPECIAL_TOKENS) < vocab_size <= 32128:
        raise PerfplayError(f"--vocab-size {vocab_size}: expected more than {len(SPECIAL_TOKENS)} and at most the "
                            f"case's vocab_size 32128")
    if not src.is_dir():
        raise PerfplayError(f"{src}: not a directory (SRC is a tree of CNN/DailyMail .story files)")
    stories = sorted(p.relative_to(src) for p in src.rglob("*.story") if p.is_file())
    pairs = {name: [read_story(src / p) for p in paths]
             for name, paths in zip(("train", "eval"), split_by_file(stories, held_out))}
    pairs = {name: [pair for pair in split if pair[0] and pair[1]] for name, split in pairs.items()}
    if not pairs["train"] or not pairs["eval"]:
        raise PerfplayError(f"{src}: {len(stories)} .story files with an article and a highlight; train and "
                            f"held-out need at least one each")
    tokenizer = train_unigram([text for article, summary in pairs["train"] for text in (PREFIX + article, summary)],
                              vocab_size)
    for relative in (TOKENIZER_FILE, TRAIN_FILE):
        try:
            (out / relative).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise PerfplayError(f"cannot create OUT: {files.describe_os_error(exc, out)}") from None
    files.atomic_write_text(out / TOKENIZER_FILE, tokenizer.to_str())
    for name, relative in (("train", TRAIN_FILE), ("eval", EVAL_FILE)):
        arrays = encode_pairs(tokenizer, pairs[name], source_len, target_len)
        with files.replacing(out / relative) as handle:
            np.savez(handle, **arrays)  # uncompressed: the case memory-maps it
        log(f"{name}: {len(pairs[name])} stories -> {out / relative}")
    log(f"tokenizer: {tokenizer.get_vocab_size()} ids -> {out / TOKENIZER_FILE}; train with init_checkpoint \"\"")
    return {"train": len(pairs["train"]), "eval": len(pairs["eval"]), "vocab_size": tokenizer.get_vocab_size()}
