"""Fixture bodies shared by the runtime-compiler test suites (tests/nvrtc,
tests/hip): a private compile cache and a counter of compilations."""
from quicklaunch import cache


def private_cache(tmp_path, monkeypatch, program):
    """Point ``program``'s compile cache at a fresh directory; its root."""
    root = tmp_path / "cache"
    monkeypatch.setattr(program, "_cache", cache.CompileCache(root))
    return root


def count_compiles(monkeypatch, compiler_class):
    """Count calls to ``compiler_class.compile`` (a list, one entry per call)."""
    calls = []
    real = compiler_class.compile

    def counting(self, *args, **kwargs):
        calls.append(args[0])
        return real(self, *args, **kwargs)

    monkeypatch.setattr(compiler_class, "compile", counting)
    return calls
