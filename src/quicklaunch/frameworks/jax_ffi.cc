// quicklaunch's XLA FFI handler: calls a quicklaunch kernel's launch entry
// (the cuLaunchKernel-shaped function the C launcher calls) from inside an
// XLA computation, on XLA's stream. Built at run time by quicklaunch.jax with
// the host C++ compiler against jaxlib's bundled FFI headers.
//
// Everything about the launch is prepared in Python, once per traced call:
// a QlCall (entry, handle, grid, block, shared bytes, the parameter block
// with the scalars already packed, and for each pointer parameter which
// operand or result it is). Its address is the call's "ql_call" attribute.
#include <cstdint>
#include <cstddef>
#include <cstring>
#include <string>
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

extern "C" {
typedef int (*ql_launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned,
                            unsigned, unsigned, void *, void **, void **);
typedef int (*ql_sync_fn)(void);
struct QlCall {
    ql_launch_fn launch;
    ql_sync_fn sync;         // CPU device: wait for the launch (XLA reads results at return)
    void *func;
    uint32_t grid[3], block[3], shared, nparams, block_bytes;
    int32_t source[128];     // >= 0: operand; <= -2: result (-2 - j); -1: packed scalar
    uint32_t offset[128];
    alignas(64) unsigned char params[4096];
};
}

// quicklaunch.jax checks its ctypes mirror of QlCall against this
extern "C" size_t ql_jax_params_offset(void) { return offsetof(QlCall, params); }

static ffi::Error run(void *stream, ffi::RemainingArgs args, ffi::RemainingRets rets,
                      int64_t call) {
    const QlCall *c = reinterpret_cast<const QlCall *>(call);
    alignas(64) unsigned char block[4096];
    void *ptrs[128];
    std::memcpy(block, c->params, c->block_bytes);
    for (uint32_t i = 0; i < c->nparams; ++i) {
        ptrs[i] = block + c->offset[i];
        int32_t s = c->source[i];
        void *p = nullptr;
        if (s >= 0) {
            auto b = args.get<ffi::AnyBuffer>(s);
            if (b.has_error()) return b.error();
            p = b.value().untyped_data();
        } else if (s <= -2) {
            auto b = rets.get<ffi::AnyBuffer>(-2 - s);
            if (b.has_error()) return b.error();
            p = (*b.value()).untyped_data();
        } else {
            continue;
        }
        std::memcpy(block + c->offset[i], &p, sizeof p);
    }
    int rc = c->launch(c->func, c->grid[0], c->grid[1], c->grid[2], c->block[0], c->block[1],
                       c->block[2], c->shared, stream, ptrs, nullptr);
    if (rc == 0 && c->sync) rc = c->sync();
    if (rc != 0)
        return ffi::Error(ffi::ErrorCode::kInternal,
                          "quicklaunch kernel launch failed with status " + std::to_string(rc));
    return ffi::Error::Success();
}

static ffi::Error run_cpu(ffi::RemainingArgs args, ffi::RemainingRets rets, int64_t call) {
    return run(nullptr, args, rets, call);
}

static ffi::Error run_gpu(void *stream, ffi::RemainingArgs args, ffi::RemainingRets rets,
                          int64_t call) {
    return run(stream, args, rets, call);
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(ql_jax_cpu, run_cpu,
                              ffi::Ffi::Bind().RemainingArgs().RemainingRets()
                                  .Attr<int64_t>("ql_call"));
XLA_FFI_DEFINE_HANDLER_SYMBOL(ql_jax_gpu, run_gpu,
                              ffi::Ffi::Bind().Ctx<ffi::PlatformStream<void *>>()
                                  .RemainingArgs().RemainingRets().Attr<int64_t>("ql_call"));
