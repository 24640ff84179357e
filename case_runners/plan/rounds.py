"""A plan's rounds and what each host needs for them: what the playbook loops over and prepares its hosts for.

A case with nnodes=N runs on the run's first N hosts, node rank = index; its rounds run one after the other.
"""

from __future__ import annotations

from typing import Any

from case_runners.core.errors import ConfigError
from case_runners.plan.config.stacks import installs_without_deps
from case_runners.records.resolved import ResolvedConfig
from case_runners.records.schema import ABSENT


def missing_hosts(cases: list[ResolvedConfig], hosts: list[str]) -> list[ConfigError]:
    """An error for each case that needs more hosts than the run has."""
    return [ConfigError(f"needs {case.nnodes} hosts, the run has {len(hosts)} ({', '.join(hosts) or 'none'})",
                        key="nnodes", file=f"case {case.case_id}")
            for case in cases if case.nnodes > len(hosts)]


def expand_rounds(cases: list[ResolvedConfig], hosts: list[str], master_port: int) -> list[dict[str, Any]]:
    """One item per case and round, in run order, for an accepted plan (repeat is bounded, so the list stays
    small). `config` is the case's resolved config on the controller, null until the run directory exists."""
    rounds = []
    for case in cases:
        for number in range(1, case.repeat + 1):
            rounds.append({
                "case_id": case.case_id, "case": case.case, "round": number, "nnodes": case.nnodes,
                "nproc": case.nproc, "timeout_s": case.timeout_s,
                "config": None if case.config_path is ABSENT else case.config_path,
                "rel_dir": f"{case.case_id}/round{number}", "hosts": hosts[:case.nnodes],
                "master_port": master_port if case.nnodes > 1 else 0,  # one node: the launcher picks a free port
            })
    return rounds


def host_needs(rounds: list[dict[str, Any]], hosts: list[str],
               cases: list[ResolvedConfig]) -> dict[str, dict[str, Any]]:
    """Per host: the most processes a round puts on it, the cases it takes part in, whether it is node 0 of a
    multi-node round (it then serves the rendezvous), the images its rounds run in, the vendor cases'
    requirements files they need and, of those, the ones pip installs without their dependencies (no_deps)."""
    needs: dict[str, dict[str, Any]] = {
        host: {"nproc": 0, "case_ids": [], "master": False, "images": [], "requirements": []} for host in hosts}
    by_id = {case.case_id: case for case in cases}
    for item in rounds:
        case = by_id[item["case_id"]]
        if item["nnodes"] > 1:
            needs[item["hosts"][0]]["master"] = True
        for host in item["hosts"]:
            need = needs[host]
            need["nproc"] = max(need["nproc"], item["nproc"])
            if case.case_id not in need["case_ids"]:
                need["case_ids"].append(case.case_id)
            image = None if case.runtime is ABSENT else case.runtime.image
            if image is not ABSENT and image and image not in need["images"]:
                need["images"].append(image)
            wanted = [] if case.requirements is ABSENT else case.requirements
            need["requirements"] += [r for r in wanted if r not in need["requirements"]]
    for need in needs.values():
        need["no_deps"] = [r for r in need["requirements"] if installs_without_deps(r)]
    return needs
