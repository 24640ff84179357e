"""The nvidia vendor's runtime hook (contract: case_runners/vendor_runtime.py): CUDA through torch.cuda, devices
counted by NVML (the host preflight may have no torch: the docker runtime's host side)."""

from __future__ import annotations


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


def versions() -> dict:
    import torch

    found = {"cuda": str(torch.version.cuda), "cudnn": str(torch.backends.cudnn.version())}
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            driver = pynvml.nvmlSystemGetDriverVersion()
            found["driver"] = driver.decode() if isinstance(driver, bytes) else str(driver)
        finally:
            pynvml.nvmlShutdown()
    except Exception as exc:  # noqa: BLE001 - a version is a nice-to-have, never a failure
        found["driver"] = f"unknown ({type(exc).__name__})"
    return found
