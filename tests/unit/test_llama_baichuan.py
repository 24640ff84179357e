"""baichuan2_13b's model, written from the published architecture (baichuan.py): ALiBi's slopes and bias, its
causality without position weights, the normalised head, and a training step with and without activation
checkpointing, at a CPU's size of the shape."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from case_runners.cases.llama import shapes
from case_runners.cases.llama.baichuan import BaichuanForCausalLM, alibi_mask, alibi_slopes

SMALL = dataclasses.replace(shapes.SHAPES["baichuan2_13b"], hidden=80, intermediate=160, layers=2, heads=5,
                            kv_heads=5, vocab=512)


def test_alibi_slopes_are_the_published_series_for_40_heads():
    """32 heads' geometric series 2^-(8/32)·k, then every other slope of 64 heads' (Press et al.; Baichuan 2's
    _get_interleave)."""
    expected = [2 ** (-(k + 1) / 4) for k in range(32)] + [2 ** (-(2 * k + 1) / 8) for k in range(8)]
    assert alibi_slopes(40) == pytest.approx(expected, rel=1e-12)
    assert alibi_slopes(8) == pytest.approx([2 ** -(k + 1) for k in range(8)], rel=1e-12)


def test_the_bias_is_minus_slope_times_distance_up_to_a_rows_constant_and_causal():
    slopes = torch.tensor(alibi_slopes(40), dtype=torch.float64)
    mask = alibi_mask(slopes, 7, torch.float64)
    for i in range(7):
        for j in range(7):
            if j > i:
                assert torch.isinf(mask[:, i, j]).all()
            else:
                assert torch.allclose(mask[:, i, j] - mask[:, i, i], -slopes * (i - j))


def test_a_token_sees_the_past_only_and_the_order_matters():
    torch.manual_seed(0)
    model = BaichuanForCausalLM(SMALL).eval()
    ids = torch.randint(0, SMALL.vocab, (1, 12))
    changed = ids.clone()
    changed[0, 8:] = (changed[0, 8:] + 1) % SMALL.vocab
    with torch.no_grad():
        logits, other = model(ids).logits, model(changed).logits
        swapped = model(ids[:, [1, 0, *range(2, 12)]]).logits
    assert torch.allclose(logits[:, :8], other[:, :8]) and not torch.allclose(logits[:, 8:], other[:, 8:])
    assert not torch.allclose(logits[:, 2:], swapped[:, 2:]), "ALiBi: positions matter with no position weights"
    hidden = model.model(ids)  # the head's rows are unit vectors: a logit is at most the hidden state's length
    assert (logits.abs() <= hidden.norm(dim=-1, keepdim=True) * (1 + 1e-5)).all()


def test_a_training_step_with_and_without_activation_checkpointing():
    torch.manual_seed(0)
    ids = torch.randint(0, SMALL.vocab, (2, 16))
    grads = []
    for checkpointing in (False, True):
        torch.manual_seed(1)
        model = BaichuanForCausalLM(SMALL).train()
        if checkpointing:
            model.activation_checkpointing_enable()
        logits = model(ids[:, :-1]).logits
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten())
        assert abs(loss.item() - torch.log(torch.tensor(512.0)).item()) < 1.0
        loss.backward()
        grads.append({name: p.grad for name, p in model.named_parameters()})
        assert all(g is not None and g.abs().sum() > 0 for g in grads[-1].values())
    assert all(torch.allclose(grads[0][name], grads[1][name], atol=1e-6) for name in grads[0])
