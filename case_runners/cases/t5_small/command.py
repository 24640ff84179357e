"""`prepare-summaries`: CNN/DailyMail's story files as the t5_small case's data dir."""

from __future__ import annotations

import argparse

from case_runners.cases.t5_small.prepare import DEFAULT_HELD_OUT, DEFAULT_VOCAB_SIZE


def cmd_prepare_summaries(args: argparse.Namespace) -> int:
    from case_runners.cases.t5_small.prepare import prepare_summaries
    prepare_summaries(args.src, args.out, args.vocab_size, args.held_out, args.source_len, args.target_len)
    return 0


def add_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("prepare-summaries", help="CNN/DailyMail's .story files as the t5_small case's data dir "
                                                 "(FlagPerf's layout: dataset/*.npz and model/tokenizer.json)")
    p.add_argument("src", metavar="SRC", help="a tree of .story files (abisee/cnn-dailymail's cnn/ and dailymail/)")
    p.add_argument("out", metavar="OUT", help="the data dir to write")
    p.add_argument("--vocab-size", type=int, default=DEFAULT_VOCAB_SIZE, metavar="N",
                   help=f"the Unigram tokenizer's vocabulary (default {DEFAULT_VOCAB_SIZE})")
    p.add_argument("--held-out", type=float, default=DEFAULT_HELD_OUT, metavar="FRACTION",
                   help=f"the share of stories held out, chosen by a hash of their path (default {DEFAULT_HELD_OUT})")
    p.add_argument("--source-len", type=int, default=1024, metavar="N", help="article ids a pair (default 1024)")
    p.add_argument("--target-len", type=int, default=128, metavar="N", help="summary ids a pair (default 128)")
    p.set_defaults(func=cmd_prepare_summaries)
