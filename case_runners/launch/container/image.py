"""The docker image of a (vendor, framework): tagged by a hash of its inputs, built only when the tag is absent.

Inputs: every file of vendor/<vendor>/docker_image/<framework>/ (Dockerfile, <framework>_install.sh, ...),
perfplay's requirements-case.txt, a built-in stack's pins (case_runners/tasks/training/stacks/<stack>-requirements.txt,
staged as perfplay/<stack>-requirements.txt) and the base image. Where pip fetches from (index, find-links, CA bundle)
is transport, not content, and is left out of the tag: pointing a build at a mirror does not rebuild.

The build context is the vendor's folder plus perfplay/ holding requirements-case.txt, the CA bundle
(ca.crt) and a local find-links folder (wheels/) when the run names them.
"""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any, Protocol

from case_runners.core.errors import RUN_VARS_FILE, ConfigError, PerfplayError
from case_runners.core.paths import display_path
from case_runners.plan.config.stacks import requirements_file
from case_runners.vendors.container_options import BUILD_KEYS

CASE_REQUIREMENTS = "requirements-case.txt"
STAGED = "perfplay"  # folder perfplay adds to the build context
BUILD_DIR = "/tmp/perfplay-build"  # where the vendor's Dockerfile copies the context (the README's contract)
TAG_CHARS = 16
LOG_TAIL = 30


def image_dir(root: Path, vendor: str, framework: str) -> Path:
    return root / "vendor" / vendor / "docker_image" / framework


def staged_requirements(root: Path, framework: str) -> list[tuple[Path, str]]:
    """(file, its name under perfplay/) of the pins the image installs: the cases', and the stack's where it has
    any."""
    stack = root / requirements_file(framework)
    return [(root / CASE_REQUIREMENTS, CASE_REQUIREMENTS)] + ([(stack, stack.name)] if stack.is_file() else [])


def _input_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def hash_tree(digest: Any, folder: Path) -> None:
    """Feed every file of folder (relative path and content) to a hashlib digest, in a fixed order."""
    for path in _input_files(folder):
        digest.update(f"{path.relative_to(folder)}\0".encode() + path.read_bytes() + b"\0")


class ImageVendor(Protocol):
    """What an image needs of a vendor description (vendors.py VendorDescription)."""
    @property
    def name(self) -> str: ...
    @property
    def path(self) -> Path: ...
    @property
    def container(self) -> dict[str, Any]: ...


def image_spec(root: Path, vendor: ImageVendor, framework: str,
               overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Name, tag and build settings of a vendor's image for a framework; ConfigError on bad input."""
    folder = image_dir(root, vendor.name, framework)
    vendor_file = display_path(vendor.path, root)
    if not (folder / "Dockerfile").is_file():
        frameworks = sorted(p.parent.name for p in folder.parent.glob("*/Dockerfile"))
        raise ConfigError(f"vendor '{vendor.name}' has no {display_path(folder / 'Dockerfile', root)} "
                          f"for the docker runtime", key="perfplay_runtime", allowed=frameworks or ["host"])
    settings = dict(vendor.container.get("build") or {})
    for key, value in (overrides or {}).items():
        if key not in BUILD_KEYS:
            raise ConfigError("unknown image setting", key=f"perfplay_image.{key}", file=RUN_VARS_FILE,
                              allowed=BUILD_KEYS)
        settings[key] = value
    for key, value in settings.items():
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"must be a string, not {type(value).__name__}", key=f"perfplay_image.{key}")
    # An empty value stays (the same settings merge to the same result on the building host) and is not passed.
    digest = hashlib.sha256()
    hash_tree(digest, folder)
    for path, name in staged_requirements(root, framework):  # the cases' under its old key: the same tags
        key = "requirements" if name == CASE_REQUIREMENTS else name
        digest.update(f"{key}\0".encode() + path.read_bytes() + b"\0")
    digest.update(f"base_image\0{settings.get('base_image', '')}".encode())
    name = f"perfplay-{vendor.name}-{framework}".lower()
    tag = digest.hexdigest()[:TAG_CHARS]
    return {"name": name, "tag": tag, "ref": f"{name}:{tag}", "vendor": vendor.name, "framework": framework,
            "context": display_path(folder, root), "settings": settings, "vendor_file": vendor_file}


def _local_find_links(value: str | None) -> Path | None:
    """A find-links value that is a folder on the building host (staged), not a URL (passed as is)."""
    if not value or "://" in value:
        return None
    return Path(value)


def build_args(spec: dict[str, Any]) -> dict[str, str]:
    settings = spec["settings"]
    args = {arg: v for k, v in settings.items() if (arg := BUILD_KEYS.get(k)) and v}
    if _local_find_links(settings.get("pip_find_links")):
        args["PIP_FIND_LINKS"] = f"{BUILD_DIR}/{STAGED}/wheels"
    return args


def write_context(root: Path, spec: dict[str, Any], out: Any) -> None:
    """Write the build context of spec to the binary file out as a tar."""
    settings = spec["settings"]
    ca = settings.get("ca_bundle")
    wheels = _local_find_links(settings.get("pip_find_links"))
    if ca and not Path(ca).is_file():
        raise ConfigError(f"CA bundle {ca} is not a file on this host", key="perfplay_image.ca_bundle")
    if wheels and not wheels.is_dir():
        raise ConfigError(f"find-links folder {wheels} is not a folder on this host (or give a URL)",
                          key="perfplay_image.pip_find_links")
    folder = root / spec["context"]
    with tarfile.open(fileobj=out, mode="w") as tar:
        for path in _input_files(folder):
            tar.add(path, arcname=str(path.relative_to(folder)), recursive=False)
        for path, name in staged_requirements(root, spec["framework"]):
            tar.add(path, arcname=f"{STAGED}/{name}")
        if ca:
            tar.add(ca, arcname=f"{STAGED}/ca.crt")
        if wheels:
            for path in sorted(p for p in wheels.iterdir() if p.is_file()):
                tar.add(path, arcname=f"{STAGED}/wheels/{path.name}")
        else:  # the folder exists either way, so a Dockerfile may COPY it
            info = tarfile.TarInfo(f"{STAGED}/wheels")
            info.type = tarfile.DIRTYPE
            info.mode = 0o755
            tar.addfile(info, io.BytesIO())
    out.seek(0)


def docker_client() -> Any:
    """A Docker SDK client for the local engine (DOCKER_HOST etc. honoured); PerfplayError if unreachable."""
    import docker
    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except docker.errors.DockerException as exc:
        raise PerfplayError(f"cannot reach the Docker engine ({exc}); start dockerd, or give the login user "
                            f"access to its socket (the docker group)") from None
    return client


def ensure_image(root: Path, spec: dict[str, Any], *, check: bool = False, client: Any = None,
                 log_path: Path | None = None) -> dict[str, Any]:
    """Build spec's image unless its tag exists; {changed, built, ref, id, seconds}."""
    import docker
    client = client or docker_client()
    result = {"ref": spec["ref"], "name": spec["name"], "tag": spec["tag"], "changed": False, "built": False}
    try:
        result["id"] = client.images.get(spec["ref"]).id
        return result
    except docker.errors.ImageNotFound:
        pass
    result.update(changed=True, id=None)
    if check:
        return result
    started = time.monotonic()
    lines: list[str] = []
    if log_path:
        log_path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile() as context, open(log_path or os.devnull, "w", encoding="utf-8") as log:
        write_context(root, spec, context)
        stream = client.api.build(fileobj=context, custom_context=True, tag=spec["ref"], buildargs=build_args(spec),
                                  rm=True, forcerm=True, pull=False, decode=True,
                                  labels={"perfplay.inputs": spec["tag"], "perfplay.vendor": spec["vendor"],
                                          "perfplay.framework": spec["framework"]})
        error = None
        for chunk in stream:  # the log follows the build, so a slow one can be watched
            if "stream" in chunk:
                lines += chunk["stream"].splitlines()
                log.write(chunk["stream"])
                log.flush()
            if "error" in chunk:
                error = chunk["error"].strip()
                log.write(f"error: {error}\n")
    if error:
        tail = "\n".join(lines[-LOG_TAIL:])
        raise PerfplayError(f"building {spec['ref']} from {spec['context']} failed: {error}\n{tail}")
    result.update(built=True, id=client.images.get(spec["ref"]).id, seconds=round(time.monotonic() - started, 1))
    return result
