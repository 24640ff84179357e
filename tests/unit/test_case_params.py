"""The trainer's params are declared once (case_runners/plan/config/shared_params.py): a case's config.yaml declares
only its own and the trainer defaults it changes, and every case resolves as it did when each case repeated them all.

resolved_cases.json holds, for every vendor config of every case (training and inference), what the case layer
decides in a resolved config (its params, where each came from, its target and FLOPs), and, per training case, the
params a vendor and a run override may set. Regenerate it only for a change that is meant to change them:
`.venv/bin/python tests/unit/test_case_params.py`, and review its diff.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

PROJECT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).with_name("resolved_cases.json")
CASE_LAYER = ("params", "provenance", "sources", "standard", "non_standard", "target", "flops_per_sample",
              "flops_note", "timeout_s")


def resolved_cases() -> dict[str, Any]:
    """Every training config (vendor/<v>/cases/<case>/config_<HW>x<nnodes>x<nproc>.yaml) and every inference case of
    every vendor, resolved by the plan: their case layer; and each training case's mutable and run-only params."""
    from case_runners.cases import code_cases as list_cases  # the model cases came after the golden file
    from case_runners.plan.layering import load_case_base
    from case_runners.plan.run_plan import make_plan

    found: dict[str, Any] = {"training": {}, "inference": {}, "cases": {}}
    for vendor_dir in sorted((PROJECT / "vendor").iterdir()):
        vendor = vendor_dir.name
        for path in sorted(vendor_dir.glob("cases/*/config_*.yaml")):
            case, (hardware, nnodes, nproc) = path.parent.name, path.stem.removeprefix("config_").split("x")
            if case not in list_cases():
                continue
            plan = make_plan({"vendor": vendor, "cases": [{"case": case, "hardware": hardware, "nnodes": int(nnodes),
                                                          "nproc": int(nproc)}]}, check=True, root=PROJECT)
            assert plan["ok"], (path, plan["errors"])
            found["training"][f"{vendor}/{case}/{path.stem}"] = {k: plan["cases"][0][k] for k in CASE_LAYER}
        for case in list_cases():
            plan = make_plan({"vendor": vendor, "task": "inference", "cases": [case]}, check=True, root=PROJECT)
            if plan["ok"]:
                found["inference"][f"{vendor}/{case}"] = {k: plan["cases"][0].get(k) for k in CASE_LAYER}
    for case in list_cases():
        base, _ = load_case_base(case, PROJECT)
        found["cases"][case] = {"mutable": sorted(base["mutable"]), "run_only": sorted(base["run_only"]),
                                "params": base["params"]}
    return found


def test_every_case_resolves_as_before_the_trainer_params_were_declared_once():
    before = json.loads(GOLDEN.read_text(encoding="utf-8"))
    now = resolved_cases()
    assert sorted(now["training"]) == sorted(before["training"]) and len(now["training"]) >= 20
    assert sorted(now["inference"]) == sorted(before["inference"]) and now["inference"]
    for kind in ("training", "inference", "cases"):
        for key, value in now[kind].items():
            assert value == before[kind][key], f"{kind} {key}"


@pytest.fixture
def digits_config(tmp_path: Path, monkeypatch) -> Path:
    """digits_cnn's config.yaml in a copy of the shipped cases, in place of the package's, to break."""
    import case_runners.cases

    copy = tmp_path / "cases"
    shutil.copytree(PROJECT / "case_runners" / "cases", copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(case_runners.cases, "CASES_DIR", copy)
    return copy / "digits_cnn" / "config.yaml"


@pytest.mark.parametrize("change, shown", [
    (("  max_epochs: 30\n", "  max_epochs: 30\n  log_freq: 10\n"),
     "key 'params.log_freq': repeats the trainer's default (case_runners/plan/config/shared_params.py): leave it out"),
    (("mutable: [lr,", "mutable: [seed, lr,"),
     "key 'mutable.seed': is a trainer param: case_runners/plan/config/shared_params.py says who may set it"),
    (("run_only: []", "run_only: [synthetic]"),
     "key 'run_only.synthetic': is a trainer param: case_runners/plan/config/shared_params.py says who may set it"),
    (("  eval_batch_size: 512\n", ""),
     "key 'params.eval_batch_size': is missing: the trainer's eval_batch_size has no default, every case gives its "
     "own"),
])
def test_a_case_declares_only_its_own_and_the_trainer_defaults_it_changes(digits_config: Path, change, shown):
    from case_runners.plan.run_plan import make_plan

    old, new = change
    assert old in digits_config.read_text()
    digits_config.write_text(digits_config.read_text().replace(old, new))
    result = make_plan({"vendor": "cpu", "cases": ["digits_cnn"]}, check=True)
    assert result["errors"] == [f"{digits_config}: {shown}"]


def test_the_trainer_reads_its_params_and_the_cases_get_their_defaults():
    """Every trainer param has a range, and the default of each that has one is within it; a case that changes
    none of them trains with the trainer's defaults."""
    from case_runners.plan.config.constraints import SHARED
    from case_runners.plan.config.shared_params import TRAINER_PARAMS, TRAINER_RUN_ONLY
    from case_runners.plan.layering import load_case_base

    for name, spec in TRAINER_PARAMS.items():
        if "default" in spec:
            assert SHARED[name].check(spec["default"], key=name, file="test") == spec["default"]
    assert set(TRAINER_RUN_ONLY) <= set(TRAINER_PARAMS)
    base, _ = load_case_base("digits_cnn", PROJECT)
    assert base["params"]["log_freq"] == TRAINER_PARAMS["log_freq"]["default"]
    assert "synthetic" in base["run_only"] and "seed" in base["mutable"]


def test_the_trainer_params_are_one_dataclass_read_from_a_cases_params():
    """TRAINER_PARAMS is TrainerParams' fields; from_params takes the trainer's out of a case's params, typed, and
    names a missing or mistyped one."""
    import dataclasses

    from case_runners.core.errors import PerfplayError
    from case_runners.plan.config.shared_params import TRAINER_PARAMS, TrainerParams
    from case_runners.plan.layering import load_case_base

    assert list(TRAINER_PARAMS) == [item.name for item in dataclasses.fields(TrainerParams)]
    base, _ = load_case_base("digits_cnn", PROJECT)
    params = TrainerParams.from_params(base["params"])
    assert params == TrainerParams(**{name: base["params"][name] for name in TRAINER_PARAMS})
    assert params.log_freq == TRAINER_PARAMS["log_freq"]["default"] and params.amp is False
    with pytest.raises(PerfplayError, match=r"^x.yaml: the trainer's param 'log_freq' is missing \(declared in "
                                            r"case_runners/plan/config/shared_params.py\)$"):
        TrainerParams.from_params({k: v for k, v in base["params"].items() if k != "log_freq"}, "x.yaml")
    for name, value, kind in (("max_steps", 2.5, "an integer"), ("tf32", 1, "true or false"),
                              ("data_parallel", None, "a string")):
        with pytest.raises(PerfplayError, match=f"^x.yaml: the trainer's param '{name}' is {value!r}, not {kind}$"):
            TrainerParams.from_params({**base["params"], name: value}, "x.yaml")


if __name__ == "__main__":
    sys.path.insert(0, str(PROJECT))
    GOLDEN.write_text(json.dumps(resolved_cases(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN}")
