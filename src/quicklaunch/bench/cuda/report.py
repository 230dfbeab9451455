"""The CUDA launch benchmark's output: results.json and results.md.

``result_json`` assembles the JSON document (configuration, machine facts,
probes, every row with its samples and medians); ``markdown`` renders it as
two tables, host cost per launch (with the difference to the C baseline)
and kernels in flight / round trips; ``write`` puts both in a directory.
"""
import datetime
from pathlib import Path

from ..harness.model import INFLIGHT, LAUNCH, OK, Context
from ..harness.results import write_json


def result_json(run_result: dict, ctx: Context, config: dict, extra: dict) -> dict:
    return {"benchmark": "CUDA launch overhead (python -m quicklaunch.bench.cuda)",
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "config": {**config, "mode": run_result["mode"], "batch": ctx.batch,
                       "inflight": ctx.inflight, "roundtrip": ctx.roundtrip,
                       "params": list(ctx.params), "repeats_done": run_result["measured"]["repeats"],
                       "measure_seconds": run_result["measured"]["seconds"],
                       "total_seconds": run_result["seconds"]},
            **extra, "checks": ctx.info, "probes": run_result["probes"],
            "rows": [r.to_json() for r in run_result["rows"]]}


def _fmt(v) -> str:
    return "—" if v is None else (f"{v:,.0f}" if v >= 10_000 else f"{v:.1f}")


def _cell(row: dict, n: int) -> str:
    v = row["ns"].get(str(n))
    if v is not None:
        return _fmt(v)
    why = row["cells"].get(str(n), "")
    return "n/a" if why.startswith("n/a") else "—"


def markdown(result: dict) -> str:
    """The Markdown report: setting, two tables, versions."""
    cfg, gpu = result["config"], result.get("gpu", {})
    params = cfg["params"]
    rows = result["rows"]
    base = next((r for r in rows if r["id"] == "c.launch"), None)
    out = ["# CUDA launch overhead", ""]
    if gpu.get("name"):
        where = f"{gpu['name']}, driver {gpu.get('driver', '?')}"
    else:
        where = gpu.get("quicklaunch_device") or gpu.get("quicklaunch_device_error") or "unknown"
    host = result.get("machine", {})
    out.append(f"GPU: {where} (CUDA {gpu.get('driver_cuda', '?')}); NVRTC {gpu.get('nvrtc', '?')}. "
               f"Host: {host.get('cpu') or '?'}, {host.get('cpus')} CPUs, "
               f"Python {host.get('python')}.")
    out.append(f"Median of {cfg['repeats_done']} rounds (round-robin over rows, {cfg['mode']}); "
               f"{cfg['iters']:,} launches per sample; empty kernels, grid 1, block 1.")
    if result.get("partial"):
        out.append("**Partial result: the run was stopped before it finished.**")
    out += ["", f"## Host cost per launch (ns; batches of {cfg['batch']}, synchronised "
                f"between batches, untimed)", ""]
    head = "| path | " + " | ".join(f"{n} params" for n in params) + " | " + \
           " | ".join(f"− C ({n})" for n in params) + " | note |"
    out += [head, "|---|" + "---:|" * (2 * len(params)) + "---|"]
    for r in (r for r in rows if r["table"] == LAUNCH):
        diffs = []
        for n in params:
            v, b = r["ns"].get(str(n)), (base or {}).get("ns", {}).get(str(n))
            blank = v is None or b is None or r is base or r["source"] == "reference"
            diffs.append("" if blank else f"{v - b:+.1f}")
        out.append(f"| {r['name']} | " + " | ".join(_cell(r, n) for n in params) + " | "
                   + " | ".join(diffs) + f" | {_note(r)} |")
    out += ["", f"## Kernels in flight and round trips (ns per launch; {cfg['inflight']:,} "
                f"launches then one synchronisation, or {cfg['roundtrip']:,} launch + "
                "synchronise pairs)", ""]
    out += ["| path | " + " | ".join(f"{n} params" for n in params) + " | note |",
            "|---|" + "---:|" * len(params) + "---|"]
    for r in (r for r in rows if r["table"] == INFLIGHT):
        out.append(f"| {r['name']} | " + " | ".join(_cell(r, n) for n in params)
                   + f" | {_note(r)} |")
    if result.get("checks"):
        out += ["", "Checks: " + "; ".join(f"{k} = {v}" for k, v in result["checks"].items())]
    if result.get("versions"):
        out += ["", "Versions: " + ", ".join(f"{k} {v}" for k, v in result["versions"].items())]
    return "\n".join(out) + "\n"


def _note(r: dict) -> str:
    parts = []
    if r["status"] != OK:
        parts.append(f"**{r['status']}**: {r['reason']}")
    elif r["note"]:
        parts.append(r["note"])
    for n, why in sorted(r["cells"].items()):
        if r["status"] == OK and why:
            parts.append(f"{n} params: {why}")
    return "; ".join(parts).replace("|", "\\|").replace("\n", " ")


def write(result: dict, out_dir: Path) -> tuple[Path, Path]:
    js = write_json(result, out_dir / "results.json")
    md = out_dir / "results.md"
    md.write_text(markdown(result))
    return js, md

