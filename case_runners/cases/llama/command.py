"""`prepare-text`: a tree of text files as the llama case's token files."""

from __future__ import annotations

import argparse

from case_runners.cases.llama.data import TOKENIZERS
from case_runners.cases.llama.prepare import DEFAULT_GLOB, DEFAULT_HELD_OUT, DEFAULT_VOCAB_SIZE


def cmd_prepare_text(args: argparse.Namespace) -> int:
    from case_runners.cases.llama.prepare import prepare_text
    prepare_text(args.src, args.out, args.tokenizer, args.vocab_size, args.glob, args.held_out)
    return 0


def add_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("prepare-text", help="a tree of text files as the llama case's token files: train.bin and "
                                            "val.bin with their JSON sidecars, split by file (a line per split)")
    p.add_argument("src", metavar="SRC", help="the tree of text files (e.g. sysconfig.get_paths()['stdlib'])")
    p.add_argument("out", metavar="OUT", help="the data dir to write")
    p.add_argument("--tokenizer", choices=TOKENIZERS, default="bpe",
                   help="bpe: a byte-level BPE trained on the train files (default); bytes: UTF-8 bytes")
    p.add_argument("--vocab-size", type=int, metavar="N", help=f"bpe's vocab (default {DEFAULT_VOCAB_SIZE})")
    p.add_argument("--glob", default=DEFAULT_GLOB, help=f"the files to read (default {DEFAULT_GLOB!r})")
    p.add_argument("--held-out", type=float, default=DEFAULT_HELD_OUT, metavar="FRACTION",
                   help=f"the share of files held out, chosen by a hash of their path (default {DEFAULT_HELD_OUT})")
    p.set_defaults(func=cmd_prepare_text)
