// kernels/device_none.cpp -- kernels/device.hpp when this build does not compile the device kernels
// (no nvcc, or no GPU at configure time: cmake/HeadwiseCuda.cmake). HEADWISE_DEVICE_KERNELS_ABSENT,
// set by src/kernels/CMakeLists.txt, says which.
#include "kernels/device.hpp"

#include <stdexcept>

namespace headwise::kernels::device {

namespace {

[[noreturn]] void absent() {
    throw std::runtime_error("this build has no CUDA kernels (" HEADWISE_DEVICE_KERNELS_ABSENT ")");
}

}  // namespace

Status status() { return {false, HEADWISE_DEVICE_KERNELS_ABSENT}; }
bool built_with_nvcc() { return false; }

void run(Version, const Problem&, const Inputs&, float*) { absent(); }

Timing time(Version, const Problem&, const Inputs&, int, int) { absent(); }

void run_backward(BackwardVersion, const Problem&, const BackwardInputs&, const Gradients&) { absent(); }

Timing time_backward(BackwardVersion, const Problem&, const BackwardInputs&, int, int) { absent(); }

}  // namespace headwise::kernels::device
