"""Writing a benchmark's result: JSON that any reader takes (NaN and
infinities as null, NumPy values as Python ones), written atomically."""
import json
import math
import os
from pathlib import Path


def _finite(value):
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def write_json(result, path) -> Path:
    """``result`` as JSON in ``path`` (its folder made if missing); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(_finite(result), indent=1, default=str, allow_nan=False) + "\n")
    os.replace(tmp, path)
    return path


def save(result, out=None, results_dir=None, name: str = "") -> Path | None:
    """A benchmark command's JSON: to ``out`` (its --out), else to
    ``results_dir/name`` when it was given a results folder (the thin scripts
    in benchmarks/ give benchmarks/results), else nowhere. Says where."""
    path = out or (results_dir and Path(results_dir) / name)
    if not path:
        return None
    path = write_json(result, path)
    print(f"\nwritten to {path}")
    return path
