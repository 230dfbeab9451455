"""The launcher against hostile or unusual argument objects: finalizers and
__bool__ that run Python code mid-launch, ctypes values, and the per-config
cache kept consistent through re-entrant calls."""
import ctypes

import numpy as np
import pytest

import quicklaunch as ql

from .recording_backend import CPTR, PTR, make_kernel


def test_reentrant_index_from_a_stream_finalizer_keeps_the_cache_consistent():
    k = make_kernel([PTR])
    seen = {}
    first, third, fourth = ((1,), (1,)), ((3,), (1,)), ((4,), (1,))

    class Stream:  # hashable, equal by value, not a number
        def __init__(self, tag):
            self.tag = tag

        def __cuda_stream__(self):
            return (0, 0)

        def __eq__(self, other):
            return isinstance(other, Stream)

        def __hash__(self):
            return 1

        def __del__(self):
            if self.tag == "second":
                seen["third"] = k[third].__self__.grid
                seen["fourth"] = k[fourth].__self__.grid

    k[first + (0, Stream("first"))]
    k[first + (0, Stream("second"))]   # a dict hit: the last key holds the only ref
    k[third]                           # releasing that ref runs __del__ mid-update
    assert seen == {"third": (3, 1, 1), "fourth": (4, 1, 1)}
    assert k[fourth].__self__.grid == (4, 1, 1)
    assert k[third].__self__.grid == (3, 1, 1)


def test_array_interface_whose_flag_frees_the_data_tuple():
    k = make_kernel([PTR])
    arr, other = np.zeros(4, np.float32), np.zeros(4, np.float32)
    keep = []

    class ReadOnlyFlag:
        def __bool__(self):
            Holder.iface["data"] = None                       # drops the data tuple
            keep.extend((other.ctypes.data, i) for i in range(100))  # reuse its memory
            return False

    class Holder:
        iface = None

        @property
        def __array_interface__(self):
            Holder.iface = {"shape": (4,), "typestr": "<f4", "version": 3,
                            "data": (arr.ctypes.data, ReadOnlyFlag())}
            return Holder.iface

    k[1, 1](Holder())
    assert k.backend.pop().params[0] == arr.ctypes.data.to_bytes(8, "little")


def test_array_interface_flag_that_raises():
    k = make_kernel([PTR])
    arr = np.zeros(4, np.float32)

    class Bad:
        def __bool__(self):
            raise ValueError("boom")

    class Holder:
        __array_interface__ = {"shape": (4,), "typestr": "<f4", "version": 3,
                               "data": (arr.ctypes.data, Bad())}

    with pytest.raises(ValueError, match="boom"):
        k[1, 1](Holder())
    assert not k.backend.calls


def test_ctypes_pointers_are_addresses_and_values_are_refused():
    k = make_kernel([PTR, CPTR])
    arr = np.zeros(4, np.float32)
    vp = ctypes.c_void_p(arr.ctypes.data)
    fp = ctypes.cast(vp, ctypes.POINTER(ctypes.c_float))
    for value in (vp, fp):
        k[1, 1](value, value)
        call = k.backend.pop()
        assert call.params == (arr.ctypes.data.to_bytes(8, "little"),) * 2
    assert vp.value == arr.ctypes.data  # the c_void_p itself was not written
    with pytest.raises(ql.LaunchTypeError, match=r"parameter 1 'p0': a ctypes c_int is a value"):
        k[1, 1](ctypes.c_int(3), None)
    buf = (ctypes.c_float * 4)()  # arrays are memory: their own storage
    k[1, 1](buf, buf)
    assert k.backend.pop().params[0] == ctypes.addressof(buf).to_bytes(8, "little")
