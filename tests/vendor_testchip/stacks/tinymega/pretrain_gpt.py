"""The test chip's Megatron-style program: trains as stacks/tinytrain does (its train()), but writes no stream: it
prints Megatron-LM's log, the lines of megatron/training/training.py's training_log() and
evaluate_and_print_results() (case_runners/tasks/training/log_parsers.py quotes them), among other output, for the
built-in megatron parser. As Megatron, it prints the iteration and validation lines on its last rank only
(print_rank_last) and its set-up lines on rank 0 (print_rank_0): stack.yaml's `log_rank: last`. Takes
--log-interval as Megatron does; the contract wants 1.
"""

import argparse
import datetime
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tinytrain"))
import train  # noqa: E402 - tinytrain's program, beside this stack's folder

parser = argparse.ArgumentParser()
parser.add_argument("--log-interval", type=int, default=100)
args = parser.parse_args()
inputs = train.read_inputs()
gbs, iters = inputs["global_batch"], inputs["max_steps"]
first, last = inputs["rank"] == 0, inputs["rank"] == inputs["world_size"] - 1


def print_rank_0(text):
    if first:
        print(text)


def print_rank_last(text):
    if last:
        print(text)


print_rank_0(f"using world size: {inputs['world_size']}, data-parallel size: {inputs['world_size']}, "
             f"tensor-model-parallel size: 1, pipeline-model-parallel size: 1")
print_rank_0("> building GPT model ...")
print_rank_0(f"[before the start of training step] datetime: {datetime.datetime.now():%Y-%m-%d %H:%M:%S} ")
interval = {"loss": 0.0, "seconds": 0.0, "count": 0}


def log_step(step, loss, seconds, lr):
    interval["loss"] += loss
    interval["seconds"] += seconds
    interval["count"] += 1
    if step % args.log_interval and step != 1:
        return
    n = interval["count"]
    print_rank_last(f" [{datetime.datetime.now():%Y-%m-%d %H:%M:%S.%f}] iteration {step:8d}/{iters:8d} | consumed "
                    f"samples: {step * gbs:12d} | elapsed time per iteration (ms): "
                    f"{interval['seconds'] / n * 1000.0:.1f} | learning rate: {lr:.6E} | global batch size: {gbs:5d} | "
                    f"lm loss: {interval['loss'] / n:.6E} | loss scale: 1.0 | grad norm: 1.000 | number of skipped "
                    f"iterations:   0 | number of nan iterations:   0 |")
    if step == 1:
        print(f"[Rank {inputs['rank']}] (after 1 iterations) memory (MB) | allocated: 0.0 | max allocated: 0.0")
    interval.update(loss=0.0, seconds=0.0, count=0)


def log_eval(loss, seconds):
    text = (f" validation loss at iteration {iters} on validation set | lm loss value: {loss:.6E} | lm loss PPL: "
            f"{min(train.math.exp(loss), 1e30):.6E} | ")
    print_rank_last("-" * (len(text) + 1))
    print_rank_last(text)
    print_rank_last("-" * (len(text) + 1))


train.train(inputs, log_step, log_eval)
print_rank_0(f"[after training is done] datetime: {datetime.datetime.now():%Y-%m-%d %H:%M:%S} ")
