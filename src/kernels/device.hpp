// kernels/device.hpp -- the same kernels on a real GPU, when there is one.
//
// Built by nvcc (device.cu) when CMake found it, otherwise a stub (device_none.cpp) whose status()
// says so. Host code calls status() first: on this course's machines it reports no device (nvcc
// is installed but no driver: cudaGetDeviceCount fails with cudaErrorInsufficientDriver), and the
// lesson and the tests fall back to the emulator or skip, saying which in plain words.
#pragma once

#include "kernels/attention_backward.hpp"
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

// The backward kernels on device 0 (kernels/attention_backward.hpp): the forward that saves their
// inputs, then version v's backward; dq, dk, dv copied back. Throws std::runtime_error.
void run_backward(BackwardVersion v, const Problem& p, const BackwardInputs& in, const Gradients& g);
// The forward once, then `warmup` untimed and `repeats` timed runs of the backward alone (flash:
// its dQ memset, delta = rowsum(dO o O) and the key-tile kernel; naive: its rows and columns kernels).
// registers, shared_bytes, local_bytes: those of the main kernel (flash's key tiles, naive's rows).
Timing time_backward(BackwardVersion v, const Problem& p, const BackwardInputs& in, int warmup, int repeats);

}  // namespace headwise::kernels::device
