"""`prepare-lambada`: LAMBADA's JSON lines and GPT-2's tokenizer files as the gpt2 case's data dir."""

from __future__ import annotations

import argparse
from pathlib import Path


def cmd_prepare_lambada(args: argparse.Namespace) -> int:
    from case_runners.cases.gpt2.prepare import prepare_lambada

    written = prepare_lambada(Path(args.train), Path(args.test), Path(args.vocab), Path(args.merges), Path(args.out))
    print(f"{args.out}: {written['documents']} training documents, {written['tokens']} tokens")
    return 0


def add_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("prepare-lambada", help="LAMBADA's JSON lines and GPT-2's tokenizer files as the gpt2 case's "
                                               "data dir (FlagPerf's layout: a Megatron index and the test file)")
    p.add_argument("train", metavar="TRAIN", help="the train split as JSON lines {\"text\": ...}")
    p.add_argument("test", metavar="TEST", help="the test split as JSON lines {\"text\": ...}")
    p.add_argument("vocab", metavar="VOCAB", help="GPT-2's vocab.json")
    p.add_argument("merges", metavar="MERGES", help="GPT-2's merges.txt")
    p.add_argument("out", metavar="OUT", help="the data dir to write")
    p.set_defaults(func=cmd_prepare_lambada)
