/* CUB on hiprtc: not available. hiprtc has no CUB, ROCm's hipCUB (with the
 * rocPRIM it is built on) is not part of what quicklaunch hands hiprtc, and
 * quicklaunch's CPU-device stand-ins (backends/cpu/include/cub/) are written
 * for its fibers, not for wavefronts. Each of CUB's headers here includes this
 * one after defining QL_CUB_PRIMITIVE (what it provides) and QL_CUB_HEADER,
 * and the compile fails with a message naming them and what to do
 * (docs/cccl.md). */
#ifndef QL_CUB_PRIMITIVE
#define QL_CUB_PRIMITIVE "CUB"
#define QL_CUB_HEADER "<cub/cub.cuh>"
#endif
static_assert(sizeof(char) == 0,
              "quicklaunch HIP: " QL_CUB_PRIMITIVE " (" QL_CUB_HEADER ") is not available on "
              "AMD GPUs: hiprtc has no CUB and quicklaunch does not map it to hipCUB; run the "
              "kernel on the CPU device or an NVIDIA GPU, or write the collective with "
              "__syncthreads and shared memory or cooperative_groups (docs/cccl.md)");
