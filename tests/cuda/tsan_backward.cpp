// tests/cuda/tsan_backward.cpp -- the two backward kernels under ThreadSanitizer, every CUDA thread
// a std::thread: the flash backward's barriers around its shared tiles and its atomicAdd into dQ,
// the naive backward's N x N buffers written by one kernel and read by the next.
// Exit code: 0 when the two versions agree (each is checked against the double-precision
// reference in kernels_backward_test), 1 otherwise; TSan's own report fails the test as well.
#include "kernels/attention_backward.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

using namespace headwise;

int main() {
    kernels::Problem p;  // two sequences, one padded; two heads; 70 rows: 3 key tiles, the last partial
    p.batch = 2, p.heads = 2, p.seq = 70, p.d_head = 16, p.causal = true;
    const std::size_t n = kernels::qkv_elements(p);
    std::mt19937 gen(7);
    std::normal_distribution<float> normal;
    std::vector<float> q(n), k(n), v(n), d_out(n);  // (B, H, N, d_head) each
    for (std::vector<float>* t : {&q, &k, &v, &d_out})
        for (float& x : *t) x = normal(gen);
    const std::vector<int> key_len{70, 41};

    std::vector<std::vector<float>> grads[2];  // per version: dq, dk, dv
    for (kernels::BackwardVersion version : kernels::backward_versions) {
        std::vector<std::vector<float>>& g = grads[int(version)];
        g.assign(3, std::vector<float>(n));
        kernels::emulate_backward(version, p, {q.data(), k.data(), v.data(), key_len.data(), d_out.data()},
                                  {g[0].data(), g[1].data(), g[2].data()}, emulator::Schedule::threads);
    }
    double worst = 0.0;
    for (std::size_t t = 0; t < 3; ++t)
        for (std::size_t e = 0; e < n; ++e) worst = std::max(worst, double(std::abs(grads[0][t][e] - grads[1][t][e])));
    std::printf("naive vs flash backward under the threads schedule: max |diff| = %.3g\n", worst);
    return worst <= 1e-4 ? 0 : 1;
}
