"""The HIP device (AMD GPUs): hiprtc for compiling (hiprtc.py, program.py,
with the CUDA prelude in include/, and the code-object readers elf.py,
msgpack.py, metadata.py) and the HIP runtime, libamdhip64.so, for loading
and launching (driver.py, device.py, memory.py, streams.py). Both are
opened at run time; nothing links against ROCm."""
