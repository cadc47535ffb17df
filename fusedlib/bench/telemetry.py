"""What the machine gave a run, and where a row was measured.

`HostMeter` wraps a run: the process's CPU seconds, the seconds the hypervisor stole, the
GPU's clock, temperature and power sampled through the run (nvidia-smi), and the host's
cost per kernel launch before and after. `provenance()` is the GPU, the library versions,
the commit, the machine and a timestamp, added to every row.
"""
from __future__ import annotations

import os
import socket
import statistics
import subprocess
import threading
import time
from datetime import datetime, timezone
from functools import lru_cache
from importlib import metadata
from pathlib import Path

import numpy as np
import torch

# The source checkout this package sits in, when it sits in one (for the commit).
CHECKOUT = Path(__file__).resolve().parents[2]


def sync(device: str) -> None:
    """Wait for the GPU's queued work (a no-op on CPU), so a clock read after it is the GPU's too."""
    if device == "cuda":
        torch.cuda.synchronize()


class HostMeter:
    """What the machine gave a run: the process's CPU seconds and the CPU seconds the
    hypervisor stole from the machine (Linux /proc/stat "steal", all CPUs; None where there
    is none), next to the run's wall time; and, where nvidia-smi answers, the GPU's SM clock,
    temperature and power sampled every GPU_SAMPLE_S seconds through the run. A step here is
    mostly host work, so a run whose steps ran slow while much was stolen was slowed by the
    machine, not by its workload; a low clock says the GPU ran slow. (CUDA's synchronize
    spins, so the process's CPU time is close to its wall time; an open-loop run idles
    between arrivals by design.) Before and after the run it also times the host's cost per
    kernel launch (`launch_probe_us`), outside the run's wall time."""

    GPU_SAMPLE_S = 2.0

    def __enter__(self):
        self._launch_before = launch_probe_us()
        self._samples, self._stop = [], threading.Event()
        self._sampler = threading.Thread(target=self._sample_gpu, daemon=True)
        self._sampler.start()
        self._wall, self._cpu, self._steal = time.perf_counter(), time.process_time(), _steal_s()
        return self

    def _sample_gpu(self):
        while True:
            sample = _gpu_sample()
            if sample is None:
                return
            self._samples.append(sample)
            if self._stop.wait(self.GPU_SAMPLE_S):
                return

    def __exit__(self, *exc):
        steal = _steal_s()
        self.fields = {"host_wall_s": time.perf_counter() - self._wall, "host_cpu_s": time.process_time() - self._cpu,
                       "host_steal_s": None if steal is None or self._steal is None else steal - self._steal}
        self._stop.set()
        self._sampler.join()
        clock, temp, power = (np.array(x, dtype=float) for x in zip(*self._samples)) if self._samples else ([],) * 3
        self.fields.update({
            "gpu_samples": len(self._samples),
            "gpu_sm_clock_mhz_median": float(np.median(clock)) if len(clock) else None,
            "gpu_sm_clock_mhz_min": float(clock.min()) if len(clock) else None,
            "gpu_temp_c_max": float(temp.max()) if len(temp) else None,
            "gpu_power_w_median": float(np.median(power)) if len(power) else None,
            "host_launch_us_before": self._launch_before, "host_launch_us_after": launch_probe_us()})
        return False


def launch_probe_us(n: int = 2000, repeats: int = 3) -> float:
    """The host's time per tiny kernel launch, in microseconds: n in-place adds to a
    one-element tensor, synchronized, median of `repeats` after one warm-up. The GPU work is
    nothing, so this times Python, PyTorch's dispatch and the launch: what each of an eager
    forward's many launches pays, and a candidate for what differed between machines that
    ran the same steps at different speeds. On a CPU it times dispatch and a one-element add."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.zeros(1, device=device)
    per_launch = []
    for _ in range(repeats + 1):
        sync(device)
        t0 = time.perf_counter()
        for _ in range(n):
            x.add_(1.0)
        sync(device)
        per_launch.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(per_launch[1:])


def _gpu_sample() -> tuple[float, float, float] | None:
    """(SM clock MHz, temperature C, power W) of this process's first visible GPU from
    nvidia-smi; None where there is no nvidia-smi or it does not answer."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip() or "0"
    try:
        out = subprocess.run(["nvidia-smi", "-i", visible, "--query-gpu=clocks.sm,temperature.gpu,power.draw",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=5)
        clock, temp, power = (float(x) for x in out.stdout.strip().splitlines()[0].split(","))
        return clock, temp, power
    except (OSError, subprocess.SubprocessError, IndexError, ValueError):
        return None


def _steal_s() -> float | None:
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()  # "cpu user nice system idle iowait irq softirq steal ..."
        return int(fields[8]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "none"


def git_commit() -> str:
    """Short sha, "+dirty" when tracked code differs from it (data/ is excluded: the
    campaign itself writes there). FUSEDLIB_GIT_COMMIT wins, for images without .git; "unknown"
    outside a git checkout."""
    if os.environ.get("FUSEDLIB_GIT_COMMIT"):
        return os.environ["FUSEDLIB_GIT_COMMIT"]
    try:
        git = ["git", "-C", str(CHECKOUT)]
        sha = subprocess.run(git + ["rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(
            git + ["status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)data"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return sha + ("+dirty" if dirty else "")


@lru_cache(maxsize=1)
def _static_provenance() -> dict:
    return {
        "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
        "torch": torch.__version__,
        "triton": _version("triton"),
        "transformers": _version("transformers"),
        "git_commit": git_commit(),
        "hostname": socket.gethostname(),
        # Every device lease is a fresh machine named "vm": the boot id tells machine starts
        # apart, so runs can be compared within one (their speed differs between them).
        "boot_id": _boot_id(),
    }


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def provenance() -> dict:
    """Where and with what a row was measured; the timestamp is taken at each call."""
    return {**_static_provenance(), "timestamp": datetime.now(timezone.utc).isoformat(timespec="seconds")}
