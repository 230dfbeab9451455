/* assert.h for NVRTC (quicklaunch.cuda), which has no C library headers:
 * assert() through the device's __assertfail, as CUDA's own assert does.
 * Like the C header it has no include guard: NDEBUG is honoured at each
 * inclusion. */
#undef assert
#ifdef NDEBUG
#define assert(e) ((void)0)
#else
#define assert(e) \
    ((e) ? (void)0 : __assertfail(#e, __FILE__, __LINE__, __func__, sizeof(char)))
#endif
