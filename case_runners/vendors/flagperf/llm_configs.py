"""FlagPerf's LLM stack configs as perfplay's model-case configs: training/<vendor>/<case>-<framework>/config/
config_<HW>x<N>x<P>.py of the frameworks plan/config/flagperf_names.py LLM_FRAMEWORKS lists (with the folder's
ds_config.json), and <case>-in_container/config.py laid over training/benchmarks/<case>/in_container/config.py.

Each becomes vendor/<vendor>/cases/<model>/<stack>/config_<HW>x<N>x<P>.yaml (model: the shape's name, cases/llama/
shapes.py): the workload as the model case's params (seq_len; the global batch checked against the model case's
global_batch, or batch_size per data-parallel rank where it has none; grad_accumulation the rank's share in FlagPerf's
micro batches; tokens as max_steps), the parallelism as the stack's (deepspeed's zero_stage; a vendor stack's
tensor_parallel, pipeline_parallel, micro_batch, recompute where its stack.yaml declares them, and a mixture of
experts' expert_parallel from its Megatron script). deepspeed is a
built-in stack; the others need a vendor stack of the vendor folder that runs the model (or the llama case): without
one, nothing is written and the report says what stack it needs. Every name is reported (LLM_PARAMS), and every
value checked against the model case (the llama case with the shape, until the model cases exist) and the stack.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from case_runners.cases.llama.shapes import SHAPES
from case_runners.core.errors import ConfigError
from case_runners.plan.config.flagperf_names import (
    ACCUMULATION,
    CASE_NAMES,
    DS_CONFIG,
    GLOBAL,
    LLM_FRAMEWORKS,
    MICRO,
    STACK_PARALLELISM,
    STEPS,
    TOKENS,
    VENDOR_STACK,
    llm_param,
)
from case_runners.plan.config.shared_params import (
    EXPERT_PARALLEL,
    EXPERT_TENSOR_PARALLEL,
    GLOBAL_BATCH,
    GRAD_ACCUMULATION,
    MICRO_BATCH,
    expert_grid,
    grid_text,
)
from case_runners.plan.config.stacks import STACK_PARAMS, stack_of
from case_runners.plan.layering import load_case_base, with_vendor_stack
from case_runners.vendors.description import load_vendor
from case_runners.vendors.flagperf.report import MAPPED, NONE, READ
from case_runners.vendors.flagperf.vendor_facts import hardware_names
from case_runners.vendors.vendor_stacks import VendorStack, stacks_for_case

if TYPE_CHECKING:
    from case_runners.vendors.flagperf.importer import Importer

IN_CONTAINER = "in_container"
IN_CONTAINER_CONFIG = "config.py"  # training/<vendor>/<case>-in_container/config.py
IN_CONTAINER_NPROC = 8  # training/benchmarks/<case>/in_container/singlenode_run.sh: --nproc_per_node 8
LLAMA = "llama"  # the case every model case is a shape of
# of a Megatron script, literal
SCRIPT_FLAGS = {"global_batch": "--global-batch-size", "seq_len": "--seq-length",
                EXPERT_PARALLEL: "--expert-model-parallel-size"}
# A vendor stack's params that a vendor's training_adapter.sh sets by a word (`--transformer-impl local`: metax's
# llama3_8B and qwen1.5_MoE), where the stack declares them: {param: flag}.
ADAPTER_WORDS = {"transformer_impl": "--transformer-impl"}
_FRAMEWORKS = sorted((row.flagperf for row in LLM_FRAMEWORKS), key=len, reverse=True)  # megatron-deepspeed first


def llm_case(case_dir: str) -> tuple[str | None, str, str] | None:
    """(perfplay model or None, FlagPerf case, framework) of an LLM case folder <case>-<framework>; None: not one."""
    for framework in _FRAMEWORKS:
        if case_dir.endswith(f"-{framework}"):
            name = case_dir.removesuffix(f"-{framework}")
            model = CASE_NAMES.get(name)
            return (model if model in SHAPES else None), name, framework
    return None


def models_line() -> str:
    return ", ".join(f"{name} -> {model}" for name, model in CASE_NAMES.items() if model in SHAPES)


@dataclass
class Found:
    """One config's values by role, each with the source that set it."""
    values: dict[str, tuple[Any, str]] = field(default_factory=dict)

    def get(self, role: str) -> Any:
        return self.values[role][0] if role in self.values else None


class LlmConfig:
    """One FlagPerf LLM config mapped (the importer's report and outputs)."""

    def __init__(self, importer: Importer, path: Path, vendor: str, model: str, flagperf_case: str,
                 framework: str) -> None:
        self.imp, self.path, self.vendor, self.model = importer, path, vendor, model
        self.flagperf_case, self.framework = flagperf_case, framework
        self.shown = importer.shown(path)
        self.report = importer.report
        self.base_dir = importer.sources.base / "training" / "benchmarks" / flagperf_case / framework
        self.stack, self.stack_name, self.needs = self._stack()  # the stack, its folder's name, why none ('')

    def run(self, scale: tuple[str, int, int] | None) -> None:
        """Map the config; `scale` (HW, nnodes, nproc) from its name, None for in_container's (told from it)."""
        values, where = self._read()
        found = Found()
        case = self.model if self.model in self.imp.cases else LLAMA
        base, _ = load_case_base(case, self.imp.root)
        if scale is None:
            hardware = in_container_hardware(self.imp, self.vendor)
            nnodes, nproc = in_container_scale(values)
            self.report.add(MAPPED if hardware and not self.needs else NONE, self.shown,
                            f"FlagPerf's in_container config names no chip and no scale: {nnodes}x{nproc} (8 ranks a "
                            f"node as its singlenode_run.sh, the nodes TP x PP needs), on "
                            f"{hardware or 'no hardware: the vendor names none'} (the vendor's default hardware)")
        else:
            hardware, nnodes, nproc = scale
        if self.stack is not None:
            with_vendor_stack(base, self.stack)
        params: dict[str, Any] = {}
        for name, value in values.items():
            self._name(name, value, self._source(name, where[name]), found, base, params)
        seq_len = self._seq_len(found, params, base)
        self._batch_and_steps(found, seq_len, nnodes, nproc, base, params)
        self._experts(nnodes * nproc, base, params)
        self._adapter_words(base, params)
        self._write(params, hardware, nnodes, nproc)

    def _name(self, name: str, value: Any, source: str, found: Found, base: dict[str, Any],
              params: dict[str, Any]) -> None:
        """One name of the config: reported without a counterpart, kept for the batch and steps (its role), or
        mapped to the model case's or the stack's param (a name without a row passes as it is, if it is one)."""
        row = llm_param(name)
        if row is not None and row.perfplay is None:
            self.report.add(NONE, source, row.note)
            return
        if row is not None and row.role:
            found.values[row.role] = (value, source)
            return
        target = row.perfplay if row is not None and row.perfplay else name
        found.values[target] = (value, source)
        if row is not None and target == "amp_dtype":
            self._precision(name, value, source, base, params)
        elif (target in STACK_PARALLELISM and target not in base["params"]) or \
                stack_of(target, self._own()) not in (None, self.stack_name):
            self.report.add(NONE, source, f"{target}: {value!r}: {self._why(target)}")
        else:
            self._set(target, value, source, base, params, note=row.note if row is not None else "")

    # -- reading ------------------------------------------------------------------------------------------------

    def _read(self) -> tuple[dict[str, Any], dict[str, str]]:
        """The config's names (in_container's over its benchmark's base config), then its ds_config.json's keys."""
        values: dict[str, Any] = {}
        where: dict[str, str] = {}
        if self.framework == IN_CONTAINER:
            standard = self.base_dir / IN_CONTAINER_CONFIG
            if standard.is_file():
                config = self.imp.read_python(standard, self.imp.shown(standard))
                values.update(config.values)
                where.update(config.where)
                self.report.file(self.imp.shown(standard), READ, "the base an in_container config is laid over",
                                 f"read with {self.shown}")
        config = self.imp.read_python(self.path, self.shown)
        for sibling in config.siblings:
            self.report.file(sibling, READ, "a sibling a vendor config imports", f"read with {self.shown}")
        values.update(config.values)
        where.update(config.where)
        ds_config = self.path.parent / DS_CONFIG
        if ds_config.is_file() and self.path.name != IN_CONTAINER_CONFIG:
            shown = self.imp.shown(ds_config)
            for key, value in _dotted(self._json(ds_config)).items():
                values[key], where[key] = value, shown
            self.report.file(shown, READ, "a DeepSpeed config of a vendor config's folder", f"read with {self.shown}")
        return values, where

    def _json(self, path: Path) -> dict[str, Any]:
        """A DeepSpeed config; ConfigError naming it when it is not a JSON object."""
        shown = self.imp.shown(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ConfigError(f"cannot be read as JSON ({exc})", file=shown) from None
        if not isinstance(data, dict):
            raise ConfigError(f"must be a JSON object, got {type(data).__name__}", file=shown)
        return data

    def _source(self, name: str, where: str) -> str:
        if where.startswith(f"{self.shown}:"):
            return f"{where} {name}"
        return f"{self.shown} {name} (from {where})"

    def _script(self, flag: str, folder: Path | None = None) -> tuple[int, str] | None:
        """A literal number of the benchmark's Megatron script (`--global-batch-size 512`; or of another folder's
        scripts), with its file:line."""
        found = self._script_value(flag, r"[0-9]+", folder)
        return (int(found[0]), found[1]) if found else None

    def _script_value(self, flag: str, pattern: str, folder: Path | None = None) -> tuple[str, str] | None:
        """The first uncommented value of a flag matching pattern in a folder's scripts, with its file:line."""
        folder = folder or self.base_dir
        if not folder.is_dir():
            return None
        for script in sorted(folder.glob("*.sh")):
            text = script.read_text(encoding="utf-8", errors="replace")
            for number, line in enumerate(text.splitlines(), 1):
                match = re.search(rf"{re.escape(flag)}\s+({pattern})\b", line)
                if match and not line.lstrip().startswith("#"):
                    return match[1], f"{self.imp.shown(script)}:{number} {flag}"
        return None

    def _adapter_words(self, base: dict[str, Any], params: dict[str, Any]) -> None:
        """ADAPTER_WORDS the vendor's training_adapter.sh gives, where its stack declares the param."""
        for param, flag in ADAPTER_WORDS.items():
            found = self._script_value(flag, r"[A-Za-z_]+", self.path.parent) if param in base["params"] else None
            if found is not None:
                self._set(param, found[0], found[1], base, params)

    def _experts(self, ranks: int, base: dict[str, Any], params: dict[str, Any]) -> None:
        """A mixture of experts' expert parallelism on a stack that takes it: its Megatron script's
        --expert-model-parallel-size (the vendor's training_adapter.sh, else the benchmark's), and
        expert_tensor_parallel 1 where megatron-core's default (TP's) makes an expert grid the ranks cannot hold
        (FlagPerf's mixtral_8x7B: EP 8 over TP 8 x PP 2 on 32 ranks)."""
        if EXPERT_PARALLEL not in base["params"] or not SHAPES[self.model].experts:
            return
        flag = SCRIPT_FLAGS[EXPERT_PARALLEL]
        found = self._script(flag, self.path.parent) or self._script(flag)
        if found is None or not self._set(EXPERT_PARALLEL, found[0], found[1], base, params):
            return
        laid = {**base["params"], **params}
        default, whole = expert_grid(laid), expert_grid({**laid, EXPERT_TENSOR_PARALLEL: 1})
        if ranks % math.prod(default.values()) and EXPERT_TENSOR_PARALLEL in base["params"] and \
                not ranks % math.prod(whole.values()):
            self._set(EXPERT_TENSOR_PARALLEL, 1, found[1], base, params,
                      note=f"each expert whole on its rank: megatron-core's default makes {grid_text(default)} "
                           f"ranks, which {ranks} cannot hold")

    # -- the stack ----------------------------------------------------------------------------------------------

    def _stack(self) -> tuple[VendorStack | None, str, str]:
        """(the vendor stack or None, the stack folder's name, why none: '' when there is a stack)."""
        if self.framework in STACK_PARAMS:
            return None, self.framework, ""
        if self.vendor not in self.imp.vendors:
            stacks: dict[str, VendorStack] = {}
        else:
            stacks = stacks_for_case(self.imp.root, self.vendor, LLAMA, self.model)
        wanted = self.framework.replace("-", "_")
        chosen = stacks.get(wanted) or (next(iter(stacks.values())) if len(stacks) == 1 else None)
        if chosen is not None:
            return chosen, chosen.name, ""
        what = f"{VENDOR_STACK.replace('<vendor>', self.vendor)}stack.yaml whose cases list {self.model} (or " \
               f"{LLAMA}), running FlagPerf's {self.framework} with params {', '.join(STACK_PARALLELISM)}"
        if stacks:
            return None, "", f"needs a vendor stack: several run {self.model} ({', '.join(stacks)}) and none is " \
                             f"named {wanted}: name it so ({what})"
        return None, "", f"needs a vendor stack: {what}"

    # -- params -------------------------------------------------------------------------------------------------

    def _set(self, target: str, value: Any, source: str, base: dict[str, Any], params: dict[str, Any],
             note: str = "") -> bool:
        """One param checked against the model case (and its stack) and kept; reported either way."""
        mapped = self.imp.check_param(target, value, source, self.model, base, note)
        if mapped is None:
            return False
        params[target] = mapped[1]
        return True

    def _precision(self, name: str, value: Any, source: str, base: dict[str, Any], params: dict[str, Any]) -> None:
        """precision 'bf16' | 'fp16', or ds_config.json's bf16.enabled / fp16.enabled: amp with that dtype."""
        if name.endswith(".enabled"):
            if value is not True:
                self.report.add(NONE, source, f"{value!r}: only an enabled precision sets amp_dtype")
                return
            value = name.split(".")[0]
        if self._set("amp_dtype", value, source, base, params, note="with amp: true"):
            params["amp"] = True

    def _seq_len(self, found: Found, params: dict[str, Any], base: dict[str, Any]) -> int | None:
        """The tokens per sequence: the config's (checked against the shape's context; not written where it is the
        model case's standard) or the script's."""
        shape = SHAPES[self.model]
        seq_len = params.get("seq_len")
        if seq_len is None and found.get("seq_len") is not None and found.get("seq_len") == base["params"]["seq_len"]:
            seq_len = found.get("seq_len")
        if seq_len is not None and seq_len > shape.max_positions:
            self.report.add(NONE, found.values["seq_len"][1], f"seq_len {seq_len} is beyond {self.model}'s context "
                                                              f"({shape.max_positions} tokens, cases/llama/shapes.py)")
            del params["seq_len"]
            return None
        if seq_len is None:
            script = self._script(SCRIPT_FLAGS["seq_len"])
            return script[0] if script else None
        return int(seq_len)

    def _global_batch(self, found: Found, ranks: int) -> tuple[int, str] | None:
        """The global batch (sequences per optimizer step) and how it was found, or None (reported)."""
        explicit = found.get(GLOBAL)
        if explicit is not None:
            return _positive(explicit), "FlagPerf's global batch"
        micro, accumulation = found.get(MICRO), found.get(ACCUMULATION)
        tp, pp = _positive(found.get("tensor_parallel") or 1), _positive(found.get("pipeline_parallel") or 1)
        where = ""
        if accumulation is None and self.framework == "deepspeed":  # FlagPerf lays the vendor's over the benchmark's
            standard = self._json(self.base_dir / DS_CONFIG) if (self.base_dir / DS_CONFIG).is_file() else {}
            accumulation = standard.get("gradient_accumulation_steps", 1)
            where = f" ({self.imp.shown(self.base_dir / DS_CONFIG)})" if standard else ""
        if micro is not None and accumulation is not None:
            accumulation = _positive(accumulation)
            if ranks % (tp * pp):
                raise ValueError(f"{ranks} ranks are not a multiple of TP {tp} x PP {pp}")
            data_parallel = ranks // (tp * pp)
            return (_positive(micro) * accumulation * data_parallel,
                    f"micro {micro} x accumulation {accumulation}{where} x {data_parallel} data-parallel ranks")
        script = self._script(SCRIPT_FLAGS["global_batch"])
        if script is not None:
            return script[0], script[1]
        return None

    def _batch_and_steps(self, found: Found, seq_len: int | None, nnodes: int, nproc: int,
                         base: dict[str, Any], params: dict[str, Any]) -> None:
        """The global batch (the model case's global_batch where it has one: checked, not written; else batch_size,
        its share per data-parallel rank); the micro batch as the stack's: grad_accumulation = the rank's share /
        micro, and a vendor stack's micro_batch; max_steps from steps or tokens."""
        ranks = nnodes * nproc
        sources = [found.values[role][1] for role in (GLOBAL, MICRO, ACCUMULATION) if role in found.values]
        glob: tuple[int, str] | None = None
        try:
            glob = self._global_batch(found, ranks)
        except ValueError as exc:
            self._batch_line(sources, f"batch_size: {exc}")
        if glob is None:
            if sources:
                self._batch_line(sources, "batch_size: no global batch (neither a global batch, nor a micro batch "
                                          "with its accumulation, nor a --global-batch-size in "
                                          f"{self.imp.shown(self.base_dir)}/*.sh)")
        per_rank = None if glob is None else self._global_batch_share(found, glob, ranks, sources, base, params)
        if MICRO in found.values:
            micro, source = found.values[MICRO]
            if self.stack is not None or self.needs:  # a vendor stack's param
                if MICRO_BATCH in base["params"]:
                    self._set(MICRO_BATCH, micro, source, base, params, note="the vendor stack's")
                else:
                    self.report.add(NONE, source, f"{MICRO_BATCH}: {micro!r}: {self._why(MICRO_BATCH)}")
            if per_rank is not None and not self.needs:
                self._accumulation(found.values[MICRO], per_rank, base, params)
        if STEPS in found.values:
            self._set("max_steps", found.get(STEPS), found.values[STEPS][1], base, params)
        elif TOKENS in found.values:
            tokens, source = found.values[TOKENS]
            if glob is None or seq_len is None:
                self.report.add(NONE, source, "max_steps: tokens need the sequence length and the global batch")
            else:
                samples = _positive(tokens) // seq_len
                self._set("max_steps", max(1, math.ceil(samples / glob[0])), source, base, params,
                          note=f"{tokens} tokens / {seq_len} = {samples} samples / global batch {glob[0]}, rounded up")

    def _global_batch_share(self, found: Found, glob: tuple[int, str], ranks: int, sources: list[str],
                            base: dict[str, Any], params: dict[str, Any]) -> int | None:
        """A data-parallel rank's share of FlagPerf's global batch (None, reported, where it has none): the ranks /
        FlagPerf's TP x PP split it. The model case's global_batch is perfplay's (run-only): FlagPerf's is checked
        against it, and batch_size written only for a model case without one (FlagPerf's micro 1 x ranks)."""
        tp, pp = _positive(found.get("tensor_parallel") or 1), _positive(found.get("pipeline_parallel") or 1)
        dp = ranks // (tp * pp) if not ranks % (tp * pp) else ranks
        over = f"{ranks} ranks" if dp == ranks else f"{dp} data-parallel ranks ({ranks} / (TP {tp} x PP {pp}))"
        standard = int(base["params"].get(GLOBAL_BATCH) or 0)
        if glob[0] % dp:
            self._batch_line(sources, f"batch_size: the global batch {glob[0]} ({glob[1]}) is not a multiple of the "
                                      f"{over}: each trains whole sequences")
            return None
        if standard and glob[0] != standard:
            self._batch_line(sources, f"{GLOBAL_BATCH}: the global batch {glob[0]} ({glob[1]}) is not perfplay's "
                                      f"{self.model}'s standard {standard}: {GLOBAL_BATCH} is run-only, a vendor "
                                      f"config may not set it")
            return None
        if standard:
            self._batch_line(sources, f"-> {GLOBAL_BATCH}: {glob[0]} ({glob[1]}), perfplay's {self.model}'s "
                                      f"standard: nothing to write; {glob[0] // dp} a rank over the {over}", MAPPED)
        elif not self._set("batch_size", glob[0] // dp, sources[0] if sources else glob[1], base, params,
                           note=f"the global batch {glob[0]} ({glob[1]}) / {over}"):
            return None
        else:
            self._batch_line(sources[1:], self.report.items[-1].detail, MAPPED)
        return glob[0] // dp

    def _accumulation(self, micro_found: tuple[Any, str], per_rank: int, base: dict[str, Any],
                      params: dict[str, Any]) -> None:
        """grad_accumulation: the rank's batch in FlagPerf's micro batches (reported where they do not divide it)."""
        source = micro_found[1]
        try:
            micro = _positive(micro_found[0])
        except ValueError as exc:
            self.report.add(NONE, source, f"{GRAD_ACCUMULATION}: the micro batch {exc}")
            return
        if per_rank % micro:
            self.report.add(NONE, source, f"{GRAD_ACCUMULATION}: the micro batch {micro} does not divide batch_size "
                                          f"{per_rank}")
            return
        self._set(GRAD_ACCUMULATION, per_rank // micro, source, base, params,
                  note=f"batch_size {per_rank} in micro batches of {micro}")

    def _batch_line(self, sources: list[str], detail: str, status: str = NONE) -> None:
        for source in sources:
            self.report.add(status, source, detail)

    def _own(self) -> list[str]:
        """The params of the vendor stack that runs this config (none for a built-in stack)."""
        return list(self.stack.params) if self.stack is not None else []

    def _why(self, param: str) -> str:
        """Why a stack param has no place in the config."""
        if self.needs:
            return "a vendor stack's param, and no vendor stack runs this config (its 'needs a vendor stack' line)"
        owner = stack_of(param, self._own())
        if owner is not None and owner != self.stack_name:
            return f"the {owner} stack's param, and this config is FlagPerf's {self.framework}"
        if self.stack is None:
            return f"the built-in {self.stack_name} stack has no {param} (its params: " \
                   f"{', '.join(STACK_PARAMS[self.stack_name]) or 'none'})"
        return f"vendor stack {self.stack.name} has no param {param} (its params: " \
               f"{', '.join(self.stack.params) or 'none'}): add it to {self.stack.shown}"

    # -- the output ---------------------------------------------------------------------------------------------

    def _write(self, params: dict[str, Any], hardware: str | None, nnodes: int, nproc: int) -> None:
        if self.needs:
            self.report.add(NONE, self.shown, self.needs)
            mapped = f"{len(params)} param{'s' * (len(params) != 1)} mapped"
            self.report.file(self.shown, NONE, f"a vendor config of FlagPerf's {self.framework}: needs a vendor "
                                               f"stack", f"{self.model}, {mapped}, not written")
            return
        if hardware is None:
            self.report.file(self.shown, NONE, "an in_container config whose chip cannot be told",
                             f"vendor/{self.vendor}/ names no hardware")
            return
        self.imp.check_hardware(self.vendor, hardware, self.shown)
        out = f"vendor/{self.vendor}/cases/{self.model}/{self.stack_name}/config_{hardware}x{nnodes}x{nproc}.yaml"
        first = self.imp.llm_outputs.get(out)
        if first is not None:  # two frameworks' configs (megatron and flagscale) of one stack and scale
            if first.framework.replace("-", "_") == self.stack_name or \
                    self.framework.replace("-", "_") != self.stack_name:
                self._same_file(self, first, out)
                return
            self._same_file(first, self, out)  # the stack's own framework's config wins
            self.report.outputs = [o for o in self.report.outputs if o.path != out]
        self.imp.llm_outputs[out] = self
        self.imp.output(out, f"{self.model} on {hardware} ({self.stack_name} stack), from FlagPerf {self.shown}",
                        params)
        self.report.file(self.shown, MAPPED, f"a vendor config of FlagPerf's {self.framework}",
                         f"-> {out} ({len(params)} params)")


    def _same_file(self, loser: LlmConfig, winner: LlmConfig, out: str) -> None:
        self.report.files.pop(loser.shown, None)
        self.report.file(loser.shown, NONE, "a vendor config whose file another framework's config writes",
                         f"{out} is {winner.shown}'s (FlagPerf's {winner.framework}); import this one alone (its "
                         f"path) to have it instead")


def in_container_scale(values: dict[str, Any]) -> tuple[int, int]:
    """(nnodes, nproc) of an in_container config: 8 ranks a node (its singlenode_run.sh), as many nodes as TP x PP
    needs."""
    tp = values.get("TENSOR_PARALLEL", 1)
    pp = values.get("PIPELINE_PARALLEL", 1)
    try:
        per_model = _positive(tp) * _positive(pp)
    except ValueError:
        per_model = 1
    return max(1, math.ceil(per_model / IN_CONTAINER_NPROC)), IN_CONTAINER_NPROC


def in_container_hardware(importer: Importer, vendor: str) -> str | None:
    """The chip of a vendor's in_container configs (FlagPerf names none): vendor.yaml's default_hardware, or for a
    vendor perfplay lacks the <HW> its pytorch configs use most."""
    if vendor in importer.vendors:
        return load_vendor(vendor, importer.root).default_hardware
    names = hardware_names(importer.sources.base / "training" / vendor)
    return names[0] if names else None


def _positive(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"{value!r} is not a number")
    try:
        number = int(str(value).strip())
    except ValueError:
        raise ValueError(f"{value!r} is not a whole number") from None
    if number < 1:
        raise ValueError(f"{value!r} is not a positive number")
    return number


def _dotted(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A JSON object's leaves by dotted key (zero_optimization.stage)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(_dotted(value, f"{name}."))
        else:
            out[name] = value
    return out
