"""Compile errors map only quicklaunch's own source name to "line N"; other
files (a header named like it, reduction_kernel.cu) keep their names."""
from quicklaunch.backends.cpu import toolchain


def _shown(log):
    err = toolchain.compile_error("failed", log, "int x;\n", (), ("g++",), "", "kernel.cu")
    return str(err)


def test_own_source_maps_to_line():
    assert "line 2:5: error: boom" in _shown("kernel.cu:2:5: error: boom")


def test_other_files_keep_their_names():
    shown = _shown("reduction_kernel.cu:551:20: error: x\n/inc/kernel.cu:3:1: note: y\n"
                   "my-kernel.cu:7:2: error: z")
    assert "reduction_kernel.cu:551:20: error: x" in shown
    assert "/inc/kernel.cu:3:1: note: y" in shown
    assert "my-kernel.cu:7:2: error: z" in shown
    assert "reduction_line" not in shown
