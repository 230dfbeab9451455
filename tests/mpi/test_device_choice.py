"""The default device per node-local rank (quicklaunch/mpi/local.py)."""
import os
import types

import pytest

from quicklaunch.mpi import local

SCRIPT = """
import json, os
import quicklaunch as ql
from quicklaunch.mpi import local
dev = ql.device()
emit({"rank": int(os.environ.get("PMI_RANK", -1)), "device": dev.name,
                            "cpus": sorted(os.sched_getaffinity(0)),
                            "threads": os.environ.get("QUICKLAUNCH_CPU_THREADS"),
                            "choice": local.choice()})
"""


def test_two_ranks_get_disjoint_pinned_cpu_shares(mpirun):
    proc = mpirun(2, SCRIPT)
    assert proc.returncode == 0, proc.stderr
    recs = sorted(proc.records, key=lambda r: r["choice"]["local_rank"])
    assert [r["choice"]["local_rank"] for r in recs] == [0, 1]
    allowed = sorted(os.sched_getaffinity(0))
    shares = [set(r["cpus"]) for r in recs]
    if len(allowed) >= 2:
        assert not shares[0] & shares[1]          # never oversubscribed
    assert set().union(*shares) <= set(allowed)
    for r in recs:
        assert r["device"] == "cpu"
        assert r["threads"] == str(len(r["cpus"]))   # the pool sized to the share


def test_an_explicit_device_wins(mpirun):
    proc = mpirun(2, SCRIPT, env={"QUICKLAUNCH_DEVICE": "cpu"})
    assert proc.returncode == 0, proc.stderr
    full = sorted(os.sched_getaffinity(0))
    for r in proc.records:
        assert r["cpus"] == full and r["choice"] == {}


def test_quicklaunch_info_shows_each_ranks_choice(mpirun):
    # Each rank's report is captured and only its mpi line written, in one
    # short write: the whole reports of two ranks on one pipe interleave
    # mid-line once they outgrow the pipe's atomic write size.
    proc = mpirun(2, "import contextlib, io, os, sys\nfrom quicklaunch.cli import main\n"
                     "buf = io.StringIO()\nwith contextlib.redirect_stdout(buf):\n"
                     "    rc = main(['info'])\n"
                     "mine = [ln for ln in buf.getvalue().splitlines() if ln.strip().startswith('mpi ')]\n"
                     "os.write(1, ('\\n'.join(mine) + '\\n').encode())\nsys.exit(rc)")
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip().startswith("mpi ")]
    assert sorted(ln.split("local rank ")[1][:1] for ln in lines) == ["0", "1"], proc.stdout


@pytest.mark.parametrize("env, expect", [
    ({"OMPI_COMM_WORLD_LOCAL_RANK": "3", "OMPI_COMM_WORLD_LOCAL_SIZE": "4"}, (3, 4)),
    ({"MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "2"}, (1, 2)),
    ({"PMI_LOCAL_RANK": "0", "PMI_LOCAL_SIZE": "8"}, (0, 8)),
    ({"SLURM_LOCALID": "2", "SLURM_NTASKS_PER_NODE": "4(x2)"}, (2, 4)),
    ({}, None),
])
def test_node_rank_from_the_launchers_environment(monkeypatch, env, expect):
    for rank_var, size_var in local._ENV:
        monkeypatch.delenv(rank_var, raising=False)
        monkeypatch.delenv(size_var, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    got = local.node_rank()
    assert (got[:2] if got else None) == expect


def test_cpu_shares_are_disjoint_and_cover(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)))
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    shares = [local.cpu_share(r, 3)[0] for r in range(3)]
    assert sorted(sum(shares, [])) == list(range(8))
    assert local.cpu_share(5, 16)[0] == [5]                   # oversubscribed: one each
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {2, 3})   # launcher-bound
    assert local.cpu_share(1, 4) == ([2, 3], "bound by the launcher")


def test_gpu_ordinal_is_local_rank_modulo_devices(monkeypatch):
    monkeypatch.setattr(local, "node_rank", lambda: (5, 8, "test"))
    monkeypatch.setattr(local, "_choice", {})
    fake = types.SimpleNamespace(count=lambda: 4)
    assert local.choose("cuda", False, fake) == "cuda:1"
    assert local.choice()["devices"] == 4
