// kernels/device.hpp -- the same kernels on a real GPU, when there is one.
//
// Built by nvcc (device.cu) when CMake found it, otherwise a stub (device_none.cpp) whose status()
// says so. Host code calls status() first: on this course's machines it reports no device (nvcc
// is installed but no driver: cudaGetDeviceCount fails with cudaErrorInsufficientDriver), and the
// lesson and the tests fall back to the emulator or skip, saying which in plain words.
#pragma once

#include "kernels/attention_kernels.hpp"

#include <string>

namespace headwise::kernels::device {

struct Status {
    bool available = false;
    std::string text;  // "CUDA device 0: <name> (sm_80, 108 SMs)" or why there is none, in words
};
Status status();
bool built_with_nvcc();

// One launch on device 0: inputs copied in, `v` run, out (B, H, N, d_head) copied back.
// Throws std::runtime_error naming the CUDA error.
void run(Version v, const Problem& p, const Inputs& in, float* out);

struct Timing {
    double median_ms = 0.0;
    double min_ms = 0.0;
    std::size_t shared_bytes = 0;  // static shared memory per block, as the compiled kernel reports it
    int registers = 0;             // registers per thread, as the compiled kernel reports it
    std::size_t local_bytes = 0;   // local memory per thread (register spills), as reported
};
// `warmup` untimed launches, then `repeats` launches each between two cudaEvents.
Timing time(Version v, const Problem& p, const Inputs& in, int warmup, int repeats);

}  // namespace headwise::kernels::device
