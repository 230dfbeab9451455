"""Texture references are a CompileError from NVRTC that says CUDA 12
removed them and how to move to texture objects (as on the CPU device)."""
import pytest

import quicklaunch as ql
from tests.cpu.test_texture_refs import MESSAGE, TEXTURE_REFERENCE_KERNEL


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_nvrtc_says_what_to_do(arch):
    with pytest.raises(ql.CompileError, match=MESSAGE.format(dev="NVRTC")) as e:
        ql.cuda.compile(TEXTURE_REFERENCE_KERNEL, arch=arch)
    assert "texture is not a template" in str(e.value)   # NVRTC's own, after it
