// tests/cuda/gpu_kernels_test.cpp -- every kernel on a real GPU against the CPU reference, and
// against the emulator running the same kernel on the same inputs.
//
// Without a device it prints why and exits 77, which ctest reports as "skipped" (never passed):
// these machines have nvcc but no driver. scripts/gpu-check runs it on a GPU machine, and runs it
// again with --small under compute-sanitizer (memcheck, racecheck, synccheck).
//
// Tolerances (tests/cuda/tolerance.hpp): versions 1-4 are fp32 and must stay within
// 1e-5 + 1e-4 |ref| of the double-precision reference, and of the emulator. The tensor-core
// version reads fp16 inputs: within its derived bound of the fp32 reference, and within
// 2 u max|v| (+ the fp32 tolerance) of the emulator, both being within u max|v| of the reference
// computed from the same rounded inputs. The backward kernels (fp32): dq, dk, dv within
// gradient_excess_error's tolerance of the double-precision backward reference, and of the emulator.
#include "kernels/device.hpp"

#include "headwise/reference/attention.hpp"
#include "headwise/reference/attention_backward.hpp"
#include "headwise/base/random.hpp"
#include "tolerance.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <tuple>
#include <vector>

using namespace headwise;
using kernels::Version;

namespace {

Tensor4 reference(const Tensor4& q, const Tensor4& k, const Tensor4& v, bool causal, const std::vector<int>& key_len) {
    AttentionOptions o;
    o.causal = causal;
    const std::size_t B = q.shape()[0], N = q.shape()[2];
    Mask2 padding = Mask2::from_shape({B, N});  // (B, N), true = padding
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t j = 0; j < N; ++j) padding(b, j) = int(j) >= key_len[b];
    o.key_padding_mask = &padding;
    return attention_reference(q, k, v, o);
}

Tensor4 rounded(const Tensor4& t) {
    Tensor4 r = t;
    const std::vector<float> x = kernels::rounded_to_16_bits(t.data(), t.size());
    std::copy(x.begin(), x.end(), r.begin());
    return r;
}

double max_abs(const Tensor4& a, const Tensor4& b) {
    double worst = 0.0;
    for (std::size_t e = 0; e < a.size(); ++e) worst = std::max(worst, double(std::abs(a.data()[e] - b.data()[e])));
    return worst;
}

// Both backward versions on the GPU and the emulator at every size, against the reference backward.
// Returns the failures; counts the checks and the largest |gpu - emulator|.
int check_backward(const std::vector<int>& seqs, const std::vector<int>& d_heads, int& checks, double& worst) {
    int failures = 0;
    for (int seq : seqs)
        for (int d_head : d_heads)
            for (bool causal : {false, true}) {
                Random rng(std::uint64_t(seq * 10 + d_head + 1));
                const std::array<std::size_t, 4> shape{2, 2, std::size_t(seq), std::size_t(d_head)};
                const Tensor4 q = rng.normal<4>(shape), k = rng.normal<4>(shape), v = rng.normal<4>(shape),
                              d_out = rng.normal<4>(shape);
                const std::vector<int> key_len{seq, (seq + 1) / 2};
                AttentionOptions o;
                o.causal = causal;
                Mask2 padding = Mask2::from_shape({2, std::size_t(seq)});  // (B, N), true = padding
                for (std::size_t b = 0; b < 2; ++b)
                    for (int j = 0; j < seq; ++j) padding(b, std::size_t(j)) = j >= key_len[b];
                o.key_padding_mask = &padding;
                const AttentionGrads ref = attention_backward_reference(q, k, v, d_out, o);
                kernels::Problem p;
                p.batch = 2, p.heads = 2, p.seq = seq, p.d_head = d_head, p.causal = causal;
                const kernels::BackwardInputs in{q.data(), k.data(), v.data(), key_len.data(), d_out.data()};
                for (kernels::BackwardVersion version : kernels::backward_versions) {
                    if (!kernels::supports(version, d_head)) continue;
                    AttentionGrads gpu{Tensor4::from_shape(shape), Tensor4::from_shape(shape),
                                       Tensor4::from_shape(shape)};
                    AttentionGrads emu = gpu;
                    kernels::device::run_backward(version, p, in, {gpu.dq.data(), gpu.dk.data(), gpu.dv.data()});
                    kernels::emulate_backward(version, p, in, {emu.dq.data(), emu.dk.data(), emu.dv.data()});
                    bool ok = true;
                    const double scale = test::gradients_scale(ref);
                    double vs_ref = 0.0, vs_emu = 0.0;
                    for (auto [g, e, r] : {std::tuple{&gpu.dq, &emu.dq, &ref.dq}, std::tuple{&gpu.dk, &emu.dk, &ref.dk},
                                           std::tuple{&gpu.dv, &emu.dv, &ref.dv}}) {
                        ok = ok && test::gradient_excess_error(g->data(), r->data(), r->size(), scale) == 0.0 &&
                             test::gradient_excess_error(g->data(), e->data(), e->size(), scale) == 0.0;
                        vs_ref = std::max(vs_ref, max_abs(*g, *r)), vs_emu = std::max(vs_emu, max_abs(*g, *e));
                    }
                    worst = std::max(worst, vs_emu);
                    ++checks;
                    failures += ok ? 0 : 1;
                    fmt::print("{} {:<14} N={:<4} d_head={:<3} {:<6} |gpu - ref| {:.2e}  |gpu - emulator| {:.2e}\n",
                               ok ? "ok  " : "FAIL", kernels::name(version), seq, d_head, causal ? "causal" : "",
                               vs_ref, vs_emu);
                }
            }
    return failures;
}

}  // namespace

int main(int argc, char** argv) {
    const bool small = argc > 1 && std::strcmp(argv[1], "--small") == 0;  // for compute-sanitizer: a few sizes
    const kernels::device::Status status = kernels::device::status();
    if (!status.available) {
        fmt::print("skipped: no usable GPU ({})\n", status.text);
        return 77;
    }
    fmt::print("{}\n", status.text);
    const std::vector<int> seqs = small ? std::vector<int>{17, 100} : std::vector<int>{1, 17, 64, 100, 257};
    const std::vector<int> d_heads = small ? std::vector<int>{64} : std::vector<int>{8, 16, 64, 128};
    int checks = 0, failures = 0;
    double worst_fp32 = 0.0, worst_fp16 = 0.0, worst_backward = 0.0;  // max |gpu - emulator|
    try {
        for (int seq : seqs)
            for (int d_head : d_heads)
                for (bool causal : {false, true}) {
                    Random rng(std::uint64_t(seq * 10 + d_head));
                    const std::array<std::size_t, 4> shape{2, 2, std::size_t(seq), std::size_t(d_head)};
                    const Tensor4 q = rng.normal<4>(shape), k = rng.normal<4>(shape), v = rng.normal<4>(shape);
                    const std::vector<int> key_len{seq, (seq + 1) / 2};  // sequence 1 padded after half its keys
                    const Tensor4 ref = reference(q, k, v, causal, key_len);
                    kernels::Problem p;
                    p.batch = 2, p.heads = 2, p.seq = seq, p.d_head = d_head, p.causal = causal;
                    const kernels::Inputs in{q.data(), k.data(), v.data(), key_len.data()};
                    const test::RowLayout layout{2, 2, seq, d_head, causal, p.effective_scale(), key_len.data()};
                    for (Version version : kernels::versions) {
                        if (!kernels::supports(version, d_head)) continue;
                        Tensor4 gpu = Tensor4::from_shape(shape), emu = Tensor4::from_shape(shape);
                        kernels::device::run(version, p, in, gpu.data());
                        kernels::emulate(version, p, in, emu.data());
                        bool ok = false;
                        if (kernels::sixteen_bit(version)) {
                            const double u = 0x1p-11;
                            const Tensor4 qr = rounded(q), kr = rounded(k), vr = rounded(v);
                            ok = test::excess_error_16_bit(gpu.data(), ref.data(), q.data(), k.data(), v.data(), layout,
                                                           u, false) == 0.0 &&
                                 test::excess_error_16_bit(gpu.data(), emu.data(), qr.data(), kr.data(), vr.data(),
                                                           layout, 2 * u, true) == 0.0;
                            worst_fp16 = std::max(worst_fp16, max_abs(gpu, emu));
                        } else {
                            ok = test::excess_error(gpu.data(), ref.data(), ref.size()) == 0.0 &&
                                 test::excess_error(gpu.data(), emu.data(), emu.size()) == 0.0;
                            worst_fp32 = std::max(worst_fp32, max_abs(gpu, emu));
                        }
                        ++checks;
                        failures += ok ? 0 : 1;
                        fmt::print("{} {:<11} N={:<4} d_head={:<3} {:<6} |gpu - ref| {:.2e}  |gpu - emulator| {:.2e}\n",
                                   ok ? "ok  " : "FAIL", kernels::name(version), seq, d_head, causal ? "causal" : "",
                                   max_abs(gpu, ref), max_abs(gpu, emu));
                    }
                }
        failures += check_backward(seqs, d_heads, checks, worst_backward);
    } catch (const std::exception& e) {
        fmt::print("FAIL: {}\n", e.what());
        return 1;
    }
    fmt::print(
        "summary: {} checks, {} failures; max |gpu - emulator| fp32 versions {:.2e}, tensor_core (fp16) {:.2e}, "
        "backward {:.2e}\n",
        checks, failures, worst_fp32, worst_fp16, worst_backward);
    return failures == 0 ? 0 : 1;
}
