"""Facts about the machine the CUDA launch benchmark ran on.

Installed versions of the libraries measured, the host (Python, CPU) and the
GPU (name, driver, CUDA and NVRTC versions), for results.json and the
Markdown report. Every query is read-only and none of them raises: what
cannot be found is left out or said to be unavailable.
"""
import os
import platform
import shutil
import subprocess

from .model import describe


def versions(dists) -> dict:
    from importlib import metadata
    out = {}
    for d in dict.fromkeys(dists):
        try:
            out[d] = metadata.version(d)
        except metadata.PackageNotFoundError:
            pass
        except Exception as exc:  # a broken installation: say so, don't fail
            out[d] = f"unknown ({type(exc).__name__})"
    return out


def machine() -> dict:
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"python": platform.python_version(), "implementation": platform.python_implementation(),
            "platform": platform.platform(), "machine": platform.machine(), "cpu": cpu,
            "cpus": os.cpu_count()}


def gpu_facts(device: str = "cuda") -> dict:
    """GPU name, driver and CUDA versions: from nvidia-smi (read-only queries)
    and from quicklaunch's device, whichever answer."""
    facts: dict = {}
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            q = subprocess.run([smi, "--query-gpu=name,driver_version,memory.total,compute_cap",
                                "--format=csv,noheader"], capture_output=True, text=True,
                               timeout=20)
            if q.returncode == 0 and q.stdout.strip():
                first = q.stdout.strip().splitlines()[0].split(", ")
                keys = ("name", "driver", "memory", "compute_capability")
                facts.update(zip(keys, (v.strip() for v in first)))
            h = subprocess.run([smi], capture_output=True, text=True, timeout=20)
            for token in h.stdout.split("|"):
                if "CUDA Version:" in token:
                    facts["driver_cuda"] = token.split("CUDA Version:")[1].strip().split()[0]
        except (OSError, subprocess.SubprocessError) as exc:
            facts["nvidia_smi_error"] = f"{type(exc).__name__}: {exc}"
    else:
        facts["nvidia_smi_error"] = "nvidia-smi not found"
    try:
        import quicklaunch as ql
        dev = ql.device(device)
        facts["quicklaunch_device"] = dev.description
        facts["arch"] = dev.arch
        version = getattr(getattr(getattr(dev, "backend", None), "driver", None), "version", None)
        if isinstance(version, int) and "driver_cuda" not in facts:
            facts["driver_cuda"] = f"{version // 1000}.{version % 1000 // 10}"
        try:
            facts["nvrtc"] = ".".join(str(v) for v in ql.cuda.nvrtc_version())
        except Exception as exc:
            facts["nvrtc"] = f"unavailable ({type(exc).__name__})"
    except Exception as exc:
        facts["quicklaunch_device_error"] = describe(exc)[1]
    return facts

