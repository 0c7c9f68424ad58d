// tests/cuda/tsan_tiled.cpp -- the tiled kernel under ThreadSanitizer, every CUDA thread a std::thread.
//
// Built twice (tests/cuda/CMakeLists.txt): as it is, where TSan must stay silent, and with
// HEADWISE_DROP_SYNCTHREADS, which deletes the kernel's two __syncthreads() calls -- the bug a
// learner makes -- where TSan must report the data race on the shared K/V tiles.
// Exit code: 0 when the tiled kernel agrees with the online kernel (no shared memory, no
// barriers, checked against the CPU reference in kernels_test), 1 otherwise.
#include "emulator/emulator.hpp"

#ifdef HEADWISE_DROP_SYNCTHREADS
#define __syncthreads() ((void)0)
#endif
#include "kernels/online.cuh"
#include "kernels/tiled.cuh"

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

using namespace headwise;

int main() {
    constexpr int B = 1, H = 2, N = 100, D = 16;  // two query blocks per head, the second one partial
    const std::size_t n = std::size_t(B) * H * N * D;
    std::mt19937 gen(7);
    std::normal_distribution<float> normal;
    std::vector<float> q(n), k(n), v(n);  // (B, H, N, D) each
    for (std::vector<float>* t : {&q, &k, &v})
        for (float& x : *t) x = normal(gen);
    const std::vector<int> key_len(B, N);
    const kernels::AttentionArgs args{B, H, N, D, 0.25f, false};

    auto run = [&](auto kernel) {
        std::vector<float> out(n, 0.0f);  // (B, H, N, D)
        emulator::launch(emulator::Schedule::threads, dim3((N + 63) / 64, H, B), dim3(64), kernel,
                         emulator::global_ptr<const float>(q.data(), n), emulator::global_ptr<const float>(k.data(), n),
                         emulator::global_ptr<const float>(v.data(), n),
                         emulator::global_ptr<const int>(key_len.data(), B), emulator::global_ptr<float>(out.data(), n),
                         args);
        return out;
    };
    const std::vector<float> tiled = run(kernels::attention_tiled<D>);
    const std::vector<float> online = run(kernels::attention_online<D>);
    double worst = 0.0;
    for (std::size_t e = 0; e < n; ++e) worst = std::max(worst, double(std::abs(tiled[e] - online[e])));
    std::printf("tiled vs online kernel under the threads schedule: max |diff| = %.3g\n", worst);
    return worst <= 1e-5 ? 0 : 1;
}
