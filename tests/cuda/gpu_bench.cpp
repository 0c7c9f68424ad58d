// tests/cuda/gpu_bench.cpp -- times every kernel version on a GPU and writes one CSV row each.
//
// Run by scripts/gpu-check (never by ctest: timings are measured, not asserted). For each N it
// times versions 1-4 (fp32 inputs) and version 5 (fp16 inputs) at B = 8, H = 16, d_head = 64,
// non-causal, with kernels::device::time: `warmup` launches, then the median of `repeats`
// launches, each between two cudaEvents. The naive version's (B, H, N, N) scratch grows as N^2
// (8.6 GB at N = 4096): above --max-naive-n it is left out, with a row that says so.
//
//   gpu_bench --csv FILE [--n 512,1024,...] [--repeats 20] [--warmup 3] [--max-naive-n 4096]
// Exit 77 without a GPU, 2 on bad arguments.
#include "kernels/device.hpp"

#include "headwise/base/random.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace headwise;
using kernels::Version;

namespace {

[[noreturn]] void usage(const std::string& why) {
    std::fprintf(stderr, "gpu_bench: %s\n", why.c_str());
    std::exit(2);
}

int to_int(const std::string& text, const char* flag) {
    try {
        std::size_t used = 0;
        const int x = std::stoi(text, &used);
        if (used == text.size() && x > 0) return x;
    } catch (const std::exception&) {}
    usage(std::string(flag) + " takes a positive integer, not '" + text + "'");
}

}  // namespace

int main(int argc, char** argv) {
    std::string csv;
    std::vector<int> seqs{512, 1024, 2048, 4096, 8192};
    int repeats = 20, warmup = 3, max_naive_n = 4096;
    for (int a = 1; a < argc; ++a) {
        const std::string flag = argv[a];
        if (a + 1 >= argc) usage(flag + " needs a value");
        const std::string value = argv[++a];
        if (flag == "--csv")
            csv = value;
        else if (flag == "--repeats")
            repeats = to_int(value, "--repeats");
        else if (flag == "--warmup")
            warmup = to_int(value, "--warmup");
        else if (flag == "--max-naive-n")
            max_naive_n = to_int(value, "--max-naive-n");
        else if (flag == "--n") {
            seqs.clear();
            std::stringstream list(value);
            for (std::string item; std::getline(list, item, ',');) seqs.push_back(to_int(item, "--n"));
        } else {
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
    out << "gpu,version,dtype,batch,heads,seq,d_head,causal,median_ms,min_ms,tflops,registers,shared_bytes,local_bytes,"
           "note\n";
    const int B = 8, H = 16, D = 64;
    try {
        for (int N : seqs) {
            kernels::Problem p;
            p.batch = B, p.heads = H, p.seq = N, p.d_head = D;
            Random rng{std::uint64_t(N)};
            const std::array<std::size_t, 4> shape{std::size_t(B), std::size_t(H), std::size_t(N), std::size_t(D)};
            const Tensor4 q = rng.normal<4>(shape), k = rng.normal<4>(shape), v = rng.normal<4>(shape);
            const std::vector<int> key_len(std::size_t(B), N);
            const kernels::Inputs in{q.data(), k.data(), v.data(), key_len.data()};
            const double flops = 4.0 * D * double(N) * double(N) * B * H;
            for (Version version : kernels::versions)
                for (bool bf16 : {false, true}) {  // bf16: version 7 (pipelined) only, its second row
                    if (bf16 && version != Version::pipelined) continue;
                    p.bf16 = bf16;
                    const char* dtype = bf16 ? "bf16" : kernels::sixteen_bit(version) ? "fp16" : "fp32";
                    if (version == Version::naive && N > max_naive_n) {
                        out << fmt::format(
                            "{},{},{},{},{},{},{},0,,,,,,,skipped: the N x N scratch would be {:.1f} GB\n", gpu,
                            kernels::name(version), dtype, B, H, N, D, 4.0 * B * H * double(N) * double(N) / 1e9);
                        continue;
                    }
                    const kernels::device::Timing t = kernels::device::time(version, p, in, warmup, repeats);
                    const double tflops = flops / (t.median_ms * 1e-3) / 1e12;
                    out << fmt::format("{},{},{},{},{},{},{},0,{:.4f},{:.4f},{:.3f},{},{},{},\n", gpu,
                                       kernels::name(version), dtype, B, H, N, D, t.median_ms, t.min_ms, tflops,
                                       t.registers, t.shared_bytes, t.local_bytes);
                    fmt::print(
                        "{:<11} {} N={:<5} median {:9.3f} ms  {:7.2f} TFLOP/s  ({} registers, {} B shared, {} B "
                        "local)\n",
                        kernels::name(version), dtype, N, t.median_ms, tflops, t.registers, t.shared_bytes,
                        t.local_bytes);
                    out.flush();
                }
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gpu_bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
