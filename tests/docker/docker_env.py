"""Helpers of the docker tests: the engine (engine.sh), image settings for this machine, the run's containers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import docker

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))  # playbook_run
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cluster"))  # cluster (process helpers)

from playbook_run import REPO, PlaybookRun, run_playbook  # noqa: E402
from process_helpers import SHORT_S  # noqa: E402

ENGINE_SH = REPO / "tests" / "docker" / "engine.sh"
BASE_IMAGE = os.environ.get("PERFPLAY_BASE_IMAGE", "perfplay-base:bookworm")
LABEL = "perfplay.run_id"


def engine(*args: str, holder: int | None = None) -> None:
    """engine.sh up or down for `holder` (a pid; default this process)."""
    env = {**os.environ, "PERFPLAY_DOCKER_HOLDER": str(holder or os.getpid())}
    subprocess.run(["bash", str(ENGINE_SH), *args], check=True, timeout=900, env=env)


def engine_answers() -> bool:
    info = subprocess.run(["/usr/bin/docker", "info"], capture_output=True, timeout=SHORT_S, check=False)
    return info.returncode == 0


def _pip_config() -> dict[str, str]:
    """This host's pip settings (environment and config files), e.g. {"find-links": "/opt/wheels"}."""
    out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                         check=False, timeout=SHORT_S).stdout
    found: dict[str, str] = {}
    for line in out.splitlines():  # global.find-links='/opt/wheels', :env:.cert='...'
        key, _, value = line.partition("=")
        name = key.rsplit(".", 1)[-1]
        if value and (key.startswith(":env:") or name not in found):
            found[name] = value.strip("'\"")
    return found


def image_settings() -> dict[str, str]:
    """perfplay_image for this machine: the local base image, and pip's sources as this host's pip has them
    (a find-links folder holding the CPU torch wheel replaces the vendor's PyTorch index)."""
    pip = _pip_config()
    settings = {"base_image": BASE_IMAGE}
    if pip.get("index-url") and not pip["index-url"].startswith("file:"):
        settings["pip_index_url"] = pip["index-url"]
    links = pip.get("find-links", "")
    if links and Path(links).is_dir():
        settings["pip_find_links"] = links
        if any(Path(links).glob("torch-*+cpu-*.whl")):
            settings["pip_extra_index_url"] = ""
    cert = pip.get("cert") or "/etc/ssl/certs/ca-certificates.crt"
    if Path(cert).is_file():
        settings["ca_bundle"] = cert
    return settings


def docker_vars(*cases: dict, **extra: object) -> str:
    return json.dumps({"perfplay_runtime": "docker", "perfplay_image": image_settings(),
                       "perfplay_cases": list(cases), **extra})


_runs: list[str] = []


def remember(run_id: str) -> str:
    """A run of this test: whatever it leaves (containers, processes) is removed after the test."""
    _runs.append(run_id)
    return run_id


def forget_runs() -> None:
    """Remove the containers and kill the processes of every run the test started (also when it failed)."""
    from process_helpers import kill_run  # noqa: PLC0415 - tests/ is on the path once cluster is imported

    client = docker.from_env()
    while _runs:
        run_id = _runs.pop()
        for container in client.containers.list(all=True, filters={"label": f"{LABEL}={run_id}"}):
            container.remove(force=True)
        kill_run(run_id)


def run_docker(checkout: Path, playbook: str, results: Path, run_id: str, *cases: dict,
               timeout: float = 900, **extra: object) -> PlaybookRun:
    remember(run_id)
    return run_playbook(checkout, playbook, "-e", f"perfplay_results_dir={results}", "-e",
                        f"perfplay_run_id={run_id}", "-e", docker_vars(*cases, **extra), timeout=timeout)


def run_containers(run_id: str) -> list[str]:
    """Containers of the run on the engine, running or not."""
    client = docker.from_env()
    return [c.name for c in client.containers.list(all=True, filters={"label": f"{LABEL}={run_id}"})]


def image_tags(name: str) -> set[str]:
    client = docker.from_env()
    return {tag for image in client.images.list(name=name) for tag in image.tags}

