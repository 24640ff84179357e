"""A vendor stack's log parser (stack.yaml `log_parser`, vendors/vendor_stacks.py): for a program that prints its own
training log (Megatron-LM, FlagScale, a vendor's fork in its image, as FlagPerf's in_container cases read it), the
rank turns the lines of its output into the stream tasks/training/vendor_stack.py checks, so that the record,
summary and compare are those of any stack.

A parser is a function `parse_line(line, inputs)`: `line` one line of the program's output (stdout and stderr,
without its newline), `inputs` the rank's stack inputs (vendor_stack.py: seq_len, global_batch, eval.metric...).
It returns None for a line that is not its kind, or the stream's events: one `{"step": N, "data": {...}}` (or a
list of them) with the data of the stream's contract, in the record's units: a training step's `train.loss`,
`step_time` (seconds) and `samples` (the global batch's, tokens for llama), `train.lr` optional; the end's
`eval.<metric>` (step None: the last step logged). It raises ValueError for a line of its kind that it cannot read:
such a line is skipped, counted and reported (the first one quoted). Any other exception fails the rank naming the
parser and the line. The built-in parsers are PARSERS (their names: vendors/vendor_stacks.py LOG_PARSERS); a
stack's own is a .py file of its folder defining parse_line (vendors/vendor_stacks.py PARSER_FUNCTION).

LogReader writes each event to the stream as a `DLLL` line when its line arrives, timestamped by the rank's own
clock, and keeps the program's raw output beside it (rank<R>.stack.log). Where the stack declares a log_file, the
lines are that file's, followed as the program writes it (Follower), not its output's.
"""

from __future__ import annotations

import contextlib
import importlib.util
import re
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from case_runners.core import files
from case_runners.core.errors import PerfplayError
from case_runners.plan.config.stacks import ROUTER_AUX_LOSS
from case_runners.rank.driver.dllogger import EVAL_PREFIX, TRAIN_LOSS, TRAIN_LR, JSONStream
from case_runners.vendors.vendor_stacks import LOG_PARSERS, MEGATRON, PARSER_FUNCTION, VendorStack

Parser = Callable[[str, Mapping[str, Any]], Any]
EPOCH = 1  # a parsed step's epoch in the stream: Megatron counts iterations, not epochs
QUOTE_CHARS = 160  # of a malformed line, in its report
POLL_S = 0.2  # how often a followed log file is read for new lines
JOIN_S = 10.0  # a follower's time to read the rest once the program ended

# Megatron-LM's training line, megatron/training/training.py training_log() (NVIDIA/Megatron-LM at d98e8a6, as
# FlagPerf's training/benchmarks/llama3_8B/megatron/run_pretraining.py and mixtral_8x7B/flagscale reads it: the
# third '|' field, "elapsed time per iteration (ms): <ms>"); printed by the last rank every --log-interval
# iterations (and after the first), each field ' <name>: <value> |':
#  [2025-04-13 23:41:12.123456] iteration       10/     100 | consumed samples:          160 | elapsed time per
#  iteration (ms): 1147.6 | learning rate: 3.000000E-04 | global batch size:    16 | lm loss: 7.399415E+00 |
#  loss scale: 1.0 | grad norm: 2.918 | number of skipped iterations:   0 | number of nan iterations:   0 |
# The losses are the mean over the interval's iterations (pretrain_gpt.py's loss_func reports 'lm loss', nats per
# token), the time the interval's wall time per iteration; a loss of an interval whose iterations were all skipped
# is not printed. Its evaluation, evaluate_and_print_results() (prefix 'iteration <N>' during training, 'iteration
# <N> on validation set' / 'on test set' at the end):
#  validation loss at iteration 100 on validation set | lm loss value: 6.912345E+00 | lm loss PPL: 1.004E+03 |
# A mixture of experts' line also carries the router's 'load_balancing_loss' (megatron/core/transformer/moe/
# moe_logging.py, reported into training_log's total_loss_dict): per MoE layer the Switch loss divided by
# --moe-aux-loss-coeff (router.py attach_and_log_load_balancing_loss), E/k x sum_e f_e p_e with f_e the share of the
# top-k assignments expert e got and p_e its mean router probability (moe_utils.py switch_load_balancing_loss_func),
# 1 when balanced, averaged over the layers. transformers' load_balancing_loss_func, which the built-in stacks add to
# the trained loss, is E x sum_e f_e p_e over every layer's tokens at once (top-k when balanced): k times Megatron's,
# but for the layers being pooled before the product rather than after.
_ITERATION = re.compile(r"\biteration\s+(\d+)\s*/\s*(\d+)\s*\|")
_VALIDATION = re.compile(r"\bvalidation loss at (?P<prefix>[^|]*?)\s*\|(?P<fields>.*)$")
_STEP_TIME, _BATCH, _LOSS, _LR = "elapsed time per iteration (ms)", "global batch size", "lm loss", "learning rate"
_BALANCING = "load_balancing_loss"


def megatron(line: str, inputs: Mapping[str, Any]) -> dict[str, Any] | None:
    """Megatron-LM's training or validation line (above) as the stream's event; samples: the global batch size
    (sequences) x the inputs' seq_len; the trained loss the built-in stacks' (lm loss + the model's
    router_aux_loss_coef x k x load_balancing_loss, where the line has it). Run Megatron with --log-interval 1: the
    contract wants every step."""
    if found := _ITERATION.search(line):
        fields = _fields(line[found.end():])
        missing = [name for name in (_STEP_TIME, _BATCH, _LOSS) if name not in fields]
        if missing:
            raise ValueError(f"lacks {', '.join(repr(m) for m in missing)}")
        data = {TRAIN_LOSS: _float(fields, _LOSS) + _balancing(fields, inputs.get("model") or {}),
                "step_time": _float(fields, _STEP_TIME) / 1000.0,
                "samples": int(_float(fields, _BATCH)) * int(inputs["seq_len"])}
        if _LR in fields:
            data[TRAIN_LR] = _float(fields, _LR)
        return {"step": int(found.group(1)), "data": data}
    if found := _VALIDATION.search(line):
        prefix = found.group("prefix")
        if "test" in prefix:  # the test split's: not the held-out loss
            return None
        fields = _fields(found.group("fields"))
        if f"{_LOSS} value" not in fields:
            raise ValueError(f"lacks '{_LOSS} value'")
        step = re.search(r"\biteration (\d+)", prefix)
        return {"step": int(step.group(1)) if step else None,
                "data": {EVAL_PREFIX + str(inputs["eval"]["metric"]): _float(fields, f"{_LOSS} value")}}
    return None


def _balancing(fields: dict[str, str], model: Mapping[str, Any]) -> float:
    """The load-balancing term of the trained loss on transformers' scale (above); 0 without a coefficient."""
    coef = float(model.get(ROUTER_AUX_LOSS) or 0.0)
    if not coef or _BALANCING not in fields:
        return 0.0
    return coef * int(model["experts_per_token"]) * _float(fields, _BALANCING)


def _fields(text: str) -> dict[str, str]:
    """' name: value |' fields: {name: value}."""
    return {name.strip(): value.strip() for name, sep, value in (f.rpartition(":") for f in text.split("|")) if sep}


def _float(fields: dict[str, str], name: str) -> float:
    try:
        return float(fields[name])
    except ValueError:
        raise ValueError(f"{name!r} is {fields[name]!r}, not a number") from None


PARSERS: dict[str, Parser] = {MEGATRON: megatron}
assert tuple(PARSERS) == LOG_PARSERS, "a built-in parser's name is declared in vendors/vendor_stacks.py"


def load_parser(stack: VendorStack) -> Parser:
    """The stack's parser: a built-in one, or its file's PARSER_FUNCTION (run here, in the rank)."""
    assert stack.log_parser is not None
    if stack.log_parser in PARSERS:
        return PARSERS[stack.log_parser]
    path = stack.dir / stack.log_parser
    spec = importlib.util.spec_from_file_location(f"perfplay_stack_{stack.name}_log_parser", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - the vendor's code: whatever it raises names it
        raise PerfplayError(f"the {stack.name} stack's log parser {path} cannot be loaded: "
                            f"{type(exc).__name__}: {exc}") from None
    function = getattr(module, PARSER_FUNCTION, None)
    if not callable(function):
        raise PerfplayError(f"the {stack.name} stack's log parser {path} defines no function {PARSER_FUNCTION}")
    return function


class LogReader:
    """The program's output, a line at a time (line(), from the thread that reads it): kept raw, parsed, and each
    event written to the stream at once. Then check() says what the parser made of it."""

    def __init__(self, stack: VendorStack, parse: Parser, inputs: Mapping[str, Any], raw: Path,
                 log_file: Path | None = None) -> None:
        self.stack, self.parse, self.inputs, self.raw, self.log_file = stack, parse, inputs, raw, log_file
        self.stream = Path(inputs["stream"])
        self._raw = files.open_text(raw)
        self._stream = JSONStream(self.stream)
        self.lines = self.events = 0
        self.malformed: list[tuple[int, str, str]] = []  # (line number, line, why)
        self.crash: str | None = None  # the parser's own failure: no line is parsed after it
        self._step: int | None = None  # the last step logged

    def line(self, text: str) -> None:
        self.lines += 1
        if self.crash is not None:
            return
        try:
            self._raw.write(text + "\n")
            self._raw.flush()
        except OSError as exc:  # never raised into the thread that drains the program's output
            self.crash = f"cannot write {self.raw}: {exc}"
            return
        try:
            found = self.parse(text, self.inputs)
            events = [] if found is None else found if isinstance(found, list) else [found]
            for event in events:
                self._write(event)
        except ValueError as exc:
            self.malformed.append((self.lines, text, str(exc)))
        except Exception as exc:  # noqa: BLE001 - the vendor's parser (or a full disk): it fails the rank, named
            self.crash = f"{type(exc).__name__}: {exc} (line {self.lines}: {_quote(text)})"

    def _write(self, event: Any) -> None:
        if not isinstance(event, dict) or not isinstance(event.get("data"), dict) or \
                not (event.get("step") is None or isinstance(event["step"], int) and event["step"] >= 1):
            raise TypeError(f"returned {event!r}, not {{'step': <int >= 1 or None>, 'data': {{...}}}}")
        step = event["step"] if event["step"] is not None else self._step
        if step is None:
            raise ValueError("an event at the last step before any step was logged")
        self._step = step
        self._stream.log([EPOCH, step], event["data"])
        self.events += 1

    def close(self) -> None:
        self._raw.close()
        self._stream.close()

    @property
    def name(self) -> str:
        return f"the {self.stack.name} stack's log parser {self.stack.log_parser}"

    def report(self) -> str:
        """What the parser made of the output, in a line."""
        said = (f"{self.name}: {self.events} event(s) from {self.lines} line(s) of "
                f"{self.log_file or 'output'} (kept in {self.raw})")
        if self.malformed:
            number, text, why = self.malformed[0]
            said += (f"; {len(self.malformed)} malformed line(s) skipped, the first line {number}: {why}: "
                     f"{_quote(text)}")
        return said

    def check(self) -> None:
        """PerfplayError where the parser failed or matched no line."""
        if self.crash is not None:
            raise PerfplayError(f"{self.name} failed: {self.crash}")
        if self.log_file is not None and not self.log_file.is_file():
            raise PerfplayError(f"{self.name}: the program wrote no {self.log_file} (the stack's log_file)")
        if not self.events:
            raise PerfplayError(f"{self.report()}: it matched no line: is the program's log in its format?")


def _quote(text: str) -> str:
    return repr(text if len(text) <= QUOTE_CHARS else text[:QUOTE_CHARS] + "...")


class Follower:
    """A file another process writes, read a complete line at a time on a thread of its own (tail -f) from start()
    to stop(), which reads the rest (a last line without its newline too)."""

    def __init__(self, path: Path, on_line: Callable[[str], None]) -> None:
        self.path, self.on_line = path, on_line
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._done.set()
        self._thread.join(timeout=JOIN_S)

    def _run(self) -> None:
        handle = None
        partial = ""
        try:
            while True:
                done = self._done.is_set()  # before the read: a stop() after it still gets the last lines
                if handle is None:
                    with contextlib.suppress(OSError):
                        handle = open(self.path, encoding="utf-8", errors="replace")  # noqa: SIM115 - held open
                if handle is not None:
                    *lines, partial = (partial + handle.read()).split("\n")
                    for line in lines:
                        self.on_line(line)
                if done:
                    if partial:
                        self.on_line(partial)
                    return
                self._done.wait(POLL_S)
        finally:
            if handle is not None:
                handle.close()
