"""A mixture of experts' load-balancing loss (the llama case's router_aux_loss_coef): FlagPerf's mixtral_8x7B and
qwen1.5_MoE Megatron runs add it at 1e-2 (--moe-aux-loss-coeff), the model cases set it, the trained loss is the
language model's plus it times transformers' load_balancing_loss_func (Switch Transformer's), the same on every
stack that trains the case's model (pytorch, deepspeed: the case's train_step), and Megatron is given the flag."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch.nn import functional as F
from transformers.models.mixtral.modeling_mixtral import load_balancing_loss_func

from case_runners.cases.llama.case import LlamaCase
from case_runners.core.paths import project_root
from case_runners.plan.run_plan import make_plan

ROOT = project_root()


def params(coef: float) -> dict:
    return {"model": "tiny_moe", "vocab_size": 0, "seq_len": 16, "max_grad_norm": 1.0, "router_aux_loss_coef": coef}


def test_the_trained_loss_adds_the_routers_load_balancing_loss_times_the_coefficient():
    torch.manual_seed(0)
    batch = (torch.randint(0, 4096, (2, 16)), torch.randint(0, 4096, (2, 16)))
    losses, gates = {}, {}
    for coef in (0.0, 0.01):
        case = LlamaCase(params(coef), ctx=None)  # type: ignore[arg-type]  # train_step reads only the params
        torch.manual_seed(1)
        model = case.build_model()
        loss, count = case.train_step(model, batch)
        loss.backward()
        losses[coef] = loss.item()
        gates[coef] = model.model.layers[0].mlp.gate.weight.grad.clone()
        assert count == 32
    out = model(input_ids=batch[0], output_router_logits=True)
    language = F.cross_entropy(out.logits.float().flatten(0, 1), batch[1].flatten()).item()
    balance = load_balancing_loss_func(out.router_logits, 4, 2).item()  # 4 experts, top-2: about 2 when balanced
    assert losses[0.0] == pytest.approx(language, rel=1e-6)
    assert losses[0.01] == pytest.approx(language + 0.01 * balance, rel=1e-6) and 1.5 < balance < 3
    assert not torch.allclose(gates[0.0], gates[0.01])  # the router learns from it


def test_flagperfs_coefficient_on_the_moe_cases_and_megatron_is_given_it(tmp_path: Path):
    result = make_plan({"vendor": "nvidia", "cases": ["mixtral_8x7b:megatron:H100:4:8:1",
                                                      "qwen1.5_moe:deepspeed:H100:1:8:1"]}, check=True, root=ROOT)
    assert result["ok"], result["errors"]
    assert [c["params"]["router_aux_loss_coef"] for c in result["cases"]] == [0.01, 0.01]
    from test_megatron_stack import flags, inputs_of, launcher

    got = flags(launcher().megatron_argv(inputs_of("mixtral_8x7b:megatron:H100:4:8:1", tmp_path), "/m"))
    assert (got["--moe-aux-loss-coeff"], got["--moe-router-load-balancing-type"]) == ("0.01", "aux_loss")


def test_a_load_balancing_loss_on_a_dense_model_is_refused():
    result = make_plan({"vendor": "cpu", "cases": [{"case": "llama", "overrides": {"router_aux_loss_coef": 0.01}}]},
                       check=True, root=ROOT)
    assert [str(e) for e in result["errors"]] == [
        "run overrides (perfplay_cases[0].overrides): key 'router_aux_loss_coef' is 0.01, but model 'tiny' is dense: "
        "only a mixture of experts has a router to balance; allowed: 0"]
