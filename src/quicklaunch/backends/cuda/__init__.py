"""The CUDA device: NVRTC for compiling (nvrtc.py, program.py, ptx.py) and the
driver, libcuda.so.1, for loading and launching (driver.py, device.py,
memory.py). Both are opened at run time; nothing links against CUDA."""
