"""The `container:` section of vendor.yaml: build defaults and run options, checked when the vendor loads.

    container:
      build: {base_image: ..., pip_extra_index_url: ...}   # defaults of the run var perfplay_image
      run:                                                # options of every container of the vendor
        shm_size: 16g          # /dev/shm
        ipc_mode: host         # host | private | shareable
        ulimits: {memlock: -1, stack: 67108864}            # -1: unlimited
        devices: [/dev/davinci0]                           # host device nodes, passed through as is
        gpus: all              # NVIDIA container toolkit: all, or a count
        privileged: false      # only when the vendor's driver needs it
        cap_add: [SYS_PTRACE]
        environment: {KEY: value}
"""

from __future__ import annotations

from typing import Any

from case_runners.core.errors import ConfigError
from case_runners.plan.config.types import to_bool

BUILD_KEYS: dict[str, str | None] = {  # run var perfplay_image -> Dockerfile build arg
    "base_image": "BASE_IMAGE",
    "pip_index_url": "PIP_INDEX_URL",
    "pip_extra_index_url": "PIP_EXTRA_INDEX_URL",
    "pip_find_links": "PIP_FIND_LINKS",
    "pip_trusted_host": "PIP_TRUSTED_HOST",
    "ca_bundle": None,  # a file on the building host, staged as perfplay/ca.crt
}
SECTIONS = ("build", "run")
RUN_KEYS = ("shm_size", "ipc_mode", "ulimits", "devices", "gpus", "privileged", "cap_add", "environment")
IPC_MODES = ("host", "private", "shareable")


def check_container(section: Any, file: str) -> None:
    """Raise ConfigError naming the key of vendor.yaml's container section that is wrong; `privileged` becomes a
    bool (plan/config/types.py's parser)."""
    if section is None:
        return
    if not isinstance(section, dict):
        raise ConfigError("must be a mapping", key="container", file=file)
    for name in section:
        if name not in SECTIONS:
            raise ConfigError("unknown section", key=f"container.{name}", file=file, allowed=SECTIONS)
    build = section.get("build") or {}
    for key, value in build.items():
        if key not in BUILD_KEYS:
            raise ConfigError("unknown build setting", key=f"container.build.{key}", file=file, allowed=BUILD_KEYS)
        if value is not None and not isinstance(value, str):
            raise ConfigError("must be a string", key=f"container.build.{key}", file=file)
    run = section.get("run") or {}
    if not isinstance(run, dict):
        raise ConfigError("must be a mapping", key="container.run", file=file)
    for key, value in run.items():
        where = f"container.run.{key}"
        if key not in RUN_KEYS:
            raise ConfigError("unknown container option", key=where, file=file, allowed=RUN_KEYS)
        _check_run_option(key, value, where, file)
        if key == "privileged":
            run[key] = to_bool(value, key=where, file=file)


def _check_run_option(key: str, value: Any, where: str, file: str) -> None:
    """Raise ConfigError for a run option (one of RUN_KEYS) whose value docker would not take."""
    if key == "ipc_mode" and value not in IPC_MODES:
        raise ConfigError(f"unknown IPC mode '{value}'", key=where, file=file, allowed=IPC_MODES)
    if key == "ulimits" and not (isinstance(value, dict) and all(isinstance(v, int) for v in value.values())):
        raise ConfigError("must map limit names to integers (-1: unlimited)", key=where, file=file)
    if key in ("devices", "cap_add") and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        raise ConfigError("must be a list of strings", key=where, file=file)
    if key == "environment" and not isinstance(value, dict):
        raise ConfigError("must be a mapping", key=where, file=file)
    if key == "gpus" and not (value == "all" or (isinstance(value, int) and value > 0) or value is None):
        raise ConfigError(f"'{value}' is not a GPU request", key=where, file=file, allowed=["all", "a count"])
    if key == "shm_size" and not isinstance(value, (str, int)):
        raise ConfigError("must be a size such as 16g", key=where, file=file)


def sdk_options(run: dict[str, Any]) -> dict[str, Any]:
    """Docker SDK containers.create() keyword arguments for a vendor's run options (checked already)."""
    from docker.types import DeviceRequest, Ulimit
    options: dict[str, Any] = {"privileged": bool(run.get("privileged", False))}
    if run.get("shm_size"):
        options["shm_size"] = run["shm_size"]
    if run.get("ipc_mode"):
        options["ipc_mode"] = run["ipc_mode"]
    if run.get("ulimits"):
        options["ulimits"] = [Ulimit(name=name, soft=limit, hard=limit) for name, limit in run["ulimits"].items()]
    if run.get("devices"):
        options["devices"] = [d if ":" in d else f"{d}:{d}:rwm" for d in run["devices"]]
    if run.get("gpus"):
        count = -1 if run["gpus"] == "all" else int(run["gpus"])
        options["device_requests"] = [DeviceRequest(count=count, capabilities=[["gpu"]])]
    if run.get("cap_add"):
        options["cap_add"] = list(run["cap_add"])
    return options
