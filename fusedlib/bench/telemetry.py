"""Where a run was measured (the device, the library versions), and a sync before a clock read."""
from __future__ import annotations

from importlib import metadata

import torch


def sync(device: str) -> None:
    """Wait for the GPU's queued work (a no-op on CPU), so a clock read after it is the GPU's too."""
    if device == "cuda":
        torch.cuda.synchronize()


def device_name() -> str:
    return torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"


def version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def machine() -> dict:
    """Fields every measured row carries: the device and the stack it ran on."""
    return {"device_name": device_name(), "torch_version": torch.__version__, "triton_version": version("triton")}
