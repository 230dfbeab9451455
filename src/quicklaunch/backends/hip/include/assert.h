/* assert.h for hiprtc (quicklaunch.hip): assert() through HIP's device
 * __assert_fail, which prints the failed condition and traps. Like the C
 * header it has no include guard: NDEBUG is honoured at each inclusion. */
#undef assert
#ifdef NDEBUG
#define assert(e) ((void)0)
#else
#define assert(e) ((e) ? (void)0 : __assert_fail(#e, __FILE__, __LINE__, __func__))
#endif
