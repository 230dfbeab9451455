"""The CPU device: kernels compiled by the host C++ compiler, run by a worker pool."""
