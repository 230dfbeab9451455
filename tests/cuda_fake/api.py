"""ctypes prototypes for the fake CUDA driver's exports (real driver API
signatures, plus the fake_cuda_* test hooks)."""
import ctypes
from ctypes import (
    POINTER,
    Structure,
    c_char,
    c_char_p,
    c_float,
    c_int,
    c_size_t,
    c_ubyte,
    c_uint,
    c_ulonglong,
    c_void_p,
)

CUdeviceptr = c_ulonglong
_P = POINTER

PROTOTYPES = {
    "cuInit": [c_uint],
    "cuDriverGetVersion": [_P(c_int)],
    "cuGetProcAddress": [c_char_p, _P(c_void_p), c_int, c_ulonglong],
    "cuGetProcAddress_v2": [c_char_p, _P(c_void_p), c_int, c_ulonglong, _P(c_int)],
    "cuGetErrorName": [c_int, _P(c_char_p)],
    "cuGetErrorString": [c_int, _P(c_char_p)],
    "cuDeviceGetCount": [_P(c_int)],
    "cuDeviceGet": [_P(c_int), c_int],
    "cuDeviceGetName": [c_char_p, c_int, c_int],
    "cuDeviceGetAttribute": [_P(c_int), c_int, c_int],
    "cuDeviceTotalMem_v2": [_P(c_size_t), c_int],
    "cuDevicePrimaryCtxRetain": [_P(c_void_p), c_int],
    "cuDevicePrimaryCtxRelease_v2": [c_int],
    "cuCtxSetCurrent": [c_void_p],
    "cuCtxGetCurrent": [_P(c_void_p)],
    "cuCtxGetDevice": [_P(c_int)],
    "cuCtxSynchronize": [],
    "cuModuleLoadData": [_P(c_void_p), c_void_p],
    "cuModuleLoadDataEx": [_P(c_void_p), c_void_p, c_uint, _P(c_int), _P(c_void_p)],
    "cuModuleUnload": [c_void_p],
    "cuModuleGetFunction": [_P(c_void_p), c_void_p, c_char_p],
    "cuModuleGetGlobal_v2": [_P(CUdeviceptr), _P(c_size_t), c_void_p, c_char_p],
    "cuFuncSetAttribute": [c_void_p, c_int, c_int],
    "cuFuncGetAttribute": [_P(c_int), c_int, c_void_p],
    "cuLaunchKernel": [c_void_p, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint,
                       c_void_p, _P(c_void_p), _P(c_void_p)],
    "cuMemAlloc_v2": [_P(CUdeviceptr), c_size_t],
    "cuMemFree_v2": [CUdeviceptr],
    "cuMemcpyHtoD_v2": [CUdeviceptr, c_void_p, c_size_t],
    "cuMemcpyDtoH_v2": [c_void_p, CUdeviceptr, c_size_t],
    "cuMemcpyDtoD_v2": [CUdeviceptr, CUdeviceptr, c_size_t],
    "cuMemsetD8_v2": [CUdeviceptr, c_ubyte, c_size_t],
    "cuPointerGetAttribute": [c_void_p, c_int, CUdeviceptr],
    "cuStreamSynchronize": [c_void_p],
    "cuStreamCreate": [_P(c_void_p), c_uint],
    "cuStreamDestroy_v2": [c_void_p],
    "cuStreamQuery": [c_void_p],
    "cuStreamWaitEvent": [c_void_p, c_void_p, c_uint],
    "cuStreamBeginCapture_v2": [c_void_p, c_int],
    "cuStreamEndCapture": [c_void_p, _P(c_void_p)],
    "cuStreamIsCapturing": [c_void_p, _P(c_int)],
    "cuEventCreate": [_P(c_void_p), c_uint],
    "cuEventDestroy_v2": [c_void_p],
    "cuEventRecord": [c_void_p, c_void_p],
    "cuEventSynchronize": [c_void_p],
    "cuEventQuery": [c_void_p],
    "cuEventElapsedTime": [_P(c_float), c_void_p, c_void_p],
    "cuGraphCreate": [_P(c_void_p), c_uint],
    "cuGraphDestroy": [c_void_p],
    # the unversioned entries take CUDA_KERNEL_NODE_PARAMS (v1), the _v2 ones _v2
    "cuGraphAddKernelNode": [_P(c_void_p), c_void_p, _P(c_void_p), c_size_t, c_void_p],
    "cuGraphAddKernelNode_v2": [_P(c_void_p), c_void_p, _P(c_void_p), c_size_t, c_void_p],
    "cuGraphKernelNodeSetParams": [c_void_p, c_void_p],
    "cuGraphKernelNodeSetParams_v2": [c_void_p, c_void_p],
    "cuGraphAddEventWaitNode": [_P(c_void_p), c_void_p, _P(c_void_p), c_size_t, c_void_p],
    "cuGraphInstantiate": [_P(c_void_p), c_void_p, _P(c_void_p), c_char_p, c_size_t],
    "cuGraphInstantiate_v2": [_P(c_void_p), c_void_p, _P(c_void_p), c_char_p, c_size_t],
    "cuGraphInstantiateWithFlags": [_P(c_void_p), c_void_p, c_ulonglong],
    "cuGraphExecKernelNodeSetParams": [c_void_p, c_void_p, c_void_p],
    "cuGraphExecKernelNodeSetParams_v2": [c_void_p, c_void_p, c_void_p],
    "cuGraphLaunch": [c_void_p, c_void_p],
    "cuGraphExecDestroy": [c_void_p],
}

HOOKS = {
    "fake_cuda_launch_count": (c_int, []),
    "fake_cuda_last_launch": (c_int, [_P(c_char), c_int, _P(c_uint), _P(c_uint), _P(c_void_p),
                                      _P(c_ubyte), c_int, _P(c_int), _P(c_int)]),
    "fake_cuda_get_launch": (c_int, [c_int, _P(c_char), c_int, _P(c_uint), _P(c_uint), _P(c_void_p),
                                     _P(c_ubyte), c_int, _P(c_int), _P(c_int)]),
    "fake_cuda_reset": (None, []),
    "fake_cuda_param_layout": (c_int, [c_void_p, _P(c_int), _P(c_int), c_int]),
    "fake_cuda_param_offsets": (c_int, [c_void_p, _P(c_int), c_int]),
    "fake_cuda_alloc_count": (c_int, []),
    "fake_cuda_module_count": (c_int, []),
    "fake_cuda_stream_count": (c_int, []),
    "fake_cuda_event_count": (c_int, []),
    "fake_cuda_graph_count": (c_int, []),
    "fake_cuda_graph_exec_count": (c_int, []),
    "fake_cuda_instantiate_count": (c_int, []),
    "fake_cuda_last_wait": (c_int, [_P(c_void_p), _P(c_void_p)]),
    "fake_cuda_graph_nodes": (c_int, [c_void_p, _P(c_int), c_int]),
    "fake_cuda_graph_deps": (c_int, [c_void_p, c_int, _P(c_int), c_int]),
}

_KERNEL_NODE_V1 = [("func", c_void_p), ("gridDimX", c_uint), ("gridDimY", c_uint), ("gridDimZ", c_uint),
                   ("blockDimX", c_uint), ("blockDimY", c_uint), ("blockDimZ", c_uint),
                   ("sharedMemBytes", c_uint), ("kernelParams", c_void_p), ("extra", c_void_p)]


class KernelNodeParamsV1(Structure):
    """CUDA_KERNEL_NODE_PARAMS_v1 (56 bytes)."""
    _fields_ = _KERNEL_NODE_V1


class KernelNodeParamsV2(Structure):
    """CUDA_KERNEL_NODE_PARAMS_v2 (72 bytes): v1 plus CUkernel kern, CUcontext ctx."""
    _fields_ = _KERNEL_NODE_V1 + [("kern", c_void_p), ("ctx", c_void_p)]


def load(path) -> ctypes.CDLL:
    """Loads the library at path with every prototype set."""
    lib = ctypes.CDLL(str(path))
    for name, args in PROTOTYPES.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, c_int
    for name, (res, args) in HOOKS.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, res
    return lib


def last_launch(lib, back=0, cap=1 << 16):
    """The recorded launch `back` launches before the latest, as a dict, or None."""
    name = ctypes.create_string_buffer(4096)
    dims = (c_uint * 6)()
    shared, stream = c_uint(), c_void_p()
    buf = (c_ubyte * cap)()
    nbytes, nparams = c_int(), c_int()
    rc = lib.fake_cuda_get_launch(back, name, len(name), dims, ctypes.byref(shared), ctypes.byref(stream),
                                  buf, cap, ctypes.byref(nbytes), ctypes.byref(nparams))
    if rc != 0:
        return None
    return {"name": name.value.decode(), "grid": tuple(dims[:3]), "block": tuple(dims[3:]),
            "shared": shared.value, "stream": stream.value, "nparams": nparams.value,
            "params": bytes(buf[:min(cap, nbytes.value)]), "nbytes": nbytes.value}


def last_wait(lib):
    """(number of cuStreamWaitEvent calls, the latest one's stream, its event)."""
    stream, event = c_void_p(), c_void_p()
    n = lib.fake_cuda_last_wait(ctypes.byref(stream), ctypes.byref(event))
    return n, stream.value, event.value


def graph_nodes(lib, graph, cap=4096):
    """[kind per node] of a graph in creation order (1 kernel, 2 event wait), or None."""
    kinds = (c_int * cap)()
    n = lib.fake_cuda_graph_nodes(graph, kinds, cap)
    return None if n < 0 else list(kinds[:min(n, cap)])


def graph_deps(lib, graph, index, cap=64):
    """Creation indices of the nodes node `index` of a graph depends on, or None."""
    deps = (c_int * cap)()
    n = lib.fake_cuda_graph_deps(graph, index, deps, cap)
    return None if n < 0 else list(deps[:min(n, cap)])


def param_layout(lib, function, cap=256):
    """[(size, align, offset)] for a CUfunction, or None if it is not one."""
    sizes, aligns, offsets = (c_int * cap)(), (c_int * cap)(), (c_int * cap)()
    n = lib.fake_cuda_param_layout(function, sizes, aligns, cap)
    if n < 0:
        return None
    lib.fake_cuda_param_offsets(function, offsets, cap)
    return [(sizes[i], aligns[i], offsets[i]) for i in range(min(n, cap))]
