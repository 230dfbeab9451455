"""kinds.h is the one kind table: the launcher's kind names in messages come
from it, and the CPU shim takes its enum from it (so the shim's cache key
must cover it). No compiler needed."""
import re

import pytest

import quicklaunch as ql  # registers the error classes with the launcher
from quicklaunch import kinds
from quicklaunch.backends.cpu import scan, toolchain

from .recording_backend import NATURAL, make_kernel

SPELLINGS = dict(re.findall(r'X\(\s*(\w+)\s*,\s*"([^"]*)"\s*\)',
                            kinds.HEADER.read_text().split("QL_KIND_C_SPELLINGS(X)", 1)[1]))


def test_the_table_is_the_one_the_launcher_and_the_tests_use():
    assert kinds.CODES["PTR"] == 1 and kinds.CODES["INVALID"] == 17
    assert sorted(kinds.NAMES) == list(range(1, 18))
    assert SPELLINGS == {"F16": "__half", "BF16": "__nv_bfloat16", "F32": "float",
                         "F64": "double"}
    assert NATURAL.keys() <= set(kinds.NAMES)


@pytest.mark.parametrize("tag", [t for t in kinds.CODES if t != "INVALID"])
def test_messages_name_each_kind_as_kinds_h_does(tag):
    code = kinds.CODES[tag]
    k = make_kernel([code], [NATURAL.get(code, 8)])
    with pytest.raises(ql.LaunchTypeError) as e:
        k[1, 1](object())
    assert f"(C type {SPELLINGS.get(tag, kinds.NAMES[code])}), got object" in str(e.value)


def test_the_cpu_cache_key_covers_kinds_h_and_every_shim_header():
    material = toolchain.headers_digest_material()
    assert kinds.HEADER.read_bytes() in material
    assert toolchain.PYARGS_HEADER.read_bytes() in material   # ql_cpu_abi.h's other include
    for path in toolchain.INCLUDE_DIR.rglob("*.h"):
        assert path.read_bytes() in material, path
    assert b"cooperative_groups/reduce.h\0" in material


def test_the_scan_drops_the_kind_table_like_the_shims_own_lines():
    include = toolchain.INCLUDE_DIR
    pre = (f'# 1 "kernel.cu"\n__global__ void k(int *x) {{}}\n'
           f'# 1 "{include}/ql_cpu_abi.h" 1\nenum ql_cpu_status {{ A }};\n'
           f'# 1 "{include}/../../../kinds.h" 1\nenum ql_kind {{ QL_KIND_PTR = 1 }};\n'
           f'# 1 "{kinds.HEADER}" 1\nenum ql_kind2 {{ B }};\n'
           f'# 3 "kernel.cu" 2\n__global__ void j() {{}}\n')
    text = scan.user_text(pre, "kernel.cu")
    assert "ql_kind" not in text and "ql_cpu_status" not in text
    assert "void k(int *x)" in text and "void j()" in text
