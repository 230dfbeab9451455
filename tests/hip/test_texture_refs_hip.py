"""Texture references are a CompileError from hiprtc that says CUDA 12
removed them and how to move to texture objects (as on the CPU device)."""
import pytest

import quicklaunch as ql
from tests.cpu.test_texture_refs import MESSAGE, TEXTURE_REFERENCE_KERNEL


@pytest.mark.parametrize("arch", ["gfx90a", "gfx1030"])
def test_hiprtc_says_what_to_do(arch):
    with pytest.raises(ql.CompileError, match=MESSAGE.format(dev="hiprtc")):
        ql.hip.compile(TEXTURE_REFERENCE_KERNEL, arch=arch)
