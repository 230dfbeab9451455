"""A fake CUDA driver (libcuda.so.1) for offline tests: see fake_libcuda.c."""
