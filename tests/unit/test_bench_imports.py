"""quicklaunch.bench's import graph, drawn from the source with ast (every
import, at module level or inside a function): no cycles, and the
benchmarks reach devices through the public API and the backend interface,
never a backend's modules."""
import ast
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "src" / "quicklaunch" / "bench"


def _name(path: Path) -> str:
    parts = [p for p in path.relative_to(BENCH).with_suffix("").parts if p != "__init__"]
    return ".".join(["quicklaunch.bench", *parts])


def _graph() -> dict:
    modules = {_name(p): p for p in BENCH.rglob("*.py")}
    graph = {}
    for mod, path in modules.items():
        deps = set()
        package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = package.split(".")
                base = base[:len(base) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                for a in node.names:   # a submodule by name, else a name from the module
                    sub = f"{target}.{a.name}"
                    deps.add(sub if sub in modules else target)
        graph[mod] = deps - {mod}
    return graph


def _cycles(graph: dict) -> list:
    local = {m: {d for d in deps if d in graph} for m, deps in graph.items()}
    cycles, done = [], set()

    def walk(node, path):
        if node in path:
            cycles.append(path[path.index(node):] + [node])
            return
        if node in done:
            return
        for dep in sorted(local[node]):
            walk(dep, path + [node])
        done.add(node)

    for m in sorted(local):
        walk(m, [])
    return cycles


def test_no_import_cycles_under_bench():
    graph = _graph()
    assert len(graph) > 40                      # the whole tree was read
    assert _cycles(graph) == []


def test_bench_imports_no_backend_module():
    reached = {d for deps in _graph().values() for d in deps}
    assert not {d for d in reached if d.startswith("quicklaunch.backends")}
