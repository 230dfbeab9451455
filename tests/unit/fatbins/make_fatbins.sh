#!/bin/sh
# Rebuilds the test fatbins (needs nvcc 12.8 or newer for -compress-mode):
#   plain.fatbin  stored as is (-compress-mode=none)
#   default.fatbin nvcc's default: cubins as is, the PTX zstd-compressed
#   zstd.fatbin   every entry zstd-compressed (-Xfatbin=-compress-all)
#   lz4.fatbin    every entry LZ4-compressed (-compress-mode=speed)
set -e
cd "$(dirname "$0")"
ARCHS="-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90]"
nvcc -fatbin -compress-mode=none $ARCHS -o plain.fatbin kernels.cu
nvcc -fatbin $ARCHS -o default.fatbin kernels.cu
nvcc -fatbin -Xfatbin=-compress-all $ARCHS -o zstd.fatbin kernels.cu
nvcc -fatbin -Xfatbin=-compress-all -compress-mode=speed $ARCHS -o lz4.fatbin kernels.cu
