"""What the two GPU backends share: cuda/ (NVRTC and the CUDA driver) and
hip/ (hiprtc and the HIP runtime) both compile CUDA C++ at run time, reflect
each kernel's parameters through the compiler and keep the result in the
compile cache the same way. Neither backend imports the other; both import
from here.

- arguments.py: checking what ``compile`` is given;
- expressions.py: which kernels a compilation reflects (the parser's
  kernels and the name expressions), and the compile loop that leaves out
  the ones the preprocessor removed;
- reflect.py: the reflection tables (ql_reflect.cuh) appended to a source
  and decoded from the compiled code, and each kernel's parameters;
- kernel_table.py: KernelInfo, ParamInfo and the name -> kernel table;
- diagnostics.py: the CompileError of a failed compilation;
- compile_cache.py: the compile cache's keys and entries;
- headers.py: the headers handed to the compiler in memory (include/ here,
  quicklaunch's kinds.h, then the backend's own include/);
- library.py: finding and opening the compiler library;
- memory.py: a device allocation freed with its last reference;
- backend.py: what both do the same way behind the backend interface
  (memory and stream calls through their own modules, kernel images).

include/ holds ql_reflect.cuh and the stand-in headers both compilers take
as they are; each backend's include/ holds only what differs (its prelude,
stdint.h, type_traits, ...).
"""
