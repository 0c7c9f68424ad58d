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
// --versions LIST (names, or none) times only those versions. --tiles-csv FILE times version 7
// once in each of its tile shapes (kernels/flash_tiles.hpp; --tiles LIST or all, the default),
// fp16, at the same sizes, one row each with the shape's columns (warps, rows per block, keys per
// tile, stages) -- after checking each shape's output on the GPU against a double-precision
// reference on every row of a small padded problem, causal and not ("tiles ok" / "tiles FAIL"
// lines; exit 1 on a failure, before any timing).
//
//   gpu_bench --csv FILE [--n 512,1024,...] [--causal-n 4096] [--repeats 20] [--warmup 3]
//             [--max-naive-n 4096] [--spot-n 32768] [--backward-csv FILE] [--versions mma,pipelined]
//             [--tiles-csv FILE] [--tiles all]
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

// Row i of head (b, h) of softmax(q k^T scale) v in double, from x as given (q, k, v (B, H, N, D)),
// over keys [0, end) (end = N: every key); no key visible gives zeros, as the kernels do.
std::vector<double> reference_row(const kernels::Problem& p, const float* q, const float* k, const float* v,
                                  std::size_t head, std::size_t i, std::size_t end) {
    const std::size_t D = std::size_t(p.d_head);
    std::vector<double> s(end), out(D, 0.0);
    double m = -1e300, l = 0.0;
    for (std::size_t j = 0; j < end; ++j) {
        double dot = 0.0;
        for (std::size_t c = 0; c < D; ++c) dot += double(q[(head + i) * D + c]) * double(k[(head + j) * D + c]);
        s[j] = dot * double(p.effective_scale());
        m = std::max(m, s[j]);
    }
    for (std::size_t j = 0; j < end; ++j) {
        const double e = std::exp(s[j] - m);
        l += e;
        for (std::size_t c = 0; c < D; ++c) out[c] += e * double(v[(head + j) * D + c]);
    }
    for (double& x : out) x = l > 0.0 ? x / l : 0.0;
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
                const std::vector<double> ref = reference_row(p, qr, kr, vr, head, i, std::size_t(n));
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

// --versions: names from kernels::versions, comma-separated ("none": no version rows).
std::vector<Version> to_versions(const std::string& text) {
    std::vector<Version> list;
    std::stringstream items(text);
    for (std::string item; std::getline(items, item, ',');) {
        if (item == "none") continue;
        const auto* v = std::find_if(kernels::versions.begin(), kernels::versions.end(),
                                     [&](Version x) { return kernels::name(x) == item; });
        if (v == kernels::versions.end()) usage("--versions: no version named '" + item + "'");
        list.push_back(*v);
    }
    return list;
}

// --tiles: names from kernels::flash_tiles, comma-separated, or "all".
std::vector<kernels::FlashTiles> to_tiles(const std::string& text) {
    if (text == "all") return {kernels::flash_tiles.begin(), kernels::flash_tiles.end()};
    std::vector<kernels::FlashTiles> list;
    std::stringstream items(text);
    try {
        for (std::string item; std::getline(items, item, ',');) list.push_back(kernels::flash_tiles_named(item));
    } catch (const std::invalid_argument& e) {
        usage(std::string("--tiles: ") + e.what());
    }
    return list;
}

struct Options {
    std::string csv, backward_csv, tiles_csv;
    std::vector<int> seqs{512, 1024, 2048, 4096, 8192}, causal_seqs{4096};
    std::vector<Version> versions{kernels::versions.begin(), kernels::versions.end()};
    std::vector<kernels::FlashTiles> tiles{kernels::flash_tiles.begin(), kernels::flash_tiles.end()};
    int repeats = 20, warmup = 3, max_naive_n = 4096, spot_n = 0;
};

Options parse(int argc, char** argv) {
    Options o;
    for (int a = 1; a < argc; ++a) {
        const std::string flag = argv[a];
        if (a + 1 >= argc) usage(flag + " needs a value");
        const std::string value = argv[++a];
        if (flag == "--csv")
            o.csv = value;
        else if (flag == "--backward-csv")
            o.backward_csv = value;
        else if (flag == "--tiles-csv")
            o.tiles_csv = value;
        else if (flag == "--tiles")
            o.tiles = to_tiles(value);
        else if (flag == "--versions")
            o.versions = to_versions(value);
        else if (flag == "--repeats")
            o.repeats = to_int(value, "--repeats");
        else if (flag == "--warmup")
            o.warmup = to_int(value, "--warmup");
        else if (flag == "--max-naive-n")
            o.max_naive_n = to_int(value, "--max-naive-n");
        else if (flag == "--spot-n")
            o.spot_n = to_int(value, "--spot-n", true);
        else if (flag == "--n")
            o.seqs = to_list(value, "--n");
        else if (flag == "--causal-n")
            o.causal_seqs = value == "none" ? std::vector<int>{} : to_list(value, "--causal-n");
        else
            usage("unknown option " + flag);
    }
    if (o.csv.empty()) usage("--csv FILE is required");
    return o;
}

// The versions of o.versions at problem p: one CSV row each (and one line on stdout).
void time_versions(std::ofstream& out, const std::string& gpu, kernels::Problem p, const kernels::Inputs& in,
                   const Options& o) {
    const int B = p.batch, H = p.heads, N = p.seq, D = p.d_head;
    const bool causal = p.causal;
    // causal: the (N + 1) / 2N of the score matrix the mask leaves, as FlashAttention counts
    const double flops = 4.0 * D * double(N) * double(N) * B * H * (causal ? 0.5 : 1.0);
    for (Version version : o.versions)
        for (bool bf16 : {false, true}) {  // bf16: version 7 (pipelined) only, its second row
            if (bf16 && version != Version::pipelined) continue;
            p.bf16 = bf16;
            const char* dtype = bf16 ? "bf16" : kernels::sixteen_bit(version) ? "fp16" : "fp32";
            if (version == Version::naive && N > o.max_naive_n) {
                out << fmt::format("{},{},{},{},{},{},{},{:d},,,,,,,skipped: the N x N scratch would be {:.1f} GB\n",
                                   gpu, kernels::name(version), dtype, B, H, N, D, int(causal),
                                   4.0 * B * H * double(N) * double(N) / 1e9);
                continue;
            }
            const kernels::device::Timing t = kernels::device::time(version, p, in, o.warmup, o.repeats);
            const double tflops = flops / (t.median_ms * 1e-3) / 1e12;
            out << fmt::format("{},{},{},{},{},{},{},{:d},{:.4f},{:.4f},{:.3f},{},{},{},{}\n", gpu,
                               kernels::name(version), dtype, B, H, N, D, int(causal), t.median_ms, t.min_ms, tflops,
                               t.registers, t.shared_bytes, t.local_bytes,
                               causal ? "causal: TFLOP/s of the unmasked half" : "");
            fmt::print(
                "{:<11} {} N={:<5}{} median {:9.3f} ms  {:7.2f} TFLOP/s  ({} registers, {} B shared, {} B local)\n",
                kernels::name(version), dtype, N, causal ? " causal" : "", t.median_ms, tflops, t.registers,
                t.shared_bytes, t.local_bytes);
            out.flush();
        }
}

constexpr const char* tiles_header =
    "gpu,tiles,dtype,batch,heads,seq,d_head,causal,median_ms,min_ms,tflops,registers,shared_bytes,local_bytes,"
    "warps,rows_per_block,keys_per_tile,stages\n";

// Version 7 in each tile shape of o.tiles at problem p, fp16: one row each in the tiles CSV.
void time_tiles(std::ofstream& out, const std::string& gpu, kernels::Problem p, const kernels::Inputs& in,
                const Options& o) {
    const int B = p.batch, H = p.heads, N = p.seq, D = p.d_head;
    const double flops = 4.0 * D * double(N) * double(N) * B * H * (p.causal ? 0.5 : 1.0);
    p.bf16 = false;
    for (kernels::FlashTiles tiles : o.tiles) {
        p.tiles = tiles;
        const kernels::device::Timing t = kernels::device::time(Version::pipelined, p, in, o.warmup, o.repeats);
        const kernels::LaunchConfig cfg = kernels::launch_config(Version::pipelined, p);
        const kernels::FlashTileShape shape = kernels::flash_tile_shape(tiles, D);
        const double tflops = flops / (t.median_ms * 1e-3) / 1e12;
        out << fmt::format("{},{},fp16,{},{},{},{},{:d},{:.4f},{:.4f},{:.3f},{},{},{},{},{},{},{}\n", gpu,
                           kernels::name(tiles), B, H, N, D, int(p.causal), t.median_ms, t.min_ms, tflops, t.registers,
                           t.shared_bytes, t.local_bytes, cfg.block[0] / 32, cfg.rows_per_block, shape.cols,
                           shape.stages);
        fmt::print("pipelined {:<13} fp16 N={:<5}{} median {:9.3f} ms  {:7.2f} TFLOP/s  ({} registers, {} B local)\n",
                   kernels::name(tiles), N, p.causal ? " causal" : "", t.median_ms, tflops, t.registers, t.local_bytes);
        out.flush();
    }
}

// Version 7 in each tile shape of `tiles` against reference_row on every row, before any is
// timed: B = 2, H = 2, N = 1000 (partial query blocks and key tiles), the second sequence padded
// after 611 keys, causal and not, fp16 inputs; spot_check's allowed error. One line per shape.
bool check_tiles(const std::vector<kernels::FlashTiles>& tiles) {
    kernels::Problem p;
    p.batch = 2, p.heads = 2, p.seq = 1000, p.d_head = 64;
    const std::size_t N = 1000, D = 64, rows = 4 * N;
    Random rng{1000};
    const std::array<std::size_t, 4> shape{2, 2, N, D};
    const Tensor4 q = rng.normal<4>(shape), k = rng.normal<4>(shape), v = rng.normal<4>(shape);
    const std::vector<int> key_len{1000, 611};
    const std::vector<float> q16 = kernels::rounded_to_16_bits(q.data(), q.size()),
                             k16 = kernels::rounded_to_16_bits(k.data(), k.size()),
                             v16 = kernels::rounded_to_16_bits(v.data(), v.size());
    double v_max = 0.0;
    for (float x : v16) v_max = std::max(v_max, std::abs(double(x)));
    bool all_ok = true;
    for (bool causal : {false, true}) {
        p.causal = causal;
        std::vector<double> ref(rows * D);  // every row, computed once for all the shapes
        for (std::size_t r = 0; r < rows; ++r) {
            const std::size_t i = r % N, b = r / (2 * N);
            const std::size_t end = std::min(causal ? i + 1 : N, std::size_t(key_len[b]));
            const std::vector<double> row = reference_row(p, q16.data(), k16.data(), v16.data(), r - i, i, end);
            std::copy(row.begin(), row.end(), ref.begin() + std::ptrdiff_t(r * D));
        }
        for (kernels::FlashTiles tiles : tiles) {
            p.tiles = tiles;
            std::vector<float> out(rows * D);
            kernels::device::run(Version::pipelined, p, {q.data(), k.data(), v.data(), key_len.data()}, out.data());
            double worst = 0.0;
            bool ok = true;
            for (std::size_t e = 0; e < out.size(); ++e) {
                const double diff = std::abs(double(out[e]) - ref[e]);
                worst = std::max(worst, std::isnan(diff) ? 1e30 : diff);
                ok = ok && diff <= std::ldexp(1.0, -11) * v_max + 1e-4 + 1e-3 * std::abs(ref[e]);
            }
            fmt::print("tiles {} {:<13} B=2 H=2 N=1000 key_len 1000, 611{}: every row, max |gpu - ref| {:.2e}\n",
                       ok ? "ok  " : "FAIL", kernels::name(tiles), causal ? " causal" : "", worst);
            all_ok = all_ok && ok;
        }
    }
    return all_ok;
}

}  // namespace

int main(int argc, char** argv) {
    const Options o = parse(argc, argv);
    const kernels::device::Status status = kernels::device::status();
    if (!status.available) {
        fmt::print("skipped: no usable GPU ({})\n", status.text);
        return 77;
    }
    std::ofstream out(o.csv);
    if (!out) usage("cannot write " + o.csv);
    std::ofstream tiles_out;
    if (!o.tiles_csv.empty()) {
        tiles_out.open(o.tiles_csv);
        if (!tiles_out) usage("cannot write " + o.tiles_csv);
        tiles_out << tiles_header;
    }
    // The GPU's name without "CUDA device 0: " and the SM count.
    std::string gpu = status.text.substr(status.text.find(':') + 2);
    gpu = gpu.substr(0, gpu.find(" ("));
    out << csv_header;
    const int B = 8, H = 16, D = 64;
    std::vector<std::pair<int, bool>> runs;  // (N, causal)
    for (int N : o.seqs) runs.emplace_back(N, false);
    for (int N : o.causal_seqs) runs.emplace_back(N, true);
    try {
        if (!o.tiles_csv.empty() && !check_tiles(o.tiles)) return 1;
        for (const auto& [N, causal] : runs) {
            kernels::Problem p;
            p.batch = B, p.heads = H, p.seq = N, p.d_head = D, p.causal = causal;
            Random rng{std::uint64_t(N)};
            const std::array<std::size_t, 4> shape{std::size_t(B), std::size_t(H), std::size_t(N), std::size_t(D)};
            const Tensor4 q = rng.normal<4>(shape), k = rng.normal<4>(shape), v = rng.normal<4>(shape);
            const std::vector<int> key_len(std::size_t(B), N);
            const kernels::Inputs in{q.data(), k.data(), v.data(), key_len.data()};
            time_versions(out, gpu, p, in, o);
            if (!o.tiles_csv.empty()) time_tiles(tiles_out, gpu, p, in, o);
        }
        if (!o.backward_csv.empty()) {
            std::ofstream backward(o.backward_csv);
            if (!backward) usage("cannot write " + o.backward_csv);
            backward << csv_header;
            for (const auto& [N, causal] : runs) {
                kernels::Problem p;
                p.batch = B, p.heads = H, p.seq = N, p.d_head = D, p.causal = causal;
                time_backward(backward, gpu, p, o.repeats, o.warmup, o.max_naive_n);
            }
        }
        if (o.spot_n > 0 && !spot_check(o.spot_n)) return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gpu_bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
