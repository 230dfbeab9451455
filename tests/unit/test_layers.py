"""The house rules of the layout (docs/architecture.md), checked on the
source itself: no import cycles in Python or C, no test of a device's kind
outside backends/, cuda/ and hip/ never import each other, the fast path
includes nothing from backends/, and every registered backend offers the
interface."""
import ast
import importlib
import re
from pathlib import Path

import pytest

import quicklaunch
from quicklaunch.backends import REGISTRY
from quicklaunch.backends.base import Backend

# The rules are about the source: read the checkout's tree (an installed
# package carries no C headers); the installed one names the C extensions.
INSTALLED = Path(quicklaunch.__file__).parent
_CHECKOUT = Path(__file__).resolve().parents[2] / "src" / "quicklaunch"
PKG = _CHECKOUT if _CHECKOUT.is_dir() else INSTALLED


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in PKG.rglob("*.py")}
# C extensions (quicklaunch._launch, ...): modules too, with no imports of ours
EXTENSIONS = {_module_name(PKG / p.relative_to(root).with_name(p.name.split(".")[0] + ".py"))
              for root in {PKG, INSTALLED} for p in root.rglob("*")
              if p.suffix in (".so", ".pyd")}


def _resolve(current: str, is_pkg: bool, level: int, target: str | None) -> str:
    base = current.split(".") if is_pkg else current.split(".")[:-1]
    if level:
        base = base[:len(base) - (level - 1)]
        return ".".join(base + ([target] if target else []))
    return target or ""


def imports_of(name: str) -> set[str]:
    """Every quicklaunch module ``name`` imports, at the top or in a function."""
    path = MODULES[name]
    is_pkg = path.name == "__init__.py"
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            mod = _resolve(name, is_pkg, node.level, node.module)
            for a in node.names:   # a submodule by that name, else a name in `mod`
                sub = f"{mod}.{a.name}"
                out.add(sub if sub in MODULES or sub in EXTENSIONS else mod)
    return {m for m in out if m in MODULES and m != name}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_python_import_cycles():
    graph = {m: imports_of(m) for m in MODULES}
    assert _cycles(graph) == []


def test_cuda_and_hip_never_import_each_other():
    for name in MODULES:
        for other, own in (("hip", "cuda"), ("cuda", "hip")):
            if name.startswith(f"quicklaunch.backends.{own}"):
                bad = {m for m in imports_of(name)
                       if m.startswith(f"quicklaunch.backends.{other}")}
                assert not bad, f"{name} imports {bad}"


KINDS = {row.kind for row in REGISTRY}


def _kind_tests(tree) -> list[int]:
    """Lines that compare something's ``.kind`` with a device kind's name."""
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        names = {c.value for s in sides for c in ast.walk(s)
                 if isinstance(c, ast.Constant) and isinstance(c.value, str)}
        kind_attr = any(isinstance(s, ast.Attribute) and s.attr == "kind" for s in sides)
        if kind_attr and names & KINDS:
            lines.append(node.lineno)
    return lines


def test_no_device_kind_tests_outside_backends():
    offenders = {}
    for name, path in MODULES.items():
        if name.startswith(("quicklaunch.backends", "quicklaunch.bench")):
            continue
        lines = _kind_tests(ast.parse(path.read_text()))
        if lines:
            offenders[name] = lines
    assert offenders == {}


def test_the_kind_test_finder_finds_one():
    assert _kind_tests(ast.parse("if dev.kind == 'cuda': pass")) == [1]
    assert _kind_tests(ast.parse("x = d.device.kind in ('cpu', 'hip')")) == [1]
    assert _kind_tests(ast.parse("if dev.host_memory: pass")) == []


_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def c_include_graph() -> dict[Path, set[Path]]:
    files = [p for p in PKG.rglob("*") if p.suffix in (".c", ".h", ".cuh")]
    graph = {}
    for f in files:
        deps = set()
        for inc in _INCLUDE.findall(f.read_text(errors="replace")):
            for base in (f.parent, PKG, f.parent / "include"):
                cand = (base / inc).resolve()
                if cand.exists():
                    deps.add(cand)
                    break
        graph[f.resolve()] = deps
    return graph


def test_no_c_include_cycles():
    graph = {str(k): {str(v) for v in vs} for k, vs in c_include_graph().items()}
    assert _cycles(graph) == []


def test_the_fast_path_includes_nothing_from_backends():
    graph = c_include_graph()
    root = (PKG / "_launch.c").resolve()
    seen, todo = set(), [root]
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.add(f)
        todo += graph.get(f, ())
    assert not [f for f in seen if "backends" in f.parts]
    assert (PKG / "kinds.h").resolve() in seen
    assert (PKG / "ql_pyargs.h").resolve() in seen


@pytest.mark.parametrize("row", REGISTRY, ids=lambda r: r.kind)
def test_every_registry_row_offers_the_module_interface(row):
    mod = importlib.import_module(row.module)
    for fn in ("open", "usable", "toolchain"):
        assert callable(getattr(mod, fn, None)), f"{row.module} has no {fn}()"
    assert all(isinstance(a, str) and isinstance(b, str) for a, b in mod.toolchain())


def test_the_cpu_backend_implements_the_interface():
    dev = quicklaunch.device("cpu")
    assert isinstance(dev.backend, Backend)
    assert dev.backend.launch_entry and Path(dev.backend.entry_library).exists()
    assert dev.backend.dlpack_device == (1, 0) and dev.id == 0


def test_import_loads_no_backend_and_no_plotting():
    import subprocess
    import sys
    code = ("import sys, quicklaunch; print(sorted(m for m in sys.modules if "
            "m.startswith(('quicklaunch.backends.', 'matplotlib', 'quicklaunch.cuda', "
            "'quicklaunch.hip', 'quicklaunch.bench'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "['quicklaunch.backends.base']"
