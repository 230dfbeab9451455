"""The docs are tests: every ```python block of README.md and docs/*.md runs
here, collected by pytest-markdown-docs (the `test` extra).

A block runs as written, in a fresh namespace, with the working directory a
temporary one (blocks that write files, such as a trace, leave nothing
behind) and the CPU device as the default device (the suite's device: a
block's NumPy arrays are host memory). Its kernels are compiled through the
session's shared compile cache (tests/conftest.py), so a block another test
already built costs a cache hit. Setup a block needs is declared on its
fence: ``python continuation`` continues the block before it, and a
``fixture:NAME`` option names a fixture of this file:

* ``fixture:cuda_gpu`` - the block needs an NVIDIA GPU and is skipped,
  with that reason, where none is usable;
* ``fixture:hip_gpu`` - the same for an AMD GPU;
* ``fixture:mpi`` - the block needs mpi4py and an MPI launch (mpirun);
  skipped otherwise;
* ``fixture:torch_installed``, ``fixture:jax_installed`` - the block needs
  that framework; skipped, saying so, where it is not installed.

Blocks that are not Python to run (shell commands, output) are fenced as
``sh`` or ``text``, and are not collected.
"""
from pathlib import Path

import pytest

try:
    from pytest_markdown_docs.plugin import MarkdownTextFile
except ImportError:   # the `test` extra is not installed: the docs are not collected
    MarkdownTextFile = None

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


class MarkdownDocs(pytest.File):
    """README.md and docs/*.md, as children of tests/docs/test_docs.py (so
    this directory's fixtures apply to their blocks)."""

    def collect(self):
        for md in DOCS:
            yield MarkdownTextFile.from_parent(self, path=md,
                                               nodeid=f"{self.nodeid}::{md.relative_to(ROOT)}")


def pytest_collect_file(file_path, parent):
    if MarkdownTextFile is not None and file_path.name == "test_docs.py" \
            and file_path.parent == Path(__file__).parent:
        return MarkdownDocs.from_parent(parent, path=file_path,
                                        nodeid=f"{parent.nodeid}/test_docs.py[markdown]"
                                        if parent.nodeid else "test_docs.py[markdown]")
    return None


@pytest.fixture(autouse=True)
def _doc_block_environment(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("QUICKLAUNCH_DEVICE", "cpu")
    monkeypatch.delenv("QUICKLAUNCH_DEBUG", raising=False)
    monkeypatch.delenv("QUICKLAUNCH_TRACE", raising=False)


def _gpu(kind: str, what: str):
    from quicklaunch import devices
    try:
        _, row = devices.entry(kind)
        import importlib
        usable = importlib.import_module(row.module).usable()
    except Exception as exc:   # noqa: BLE001 - any failure means: not here
        pytest.skip(f"needs {what}: {exc}")
    if not usable:
        pytest.skip(f"needs {what}; none is usable on this machine")


@pytest.fixture
def cuda_gpu(monkeypatch):
    _gpu("cuda", "an NVIDIA GPU (CUDA driver)")
    monkeypatch.setenv("QUICKLAUNCH_DEVICE", "cuda")


@pytest.fixture
def hip_gpu(monkeypatch):
    _gpu("hip", "an AMD GPU (HIP runtime)")
    monkeypatch.setenv("QUICKLAUNCH_DEVICE", "hip")


@pytest.fixture
def torch_installed():
    return pytest.importorskip("torch", reason="needs torch (pip install torch)")


@pytest.fixture
def jax_installed():
    return pytest.importorskip("jax", reason="needs jax (pip install jax)")


@pytest.fixture
def mpi():
    mpi4py = pytest.importorskip("mpi4py", reason="needs mpi4py and an MPI launch")
    from mpi4py import MPI
    if MPI.COMM_WORLD.Get_size() < 2:
        pytest.skip("needs an MPI launch (mpirun -n 2 or more)")
    return mpi4py
