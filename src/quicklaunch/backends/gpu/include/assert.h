/* assert.h for NVRTC and hiprtc, which have no C library headers: assert()
 * through the device's own assertion handler, as CUDA's and HIP's assert do:
 * NVRTC's __assertfail; on hiprtc HIP's __assert_fail, which prints the
 * failed condition before it traps (the prelude's assert, for sources that
 * do not include this header, is the same). Like the C header it has no
 * include guard: NDEBUG is honoured at each inclusion. */
#undef assert
#ifdef NDEBUG
#define assert(e) ((void)0)
#elif defined(__HIP__)
#define assert(e) ((e) ? (void)0 : __assert_fail(#e, __FILE__, __LINE__, __func__))
#else
#define assert(e) \
    ((e) ? (void)0 : __assertfail(#e, __FILE__, __LINE__, __func__, sizeof(char)))
#endif
