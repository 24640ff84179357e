"""A vendor stack's log parser (tasks/training/log_parsers.py): the built-in megatron parser on Megatron-LM's lines
in the formats its versions and forks print (the numbers are made up, the layout is theirs: megatron/training/
training.py training_log and evaluate_and_print_results), malformed lines skipped, counted and reported, and the
LogReader that turns a program's output into the stream vendor_stack.read_stream checks."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from case_runners.core.errors import PerfplayError
from case_runners.rank.driver.dllogger import LogEntry, read_dllogger
from case_runners.tasks.training import vendor_stack
from case_runners.tasks.training.log_parsers import PARSERS, Follower, LogReader, megatron
from case_runners.vendors.vendor_stacks import LOG_PARSERS, VendorStack

INPUTS = {"seq_len": 2048, "eval": {"metric": "held_out_loss"}}
STEP = {"train.loss": 7.399415, "step_time": 0.4301, "samples": 4 * 2048, "train.lr": 1.342e-4}

# megatron-core 0.12+ (a timestamp with microseconds; 'throughput per GPU' with --log-throughput)
CORE = (" [2026-03-02 10:15:07.412345] iteration      200/    1000 | consumed samples:          800 | elapsed time "
        "per iteration (ms): 430.1 | throughput per GPU (TFLOP/s/GPU): 123.4 | learning rate: 1.342000E-04 | global "
        "batch size:     4 | lm loss: 7.399415E+00 | loss scale: 1.0 | grad norm: 2.918 | number of skipped "
        "iterations:   0 | number of nan iterations:   0 |")
# Megatron-LM 2023-2024 (a timestamp to the second, learning rate :.3E)
DATED = (" [2024-06-11 08:00:01] iteration      200/    1000 | consumed samples:          800 | elapsed time per "
         "iteration (ms): 430.1 | learning rate: 1.342E-04 | global batch size:     4 | lm loss: 7.399415E+00 | loss "
         "scale: 16384.0 | grad norm: 2.918 | number of skipped iterations:   0 | number of nan iterations:   0 |")
# Megatron-DeepSpeed / older Megatron-LM (no timestamp; 'consumed tokens'), as a torchrun worker's prefix may lead
DEEPSPEED = ("[default0]: iteration      200/    1000 | consumed samples:          800 | consumed tokens:      "
             "1638400 | elapsed time per iteration (ms): 430.1 | learning rate: 1.342E-04 | global batch size:     4 | "
             "lm loss: 7.399415E+00 | loss scale: 4096.0 | grad norm: 2.918 | number of skipped iterations:   0 | "
             "number of nan iterations:   0 | samples per second: 9.302 | TFLOPs: 55.12 |")
# a MoE model's (FlagScale, mixtral): the router's losses after lm loss
MOE = (" [2025-01-20 21:03:44] iteration      200/    1000 | consumed samples:          800 | elapsed time per "
       "iteration (ms): 430.1 | learning rate: 1.342E-04 | global batch size:     4 | lm loss: 7.399415E+00 | "
       "load_balancing_loss: 1.021334E+00 | loss scale: 1.0 | grad norm: 2.918 | number of skipped iterations:   0 | "
       "number of nan iterations:   0 |")


@pytest.mark.parametrize("line", [CORE, DATED, DEEPSPEED, MOE], ids=["core", "dated", "deepspeed", "moe"])
def test_megatrons_training_line_is_a_step_of_the_stream(line: str):
    """The iteration, lm loss, the per-iteration time in seconds, learning rate; samples: global batch size (4
    sequences) x seq_len tokens."""
    event = megatron(line, INPUTS)
    assert event is not None and event["step"] == 200
    assert event["data"] == pytest.approx(STEP)


@pytest.mark.parametrize("coef, loss", [(0.01, 7.399415 + 0.01 * 2 * 1.021334), (0.0, 7.399415)])
def test_a_mixture_of_experts_trained_loss_adds_the_balancing_loss_on_the_built_in_stacks_scale(coef, loss):
    """Megatron logs its routers' Switch loss apart, over the coefficient and 1 when balanced; the built-in stacks
    train lm loss + coefficient x transformers' (top-k when balanced): the parser adds coefficient x k x it, and
    nothing where the model case has no coefficient."""
    model = {"experts": 8, "experts_per_token": 2, "router_aux_loss_coef": coef}
    event = megatron(MOE, {**INPUTS, "model": model})
    assert event is not None and event["data"]["train.loss"] == pytest.approx(loss)


def test_transformers_balancing_loss_is_k_times_megatrons_logged_one_for_a_layer():
    """The scale the parser converts by, on one layer's router: transformers' load_balancing_loss_func against
    Megatron's switch_load_balancing_loss_func over its coefficient (megatron/core/transformer/moe/moe_utils.py:
    sum_e (sum_t p_te) x tokens_e x E / (k x T^2)), written out here."""
    import torch
    from transformers.models.mixtral.modeling_mixtral import load_balancing_loss_func

    experts, k, tokens = 8, 2, 64
    logits = torch.randn(tokens, experts, generator=torch.Generator().manual_seed(0)) * 2
    probs = torch.softmax(logits, dim=-1)
    chosen = torch.topk(probs, k, dim=-1).indices.reshape(-1)
    per_expert = torch.bincount(chosen, minlength=experts).float()
    logged = (probs.sum(dim=0) * per_expert).sum() * experts / (k * tokens * tokens)
    assert float(load_balancing_loss_func((logits,), experts, k)) == pytest.approx(k * float(logged), rel=1e-5)


@pytest.mark.parametrize("line, step", [
    (" validation loss at iteration 500 | lm loss value: 6.912345E+00 | lm loss PPL: 1.004476E+03 | ", 500),
    (" validation loss at iteration 1000 on validation set | lm loss value: 6.912345E+00 | lm loss PPL: "
     "1.004476E+03 | ", 1000),
    (" validation loss at the end of training for val data | lm loss value: 6.912345E+00 | lm loss PPL: "
     "1.004476E+03 | ", None)])  # older Megatron-LM: the last step logged
def test_megatrons_validation_line_is_the_held_out_loss(line: str, step: int | None):
    assert megatron(line, INPUTS) == {"step": step, "data": {"eval.held_out_loss": pytest.approx(6.912345)}}


@pytest.mark.parametrize("line", [
    " validation loss at iteration 1000 on test set | lm loss value: 6.9E+00 | lm loss PPL: 1.0E+03 | ",
    "[Rank 0] (after 10 iterations) memory (MB) | allocated: 1464.3 | max allocated: 1464.3 | reserved: 1576.0",
    "[before the start of training step] datetime: 2026-03-02 10:14:55 ",
    "    iteration-time ....................: (430.01, 430.12)",
    "-------------------------------------------------------------------------------------------------",
    " > number of parameters on (tensor, pipeline) model parallel rank (0, 0): 6738415616",
    ""])
def test_other_lines_are_not_megatrons_events(line: str):
    assert megatron(line, INPUTS) is None


@pytest.mark.parametrize("line, why", [
    # fp16's loss-scale warm-up: every iteration of the interval skipped, so no lm loss is printed
    (" [2025-04-13 23:41:12] iteration       10/    1000 | consumed samples:          160 | elapsed time per "
     "iteration (ms): 1147.6 | learning rate: 0.000000E+00 | global batch size:    16 | loss scale: 8388608.0 | "
     "number of skipped iterations:  10 | number of nan iterations:   0 |", "lacks 'lm loss'"),
    # two ranks' output interleaved mid-line
    (" [2025-04-13 23:41:12] iteration       10/    1000 | consumed samples:          160 | elapsed time per "
     "iteration (ms): 11 [Rank 1] (after 10 iterations) memory (MB) | allocated: 14.3",
     "lacks 'global batch size', 'lm loss'"),
    (DATED.replace("lm loss: 7.399415E+00", "lm loss: 7.39941#E+00"), "'lm loss' is '7.39941#E+00', not a number"),
    (" validation loss at iteration 500 | lm loss value: | lm loss PPL: 1.0E+03 | ", "'lm loss value' is '', not a "
                                                                                    "number")])
def test_a_malformed_megatron_line_is_a_value_error_naming_what_it_lacks(line: str, why: str):
    with pytest.raises(ValueError) as raised:
        megatron(line, INPUTS)
    assert str(raised.value) == why


def test_the_built_in_parsers_are_the_schemas():
    assert tuple(PARSERS) == LOG_PARSERS


def megatron_stack(tmp_path: Path) -> VendorStack:
    return VendorStack(name="mega", dir=tmp_path, shown="vendor/cpu/stacks/mega/stack.yaml", description="",
                       cases=("llama",), command=("{python}", "pretrain_gpt.py"), params={}, constraints={},
                       log_parser="megatron")


def training_log(steps: int) -> list[str]:
    """A Megatron run's output at --log-interval 1: other lines, a line per step, a malformed one, the validation."""
    lines = ["using world size: 1, data-parallel size: 1, tensor-model-parallel size: 1",
             "[before the start of training step] datetime: 2026-03-02 10:14:55 "]
    for step in range(1, steps + 1):
        lines.append(DATED.replace("iteration      200/    1000", f"iteration {step:8d}/{steps:8d}")
                     .replace("lm loss: 7.399415E+00", f"lm loss: {8.0 - step / 10:.6E}"))
        if step == 2:
            lines.append(lines[-1][:90])  # a line cut short
    validation = f" validation loss at iteration {steps} on validation set | lm loss value: 7.100000E+00 | "
    return [*lines, "-" * 80, validation, "-" * 80, "[after training is done] datetime: 2026-03-02 10:16:00 "]


def test_the_reader_writes_the_contracts_stream_keeps_the_raw_log_and_reports_malformed_lines(tmp_path: Path):
    stream, raw = tmp_path / "rank0.stack.dllogger.json", tmp_path / "rank0.stack.log"
    reader = LogReader(megatron_stack(tmp_path), megatron, {**INPUTS, "stream": str(stream)}, raw)
    lines = training_log(5)
    for line in lines:
        reader.line(line)
    reader.close()
    reader.check()
    assert raw.read_text() == "\n".join(lines) + "\n"
    steps, evals = vendor_stack.read_stream(stream, "held_out_loss", 5)
    assert [e.data["train.loss"] for e in steps] == pytest.approx([7.9, 7.8, 7.7, 7.6, 7.5])
    assert [(e.data["samples"], e.data["step_time"]) for e in steps] == [(4 * 2048, pytest.approx(0.4301))] * 5
    assert [(e.step, e.data) for e in evals] == [((1, 5), {"eval.held_out_loss": 7.1})]
    entries = [e for e in read_dllogger(stream) if isinstance(e, LogEntry)]
    assert all(a.timestamp <= b.timestamp for a, b in zip(entries, entries[1:], strict=False)), "the rank's clock"
    assert (reader.lines, reader.events, len(reader.malformed)) == (len(lines), 6, 1)
    assert reader.report() == (
        f"the mega stack's log parser megatron: 6 event(s) from {len(lines)} line(s) of output (kept in {raw}); 1 "
        f"malformed line(s) skipped, the first line 5: lacks 'elapsed time per iteration (ms)', 'global batch size', "
        f"'lm loss': {lines[4]!r}")


def test_a_parser_that_matches_nothing_or_fails_fails_naming_the_stack_and_the_parser(tmp_path: Path):
    stream, raw = tmp_path / "rank0.stack.dllogger.json", tmp_path / "rank0.stack.log"
    reader = LogReader(megatron_stack(tmp_path), megatron, {**INPUTS, "stream": str(stream)}, raw)
    for line in ("step 1 loss 7.9", "step 2 loss 7.8"):
        reader.line(line)
    reader.close()
    with pytest.raises(PerfplayError) as raised:
        reader.check()
    assert str(raised.value) == (f"the mega stack's log parser megatron: 0 event(s) from 2 line(s) of output (kept in "
                                 f"{raw}): it matched no line: is the program's log in its format?")

    def broken(line: str, inputs: dict) -> dict:
        return {"step": 1, "data": {"train.loss": math.log(-len(line))}}

    reader = LogReader(megatron_stack(tmp_path), broken, {**INPUTS, "stream": str(stream)}, raw)
    reader.line("step 1 loss 7.9")  # math.log of a negative number: a ValueError, a malformed line
    reader.line("")  # log(0): also a ValueError
    assert len(reader.malformed) == 2

    def wrong(line: str, inputs: dict) -> list:
        return [{"step": "one", "data": {}}]

    reader = LogReader(megatron_stack(tmp_path), wrong, {**INPUTS, "stream": str(stream)}, raw)
    reader.line("step 1")
    reader.line("step 2")
    reader.close()
    with pytest.raises(PerfplayError) as raised:
        reader.check()
    assert str(raised.value) == ("the mega stack's log parser megatron failed: TypeError: returned {'step': 'one', "
                                 "'data': {}}, not {'step': <int >= 1 or None>, 'data': {...}} (line 1: 'step 1')")


def test_a_declared_log_file_is_followed_as_written_and_its_absence_named(tmp_path: Path):
    """The Follower hands on each complete line of a file that appears after it started, and at stop() the rest, a
    last line without its newline too; a log file the program never wrote fails the rank naming it."""
    log, got = tmp_path / "megatron.log", []
    follower = Follower(log, got.append)
    follower.start()
    try:
        with open(log, "w", encoding="utf-8") as out:
            out.write("first\nsecond\nthi")
            out.flush()
            out.write("rd")
    finally:
        follower.stop()
    assert got == ["first", "second", "third"]
    reader = LogReader(megatron_stack(tmp_path), megatron, {**INPUTS, "stream": str(tmp_path / "stream")},
                       tmp_path / "rank0.stack.log", tmp_path / "never.log")
    reader.close()
    with pytest.raises(PerfplayError, match=r"^the mega stack's log parser megatron: the program wrote no "
                                            r"\S+/never.log \(the stack's log_file\)$"):
        reader.check()
