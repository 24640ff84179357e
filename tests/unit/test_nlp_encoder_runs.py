"""distilbert, bert_hf and longformer: a short real run of each through the direct runner, one command for the three
(their functional shapes on synthetic sequences): a record with throughput, the FLOPs convention and the case's
metric."""

from __future__ import annotations

from pathlib import Path

import pytest

import real_runs

CASES = ("distilbert", "bert_hf", "longformer")


@pytest.fixture(scope="module")
def functional_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return real_runs.functional_run(tmp_path_factory.mktemp("nlp_encoders"), *CASES)


@pytest.mark.parametrize("case", CASES)
def test_a_short_run_records_throughput_mfu_and_the_cases_metric(functional_run: Path, case: str) -> None:
    record, evaluated = real_runs.short_round(functional_run, case)
    metrics = record["metrics"]
    assert metrics["samples"] == 12 and 0 <= metrics["final_metric"] <= 1
    assert {metrics["metric"], "eval_loss"} <= set(evaluated)
