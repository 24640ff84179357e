"""The nvidia vendor's runtime hook (contract: case_runners/vendors/runtime.py): CUDA through torch.cuda, devices
counted by NVML (the host preflight may have no torch: the docker runtime's host side)."""

from __future__ import annotations

OPLIBS = ["flag_gems"]  # the operation task's operator library: FlagGems (operation_requirements.txt pins it)


def device_count() -> int:
    import pynvml  # nvidia-ml-py, in requirements-agent.txt

    pynvml.nvmlInit()
    try:
        return int(pynvml.nvmlDeviceGetCount())
    finally:
        pynvml.nvmlShutdown()


def allow_tf32(enabled: bool) -> None:
    """TF32 tensor cores for fp32 matmuls and cuDNN convolutions (cuDNN allows TF32 by default: turned off unless
    the config sets tf32, so an fp32 round is fp32 and its MFU uses the fp32 peak)."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = enabled
    torch.backends.cudnn.allow_tf32 = enabled


def _cuda_version(number: int) -> str:
    """NVML's CUDA driver version (1000 x major + 10 x minor: 12040) as CUDA writes it: 12.4."""
    return f"{number // 1000}.{number % 1000 // 10}"


def _nvml_versions() -> dict:
    """The driver's version and the highest CUDA it supports, each "unknown (why)" when NVML cannot tell."""
    found: dict[str, str] = {}
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - a version is a nice-to-have, never a failure
        return {"driver": f"unknown ({type(exc).__name__})", "cuda_driver": f"unknown ({type(exc).__name__})"}
    try:
        for key, read in (("driver", pynvml.nvmlSystemGetDriverVersion),
                          ("cuda_driver", lambda: _cuda_version(pynvml.nvmlSystemGetCudaDriverVersion()))):
            try:
                value = read()
                found[key] = value.decode() if isinstance(value, bytes) else str(value)
            except Exception as exc:  # noqa: BLE001 - as above
                found[key] = f"unknown ({type(exc).__name__})"
    finally:
        pynvml.nvmlShutdown()
    return found


def versions() -> dict:
    """torch's CUDA and cuDNN, and through NVML the driver and the highest CUDA it supports (cuda_driver)."""
    import torch

    return {"cuda": str(torch.version.cuda), "cudnn": str(torch.backends.cudnn.version()), **_nvml_versions()}


def enable_oplib(name: str) -> None:
    """flag_gems: FlagGems' Triton kernels in place of aten's CUDA ones for the rest of the process."""
    import flag_gems

    flag_gems.enable()
