"""Facts about the machine a benchmark ran on, for its results.json.

Installed versions of the libraries measured and the host (Python, CPU);
the GPU's own facts are the device's benchmark's (cuda/facts.py). Every
query is read-only and none of them raises: what cannot be found is left
out or said to be unavailable.
"""
import os
import platform


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
