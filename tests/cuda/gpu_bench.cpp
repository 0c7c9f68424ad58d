// tests/cuda/gpu_bench.cpp -- times every kernel version on a GPU and writes one CSV row each.
//
// Run by scripts/gpu-check (never by ctest: timings are measured, not asserted). For each N it
// times every version of kernels::versions (fp32 inputs; the 16-bit versions on fp16 inputs) at
// B = 8, H = 16, d_head = 64, non-causal, with kernels::device::time: `warmup` launches, then the
// median of `repeats` launches, each between two cudaEvents; then causal at each N of --causal-n
// (its TFLOP/s count the half of the FLOPs that the mask leaves). The naive version's (B, H, N, N)
// scratch grows as N^2 (8.6 GB at N = 4096): above --max-naive-n it is left out, with a row that
// says so.
//
// --spot-n N (0: off) runs every version but naive once at B = 1, H = 2, d_head = 64 and that N
// (32768 in gpu-check: offsets past what N * N * d_head in int could index) and compares rows 0,
// 1, N/2 and N - 1 of each head with a double-precision row computed here: "spot ok" or "spot
// FAIL" lines, exit 1 on a failure.
//
// --backward-csv FILE times the two backward versions (kernels/attention_backward.hpp) the same
// way, fp32, at the same sizes, into FILE (same columns; TFLOP/s count 2.5x the forward's FLOPs, as
// FlashAttention-2 does): kernels::device::time_backward, the backward alone after one forward.
// The naive backward's P and dS are two (B, H, N, N) buffers: above --max-naive-n it is left out.
//
//   gpu_bench --csv FILE [--n 512,1024,...] [--causal-n 4096] [--repeats 20] [--warmup 3]
//             [--max-naive-n 4096] [--spot-n 32768] [--backward-csv FILE]
// Exit 77 without a GPU, 2 on bad arguments.
#include "kernels/device.hpp"

#include "headwise/base/random.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

using namespace headwise;
using kernels::Version;

namespace {

[[noreturn]] void usage(const std::string& why) {
    std::fprintf(stderr, "gpu_bench: %s\n", why.c_str());
    std::exit(2);
}

int to_int(const std::string& text, const char* flag, bool zero_ok = false) {
    try {
        std::size_t used = 0;
        const int x = std::stoi(text, &used);
        if (used == text.size() && (x > 0 || (zero_ok && x == 0))) return x;
    } catch (const std::exception&) {}
    usage(std::string(flag) + " takes a positive integer, not '" + text + "'");
}

std::vector<int> to_list(const std::string& text, const char* flag) {
    std::vector<int> list;
    std::stringstream items(text);
    for (std::string item; std::getline(items, item, ',');) list.push_back(to_int(item, flag));
    return list;
}

// Row i of head (b, h) of softmax(q k^T scale) v in double, from x as given (q, k, v (B, H, N, D)).
std::vector<double> reference_row(const kernels::Problem& p, const float* q, const float* k, const float* v,
                                  std::size_t head, std::size_t i) {
    const std::size_t N = std::size_t(p.seq), D = std::size_t(p.d_head);
    std::vector<double> s(N), out(D, 0.0);
    double m = -1e300, l = 0.0;
    for (std::size_t j = 0; j < N; ++j) {
        double dot = 0.0;
        for (std::size_t c = 0; c < D; ++c) dot += double(q[(head + i) * D + c]) * double(k[(head + j) * D + c]);
        s[j] = dot * double(p.effective_scale());
        m = std::max(m, s[j]);
    }
    for (std::size_t j = 0; j < N; ++j) {
        const double e = std::exp(s[j] - m);
        l += e;
        for (std::size_t c = 0; c < D; ++c) out[c] += e * double(v[(head + j) * D + c]);
    }
    for (double& x : out) x /= l;
    return out;
}

// Every version but naive at N = n, rows 0, 1, n/2, n-1 of each head against reference_row. The
// allowed error: 1e-4 + 1e-3 |ref| (fp32 sums over 32768 keys), plus u max|v| for the 16-bit
// versions, whose reference is computed from the same rounded inputs. A wrong offset misses by
// far more (another head's or row's output is ~0.01-1 away).
bool spot_check(int n) {
    kernels::Problem p;
    p.batch = 1, p.heads = 2, p.seq = n, p.d_head = 64;
    Random rng{std::uint64_t(n) + 7};
    const std::array<std::size_t, 4> shape{1, 2, std::size_t(n), 64};
    const Tensor4 q = rng.normal<4>(shape), k = rng.normal<4>(shape), v = rng.normal<4>(shape);
    const std::vector<int> key_len{n};
    const std::size_t count = q.size();
    const std::vector<float> q16 = kernels::rounded_to_16_bits(q.data(), count),
                             k16 = kernels::rounded_to_16_bits(k.data(), count),
                             v16 = kernels::rounded_to_16_bits(v.data(), count);
    bool all_ok = true;
    for (Version version : kernels::versions) {
        if (version == Version::naive || !kernels::supports(version, 64)) continue;
        const bool sixteen = kernels::sixteen_bit(version);
        std::vector<float> out(count);
        kernels::device::run(version, p, {q.data(), k.data(), v.data(), key_len.data()}, out.data());
        const float *qr = sixteen ? q16.data() : q.data(), *kr = sixteen ? k16.data() : k.data(),
                    *vr = sixteen ? v16.data() : v.data();
        double v_max = 0.0;
        for (std::size_t e = 0; e < count; ++e) v_max = std::max(v_max, std::abs(double(vr[e])));
        const double slack = sixteen ? std::ldexp(1.0, -11) * v_max : 0.0;
        double worst = 0.0;
        bool ok = true;
        for (std::size_t h = 0; h < 2; ++h) {
            const std::size_t head = h * std::size_t(n);
            for (std::size_t i : {std::size_t(0), std::size_t(1), std::size_t(n / 2), std::size_t(n - 1)}) {
                const std::vector<double> ref = reference_row(p, qr, kr, vr, head, i);
                for (std::size_t c = 0; c < 64; ++c) {
                    const double diff = std::abs(double(out[(head + i) * 64 + c]) - ref[c]);
                    worst = std::max(worst, std::isnan(diff) ? 1e30 : diff);
                    ok = ok && diff <= slack + 1e-4 + 1e-3 * std::abs(ref[c]);
                }
            }
        }
        fmt::print("spot {} {:<11} N={} B=1 H=2 d_head=64 rows 0, 1, {}, {} of each head: max |gpu - ref| {:.2e}\n",
                   ok ? "ok  " : "FAIL", kernels::name(version), n, n / 2, n - 1, worst);
        all_ok = all_ok && ok;
    }
    return all_ok;
}

constexpr const char* csv_header =
    "gpu,version,dtype,batch,heads,seq,d_head,causal,median_ms,min_ms,tflops,registers,shared_bytes,local_bytes,note\n";

// The backward versions at (B, H, N, d_head), one CSV row each (and one line on stdout).
void time_backward(std::ofstream& out, const std::string& gpu, kernels::Problem p, int repeats, int warmup,
                   int max_naive_n) {
    const int B = p.batch, H = p.heads, N = p.seq, D = p.d_head;
    Random rng{std::uint64_t(N) + 1};
    const std::array<std::size_t, 4> shape{std::size_t(B), std::size_t(H), std::size_t(N), std::size_t(D)};
    const Tensor4 q = rng.normal<4>(shape), k = rng.normal<4>(shape), v = rng.normal<4>(shape),
                  d_out = rng.normal<4>(shape);
    const std::vector<int> key_len(std::size_t(B), N);
    const double flops = 2.5 * 4.0 * D * double(N) * double(N) * B * H * (p.causal ? 0.5 : 1.0);
    for (kernels::BackwardVersion version : kernels::backward_versions) {
        if (version == kernels::BackwardVersion::naive && N > max_naive_n) {
            out << fmt::format("{},{},fp32,{},{},{},{},{:d},,,,,,,skipped: P and dS would be {:.1f} GB each\n", gpu,
                               kernels::name(version), B, H, N, D, int(p.causal),
                               4.0 * B * H * double(N) * double(N) / 1e9);
            continue;
        }
        const kernels::device::Timing t = kernels::device::time_backward(
            version, p, {q.data(), k.data(), v.data(), key_len.data(), d_out.data()}, warmup, repeats);
        const double tflops = flops / (t.median_ms * 1e-3) / 1e12;
        out << fmt::format("{},{},fp32,{},{},{},{},{:d},{:.4f},{:.4f},{:.3f},{},{},{},{}\n", gpu,
                           kernels::name(version), B, H, N, D, int(p.causal), t.median_ms, t.min_ms, tflops,
                           t.registers, t.shared_bytes, t.local_bytes,
                           p.causal ? "causal: TFLOP/s of the unmasked half" : "");
        fmt::print(
            "{:<14} fp32 N={:<5}{} median {:9.3f} ms  {:7.2f} TFLOP/s  ({} registers, {} B shared, {} B local)\n",
            kernels::name(version), N, p.causal ? " causal" : "", t.median_ms, tflops, t.registers, t.shared_bytes,
            t.local_bytes);
        out.flush();
    }
}

}  // namespace

int main(int argc, char** argv) {
    std::string csv, backward_csv;
    std::vector<int> seqs{512, 1024, 2048, 4096, 8192}, causal_seqs{4096};
    int repeats = 20, warmup = 3, max_naive_n = 4096, spot_n = 0;
    for (int a = 1; a < argc; ++a) {
        const std::string flag = argv[a];
        if (a + 1 >= argc) usage(flag + " needs a value");
        const std::string value = argv[++a];
        if (flag == "--csv")
            csv = value;
        else if (flag == "--backward-csv")
            backward_csv = value;
        else if (flag == "--repeats")
            repeats = to_int(value, "--repeats");
        else if (flag == "--warmup")
            warmup = to_int(value, "--warmup");
        else if (flag == "--max-naive-n")
            max_naive_n = to_int(value, "--max-naive-n");
        else if (flag == "--spot-n")
            spot_n = to_int(value, "--spot-n", true);
        else if (flag == "--n")
            seqs = to_list(value, "--n");
        else if (flag == "--causal-n")
            causal_seqs = value == "none" ? std::vector<int>{} : to_list(value, "--causal-n");
        else {
            usage("unknown option " + flag);
        }
    }
    if (csv.empty()) usage("--csv FILE is required");

    const kernels::device::Status status = kernels::device::status();
    if (!status.available) {
        fmt::print("skipped: no usable GPU ({})\n", status.text);
        return 77;
    }
    std::ofstream out(csv);
    if (!out) usage("cannot write " + csv);
    // The GPU's name without "CUDA device 0: " and the SM count.
    std::string gpu = status.text.substr(status.text.find(':') + 2);
    gpu = gpu.substr(0, gpu.find(" ("));
    out << csv_header;
    const int B = 8, H = 16, D = 64;
    std::vector<std::pair<int, bool>> runs;  // (N, causal)
    for (int N : seqs) runs.emplace_back(N, false);
    for (int N : causal_seqs) runs.emplace_back(N, true);
    try {
        for (const auto& [N, causal] : runs) {
            kernels::Problem p;
            p.batch = B, p.heads = H, p.seq = N, p.d_head = D, p.causal = causal;
            Random rng{std::uint64_t(N)};
            const std::array<std::size_t, 4> shape{std::size_t(B), std::size_t(H), std::size_t(N), std::size_t(D)};
            const Tensor4 q = rng.normal<4>(shape), k = rng.normal<4>(shape), v = rng.normal<4>(shape);
            const std::vector<int> key_len(std::size_t(B), N);
            const kernels::Inputs in{q.data(), k.data(), v.data(), key_len.data()};
            // causal: the (N + 1) / 2N of the score matrix the mask leaves, as FlashAttention counts
            const double flops = 4.0 * D * double(N) * double(N) * B * H * (causal ? 0.5 : 1.0);
            for (Version version : kernels::versions)
                for (bool bf16 : {false, true}) {  // bf16: version 7 (pipelined) only, its second row
                    if (bf16 && version != Version::pipelined) continue;
                    p.bf16 = bf16;
                    const char* dtype = bf16 ? "bf16" : kernels::sixteen_bit(version) ? "fp16" : "fp32";
                    if (version == Version::naive && N > max_naive_n) {
                        out << fmt::format(
                            "{},{},{},{},{},{},{},{:d},,,,,,,skipped: the N x N scratch would be {:.1f} GB\n", gpu,
                            kernels::name(version), dtype, B, H, N, D, int(causal),
                            4.0 * B * H * double(N) * double(N) / 1e9);
                        continue;
                    }
                    const kernels::device::Timing t = kernels::device::time(version, p, in, warmup, repeats);
                    const double tflops = flops / (t.median_ms * 1e-3) / 1e12;
                    out << fmt::format("{},{},{},{},{},{},{},{:d},{:.4f},{:.4f},{:.3f},{},{},{},{}\n", gpu,
                                       kernels::name(version), dtype, B, H, N, D, int(causal), t.median_ms, t.min_ms,
                                       tflops, t.registers, t.shared_bytes, t.local_bytes,
                                       causal ? "causal: TFLOP/s of the unmasked half" : "");
                    fmt::print(
                        "{:<11} {} N={:<5}{} median {:9.3f} ms  {:7.2f} TFLOP/s  ({} registers, {} B shared, {} B "
                        "local)\n",
                        kernels::name(version), dtype, N, causal ? " causal" : "", t.median_ms, tflops, t.registers,
                        t.shared_bytes, t.local_bytes);
                    out.flush();
                }
        }
        if (!backward_csv.empty()) {
            std::ofstream backward(backward_csv);
            if (!backward) usage("cannot write " + backward_csv);
            backward << csv_header;
            for (const auto& [N, causal] : runs) {
                kernels::Problem p;
                p.batch = B, p.heads = H, p.seq = N, p.d_head = D, p.causal = causal;
                time_backward(backward, gpu, p, repeats, warmup, max_naive_n);
            }
        }
        if (spot_n > 0 && !spot_check(spot_n)) return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gpu_bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
