"""Facts about the GPU the CUDA launch benchmark ran on: name, driver, CUDA
and NVRTC versions, for results.json and the Markdown report. Every query
is read-only (nvidia-smi queries; cuDriverGetVersion in the library the
device's backend launches through) and none of them raises.
"""
import ctypes
import shutil
import subprocess

from ..harness.model import describe


def _driver_cuda(library: str) -> str | None:
    """The CUDA version the driver library reports, "12.4", or None."""
    try:
        v = ctypes.c_int()
        if ctypes.CDLL(library).cuDriverGetVersion(ctypes.byref(v)) == 0:
            return f"{v.value // 1000}.{v.value % 1000 // 10}"
    except (OSError, AttributeError):
        pass
    return None


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
        if "driver_cuda" not in facts:
            version = _driver_cuda(dev.backend.entry_library)
            if version:
                facts["driver_cuda"] = version
        try:
            facts["nvrtc"] = ".".join(str(v) for v in ql.cuda.nvrtc_version())
        except Exception as exc:
            facts["nvrtc"] = f"unavailable ({type(exc).__name__})"
    except Exception as exc:
        facts["quicklaunch_device_error"] = describe(exc)[1]
    return facts

