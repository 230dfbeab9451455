"""ql.hip.compile without a GPU: the code object, reflected parameters (the
same answers as NVRTC's for the same source), errors with the user's line
numbers, architecture checks, the compiler process's crash isolation, the
compile cache and the library search."""
import re

import pytest

import quicklaunch as ql
from quicklaunch.backends.hip import elf, hiprtc, metadata
from quicklaunch.signature import parse_kernels
from tests.nvrtc.test_reflection import ALL_KINDS, SCALES, SOURCE as REFLECT_SOURCE

PTR, F32, I8, STRUCT, INVALID = 1, 13, 3, 16, 17


def rows(info):
    return [(p.name, p.size, p.align, p.kind) for p in info.params]


@pytest.fixture(scope="module")
def prog():
    return ql.hip.compile(REFLECT_SOURCE, arch="gfx90a", name_expressions=list(SCALES))


def test_code_object_and_kernels(prog):
    co = elf.CodeObject(prog.code_object)
    assert prog.code_object[:4] == b"\x7fELF" and co.machine == elf.EM_AMDGPU
    assert prog.arch == "gfx90a" and prog.wave_size == 64 and isinstance(prog.log, str)
    decls = [d.name for d in parse_kernels(REFLECT_SOURCE) if d.template is None]
    assert list(prog.kernels) == decls + list(SCALES)
    meta = metadata.kernels(co)
    for info in prog.kernels.values():
        assert info.lowered_name in meta and info.lowered_name in co.symbols
    assert prog.kernels["a::b::deep"].lowered_name == "_ZN1a1b4deepEPi5Plain"
    assert prog.kernels["a::c_in_ns"].lowered_name == "c_in_ns"
    assert prog.kernels["scale<float,5>"] is prog.kernels["scale<float, 5>"]
    assert "gfx90a" in repr(prog)


def test_every_kind_as_nvrtc_reflects_it(prog):
    assert rows(prog.kernels["all_kinds"]) == list(ALL_KINDS)
    for expr, (size, align, kind) in SCALES.items():
        assert rows(prog.kernels[expr]) == [("x", 8, 8, PTR), ("f", size, align, kind)]


def test_wave32_target():
    p = ql.hip.compile("__global__ void k(float *x) { x[0] = warpSize; }", arch="gfx1030")
    assert p.wave_size == 32 and metadata.kernels(p.code_object)["_Z1kPf"].wavefront_size == 32
    p64 = ql.hip.compile("__global__ void k(float *x) { x[0] = warpSize; }", arch="gfx1030",
                         options=["-mwavefrontsize64"])
    assert p64.wave_size == 64 and metadata.kernels(p64.code_object)["_Z1kPf"].wavefront_size == 64


def test_reference_parameters_are_invalid():
    p = ql.hip.compile("__global__ void refs(int &r, const double &d, float v) {}\n")
    assert rows(p.kernels["refs"]) == [("r", 8, 8, INVALID), ("d", 8, 8, INVALID),
                                       ("v", 4, 4, F32)]


def test_under_aligned_struct_is_never_reflected_wrong():
    source = ("struct __align__(4) D { unsigned char c; double d; };\n"
              "struct S { int a[3]; short b[3]; D d[2]; };\n"
              "__global__ void k(S s, D d, char c) {}\n")
    try:
        p = ql.hip.compile(source)
    except ql.CompileError as exc:   # the front end and the code generator disagree
        assert "natural alignment" in str(exc)
        return
    meta = metadata.kernels(p.code_object)[p.kernels["k"].lowered_name]
    assert [p.size for p in p.kernels["k"].params] == [a.size for a in meta.args]


def test_the_reflection_mismatch_is_a_compile_error(monkeypatch, private_cache):
    real = metadata.check

    def lying(kernel, reflected, meta):
        real(kernel, [(s + 1, a, k) for s, a, k in reflected], meta)

    monkeypatch.setattr(metadata, "check", lying)
    with pytest.raises(ql.CompileError, match=r"could not be reflected: kernel 'k': parameter 1 "
                                              r"reflects as 5 bytes"):
        ql.hip.compile("__global__ void k(float f) {}\n")


def test_errors_carry_the_users_line_numbers():
    source = "\n\n__global__ void k(float *x) {\n    x[0] = undefined_name;\n}\n"
    with pytest.raises(ql.CompileError) as info:
        ql.hip.compile(source)
    text = str(info.value)
    assert "line 4, column 12: error: use of undeclared identifier 'undefined_name'" in text
    assert "4 |     x[0] = undefined_name;" in text and "options: []" in text
    assert info.value.command[0] == "hiprtc" and "--offload-arch=gfx90a" in info.value.command
    assert "/tmp/comgr-" not in text


def test_unknown_arch_is_refused_before_hiprtc_sees_it(count_compiles):
    # comgr 2.4 corrupts its heap on an arch it does not know
    with pytest.raises(ql.CompileError, match=r"does not support arch 'gfx9999'; supported: "
                                              r"gfx600, .*gfx90a"):
        ql.hip.compile("__global__ void k() {}", arch="gfx9999")
    for bad in ("sm_90", "90a", "", None):
        with pytest.raises(ql.CompileError, match="not an AMDGPU target name"):
            ql.hip.compile("__global__ void k() {}", arch=bad)
    assert count_compiles == []
    assert "gfx90a" in ql.hip.supported_archs() and ql.hip.hiprtc_version() >= (1, 0)


def test_arch_with_target_features():
    p = ql.hip.compile("__global__ void k(int *x) { x[0] = 1; }", arch="gfx90a:xnack-")
    assert p.arch == "gfx90a:xnack-" and list(p.kernels) == ["k"]


@pytest.mark.parametrize("option", ["--offload-arch=gfx908", "-mcpu=gfx908"])
def test_arch_belongs_in_arch_not_options(option):
    with pytest.raises(ql.CompileError, match="pass the architecture as arch="):
        ql.hip.compile("__global__ void k() {}", options=[option])


def test_invalid_option_is_reported(monkeypatch):
    # Refused by the allow-list (quicklaunch/options.py), by name; past the
    # escape hatch, hiprtc itself refuses it.
    with pytest.raises(ql.CompileError, match="option '--no-such-option' is refused"):
        ql.hip.compile("__global__ void k() {}", options=["--no-such-option"])
    monkeypatch.setenv("QUICKLAUNCH_UNCHECKED_OPTIONS", "1")
    with pytest.raises(ql.CompileError, match="unsupported option '--no-such-option'"):
        ql.hip.compile("__global__ void k() {}", options=["--no-such-option"])


def test_bad_name_expressions():
    source = "template <class T> __global__ void t(T *x) {}\n"
    with pytest.raises(ql.CompileError, match="invalid name expression"):
        ql.hip.compile(source, name_expressions=["t<int>; evil"])
    with pytest.raises(ql.CompileError, match=r"'t<NoSuchType>' could not be resolved"):
        ql.hip.compile(source, name_expressions=["t<NoSuchType>"])
    with pytest.raises(TypeError):
        ql.hip.compile(source, name_expressions=[3])


def test_kernels_removed_by_the_preprocessor_are_left_out():
    source = ("#if 0\n__global__ void gone(int *x) {}\n#endif\n"
              "#ifdef NOT_DEFINED\nnamespace ns { __global__ void also_gone() {} }\n#endif\n"
              "__global__ void kept(int *x) { x[0] = 1; }\n")
    assert list(ql.hip.compile(source).kernels) == ["kept"]


def test_compiler_crash_is_a_compile_error_and_the_next_compile_works():
    # LLVM aborts on a device thread_local ("Cannot select: GlobalTLSAddress")
    source = ("__global__ void count(int *x) { static thread_local int tag = 0; "
              "x[0] = ++tag; }\n")
    with pytest.raises(ql.CompileError, match=r"(?s)hiprtc crashed while compiling \(signal 6, "
                                              r"SIGABRT\).*this process is unharmed: the source "
                                              r"uses thread_local.*GlobalTLSAddress.*1 \| "):
        ql.hip.compile(source)
    assert list(ql.hip.compile("__global__ void fine(int *x) { x[0] = 2; }").kernels) == ["fine"]


def test_language_standard_defaults_to_cxx17_and_can_be_chosen():
    src = "__global__ void k(int *x) { x[0] = __cplusplus; }\nstatic_assert(__cplusplus %s, \"\");"
    ql.hip.compile(src % ">= 201703L")
    ql.hip.compile(src % "== 201402L", options=["-std=c++14"])


# ---------------------------------------------------------------- the cache
def test_second_compile_is_a_hit(private_cache, count_compiles):
    source = "__global__ void k(float *x, int n) { x[0] = n; }\n"
    first = ql.hip.compile(source, arch="gfx908")
    again = ql.hip.compile(source, arch="gfx908")
    assert len(count_compiles) == 1 and not first.from_cache and again.from_cache
    assert again.code_object == first.code_object
    assert rows(again.kernels["k"]) == rows(first.kernels["k"]) and again.wave_size == 64
    ql.hip.compile(source, arch="gfx1030")
    ql.hip.compile(source, arch="gfx908", options=["-O1"])
    ql.hip.compile(source + "\n", arch="gfx908")
    assert len(count_compiles) == 4
    assert list(private_cache.glob("hip/*/*.co"))


def test_damaged_entry_is_a_recompile(private_cache, count_compiles):
    source = "__global__ void k(float *x) { x[0] = 3; }\n"
    ql.hip.compile(source)
    for path in private_cache.glob("hip/*/*.co"):
        path.write_bytes(b"damaged")
    assert not ql.hip.compile(source).from_cache and len(count_compiles) == 2


# ---------------------------------------------------------------- the library
@pytest.mark.no_hiprtc
def test_library_search_order(monkeypatch, tmp_path):
    rocm = tmp_path / "rocm" / "lib"
    rocm.mkdir(parents=True)
    for name in ("libhiprtc.so.6", "libhiprtc.so.5", "libamdhip64.so.6", "libhiprtc-builtins.so.6"):
        (rocm / name).write_bytes(b"")
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "rocm"))
    found = hiprtc.candidates()
    mine = [p for p in found if p.startswith(str(rocm))]
    assert [p.rsplit("/", 1)[1] for p in mine] == ["libhiprtc.so.6", "libhiprtc.so.5",
                                                   "libamdhip64.so.6"]
    assert found.index(mine[0]) == 0


@pytest.mark.no_hiprtc
def test_explicit_library_that_does_not_load(monkeypatch, tmp_path):
    monkeypatch.setenv("QUICKLAUNCH_HIPRTC", str(tmp_path / "libhiprtc.so"))
    monkeypatch.setattr(hiprtc, "_loaded", None)
    with pytest.raises(ql.CompileError, match=r"QUICKLAUNCH_HIPRTC=.*could not be loaded as "
                                              r"hiprtc .*apt-get install libamdhip64-5"):
        hiprtc.load()


@pytest.mark.no_hiprtc
def test_nothing_found_says_how_to_install(monkeypatch):
    monkeypatch.delenv("QUICKLAUNCH_HIPRTC", raising=False)
    monkeypatch.setattr(hiprtc, "_loaded", None)
    monkeypatch.setattr(hiprtc, "candidates", lambda: [])
    with pytest.raises(ql.CompileError, match=r"hiprtc \(the HIP runtime compiler\) was not "
                                              r"found\. To compile for AMD GPUs, install ROCm"):
        hiprtc.load()


@pytest.mark.no_hiprtc
def test_import_opens_nothing():
    import subprocess
    import sys
    code = ("import sys, quicklaunch; from quicklaunch.backends.hip import hiprtc, driver; "
            "print(hiprtc._loaded is None and driver._runtime is None and "
            "not any('amdhip' in m for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)  # the interpreter's own environment: the
    # quicklaunch under test, installed or on PYTHONPATH
    assert out.stdout.strip() == "True", out.stderr


def test_the_worker_reports_a_library_it_cannot_open(tmp_path):
    from quicklaunch.backends.hip import worker
    w = worker.Worker(str(tmp_path / "nothing.so"))
    with pytest.raises(ql.CompileError, match="could not open"):
        w.compile("", "k.cu", [], {}, [])
    w.close()


def test_symbols_in_messages_are_clean():
    with pytest.raises(ql.CompileError) as info:
        ql.hip.compile("__global__ void k() { static_assert(sizeof(int) == 3, \"mine\"); }")
    assert re.search(r"line 1, column \d+: error: static assertion failed", str(info.value))


def test_a_forked_child_gets_its_own_compiler_process():
    import os
    ql.hip.compile("__global__ void parent_first(int *x) { x[0] = 1; }")
    pid = os.fork()
    if pid == 0:   # the child compiles something new, then leaves without cleanup
        try:
            prog = ql.hip.compile("__global__ void in_child(int *x) { x[0] = 7; }")
            os._exit(0 if list(prog.kernels) == ["in_child"] else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert list(ql.hip.compile("__global__ void parent_again(int *x) { x[0] = 2; }").kernels) \
        == ["parent_again"]
