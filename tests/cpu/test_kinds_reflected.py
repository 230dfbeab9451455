"""The CPU shim's reflection (ql_cpu_export.h) reports kinds.h's codes: the
compiler answers each parameter's kind, through the enum the shim takes from
kinds.h, and the launcher reads the same numbers."""
import quicklaunch as ql
from quicklaunch import kinds

SOURCE = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
struct Pair { int a; float b; };
enum Mode : short { A, B };
extern "C" __global__ void every_kind(float *w, const double *r, signed char i8, short i16,
                                      int i32, long long i64, unsigned char u8,
                                      unsigned short u16, unsigned u32,
                                      unsigned long long u64, __half h, __nv_bfloat16 bf,
                                      float f, double d, bool b, Pair p, Mode m) {}
"""
WANT = ["PTR", "PTR_CONST", "I8", "I16", "I32", "I64", "U8", "U16", "U32", "U64", "F16",
        "BF16", "F32", "F64", "BOOL", "STRUCT", "I16"]


def test_reflected_kinds_are_kinds_h_codes(cpu):
    k = ql.compile(SOURCE, device=cpu).get_kernel("every_kind")
    assert [code for code, _size, _offset in k._layout()] == [kinds.CODES[t] for t in WANT]
