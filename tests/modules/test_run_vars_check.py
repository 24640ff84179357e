"""playbooks/action_plugins/run_vars_check.py: run vars too large or too deep are refused before any templating,
a YAML alias bomb within a second; ordinary run vars pass."""

from __future__ import annotations

import time

import yaml

from module_harness import load_action

PLUGIN = load_action("run_vars_check")
ARGS = {"pattern": r"^(perfplay_|[A-Z][A-Z0-9_]*$)", "max_values": 10000, "max_depth": 20, "max_chars": 1 << 20}


def alias_bomb(levels: int) -> str:
    """A billion laughs: each level a list of nine aliases of the one before (448 bytes for 9 levels)."""
    lines = ["perfplay_cases:", '  - &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"  - &a{i} [{','.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_at_once_naming_the_var_and_the_limits():
    bomb = yaml.safe_load(alias_bomb(9))  # 9**9 values once expanded
    started = time.process_time()
    result = PLUGIN.check({"perfplay_cases": bomb, "inventory_hostname": "localhost"}, ARGS)
    assert time.process_time() - started < 30, "a bound on a hang (it stops at the first limit), not on speed"
    assert result["failed"] and result["checked"] == ["perfplay_cases"]
    assert result["msg"] == ("perfplay: run vars: key 'perfplay_cases': more than 10000 values (a YAML alias "
                             "bomb?): perfplay does not expand it (allowed: at most 10000 values, 20 levels, "
                             "1048576 characters)")


def test_deep_and_long_run_vars_are_refused_and_ordinary_ones_pass():
    deep: list = []
    for _ in range(30):
        deep = [deep]
    assert "more than 20 levels deep" in PLUGIN.check({"perfplay_cases": deep}, ARGS)["msg"]
    assert "more than 1048576 characters" in PLUGIN.check({"perfplay_run_id": "r" * (2 << 20)}, ARGS)["msg"]
    ordinary = {"perfplay_cases": [{"case": "digits_cnn", "nproc": 2, "overrides": {"batch_size": 64}}, "bert"],
                "perfplay_vendor": "cpu", "CASES": {"bert:pytorch_1.8:A100:1:8:1": "/raw_data/bert"},
                "ansible_facts": deep}  # not a run var: not checked
    result = PLUGIN.check(ordinary, ARGS)
    assert not result.get("failed") and result["checked"] == ["CASES", "perfplay_cases", "perfplay_vendor"]
