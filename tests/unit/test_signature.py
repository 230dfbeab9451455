"""Tests for quicklaunch.signature: reflection of __global__ declarations."""
import pickle

import pytest

from quicklaunch.signature import (TIER2_NAMES, KernelDecl, Param, SignatureError,
                                   parse_kernels, strip_comments, tier2_features)


def one(source):
    kernels = parse_kernels(source)
    assert len(kernels) == 1, kernels
    return kernels[0]


def sig(k):
    return [(p.name, p.ctype) for p in k.params]


# (id, source, name, [(param name, ctype)], template, extern_c)
CASES = [
    ("basic", "__global__ void saxpy(float a, const float *x, float *y, int n) {}",
     "saxpy", [("a", "float"), ("x", "const float *"), ("y", "float *"), ("n", "int")],
     None, False),
    ("comments-in-params",
     "__global__ void k(/* scale */ float a, // the input\n float * /*p*/ x /* , int b */) {}",
     "k", [("a", "float"), ("x", "float *")], None, False),
    ("string-literals-are-not-kernels",
     'const char *s = "__global__ void fake(int x) { (";\n'
     "const char c = '(';\n__global__ void real(int n) { printf(\"__global__ (\"); }",
     "real", [("n", "int")], None, False),
    ("extern-c-prefix", 'extern "C" __global__ void k(float *x) {}',
     "k", [("x", "float *")], None, True),
    ("extern-c-block", 'extern "C" {\n__global__ void k(int n);\n}',
     "k", [("n", "int")], None, True),
    ("extern-c++-block", 'extern "C++" { __global__ void k(int n) {} }',
     "k", [("n", "int")], None, False),
    ("const-volatile", "__global__ void k(const volatile int *p) {}",
     "k", [("p", "const volatile int *")], None, False),
    ("restrict__", "__global__ void k(const float* __restrict__ x) {}",
     "k", [("x", "const float *__restrict__")], None, False),
    ("__restrict", "__global__ void k(float *__restrict x) {}",
     "k", [("x", "float *__restrict")], None, False),
    ("restrict", "__global__ void k(float * restrict x) {}",
     "k", [("x", "float *restrict")], None, False),
    ("const-pointer-to-const", "__global__ void k(const float* const p) {}",
     "k", [("p", "const float *const")], None, False),
    ("restrict-const-pointer", "__global__ void k(T * __restrict__ const p) {}",
     "k", [("p", "T *__restrict__ const")], None, False),
    ("pointer-to-pointer", "__global__ void k(float **pp, int***q) {}",
     "k", [("pp", "float **"), ("q", "int ***")], None, False),
    ("typedef-and-struct-names", "__global__ void k(Point p, struct Point q, my_t x) {}",
     "k", [("p", "Point"), ("q", "struct Point"), ("x", "my_t")], None, False),
    ("multi-word-types",
     "__global__ void k(unsigned long long int n, long double d, signed char c, unsigned u) {}",
     "k", [("n", "unsigned long long int"), ("d", "long double"), ("c", "signed char"),
           ("u", "unsigned")], None, False),
    ("east-const", "__global__ void k(int const n, float const *x) {}",
     "k", [("n", "int const"), ("x", "float const *")], None, False),
    ("qualified-and-dependent-types",
     "__global__ void k(::ns::Type p, typename T::value_type *v) {}",
     "k", [("p", "::ns::Type"), ("v", "typename T::value_type *")], None, False),
    ("template-args-in-type", "__global__ void k(Vec<float, 4> *v, Pair<Vec<int, 2>, T> p) {}",
     "k", [("v", "Vec<float, 4> *"), ("p", "Pair<Vec<int, 2>, T>")], None, False),
    ("template", "template <typename T, int N> __global__ void add(T *x, int n) {}",
     "add", [("x", "T *"), ("n", "int")], "typename T, int N", False),
    ("template-on-previous-line", "template <class T>\n__global__\nvoid k(T v) {}",
     "k", [("v", "T")], "class T", False),
    ("explicit-specialization", "template <> __global__ void k<float>(float *x) {}",
     "k<float>", [("x", "float *")], "", False),
    ("launch-bounds-after-global",
     "__global__ __launch_bounds__(256) void k(int n) {}", "k", [("n", "int")], None, False),
    ("launch-bounds-before-global",
     "__launch_bounds__(256, 2) __global__ void k(int n) {}", "k", [("n", "int")], None, False),
    ("launch-bounds-before-name",
     "__global__ void __launch_bounds__(128) k(int n) {}", "k", [("n", "int")], None, False),
    ("launch-bounds-extern-c",
     'extern "C" __global__ void __launch_bounds__(256, 4) k(int n) {}',
     "k", [("n", "int")], None, True),
    ("static-global", "static __global__ void k(int n) {}", "k", [("n", "int")], None, False),
    ("global-static", "__global__ static void k(int n) {}", "k", [("n", "int")], None, False),
    ("void-before-global", "void __global__ k(int n) {}", "k", [("n", "int")], None, False),
    ("gnu-attribute", "__global__ void __attribute__((noinline)) k(int n) {}",
     "k", [("n", "int")], None, False),
    ("cxx11-attribute-on-param",
     "[[nodiscard]] __global__ void k([[maybe_unused]] int n, float * x [[maybe_unused]]) {}",
     "k", [("n", "int"), ("x", "float *")], None, False),
    ("grid-constant-and-alignas",
     "__global__ void k(const __grid_constant__ Params p, alignas(16) float4 v) {}",
     "k", [("p", "const Params"), ("v", "float4")], None, False),
    ("default-argument", "__global__ void k(int n = 4, float a = f(1, 2)) {}",
     "k", [("n", "int"), ("a", "float")], None, False),
    ("unnamed-params", "__global__ void k(float*, int, const my_t, unsigned);",
     "k", [("arg0", "float *"), ("arg1", "int"), ("arg2", "const my_t"),
           ("arg3", "unsigned")], None, False),
    ("void-param-list", "__global__ void k(void) {}", "k", [], None, False),
    ("empty-param-list", "__global__ void k() {}", "k", [], None, False),
    ("array-params", "__global__ void k(float x[], float y[4], float *z[2], float m[4][8]) {}",
     "k", [("x", "float *"), ("y", "float *"), ("z", "float **"), ("m", "float (*)[8]")],
     None, False),
    ("unnamed-array", "__global__ void k(int[]);", "k", [("arg0", "int *")], None, False),
    ("trailing-return", "__global__ auto k(int n) -> void {}", "k", [("n", "int")], None, False),
    ("namespace", "namespace ns { __global__ void k(int n) {} }",
     "ns::k", [("n", "int")], None, False),
    ("nested-namespaces", "namespace a { namespace b {\n__global__ void k(int n) {}\n} }",
     "a::b::k", [("n", "int")], None, False),
    ("cxx17-namespace", "namespace a::b { __global__ void k(int n) {} }",
     "a::b::k", [("n", "int")], None, False),
    ("anonymous-namespace", "namespace { __global__ void k(int n) {} }",
     "k", [("n", "int")], None, False),
    ("inline-namespace", "inline namespace v1 { __global__ void k(int n) {} }",
     "v1::k", [("n", "int")], None, False),
    ("qualified-out-of-line-definition", "namespace a { __global__ void b::k(int n) {} }",
     "a::b::k", [("n", "int")], None, False),
    ("braces-close-namespaces-correctly",
     "namespace ns {\nstruct S { int a; struct { int b; } in; };\nint t[] = {1, {2}};\n"
     "__device__ int f() { if (1) { return 0; } return 1; }\n}\n"
     "__global__ void k(S s) {}", "k", [("s", "S")], None, False),
    ("extern-c-inside-namespace", 'namespace ns { extern "C" { __global__ void k(int n) {} } }',
     "ns::k", [("n", "int")], None, True),
    ("macro-kernel", '#define KERNEL extern "C" __global__\nKERNEL void k(float *x) {}',
     "k", [("x", "float *")], None, True),
    ("macro-type-keeps-spelling", "#define REAL float\n__global__ void k(const REAL *x, REAL a) {}",
     "k", [("x", "const REAL *"), ("a", "REAL")], None, False),
    ("macro-line-continuation",
     '#define KERNEL \\\n  extern "C" \\\n  __global__\nKERNEL void k(int n) {}',
     "k", [("n", "int")], None, True),
    ("macro-nested-and-restrict",
     "#define RESTRICT __restrict__\n#define PTR float *RESTRICT\n"
     "__global__ void k(PTR x, float *RESTRICT y) {}",
     "k", [("x", "PTR"), ("y", "float *RESTRICT")], None, False),
    ("macro-name-and-empty-macro",
     "#define NAME saxpy\n#define DEVICE_API\nDEVICE_API __global__ void NAME(int n) {}",
     "saxpy", [("n", "int")], None, False),
    ("macro-holding-type-and-name", "#define ARG float x\n__global__ void k(ARG) {}",
     "k", [("x", "float")], None, False),
    ("function-like-macro-not-expanded",
     "#define F(x) x\n#define G (1)\n#include <cstdio>\n#pragma once\n__global__ void k(int n) {}",
     "k", [("n", "int")], None, False),
    ("undef", "#define T float\n#undef T\ntemplate <class T> __global__ void k(T v) {}",
     "k", [("v", "T")], "class T", False),
]


@pytest.mark.parametrize("source,name,params,template,extern_c",
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_declarations(source, name, params, template, extern_c):
    k = one(source)
    assert k.name == name
    assert sig(k) == params
    assert k.template == template
    assert k.extern_c is extern_c
    assert all(isinstance(p, Param) for p in k.params)


def test_kernel_decl_is_frozen_and_typed():
    k = one("__global__ void k(int n);")
    assert k == KernelDecl("k", (Param("n", "int"),), None, False, 1, False)
    with pytest.raises(AttributeError):
        k.name = "other"


def test_source_order_and_definitions():
    src = ("__global__ void b(int n) {}\n__global__ void a(float *x);\n"
           "__device__ void helper() {}\n__global__ void c() {}\n")
    ks = parse_kernels(src)
    assert [k.name for k in ks] == ["b", "a", "c"]
    assert [k.is_definition for k in ks] == [True, False, True]
    assert parse_kernels("") == []
    assert parse_kernels("int main() { return 0; }") == []


def test_declaration_then_definition_appears_once():
    src = ('extern "C" __global__ void k(float *, int n);\n'
           "__global__ void other() {}\n"
           "__global__ void k(float * __restrict__ x, const int) {\n}\n")
    ks = parse_kernels(src)
    assert [k.name for k in ks] == ["k", "other"]
    k = ks[0]
    assert k.is_definition and k.extern_c and k.line == 3
    assert sig(k) == [("x", "float *__restrict__"), ("n", "const int")]


def test_definition_without_names_takes_them_from_declaration():
    src = ("template <class T> __global__ void k(T *x, int n);\n"
           "template <class T> __global__ void k(T *, int) {}\n"
           "template <class T> __global__ void k(T *y, int m);\n")
    k = one(src)
    assert (k.line, k.is_definition, k.template) == (2, True, "class T")
    assert sig(k) == [("x", "T *"), ("n", "int")]


def test_overloads_stay_separate():
    src = "__global__ void k(float *x) {}\n__global__ void k(double *x) {}\n"
    ks = parse_kernels(src)
    assert [sig(k) for k in ks] == [[("x", "float *")], [("x", "double *")]]


def test_macro_expanded_parameters_match_declaration():
    src = "#define REAL float\n__global__ void k(float *);\n__global__ void k(REAL *x) {}\n"
    assert sig(one(src)) == [("x", "REAL *")]


def test_line_numbers_refer_to_original_source():
    src = ("/* a comment\n   over lines */\n"          # 1-2
           "#define KERNEL extern \"C\" \\\n  __global__\n"  # 3-4
           "KERNEL void a(int n) {}\n"               # 5
           "// __global__ void fake();\n"           # 6
           "template <class T>\n"                    # 7
           "  __global__\n"                          # 8
           "void b(T x,\n  int n) {}\n"              # 9-10
           "namespace ns {\n__launch_bounds__(64) __global__ void c() {}\n}\n")  # 11-13
    assert [(k.name, k.line) for k in parse_kernels(src)] == [("a", 5), ("b", 8), ("ns::c", 12)]


def test_if0_blocks_are_not_evaluated():
    # documented limitation: directives other than #define/#undef are skipped
    src = "#if 0\n__global__ void old(int n);\n#endif\n__global__ void k() {}\n"
    assert [k.name for k in parse_kernels(src)] == ["old", "k"]


def test_global_inside_non_namespace_braces_is_ignored():
    src = "struct S { friend __global__ void f(int); };\n__global__ void k() {}\n"
    assert [k.name for k in parse_kernels(src)] == ["k"]


def test_crlf_source():
    ks = parse_kernels("// c\r\n__global__ void k(int n)\r\n{\r\n}\r\n")
    assert [(k.name, k.line, sig(k)) for k in ks] == [("k", 2, [("n", "int")])]


ERRORS = [
    ("non-void-return", "\n__global__ int k(int n) { return n; }", 2,
     "kernel 'k' must return void, not 'int'"),
    ("missing-return-type", "__global__ k(int n) {}", 1, "kernel 'k' must return void, not 'nothing'"),
    ("function-pointer", "__global__ void k(float *x,\n void (*f)(int)) {}", 1,
     "kernel 'k': parameter 2 ('void (*f)(int)'): function-pointer"),
    ("variadic", "__global__ void k(int n, ...) {}", 1, "kernels cannot be variadic"),
    ("empty-param", "__global__ void k(int a, ) {}", 1, "parameter 2 (''): no type"),
    ("qualifier-only-param", "__global__ void k(const) {}", 1, "parameter 1 ('const'): no type"),
    ("no-name", "x;\n\n__global__ void (int n) {}", 3, "no kernel name before '('"),
    ("no-param-list", "__global__ void k;", 1, "no parameter list"),
    ("unterminated", "__global__ void k(int n", 1, "unterminated parameter list of kernel 'k'"),
    ("no-body", "__global__ void k(int n)", 1, "kernel 'k' has no body and no ';'"),
    ("junk-after-params", "__global__ void k(int n) const {}", 1,
     "expected '{' or ';' after the parameter list of kernel 'k', found 'const'"),
]


@pytest.mark.parametrize("source,line,message", [e[1:] for e in ERRORS],
                         ids=[e[0] for e in ERRORS])
def test_signature_errors(source, line, message):
    with pytest.raises(SignatureError) as info:
        parse_kernels(source)
    assert str(info.value).startswith(f"line {line}: ")
    assert message in str(info.value)
    assert info.value.line == line
    assert isinstance(info.value, ValueError)


def test_signature_error_pickles():
    err = SignatureError("line 3: bad", 3)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is SignatureError and str(back) == "line 3: bad" and back.line == 3


# ------------------------------------------------------------- strip_comments
def check_stripped(src, expected):
    out = strip_comments(src)
    assert out == expected
    assert len(out) == len(src)
    assert [i for i, c in enumerate(out) if c == "\n"] == [i for i, c in enumerate(src) if c == "\n"]


STRIP = [
    ("line", "int a; // hi\nint b;", "int a;      \nint b;"),
    ("block-multiline", "a /* x\ny */ b", "a     \n     b"),
    ("block-joins-nothing", "a/**/b", "a    b"),
    ("string", 'f("// not /* a comment */"); // c', 'f("// not /* a comment */");     '),
    ("escaped-quote", r's = "\"//"; // c', 's = "\\"//";     '),
    ("char", "c = '/'; d = '\\''; // x", "c = '/'; d = '\\'';     "),
    ("raw-string", 'R"x(// ")" /*)x" // c', 'R"x(// ")" /*)x"     '),
    ("prefixed-string", 'u8"//" L"/*" // c', 'u8"//" L"/*"     '),
    ("line-continuation", "// a \\\nstill comment\ncode", "      \n             \ncode"),
    ("unterminated-block", "x /* never\nclosed", "x         \n      "),
    ("slash-star-in-line-comment", "// /* x\ny", "       \ny"),
    ("digit-separator", "n = 1'000; // c", "n = 1'000;     "),
    ("crlf", "a // c\r\nb", "a     \r\nb"),
]


@pytest.mark.parametrize("src,expected", [s[1:] for s in STRIP], ids=[s[0] for s in STRIP])
def test_strip_comments(src, expected):
    check_stripped(src, expected)


# -------------------------------------------------------------- tier2_features
TIER2 = [
    ("none", "__global__ void k(float *x) { x[threadIdx.x] = 0; }", []),
    ("syncthreads", "__global__ void k() { __syncthreads(); }", ["__syncthreads"]),
    ("comment-ignored", "// __syncthreads();\n/* __syncwarp() */ int x;", []),
    ("string-ignored", 'printf("__shfl_sync %d", 1);', []),
    ("whole-identifiers", "my__syncthreads(); __syncthreads_x(); x.__syncwarpy;", []),
    ("count-is-distinct", "__syncthreads_count(p);", ["__syncthreads_count"]),
    ("sorted-several", "v = __shfl_down_sync(m, v, 1); b = __ballot_sync(m, p); __syncwarp();",
     ["__ballot_sync", "__shfl_down_sync", "__syncwarp"]),
    ("cooperative-groups", "namespace cg = cooperative_groups;\nauto b = cg::this_thread_block();",
     ["cooperative_groups", "this_thread_block"]),
    ("include-is-not-use", "#include <cooperative_groups.h>\nint x;", []),
    ("in-macro-body", "#define SYNC() __syncthreads()\n", ["__syncthreads"]),
    ("object-macro", "#define BAR __syncthreads\nvoid f() { BAR(); }", ["__syncthreads"]),
    ("extern-shared", "extern __shared__ float smem[];", ["extern __shared__"]),
    ("extern-shared-aligned", "extern __shared__ __align__(16) char buf[];\n__syncthreads();",
     ["__syncthreads", "extern __shared__"]),
    ("shared-extern-order", "__shared__ extern int s[];", ["extern __shared__"]),
    ("static-shared-is-not-dynamic", "__shared__ float tile[32][32];", []),
    ("extern-shared-via-macro", "#define DYN extern __shared__\nDYN int s[];", ["extern __shared__"]),
    ("extern-shared-in-comment", "// extern __shared__ float s[];\n", []),
]


@pytest.mark.parametrize("src,expected", [t[1:] for t in TIER2], ids=[t[0] for t in TIER2])
def test_tier2_features(src, expected):
    assert tier2_features(src) == expected


def test_tier2_names():
    assert isinstance(TIER2_NAMES, frozenset) and len(TIER2_NAMES) == 34
    assert {"__syncthreads", "__activemask", "coalesced_threads", "__reduce_xor_sync",
            "cub"} <= TIER2_NAMES
    for name in TIER2_NAMES:
        assert tier2_features(f"void f() {{ {name}; }}") == [name]
