"""Every environment variable quicklaunch reads is validated and documented
(issue 19, item 5): a bad value is an error naming the variable and what it
takes, and the README's configuration table lists each one."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from quicklaunch import env

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "quicklaunch"
# os.environ.get("X"), os.environ["X"], getenv("X"), setdefault("X", ...), and
# the module constants that name one (ENV = "QUICKLAUNCH_...")
_READ = re.compile(r"""(?:environ\.get|environ\[|getenv|environ\.setdefault)\(?\s*["']([A-Z][A-Z0-9_]+)["']"""
                   r"""|^\s*\w*ENV\s*=\s*["']([A-Z][A-Z0-9_]+)["']""", re.M)
# read, but defined by others (MPI launchers' local rank); set for peers, not read
NOT_OURS = re.compile(r"^(OMPI_|MPI_LOCALRANKID|MPI_LOCALNRANKS|PMI_|PMIX_|SLURM_|MV2_|"
                      r"NUMBA_|OPENBLAS_)")


def _read_variables() -> set[str]:
    names = set()
    for path in SRC.rglob("*"):
        if path.suffix in (".py", ".c", ".h") and path.is_file():
            for m in _READ.finditer(path.read_text(errors="replace")):
                names.add(m.group(1) or m.group(2))
    return {n for n in names if not NOT_OURS.match(n)}


def test_every_variable_read_is_in_the_table():
    listed = {v.name for v in env.VARIABLES}
    missing = _read_variables() - listed
    assert not missing, f"read by quicklaunch but not in quicklaunch/env.py: {sorted(missing)}"


def test_every_variable_is_in_the_readme():
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("## Configuration"):]
    table = table[:table.index("\n## ")] if "\n## " in table else table
    missing = [v.name for v in env.VARIABLES if f"`{v.name}`" not in table]
    assert not missing, f"not in the README's configuration table: {missing}"
    assert "`QUICKLAUNCH_HIP_ARCH`" in table


@pytest.mark.parametrize("name, value, expected", [
    ("QUICKLAUNCH_CPU_THREADS", "abc", "a whole number of threads, at least 1"),
    ("QUICKLAUNCH_CPU_THREADS", "0", "a whole number of threads, at least 1"),
    ("QUICKLAUNCH_CPU_STACK", "4k", "at least 16384"),
    ("QUICKLAUNCH_CPU_STACK", "lots", "at least 16384"),
    ("QUICKLAUNCH_CPU_TIMEOUT", "-1", "a positive number of seconds"),
    ("QUICKLAUNCH_COMPILE_LOCK_TIMEOUT", "soon", "a positive number of seconds"),
    ("QUICKLAUNCH_DEBUG", "yes", "0 or 1"),
    ("QUICKLAUNCH_LAUNCH_BLOCKING", "true", "0 or 1"),
    ("QUICKLAUNCH_CPU_CATCH_FAULTS", "no", "0 or 1"),
    ("QUICKLAUNCH_CPU_FISSION", "maybe", "0 or 1"),
    ("QUICKLAUNCH_HIP_ARCH", "mi300", "an AMD GPU target id"),
])
def test_a_bad_value_names_the_variable_and_what_it_takes(name, value, expected):
    with pytest.raises(env.EnvironmentConfigError) as info:
        env.check({name: value})
    assert str(info.value).startswith(f"{name}={value!r}: expected ")
    assert expected in str(info.value)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("name, value", [
    ("QUICKLAUNCH_CPU_THREADS", "3"), ("QUICKLAUNCH_CPU_STACK", "512k"),
    ("QUICKLAUNCH_CPU_STACK", "1M"), ("QUICKLAUNCH_CPU_STACK", "65536"),
    ("QUICKLAUNCH_CPU_TIMEOUT", "0.2"), ("QUICKLAUNCH_DEBUG", "1"), ("QUICKLAUNCH_DEBUG", ""),
    ("QUICKLAUNCH_CPU_FISSION", "off"), ("QUICKLAUNCH_HIP_ARCH", "gfx90a"),
    ("QUICKLAUNCH_HIP_ARCH", "gfx942:sramecc+:xnack-"), ("CXX", "g++ -fno-lto"),
])
def test_good_values_pass(name, value):
    env.check({name: value})


def test_import_refuses_a_bad_value():
    out = subprocess.run([sys.executable, "-c", "import quicklaunch"],
                         env={**os.environ, "QUICKLAUNCH_CPU_THREADS": "abc"},
                         capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert ("QUICKLAUNCH_CPU_THREADS='abc': expected a whole number of threads, at least 1"
            in out.stderr), out.stderr


def test_listing_marks_a_bad_value():
    rows = {name: (value, what) for name, value, what in
            env.listing({"QUICKLAUNCH_CPU_THREADS": "abc", "QUICKLAUNCH_DEBUG": "1"})}
    invalid = "INVALID: expected a whole number of threads, at least 1"
    assert rows["QUICKLAUNCH_CPU_THREADS"] == ("'abc'", invalid)
    assert rows["QUICKLAUNCH_DEBUG"][0] == "'1'"
    assert rows["QUICKLAUNCH_CPU_STACK"][0] == "(unset)"
