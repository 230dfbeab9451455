"""Fatbin entries, compressed ones included: nvcc 13's fatbins (tests/unit/
fatbins: stored as is, its default with zstd-compressed PTX, every entry
zstd- or LZ4-compressed) read back to the same PTX and cubins, and the
kernels' parameters (types from the PTX) read from every one of them; the
zstd decoder against the zstd command's output for random data, and damage
to either compression always a clear error, never a crash."""
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from quicklaunch.backends.cuda import binary, cubin, fatbin, zstd

HERE = Path(__file__).parent / "fatbins"
KINDS = ["plain", "default", "zstd", "lz4"]


def _entries(name):
    return fatbin.entries((HERE / f"{name}.fatbin").read_bytes())


@pytest.fixture(scope="module")
def plain():
    return {(e.kind, e.arch): e.payload() for e in _entries("plain")}


@pytest.mark.parametrize("name, compression", [
    ("plain", ["", "", ""]), ("default", ["", "", "zstd"]), ("zstd", ["zstd"] * 3),
    ("lz4", ["lz4"] * 3)])
def test_entries_decompress_to_the_plain_ones(plain, name, compression):
    got = _entries(name)
    assert [(e.kind, e.arch) for e in got] == [("cubin", "sm_80"), ("cubin", "sm_90"),
                                               ("ptx", "sm_90")]
    assert [e.compression for e in got] == compression
    for e in got:
        assert e.payload() == plain[(e.kind, e.arch)]
    ptx = plain[("ptx", "sm_90")]
    assert b".version" in ptx and b".entry saxpy" in ptx and b"\0" not in ptx
    assert cubin.arch(plain[("cubin", "sm_80")]) == "sm_80"


@pytest.mark.parametrize("name", KINDS)
def test_parameters_come_from_the_ptx_of_every_fatbin(name):
    rows, image = binary.read((HERE / f"{name}.fatbin").read_bytes(), "fatbin")
    assert image == (HERE / f"{name}.fatbin").read_bytes()   # the driver gets the fatbin
    assert sorted(rows) == ["_Z4fillPii", "saxpy"]
    # nvcc's PTX has no .ptr: its 64-bit parameters read as integers (a signature types them)
    assert [r.kind for r in rows["saxpy"]] == ["F32", "I64", "I64", "I32"]
    assert [r.size for r in rows["_Z4fillPii"]] == [8, 4]


def test_damaged_compressed_entries_are_clear_errors():
    data = bytearray((HERE / "zstd.fatbin").read_bytes())
    first = _entries("zstd")[0]
    at = data.index(first.stored)
    data[at:at + 4] = b"\0\0\0\0"   # the zstd magic gone
    with pytest.raises(cubin.CubinError, match=r"fatbin entry 0 \(cubin for sm_80, "
                                               r"zstd-compressed\): cannot be decompressed"):
        fatbin.entries(bytes(data))[0].payload()
    lz = bytearray((HERE / "lz4.fatbin").read_bytes())
    e = _entries("lz4")[2]
    at = lz.index(e.stored)
    lz[at + len(e.stored) // 2:at + len(e.stored)] = b"\xff" * (len(e.stored) - len(e.stored) // 2)
    with pytest.raises(cubin.CubinError, match=r"fatbin entry 2 \(ptx for sm_90, "
                                               r"lz4-compressed\): cannot be decompressed"):
        fatbin.entries(bytes(lz))[2].payload()
    with pytest.raises(cubin.CubinError, match="truncated"):
        fatbin.entries((HERE / "zstd.fatbin").read_bytes()[:1000])


def test_lz4_blocks_by_hand():
    # "abc" then a match of 9 at offset 3 (overlapping: abcabcabc), then literals "xy"
    block = bytes([0x35]) + b"abc" + (3).to_bytes(2, "little") + bytes([0x20]) + b"xy"
    assert fatbin.lz4_block(block) == b"abcabcabcabc" + b"xy"
    long_lits = bytes([0xF0, 5]) + b"L" * 20
    assert fatbin.lz4_block(long_lits) == b"L" * 20
    with pytest.raises(ValueError, match="points before the start"):
        fatbin.lz4_block(bytes([0x10]) + b"a" + (9).to_bytes(2, "little") + bytes([0x00]))
    with pytest.raises(ValueError, match="exceeds"):
        fatbin.lz4_block(block, limit=8)


ZSTD = shutil.which("zstd")


def _samples(rng):
    words = [b"ld.global.f32", b"%r1", b"add.s32", b" ", b"\n", b"{", b"}", b"mov.u64"]
    text = b"".join(rng.choice(words) for _ in range(20000))
    noise = bytes(rng.getrandbits(8) for _ in range(3000))
    runs = b"".join(bytes([rng.getrandbits(8)]) * rng.randint(1, 300) for _ in range(400))
    return {"text": text, "noise": noise, "runs": runs, "mixed": text[:5000] + noise + runs,
            "one": b"q", "big": text * 9}


@pytest.mark.skipif(ZSTD is None, reason="the zstd command makes the test vectors")
@pytest.mark.parametrize("level", ["-1", "-5", "-19", "--fast=4"])
def test_zstd_matches_the_zstd_command(level):
    rng = random.Random(20261202 + len(level))
    for name, data in _samples(rng).items():
        packed = subprocess.run([ZSTD, "-q", "-c", level], input=data, capture_output=True,
                                check=True).stdout
        assert zstd.decompress(packed) == data, (name, level)
        assert zstd.decompress(packed + packed) == data + data     # two frames


@pytest.mark.skipif(ZSTD is None, reason="the zstd command makes the test vectors")
def test_damaged_zstd_is_always_a_zstd_error():
    rng = random.Random(7)
    data = _samples(rng)["mixed"][:6000]
    packed = subprocess.run([ZSTD, "-q", "-c", "-9"], input=data, capture_output=True,
                            check=True).stdout
    for cut in (5, 20, len(packed) // 2, len(packed) - 5):
        with pytest.raises(zstd.ZstdError):
            zstd.decompress(packed[:cut])
    for _ in range(150):
        bad = bytearray(packed)
        for _ in range(rng.randint(1, 4)):
            bad[rng.randrange(4, len(bad))] = rng.getrandbits(8)
        try:
            out = zstd.decompress(bytes(bad), limit=len(data))
        except zstd.ZstdError:
            continue
        assert isinstance(out, bytes)   # a flip the format cannot see decodes to something
    with pytest.raises(zstd.ZstdError, match="no zstd frame"):
        zstd.decompress(b"not zstd at all")
