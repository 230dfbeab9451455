"""PTX reading (backends/cuda/ptx.py) on PTX text as NVRTC writes it: entry
parameter lists, reflection tables (decoded by backends/gpu/reflect.py) and
the cross-check. No NVRTC needed."""
import random
import struct

import pytest

from quicklaunch.backends.cuda import ptx
from quicklaunch.backends.gpu import reflect

pytestmark = pytest.mark.no_nvrtc

MODULE = """
.version 9.5
.target sm_90
.address_size 64
.global .align 4 .b8 __ql_reflect_1[36] = {81, 76, 82, 70, 1, 0, 0, 0, 1, 0, 0, 0, 8, 0, 0, 0, 8, 0, 0, 0, 1};
.global .align 4 .b8 __ql_reflect_10[24] = {81, 76, 82, 70, 1};
.global .align 4 .u32 plain_word = 7;
.visible .global .align 8 .u64 two_words[2] = {0x100000002, 3};
.global .align 4 .b8 zeros[8];

.visible .entry k(
\t.param .u64 .ptr .global .align 1 k_param_0,
\t.param .align 16 .b8 k_param_1[48],
\t.param .u8 k_param_2,
\t.param .f64 k_param_3,
\t.param .align 2 .b8 k_param_4[2]
)
.maxntid 256, 1, 1
{
\tret;
}
.weak .entry _Z5scaleIfLi5EEvPT_S0_(
\t.param .u64 _Z5scaleIfLi5EEvPT_S0__param_0,
\t.param .f32 _Z5scaleIfLi5EEvPT_S0__param_1
)
{
\tret;
}
.entry _Z3nopv()
{
\tret;
}
"""


def test_entries_sizes_and_alignments():
    e = ptx.entries(MODULE)
    assert set(e) == {"k", "_Z5scaleIfLi5EEvPT_S0_", "_Z3nopv"}
    # .ptr .global .align 1 is the pointee's alignment, not the parameter's
    assert [(p.size, p.align) for p in e["k"]] == [(8, 8), (48, 16), (1, 1), (8, 8), (2, 2)]
    assert [(p.size, p.align) for p in e["_Z5scaleIfLi5EEvPT_S0_"]] == [(8, 8), (4, 4)]
    assert e["_Z3nopv"] == ()
    assert e["k"][1].text == ".param .align 16 .b8 k_param_1[48]"


def test_global_words_pads_omitted_trailing_zeros():
    words = ptx.global_words(MODULE, "__ql_reflect_1")
    assert words == [reflect.MAGIC, 1, 1, 8, 8, 1, 0, 0, 0]
    # a name that is a prefix of another is not confused with it
    assert ptx.global_words(MODULE, "__ql_reflect_10") == [reflect.MAGIC, 1, 0, 0, 0, 0]
    assert ptx.global_words(MODULE, "plain_word") == [7]
    assert ptx.global_words(MODULE, "two_words") == [2, 1, 3, 0]
    assert ptx.global_words(MODULE, "zeros") == [0, 0]
    assert ptx.global_words(MODULE, "__ql_reflect_2") is None


def test_random_tables_round_trip_through_ptx_text():
    rng = random.Random(20261130)
    for trial in range(50):
        rows = [(rng.choice([1, 2, 4, 8, 12, 16, 32, 48]), rng.choice([1, 2, 4, 8, 16]),
                 rng.randint(1, 17)) for _ in range(rng.randint(0, 12))]
        words = ([reflect.MAGIC, reflect.VERSION, len(rows)] + [w for r in rows for w in r]
                 + [0, 0, 0])
        raw = b"".join(struct.pack("<I", w) for w in words)
        listed = list(raw.rstrip(b"\0"))      # NVVM leaves trailing zeros out
        text = (f".global .align 4 .b8 __ql_reflect_{trial}[{len(raw)}] = "
                f"{{{', '.join(map(str, listed))}}};\n")
        got = reflect.decode_table(ptx.global_words(text, f"__ql_reflect_{trial}"), "t")
        assert got == rows


def test_decode_table_rejects_foreign_data():
    with pytest.raises(reflect.ReflectError, match="not a quicklaunch reflection table"):
        reflect.decode_table([1, 2, 3, 4, 5, 6], "x")
    with pytest.raises(reflect.ReflectError, match="version 9"):
        reflect.decode_table([reflect.MAGIC, 9, 0, 0, 0, 0], "x")
    with pytest.raises(reflect.ReflectError, match="7 words for 1 parameters"):
        reflect.decode_table([reflect.MAGIC, 1, 1, 4, 4, 5, 0], "x")


def test_check_names_the_mismatch():
    params = ptx.entries(MODULE)["k"]
    good = [(8, 8, 1), (48, 16, 16), (1, 1, 15), (8, 8, 14), (2, 2, 11)]
    ptx.check("k", good, params)
    with pytest.raises(reflect.ReflectError, match=r"kernel 'k': reflection found 4 parameters "
                                               r"but its PTX entry declares 5"):
        ptx.check("k", good[:4], params)
    bad = list(good)
    bad[1] = (48, 8, 16)
    with pytest.raises(reflect.ReflectError, match=r"parameter 2 reflects as 48 bytes aligned to "
                                               r"8, but .*k_param_1\[48\]' \(48 bytes aligned "
                                               r"to 16\)"):
        ptx.check("k", bad, params)


def test_unrecognised_parameter_is_an_error():
    with pytest.raises(reflect.ReflectError, match="unrecognised PTX parameter"):
        ptx.entries(".entry k(\n\t.param .weird k_param_0\n)\n{\n}\n")
