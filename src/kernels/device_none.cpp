// kernels/device_none.cpp -- kernels/device.hpp when nvcc was not found at configure time.
#include "kernels/device.hpp"

#include <stdexcept>

namespace headwise::kernels::device {

Status status() { return {false, "built without nvcc (CMake found no CUDA compiler)"}; }
bool built_with_nvcc() { return false; }

void run(Version, const Problem&, const Inputs&, float*) {
    throw std::runtime_error("this build has no CUDA kernels (nvcc was not found)");
}

Timing time(Version, const Problem&, const Inputs&, int, int) {
    throw std::runtime_error("this build has no CUDA kernels (nvcc was not found)");
}

void run_backward(BackwardVersion, const Problem&, const BackwardInputs&, const Gradients&) {
    throw std::runtime_error("this build has no CUDA kernels (nvcc was not found)");
}

Timing time_backward(BackwardVersion, const Problem&, const BackwardInputs&, int, int) {
    throw std::runtime_error("this build has no CUDA kernels (nvcc was not found)");
}

}  // namespace headwise::kernels::device
