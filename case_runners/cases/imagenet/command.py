"""`prepare-images`: scikit-learn's digits as a small dataset in ImageNet's layout (JPEG class folders)."""

from __future__ import annotations

import argparse

from case_runners.cases.imagenet.prepare import (
    DEFAULT_SEED,
    DEFAULT_SIZE,
    DEFAULT_VAL_FRACTION,
    class_name,
    prepare_images,
)


def cmd_prepare_images(args: argparse.Namespace) -> int:
    counts = prepare_images(args.out, args.size, args.val_fraction, args.seed)
    print(f"{args.out}: {counts['train']} train and {counts['val']} val JPEGs of {args.size}x{args.size} in 10 "
          f"class folders ({class_name(0)} .. {class_name(9)}); train with num_classes: 10")
    return 0


def add_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("prepare-images", help="scikit-learn's 8x8 digits as a small real dataset in ImageNet's layout "
                                              "(train/ and val/ JPEG class folders, upscaled) for the image "
                                              "classifiers' CPU runs")
    p.add_argument("out", metavar="OUT", help="the data dir to write (new or empty)")
    p.add_argument("--size", type=int, default=DEFAULT_SIZE, metavar="PX",
                   help=f"the images' side in pixels, 8..1024 (default {DEFAULT_SIZE})")
    p.add_argument("--val-fraction", type=float, default=DEFAULT_VAL_FRACTION, metavar="FRACTION",
                   help=f"each class's share held out in val/ (default {DEFAULT_VAL_FRACTION})")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"the split's seed (default {DEFAULT_SEED})")
    p.set_defaults(func=cmd_prepare_images)
