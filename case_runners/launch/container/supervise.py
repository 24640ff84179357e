"""One container per node per round (docker runtime): the node launcher runs inside it, this process watches
it from the host and removes it on every outcome (success, failure, timeout, a signal).

The container shares the host's network (the rendezvous and the collectives see the host's interfaces and
ports) and runs as the login user. The project is mounted read-only, the data read-only and the run
directory read-write, each at its host path, so every path in the config means the same inside. What the
rounds read outside those (read_inputs: a generate checkpoint, an inference case's checkpoint, engine file and
ONNX directory, given by path) is mounted read-only at its path.
"""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import time
from pathlib import Path
from typing import Any

from case_runners.core import files
from case_runners.core.errors import PerfplayError
from case_runners.core.processes import PARENT_PID_ENV
from case_runners.core.run_ids import RUN_ID_ENV
from case_runners.launch.container.image import docker_client
from case_runners.launch.guard import SetupError, guarded_node
from case_runners.launch.node import NodeSpec, monitor_deadline, save_node_result, write_node_result
from case_runners.plan.config.resolved import GENERATE, INFERENCE
from case_runners.records.names import FAILED, INTERRUPTED, TIMEOUT
from case_runners.records.node import NODE_RESULT, NodeResult
from case_runners.records.resolved import ResolvedConfig, VendorInfo
from case_runners.records.schema import ABSENT, Absent, RecordError
from case_runners.tasks.generate import given_checkpoint
from case_runners.vendors.container_options import sdk_options
from case_runners.vendors.layout import env_file

POLL_S = 0.1
CONTAINER_STOP_GRACE_S = 15  # docker stop: SIGTERM to SIGKILL; the launcher inside stops its ranks within 5 s
BACKSTOP_S = 30  # beyond the case timeout, which the launcher inside enforces itself
CONTAINER_LOG = "container.log"
LABEL = "perfplay.run_id"
ROUND_LABEL = "perfplay.round"  # <case_id>/round<N>: a failed round's sweep removes only its own container
# The entry shell: source the vendor case's environment_variables.sh (if any), then exec the launcher.
ENTRY = 'if [ -n "$PERFPLAY_ENV_FILE" ]; then . "$PERFPLAY_ENV_FILE" || exit 3; fi; exec "$@"'
FORWARDED = re.compile(r"^(PERFPLAY_|GLOO_|OMP_|TORCH_)")  # and the vendor's backend's and device's: forwarded()


def container_name(spec: NodeSpec, case_id: str) -> str:
    round_name = spec.log_dir.parent.name
    return re.sub(r"[^A-Za-z0-9_.-]", "_", f"perfplay-{spec.run_id}-{case_id}-{round_name}-n{spec.node_rank}")


INFERENCE_FILES = ("checkpoint", "exist_compiler_path")  # an inference case's files given by path
ONNX_PATH = "exist_onnx_path"  # its directory: an ONNX model's external data lies beside it


def read_inputs(config: ResolvedConfig) -> list[Path]:
    """What a config's rounds read besides the project, the run directory and data_dir, as the rank names it: a
    generate config's checkpoint directory given by path; an inference config's checkpoint and compiled engine
    files and the directory of its ONNX file, given by absolute path (a relative one is the project's, which is
    mounted)."""
    if config.task_name == GENERATE:
        checkpoint = given_checkpoint(str(config.params.get("checkpoint") or ""), config.data_dir)
        return [] if checkpoint is None else [checkpoint]
    if config.task_name != INFERENCE:
        return []
    found = [Path(str(config.params[key])) for key in INFERENCE_FILES if config.params.get(key)]
    onnx = Path(str(config.params.get(ONNX_PATH) or ""))
    if onnx.is_absolute() and onnx.is_file():  # not a placeholder (the engine compiles without it)
        found.append(onnx.parent)
    return [path for path in found if path.is_absolute()]


def _mounts(spec: NodeSpec, config: ResolvedConfig, project_dir: Path) -> list[Any]:
    from docker.types import Mount
    run_dir = spec.config_path.parent.parent
    targets = [(project_dir, True), (run_dir, False)]
    if not spec.log_dir.is_relative_to(run_dir):
        targets.append((spec.log_dir, False))
    if config.data_dir:
        targets.append((Path(config.data_dir).resolve(), True))
    mounts = [Mount(target=str(path), source=str(path), type="bind", read_only=read_only)
              for path, read_only in targets]
    # A read input outside those, at the path the rank names (its symlinks resolved on the host); one that does not
    # exist (a missing file, a placeholder ONNX path) is left to the rank's own check, which names it.
    for path in read_inputs(config):
        inside = Path(os.path.abspath(path))
        if path.exists() and not any(inside.is_relative_to(target) for target, _ in targets):
            mounts.append(Mount(target=str(inside), source=str(path.resolve()), type="bind", read_only=True))
    return mounts


def forwarded(name: str, vendor_info: VendorInfo) -> bool:
    """Whether the host's variable goes into the container: perfplay's, gloo's, OpenMP's, torch's, and those of the
    vendor's backend and device type (NCCL_*, CUDA_*; HCCL_*, MUSA_*, ...)."""
    prefixes = {f"{value.upper()}_" for value in (vendor_info.dist_backend, vendor_info.device)} - {"_"}
    return bool(FORWARDED.match(name)) or any(name.startswith(p) for p in prefixes)


def _environment(spec: NodeSpec, config: ResolvedConfig, project_dir: Path, run: dict[str, Any]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if forwarded(k, config.vendor_info) and k != PARENT_PID_ENV}
    visible = config.vendor_info.visible_devices_env
    if visible and visible in os.environ:
        env[visible] = os.environ[visible]
    env.update({str(k): str(v) for k, v in (run.get("environment") or {}).items()})
    # The login user may have no passwd entry in the image: name it for getpass (torch's caches use it).
    user = os.environ.get("USER") or os.environ.get("LOGNAME") or f"uid{os.getuid()}"
    env.update({RUN_ID_ENV: spec.run_id}, PYTHONPATH=str(project_dir), PYTHONDONTWRITEBYTECODE="1",
               PYTHONUNBUFFERED="1", HOME="/tmp", USER=user, LOGNAME=user)
    sourced = env_file(project_dir, config.vendor, config.case)
    if sourced:
        env["PERFPLAY_ENV_FILE"] = str(sourced)
    return env


def inner_argv(spec: NodeSpec) -> list[str]:
    """The launcher inside the container: the same node, with --inside-container."""
    argv = ["python3", "-m", "case_runners", "launch", "--inside-container",
            "--config", str(spec.config_path), "--log-dir", str(spec.log_dir), "--node-rank", str(spec.node_rank),
            "--master-addr", spec.master_addr, "--master-port", str(spec.master_port),
            "--timeout-s", str(spec.timeout_s), "--run-id", spec.run_id, "--node-name", spec.node_name,
            "--rdzv-timeout-s", str(spec.rdzv_timeout_s), "--heartbeat-timeout-s", str(spec.heartbeat_timeout_s)]
    return argv + (["--nic", spec.nic] if spec.nic else [])


class _Signals:
    def __init__(self) -> None:
        self.received: int | None = None

    def __call__(self, signum: int, _frame: object) -> None:
        self.received = signum


def round_label(spec: NodeSpec, case_id: str) -> str:
    return f"{case_id}/{spec.log_dir.parent.name}"


def supervise(spec: NodeSpec, config: ResolvedConfig, project_dir: Path) -> NodeResult:
    """Run spec's node in a container of config's image, under the node's monitors (on the host); write and
    return node_result.json."""
    started = time.time()
    signals = _Signals()
    previous = {s: signal.signal(s, signals) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        with guarded_node(spec, monitor_deadline(spec, started) + BACKSTOP_S + CONTAINER_STOP_GRACE_S):
            return _run_container(spec, config, project_dir, started, signals)
    except SetupError as exc:
        return write_node_result(spec, FAILED, str(exc), started, nic=spec.nic, image=_image(config))
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _image(config: ResolvedConfig) -> str | Absent:
    """The image a docker config's rounds run in (the plan sets it)."""
    return ABSENT if config.runtime is ABSENT else config.runtime.image


def _run_options(config: ResolvedConfig) -> dict[str, Any]:
    """The vendor's container run options of a docker config (vendor.yaml container.run)."""
    run = ABSENT if config.runtime is ABSENT else config.runtime.run
    return {} if run is ABSENT else run


def _run_container(spec: NodeSpec, config: ResolvedConfig, project_dir: Path, started: float,
                   signals: _Signals) -> NodeResult:
    image, run = _image(config), _run_options(config)
    name = container_name(spec, config.case_id)
    status, reason, exit_code = FAILED, None, None
    try:
        if image is ABSENT:
            raise PerfplayError(f"key 'runtime.image' of {spec.config_path}: missing (the plan sets it)")
        client = docker_client()
        _remove(client, name)  # a leftover of this very round (its supervisor was killed)
        container = client.containers.create(
            image, ["bash", "-c", ENTRY, "perfplay-entry", *inner_argv(spec)], name=name,
            labels={LABEL: spec.run_id, ROUND_LABEL: round_label(spec, config.case_id),
                    "perfplay.case_id": config.case_id, "perfplay.node_rank": str(spec.node_rank)},
            user=f"{os.getuid()}:{os.getgid()}", working_dir=str(project_dir), network_mode="host", init=True,
            environment=_environment(spec, config, project_dir, run),
            mounts=_mounts(spec, config, project_dir), detach=True, **sdk_options(run))
        try:
            container.start()
            exit_code, stopped_why = _wait(client, container.id, spec.timeout_s + BACKSTOP_S, signals)
            files.atomic_write_bytes(spec.log_dir / CONTAINER_LOG, container.logs(stdout=True, stderr=True))
            state = client.api.inspect_container(container.id)["State"]
        finally:
            container.remove(force=True)
        inside = _read_node_result(spec.log_dir)
        if inside:
            return save_node_result(spec.log_dir, dataclasses.replace(
                inside, container=name, image=image, container_duration_s=round(time.time() - started, 3)))
        if stopped_why:
            status, reason = stopped_why
        elif state.get("OOMKilled"):
            reason = f"container {name} was killed for lack of memory"
        else:
            reason = f"container {name} exited with code {exit_code} before its launcher wrote a result " \
                     f"(see {CONTAINER_LOG})"
    except Exception as exc:  # the engine refused (image missing, bad option, engine down), or a full disk
        reason = f"container {name}: {exc}"
    return write_node_result(spec, status, reason, started, nic=spec.nic, container=name, image=image,
                             exit_code=exit_code)


def _wait(client: Any, cid: str, limit_s: float, signals: _Signals) -> tuple[int, tuple[str, str] | None]:
    """Wait for the container to exit; stop it on a signal or past limit_s. (exit code, (status, reason) if stopped)."""
    deadline = time.monotonic() + limit_s
    stopped: tuple[str, str] | None = None
    while True:
        state = client.api.inspect_container(cid)["State"]
        if not state["Running"] and state["Status"] != "created":
            return state["ExitCode"], stopped
        if stopped is None and (signals.received or time.monotonic() > deadline):
            stopped = (INTERRUPTED, f"launcher received {signal.Signals(signals.received).name}") \
                if signals.received else (TIMEOUT, f"container still running {limit_s:g} s after its start")
            client.api.stop(cid, timeout=CONTAINER_STOP_GRACE_S)
        time.sleep(POLL_S)


def _read_node_result(log_dir: Path) -> NodeResult | None:
    """The node result the launcher in the container wrote, if it wrote a valid one."""
    try:
        return NodeResult.load(log_dir / NODE_RESULT)
    except RecordError:
        return None


def _remove(client: Any, name: str) -> None:
    import docker
    try:
        client.containers.get(name).remove(force=True)
    except docker.errors.NotFound:
        pass


def remove_run_containers(run_id: str, check: bool = False, round_name: str | None = None) -> list[str]:
    """Remove every container of a run on this host (labelled perfplay.run_id), or of one of its rounds
    (<case_id>/round<N>); return their names."""
    client = docker_client()
    labels = [f"{LABEL}={run_id}"] + ([f"{ROUND_LABEL}={round_name}"] if round_name else [])
    found = client.containers.list(all=True, filters={"label": labels})
    if not check:
        for container in found:
            container.remove(force=True)
    return sorted(c.name for c in found)
