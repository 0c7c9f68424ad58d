// Lesson 06 -- attention as a CUDA kernel: naive, online softmax, tiled (flash-style), then warps
// and tensor cores.
//
// On a GPU, attention is one kernel launch: a grid of blocks of threads, each thread computing
// part of the output. How the work is cut decides how often each byte of Q, K and V travels
// from global memory (big, slow) to the cores -- and that, not arithmetic, is what limits it.
// Seven versions, each in its own file beside this one's output:
//
//   src/kernels/naive.cuh        a thread per query row; the row of N scores parked in global memory
//   src/kernels/online.cuh       a thread per query row; one pass with a running max and sum (no N x N)
//   src/kernels/tiled.cuh        a block per 64 query rows; K and V staged through __shared__ memory
//   src/kernels/warp.cuh         the lanes of a warp share rows and keys: each thread a 4 x 4 block
//                                of S and 4 rows of O in registers, 16-byte loads, 8-lane shuffles,
//                                a K tile padded against bank conflicts
//   src/kernels/tensor_core.cuh  wmma 16x16x16 tiles on fp16 inputs (FlashAttention-2's loop),
//                                the softmax in fp32 between S = Q K^T and O += P V
//   src/kernels/flash.cuh        6 mma: mma.sync m16n8k16 + ldmatrix, Q, S, P and O in registers;
//                                7 pipelined: the same, K/V double-buffered by cp.async, swizzled
//
// Versions 4 to 7 continue this lesson rather than start a new one: same problem, same loop
// (version 3's), same traffic table -- what changes is who does the arithmetic (a warp together,
// then the tensor cores through wmma, then through mma.sync with everything in registers, then
// with the next tiles copied while this one is multiplied), and the lesson measures what that
// costs and saves on the same inputs.
//
// The .cuh files are plain CUDA. nvcc compiles them for the GPU; g++ compiles the very same text
// against src/emulator/, which runs the threads on the CPU (with real barriers) and counts every
// global-memory load and store. This lesson checks every version against the CPU reference
// (headwise::attention_reference, double precision) before it times anything; without a GPU it
// says so and runs the kernels on the emulator. Its last steps show what a real GPU measured
// (docs/data/gpu-h200-2026-11-26.csv, from scripts/gpu-check) next to what the compiler reports
// for each kernel (docs/data/kernel_resources_sm90.txt, from scripts/kernel-resources): registers,
// stack and shared memory, and the occupancy they allow -- the reasons one version beats another.
//
// Dimension letters: B = batch, H = heads, N = sequence length, d_head = width of one head.
// Run:  ./headwise run 6      or      build/lessons/06_cuda_kernel --help

#include "emulator/fragment_layout.hpp"
#include "headwise/io/figure.hpp"
#include "headwise/io/gpu_reports.hpp"
#include "headwise/lesson/lesson.hpp"
#include "kernels/attention_kernels.hpp"
#include "kernels/device.hpp"
#include "kernels/occupancy.hpp"
#include "kernels/tolerance.hpp"

#include <chrono>
#include <filesystem>
#include <map>
#include <sstream>

using namespace headwise;
using gpu_reports::GpuResults;
using gpu_reports::GpuRow;
using kernels::Version;

namespace {

// ---------------------------------------------------------------------------------------------
// Step helpers.

// How far a kernel's output is from the reference. The verdict uses the tests' tolerance,
// kernels::fp32_allowed: |out - ref| <= 1e-5 + 1e-4 |ref| for every element (fp32 sums vs a
// double reference).
struct Errors {
    double max_abs = 0.0;
    double max_rel = 0.0;  // over elements with |ref| > 1e-3, so near-zero outputs do not dominate
    bool ok = true;
};

Errors compare(const Tensor4& out, const Tensor4& ref) {
    Errors e;
    for (std::size_t i = 0; i < ref.size(); ++i) {
        const double r = ref.data()[i], diff = std::abs(double(out.data()[i]) - r);
        if (!(diff <= kernels::fp32_allowed(r))) e.ok = false;  // also catches NaN
        e.max_abs = std::max(e.max_abs, std::isnan(diff) ? INFINITY : diff);
        if (std::abs(r) > 1e-3) e.max_rel = std::max(e.max_rel, diff / std::abs(r));
    }
    return e;
}

// `text` in lines of at most `width` characters, each after `indent`.
std::string wrapped(const std::string& text, const std::string& indent, std::size_t width = 100) {
    std::string out, line;
    std::istringstream words(text);
    for (std::string word; words >> word;) {
        if (!line.empty() && line.size() + 1 + word.size() > width) out += indent + line + "\n", line.clear();
        line += (line.empty() ? "" : " ") + word;
    }
    if (!line.empty()) out += indent + line + "\n";
    return out;
}

std::string dims3(const std::array<unsigned, 3>& d) { return fmt::format("({}, {}, {})", d[0], d[1], d[2]); }

std::string mebibytes(double bytes) {
    if (bytes < 1024.0 * 1024.0) return fmt::format("{:.1f} KiB", bytes / 1024.0);
    return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024.0));
}

// Floating-point work of attention: 2 FLOPs per multiply-add, d_head of them per (query, key)
// pair for q . k and again for weights . v -- 4 d_head per visible pair.
double attention_flops(const kernels::Problem& p) {
    const double n = p.seq, pairs = p.causal ? n * (n + 1) / 2 : n * n;
    return 4.0 * p.d_head * pairs * p.batch * p.heads;
}

const char* what_it_does(Version v) {
    switch (v) {
        case Version::naive:
            return "naive: one thread per query row, three passes over an N x N scratch";
        case Version::online:
            return "online softmax: one thread per query row, one pass, no scratch";
        case Version::tiled:
            return "tiled: one block per 64 query rows, K/V tiles in shared memory";
        case Version::warp:
            return "warp: register tiling, each thread 4 rows x 4 keys of S and 4 rows of O, shuffles in 8 lanes";
        case Version::tensor_core:
            return "tensor cores: wmma 16x16x16 on fp16 inputs, fp32 softmax in between";
        case Version::mma:
            return "mma.sync: FlashAttention-2 in registers, S's accumulators reused as P's A operand";
        case Version::pipelined:
            return "pipelined: cp.async double-buffers K/V into XOR-swizzled tiles while mma.sync works";
    }
    return "?";
}

// The fragment-layout step: which lane holds each element of mma.sync m16n8k16's A (16, 16),
// B (16, 8) and C (16, 8) tiles, as the emulator places them (emulator/fragment_layout.hpp).
void print_fragment_layouts() {
    namespace layout = emulator::layout;
    int a[16][16], b[16][8], c[16][8];  // lane number per element
    for (int lane = 0; lane < 32; ++lane) {
        for (int i = 0; i < 8; ++i) a[layout::mma_a(lane, i).row][layout::mma_a(lane, i).col] = lane;
        for (int i = 0; i < 4; ++i) {
            b[layout::mma_b(lane, i).row][layout::mma_b(lane, i).col] = lane;
            c[layout::mma_c(lane, i).row][layout::mma_c(lane, i).col] = lane;
        }
    }
    fmt::print(
        "  One mma.sync.m16n8k16 by a warp: D (16, 8) = A (16, 16) B (16, 8) + C. Every element lives in one\n"
        "  lane's registers -- the number printed is that lane (group g = lane / 4, quad q = lane % 4):\n\n");
    fmt::print("    {:<50}{:<28}{}\n", "A (16 rows x 16 k), 4 registers of 2 fp16", "B (16 k x 8 cols), 2 of 2",
               "C and D (16 x 8), 4 floats");
    for (int r = 0; r < 16; ++r) {
        std::string line = "    ";
        for (int col = 0; col < 16; ++col) line += fmt::format("{:>3}", a[r][col]);
        line += "  ";
        for (int col = 0; col < 8; ++col) line += fmt::format("{:>3}", b[r][col]);
        line += "    ";
        for (int col = 0; col < 8; ++col) line += fmt::format("{:>3}", c[r][col]);
        fmt::print("{}\n", line);
    }
    fmt::print(
        "\n  A: lane 4g + q holds rows g and g + 8, columns 2q, 2q + 1 and 2q + 8, 2q + 9 (8 halves).\n"
        "  B: lane 4g + q holds column g, rows 2q, 2q + 1, 2q + 8, 2q + 9.  C: rows g, g + 8, columns 2q, 2q + 1.\n"
        "  So the 4 lanes of a quad share a row of S = Q K^T: its max and sum are two __shfl_xor_sync away\n"
        "  (offsets 1 and 2). And two neighbouring C tiles (keys 0-7, 8-15) hold exactly the elements A wants\n"
        "  for 16 keys: P = softmax(S), rounded to fp16 in the registers where S was, is already the A operand\n"
        "  of P V. Version 5's wmma hides this layout and pays for it with trips through shared memory.\n");
}

// Version 5's verdict: the bound derived in src/kernels/tensor_core.cuh (fp16 inputs, fp32
// accumulation) instead of the fp32 tolerance, per query row.
bool within_fp16_bound(const Tensor4& out, const Tensor4& ref, const Tensor4& q, const Tensor4& k, const Tensor4& v,
                       const kernels::Problem& p, const std::vector<int>& key_len) {
    const kernels::RowLayout rows{p.batch, p.heads, p.seq, p.d_head, p.causal, p.effective_scale(), key_len.data()};
    return kernels::excess_error_16_bit(out.data(), ref.data(), q.data(), k.data(), v.data(), rows, 0x1p-11, false) ==
           0.0;
}

// Why version v is faster or slower than the one before it: what this source does, from its code
// and the compiler's report ...
std::string reason_now(Version v) {
    switch (v) {
        case Version::naive:
            return "the N x N scores make three trips through global memory";
        case Version::online:
            return "one pass, no scratch; but each thread reads every K and V row from global memory itself";
        case Version::tiled:
            return "K and V read once per block of 64 rows, through shared memory; a row's scores 4 at a time in "
                   "registers (an array indexed up to a run-time bound would live on the stack)";
        case Version::warp:
            return "register tiling: a thread computes 4 x 4 scores from 8 loaded floats (version 3: one load per "
                   "multiply-add), 16-byte loads, no bank conflicts in the inner loops";
        case Version::tensor_core:
            return "wmma: S and P V on tensor cores, the softmax through shared memory between them, two lanes per "
                   "row (one shuffle for its max); tiles filled 16 bytes per load; O rescaled through shared memory "
                   "only in tiles where a row's max grew";
        case Version::mma:
            return "mma.sync with the published fragment layout: S, P and O stay in registers (P's registers are "
                   "the A operand of P V), the softmax on them with quad shuffles, K and V by ldmatrix";
        case Version::pipelined:
            return "version 6 with the next K/V tile copied by cp.async while this one is multiplied, into "
                   "XOR-swizzled tiles (no bank conflicts without padding), in FlashAttention-2's shape: 4 warps x 32 "
                   "rows (half the ldmatrix reads per mma), 64-key tiles (half the barriers); 2 blocks an SM by design";
        default:
            return "see its .cuh file";
    }
}

// ... and what the measured kernel did differently, shown when its resources differ from this
// source's (the kernel changed after the run).
std::string reason_then(Version v) {
    switch (v) {
        case Version::naive:
            return "measured kernel: 32-bit offsets (64-bit now, a few more registers, the same traffic)";
        case Version::tiled:
            return "measured kernel: its 64 scores in s[Bc], indexed up to a run-time bound, lived on the stack: "
                   "256 B of local memory per thread, a round trip through L1 for every score";
        case Version::warp:
            return "measured kernel: a warp on one query row at a time, lanes splitting keys then d_head -- one "
                   "shared-memory load per multiply-add and 152 registers, half as fast as version 3";
        case Version::tensor_core:
            return "measured kernel: 16 rows one at a time, two 5-step warp reductions each (384 shuffles in its "
                   "code), 2-byte tile loads, 170 registers: 2 blocks per SM";
        case Version::pipelined:
            return "measured kernel: version 6's shape, 4 warps x 16 rows and 32-key tiles, 126 registers (4 blocks "
                   "per SM), and a longer tile loop (two barriers a tile, the mask on every tile)";
        default:
            return "measured kernel: an earlier version of the same file";
    }
}

// The sizes, the problem the kernels are launched on, how the emulator schedules threads and
// whether a GPU is there.
struct Setup {
    std::size_t B, H, N, D;  // batch, heads, tokens, d_head
    kernels::Problem p;
    emulator::Schedule schedule;
    kernels::device::Status device;
};

// The kernels' inputs in global memory.
struct Buffers {
    Tensor4 q, k, v;           // (B, H, N, d_head) each
    std::vector<int> key_len;  // (B): no padding in this lesson, every key is real
    kernels::Inputs inputs() const { return {q.data(), k.data(), v.data(), key_len.data()}; }
};

// What running every version leaves for the steps after: the emulator's counts and seconds, and
// whether every version matched the reference.
struct Runs {
    std::map<Version, emulator::LaunchStats> traffic;
    std::map<Version, double> emulated_seconds;
    bool all_ok = true;
};

// ---------------------------------------------------------------------------------------------
// The steps, in the order the lesson tells them.

Buffers step1_buffers(const Tracer& trace, Random& rng, const Setup& z) {
    trace.section("step 1: the buffers the kernels read and write, all in global memory");
    const auto [B, H, N, D] = std::tuple{z.B, z.H, z.N, z.D};
    const Tensor4 q = rng.normal<4>({B, H, N, D});  // (B, H, N, d_head)
    const Tensor4 k = rng.normal<4>({B, H, N, D});  // (B, H, N, d_head)
    const Tensor4 v = rng.normal<4>({B, H, N, D});  // (B, H, N, d_head)
    const std::vector<int> key_len(B, int(N));      // (B): no padding in this lesson, every key is real
    trace("q", q, "B, H, N, d_head");
    trace("k", k, "B, H, N, d_head");
    trace("v", v, "B, H, N, d_head");
    trace.shape_line("key_len", std::array<std::size_t, 1>{B}, "B");
    trace.shape_line("scratch (naive only)", std::array<std::size_t, 4>{B, H, N, N}, "B, H, N_query, N_key");
    fmt::print("  q, k, v: {} each; naive's scratch: {} -- it grows with N^2, the others with N.\n",
               mebibytes(4.0 * double(kernels::qkv_elements(z.p))),
               mebibytes(4.0 * double(kernels::scores_elements(z.p))));
    return {q, k, v, key_len};
}

// The reference (B, H, N, d_head), from plain loops in double precision.
Tensor4 step2_reference(const Tracer& trace, const Buffers& x, bool causal) {
    trace.section("step 2: the CPU reference every kernel must match (plain loops, double precision)");
    AttentionOptions ref_options;
    ref_options.causal = causal;
    const Tensor4 ref = attention_reference(x.q, x.k, x.v, ref_options);  // (B, H, N, d_head)
    trace("reference", ref, "B, H, N, d_head");
    return ref;
}

// How a version is launched: its grid and block, and who owns what.
void print_launch(Version version, const Setup& z) {
    const auto& [N, D, p] = std::tie(z.N, z.D, z.p);
    const kernels::LaunchConfig cfg = kernels::launch_config(version, p);
    const std::size_t threads = std::size_t(cfg.grid[0]) * cfg.grid[1] * cfg.grid[2] * cfg.block[0];
    fmt::print("  launch: grid {} x block {} = {} threads, {} bytes of shared memory per block\n", dims3(cfg.grid),
               dims3(cfg.block), threads, cfg.shared_bytes);
    if (version == Version::naive) {
        fmt::print(
            "          grid = (ceil(N / {}) query blocks, H, B): thread x of block (bx, h, b) owns query "
            "row bx * {} + x\n",
            cfg.block[0], cfg.block[0]);
    }
    if (version == Version::tiled) {
        const std::size_t tile_rows = cfg.shared_bytes / (2 * sizeof(float) * D);
        fmt::print(
            "          shared: k_tile and v_tile, ({}, {}) floats each; a query block walks at most {} K/V "
            "tile(s)\n",
            tile_rows, D, (N + tile_rows - 1) / tile_rows);
    }
    if (version == Version::warp) {
        fmt::print(
            "          {} threads own {} query rows, 4 each, in row groups of 8 threads; shared: q^T ({}, {} + "
            "4), "
            "k_tile (keys, {} + 4 padding floats), v_tile, P^T\n",
            cfg.block[0], cfg.rows_per_block, D, cfg.rows_per_block, D);
        fmt::print(
            "          per tile: thread x of a group scores keys x, x+8, .. of its 4 rows (16 FMAs per 8 "
            "loaded "
            "floats); row max over the group by __shfl_xor_sync (3 steps); O (4, {}) += P V\n",
            D / 8);
    }
    if (version == Version::tensor_core) {
        fmt::print(
            "          {} warps own 16 query rows each; per 32-key tile: S (16, 32) = {} wmma::mma_sync, "
            "softmax in fp32, O (16, {}) += P V: {} more\n",
            cfg.block[0] / 32, 2 * D / 16, D, 2 * D / 16);
        fmt::print(
            "          S goes through shared memory: lanes r and r+16 take row r's even and odd keys (one "
            "shuffle for its max); O's fragments go through it only in tiles where a row's max grew\n");
        fmt::print(
            "          q, k, v are rounded to fp16 first (round to nearest even); each mma multiplies fp16 "
            "tiles and adds in fp32\n");
    }

    if (kernels::needs_sm80(version)) {
        // flash.cuh's FlashShape: version 6 in its one shape, version 7 in the problem's (the default
        // at d_head 64: 4 warps x 32 rows, 64-key tiles; 16 rows and 16 keys at d_head 128)
        const kernels::FlashTiles tiles = version == Version::mma ? kernels::mma_flash_tiles : p.tiles;
        const kernels::FlashTileShape shape = kernels::flash_tile_shape(tiles, int(D));
        const std::size_t Bc = std::size_t(shape.cols), rows = 16 * std::size_t(shape.row_tiles), M = shape.row_tiles;
        fmt::print(
            "          {} warps own {} query rows each; per {}-key tile: S ({}, {}) = {} mma.sync, the online "
            "softmax\n"
            "          on S's registers, O ({}, {}) += P V: {} more; K and V (transposed) read by ldmatrix\n",
            shape.warps, rows, Bc, rows, Bc, M * (D / 16) * (Bc / 8), rows, D, M * (Bc / 16) * (D / 8));
        if (M > 1)
            fmt::print("          {} row tiles of 16 a warp: each K or V fragment ldmatrix loads feeds {} mma, not 1\n",
                       M, M);
        if (version == Version::mma)
            fmt::print("          K/V tiles padded to {} + 8 halves per row; loaded, a barrier, then the math\n", D);
        else
            fmt::print(
                "          K/V tiles of {} halves per row, {} stages: tile t + 1 is copied by cp.async "
                "while tile t is multiplied; 16-byte chunks XOR-swizzled by row (shape {}{})\n",
                D, shape.stages, kernels::name(tiles), D > 64 ? ", its d_head 128 form" : "");
    }
}

// One version launched (on the emulator, and on the GPU when there is one) and checked against the
// reference; its counts go into `runs`.
void run_and_check(const Tracer& trace, Version version, const Setup& z, const Buffers& x, const Tensor4& ref,
                   Runs& runs) {
    const auto& [B, H, N, D, p, schedule, device] = std::tie(z.B, z.H, z.N, z.D, z.p, z.schedule, z.device);
    const auto& [q, k, v, key_len] = std::tie(x.q, x.k, x.v, x.key_len);
    const kernels::Inputs in = x.inputs();
    auto& [traffic, emulated_seconds, all_ok] = runs;
    Tensor4 out = Tensor4::from_shape({B, H, N, D});  // (B, H, N, d_head)
    const bool warp_level = version == Version::warp || kernels::sixteen_bit(version);
    const emulator::Schedule s =
        warp_level && schedule == emulator::Schedule::threads ? emulator::Schedule::fibers : schedule;
    if (s != schedule) fmt::print("  (warp collectives run under the fiber schedules: this version runs on fibers)\n");
    const auto start = std::chrono::steady_clock::now();
    traffic[version] = kernels::emulate(version, p, in, out.data(), s);
    emulated_seconds[version] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (device.available) kernels::device::run(version, p, in, out.data());  // the GPU's answer is checked
    trace(fmt::format("out ({})", kernels::name(version)), out, "B, H, N, d_head");

    const Errors e = compare(out, ref);
    const bool ok = kernels::sixteen_bit(version) ? within_fp16_bound(out, ref, q, k, v, p, key_len) : e.ok;
    all_ok = all_ok && ok;
    fmt::print("  {} vs the reference: max abs error {:.2e}, max rel error {:.2e}   {}\n", kernels::name(version),
               e.max_abs, e.max_rel, ok ? trace.green("ok") : trace.red("WRONG"));
    if (kernels::sixteen_bit(version)) {
        fmt::print(
            "  (fp16 inputs: checked against the bound derived in tensor_core.cuh, per row\n"
            "   max|v| (3u + exp(2e) - 1) with u = 2^-11 and e = 2u scale sum_c |q_c k_c|, not fp32's 1e-4)\n");
    }
}

// Steps 3-7 (and the fragment layouts before version 6): each version, launched and checked. On a
// GPU the emulator still runs each kernel once, because only it can count the global-memory
// traffic and the bank conflicts.
Runs steps_each_version(const Tracer& trace, const Setup& z, const Buffers& x, const Tensor4& ref, int& step) {
    Runs runs;
    for (Version version : kernels::versions) {
        if (version == Version::mma) {
            trace.section(fmt::format("step {}: who holds what in a tensor-core tile (mma.sync m16n8k16)", step++));
            print_fragment_layouts();
        }
        trace.section(fmt::format("step {}: {}", step++, what_it_does(version)));
        if (!kernels::supports(version, z.p.d_head)) {
            fmt::print("  (no build for d_head {}: {})\n", z.p.d_head,
                       kernels::needs_sm80(version) ? "this version is built for d_head 64 and 128"
                                                    : "wmma tiles are 16 wide, so this version needs a multiple of 16");
            continue;
        }
        print_launch(version, z);
        run_and_check(trace, version, z, x, ref, runs);
    }
    return runs;
}

void step_traffic(const Tracer& trace, const Setup& z, const Buffers& x, Runs& runs, int& step) {
    const auto& [B, H, N, D, p] = std::tie(z.B, z.H, z.N, z.D, z.p);
    const kernels::Inputs in = x.inputs();
    auto& traffic = runs.traffic;
    auto& emulated_seconds = runs.emulated_seconds;
    trace.section(
        fmt::format("step {}: global-memory traffic and shared-memory banks, counted by the emulator", step++));
    const double tiled_bytes = double(traffic[Version::tiled].traffic.bytes());
    const double flops = attention_flops(p);
    fmt::print("    {:<12} {:>12} {:>10} {:>12} {:>9} {:>10} {:>12} {:>10} {:>9}\n", "version", "loads", "stores",
               "moved", "x tiled", "FLOP/byte", "shared req", "conflicts", "emulated");
    for (const auto& [version, stats] : traffic) {
        const emulator::Traffic& t = stats.traffic;
        const bool banks = stats.shared.requests > 0;
        fmt::print("    {:<12} {:>12} {:>10} {:>12} {:>8.1f}x {:>10.2f} {:>12} {:>10} {:>8.2f}s\n",
                   kernels::name(version), t.loads, t.stores, mebibytes(double(t.bytes())),
                   double(t.bytes()) / tiled_bytes, flops / double(t.bytes()),
                   banks ? std::to_string(stats.shared.requests) : "-",
                   banks ? std::to_string(stats.shared.conflicts()) : "-", emulated_seconds[version]);
    }
    fmt::print(
        "  naive reads q and k inside its dot products, and the row of scores twice more;\n"
        "  online keeps q and the output in registers but still reads every k and v row once per query;\n"
        "  tiled reads every k and v row once per block of {} queries -- that factor is FlashAttention's point.\n",
        kernels::launch_config(Version::tiled, p).block[0]);
    fmt::print(
        "  (Counted: what the kernels ask of global memory, before any cache would serve it. Shared\n"
        "   requests and bank conflicts: versions 4-7, whose tiles are shared_tile -- wmma's accesses are not\n"
        "   counted, ldmatrix's are, 16-byte copies into tiles (6, 7) are not; '-' = not counted.)\n");
    if (traffic.count(Version::warp) > 0) {
        Tensor4 out = Tensor4::from_shape({B, H, N, D});  // (B, H, N, d_head)
        const emulator::LaunchStats unpadded = kernels::emulate_warp_unpadded(p, in, out.data());
        const emulator::SharedTraffic& padded = traffic[Version::warp].shared;
        fmt::print(
            "  Banks: 32 banks of 4-byte words; a warp's request takes one pass (wavefront) per distinct word\n"
            "  in its busiest bank. In the warp kernel's score loop the 8 lanes of a row group read column c of\n"
            "  key rows x, x + 8, ..: with rows of {} floats those words share one bank.\n"
            "    k_tile (keys, {})     {:>12} requests, {:>12} wavefronts, {:>12} conflicts (8 lanes in bank c)\n"
            "    k_tile (keys, {} + 4) {:>12} requests, {:>12} wavefronts, {:>12} conflicts (key x's word in bank "
            "c + 4x)\n"
            "  The padded layout's remaining conflicts are the writes of P (16 per thread and tile, 4 lanes per\n"
            "  bank), few next to the reads. The emulator counts a 16-byte load as four 4-byte reads.\n",
            D, D, unpadded.shared.requests, unpadded.shared.wavefronts, unpadded.shared.conflicts(), D, padded.requests,
            padded.wavefronts, padded.conflicts());
    }
    if (traffic.count(Version::tensor_core) > 0) {
        const double tc = flops / double(traffic[Version::tensor_core].traffic.bytes());
        const double warp = flops / double(traffic[Version::warp].traffic.bytes());
        fmt::print(
            "  Arithmetic intensity (FLOP per byte moved, above): version 5 reads its inputs in half the bytes\n"
            "  of version 4 for the same FLOPs ({:.1f} against {:.1f} here; ~64 against ~32 for large N, where 64\n"
            "  queries share each K/V row). What changes far more is the ceiling: an H100 does ~67 TFLOP/s on its\n"
            "  fp32 units and ~990 on fp16 tensor cores (datasheet, dense) at ~3.35 TB/s, so a kernel is\n"
            "  memory-bound below ~20 FLOP/byte on fp32 units but below ~295 on tensor cores. Versions 3-4 are\n"
            "  above their ridge (compute-bound); version 5, with the same tiles, is far below its own: on tensor\n"
            "  cores the bytes (and the softmax's exponentials) set the pace again, which is why FlashAttention-2\n"
            "  and -3 work on bigger tiles and on overlapping the softmax with the matrix products.\n",
            tc, warp);
    }
}

// The emulator's traffic per version as a bar chart, when --save-figures asks for it.
void figure_traffic(const Setup& z, bool causal, const Runs& runs, const std::string& figures_dir) {
    if (figures_dir.empty()) return;
    const auto& [B, H, N, D] = std::tie(z.B, z.H, z.N, z.D);
    const auto& traffic = runs.traffic;
    figure::BarChart bars{
        fmt::format("Global-memory traffic per kernel (emulator's counts, B={} H={} N={} d_head={}{})", B, H, N, D,
                    causal ? ", causal" : ""),
        "bytes loaded + stored (log scale)"};
    for (const auto& [version, stats] : traffic) {
        bars.bars.push_back({std::string(kernels::name(version)), double(stats.traffic.bytes()),
                             figure::palette(std::size_t(version))});
    }
    bars.log_y = true;
    bars.format = [](double b) { return mebibytes(b); };
    bars.width = 1000;
    figure::save(figure::bar_chart(bars), figures_dir, "06_kernel_traffic.png");
}

void step_timing(const Tracer& trace, const Setup& z, const Buffers& x, const Runs& runs, int warmup, int repeats,
                 int& step) {
    const auto& [p, device] = std::tie(z.p, z.device);
    const kernels::Inputs in = x.inputs();
    const auto& traffic = runs.traffic;
    trace.section(fmt::format("step {}: timing", step++));
    const double flops = attention_flops(p);
    if (!device.available) {
        fmt::print(
            "  timing needs a GPU: the emulator's seconds above say nothing about one.\n"
            "  On a CUDA machine this step shows each version's median time over {} launches and its GFLOP/s.\n",
            repeats);
    } else {
        fmt::print("  median of {} launches after {} warm-up launches, cudaEvent timing; {:.3g} GFLOP per launch\n",
                   repeats, warmup, flops / 1e9);
        fmt::print("    {:<12} {:>12} {:>12} {:>10} {:>10} {:>14}\n", "version", "median ms", "best ms", "GFLOP/s",
                   "registers", "shared bytes");
        for (const auto& [version, stats] : traffic) {
            const kernels::device::Timing t = kernels::device::time(version, p, in, warmup, repeats);
            fmt::print("    {:<12} {:>12.3f} {:>12.3f} {:>10.1f} {:>10} {:>14}\n", kernels::name(version), t.median_ms,
                       t.min_ms, flops / (t.median_ms * 1e-3) / 1e9, t.registers, t.shared_bytes);
        }
    }
}

// Every row of the GPU's CSV.
void print_every_row(const GpuResults& gpu) {
    fmt::print("\n  every row of the file:\n");
    fmt::print("    {:<18} {:<5} {:>6} {:>11} {:>9}   {}\n", "version", "dtype", "N", "median ms", "TFLOP/s",
               "measured on");
    for (const GpuRow& r : gpu.rows) {
        const std::string n = fmt::format("{}{}", r.seq, r.causal ? "c" : "");
        if (r.median_ms > 0.0) {
            fmt::print("    {:<18} {:<5} {:>6} {:>11.3f} {:>9.2f}   {}\n", r.version, r.dtype, n, r.median_ms, r.tflops,
                       r.gpu);
        } else {
            fmt::print("    {:<18} {:<5} {:>6} {:>11} {:>9}   {} ({})\n", r.version, r.dtype, n, "-", "-", r.gpu,
                       r.note);
        }
    }
}

// TFLOP/s against N per version from the GPU's CSV, when --save-figures asks for it.
void figure_gpu_timings(const GpuResults& gpu, const std::string& figures_dir) {
    if (figures_dir.empty() || gpu.rows.empty()) return;
    figure::LinePlot plot{fmt::format("{}: attention TFLOP/s vs N (B=8 H=16 d_head=64)", gpu.rows.front().gpu),
                          "N (sequence length)", "TFLOP/s"};
    plot.width = 1200;
    std::map<std::string, figure::Series> series;
    for (const GpuRow& r : gpu.rows) {
        if (r.median_ms <= 0.0 || r.causal) continue;
        figure::Series& line = series[r.version + " " + r.dtype];
        line.name = r.version + " " + r.dtype;
        line.x.push_back(r.seq), line.y.push_back(r.tflops);
    }
    std::size_t colour = 0;
    for (auto& [name, line] : series)
        if (line.x.size() >= 2) line.color = figure::palette(colour++), plot.series.push_back(line);
    if (plot.series.empty())
        fmt::print("  (no version was timed at two or more N: nothing to plot)\n");
    else
        figure::save(figure::line_plot(plot), figures_dir, "06_gpu_timings.png");
}

// The committed GPU run beside what ptxas reports for this source: time, TFLOP/s and occupancy.
void step_gpu_ladder(const Tracer& trace, const std::string& gpu_results, const std::string& resources_file,
                     const std::string& figures_dir, int& step) {
    trace.section(fmt::format("step {}: the ladder on a real GPU, and what the compiler says about each rung", step++));
    if (!std::filesystem::exists(gpu_results)) {
        fmt::print(
            "  no GPU figures yet: run scripts/gpu-check on a machine with an NVIDIA GPU; it writes\n"
            "  docs/figures/gpu/06_gpu_timings.csv, and --gpu-results FILE shows it here.\n");
        return;
    }
    const GpuResults gpu = gpu_reports::read_gpu_results(gpu_results);
    fmt::print("  measured: {}\n  ({})\n", gpu_results, gpu.provenance);
    const bool have_resources = std::filesystem::exists(resources_file);
    const gpu_reports::ResourceFile resources =
        have_resources ? gpu_reports::read_kernel_resources(resources_file) : gpu_reports::ResourceFile{};
    if (have_resources)
        fmt::print("  compiler: {}\n  ({})\n", resources_file, resources.provenance);
    else
        fmt::print("  ({} is missing: scripts/kernel-resources writes it where nvcc is installed)\n", resources_file);
    int n_ref = 0;  // N = 4096 if measured (the goals' size), else the largest N in the file
    for (const GpuRow& r : gpu.rows)
        if (r.median_ms > 0.0 && (n_ref != 4096) && (r.seq == 4096 || r.seq > n_ref)) n_ref = r.seq;
    auto measured = [&](const std::string& version, bool is_causal) -> const GpuRow* {
        for (const GpuRow& r : gpu.rows)
            if (r.version == version && r.seq == n_ref && r.causal == is_causal && r.median_ms > 0.0) return &r;
        return nullptr;
    };
    kernels::Problem bench;  // the size gpu-check times: B=8, H=16, d_head=64
    bench.batch = 8, bench.heads = 16, bench.seq = n_ref > 0 ? n_ref : 4096, bench.d_head = 64;
    fmt::print(
        "  N={}, B=8, H=16, d_head=64, non-causal. Occupancy: warps a Hopper SM holds / 64, from registers and\n"
        "  shared memory per block (65536 registers, 228 KiB; the smallest limit is named).\n",
        bench.seq);
    fmt::print("    {:<12} {:<5} {:>9} {:>8} {:>7} | {:^31} | {:^37}\n", "version", "dtype", "median ms", "TFLOP/s",
               "x prev", "in that run: regs, local, occ.", "this source: regs, stack, occ.");
    const GpuRow* previous = nullptr;
    bool any_changed = false;
    for (Version version : kernels::versions) {
        const std::string name(kernels::name(version));
        const GpuRow* row = measured(name, false);
        const int threads = int(kernels::launch_config(version, bench).block[0]);
        std::string then = "-", now = "-";
        bool changed = false;
        const auto found = resources.of.find({name, version == Version::naive ? 0 : 64});
        if (row != nullptr && row->registers >= 0) {
            const kernels::Occupancy o = kernels::occupancy_sm90(row->registers, row->shared_bytes, threads);
            then =
                fmt::format("{:>3} {:>4} B {:>6.2f}% ({})", row->registers, row->local_bytes, 100.0 * o.share, o.limit);
        }
        if (found != resources.of.end()) {
            const gpu_reports::KernelResources& k = found->second;
            const kernels::Occupancy o = kernels::occupancy_sm90(k.registers, k.shared_bytes, threads);
            now = fmt::format("{:>3} {:>4} B {:>6.2f}% {:>2} blocks ({})", k.registers, k.stack, 100.0 * o.share,
                              o.blocks, o.limit);
            changed =
                row != nullptr && row->registers >= 0 &&
                (row->registers != k.registers || row->local_bytes != k.stack || row->shared_bytes != k.shared_bytes);
        }
        any_changed = any_changed || changed;
        if (row == nullptr) {
            fmt::print("    {:<12} {:<5} {:>9} {:>8} {:>7} | {:<31} | {:<37}\n", name,
                       kernels::sixteen_bit(version) ? "fp16" : "fp32", "-", "-", "-", "not in this run", now);
        } else {
            fmt::print("    {:<12} {:<5} {:>9.3f} {:>8.2f} {:>7} | {:<31} | {:<37}{}\n", name, row->dtype,
                       row->median_ms, row->tflops,
                       previous != nullptr ? fmt::format("{:.2f}x", previous->median_ms / row->median_ms) : "", then,
                       now, changed ? " *" : "");
        }
        fmt::print("{}", wrapped(reason_now(version), "        "));
        if (changed) fmt::print("{}", wrapped(reason_then(version), "        "));
        if (row != nullptr) previous = row;
    }
    for (const char* library : {"torch_sdpa_flash", "torch_sdpa"}) {
        for (const GpuRow& r : gpu.rows)
            if (r.version == library && r.seq == n_ref && !r.causal && r.median_ms > 0.0)
                fmt::print("    {:<18} {:<5} {:>9.3f} {:>8.2f}   {}\n", r.version, r.dtype, r.median_ms, r.tflops,
                           r.note);
    }
    if (any_changed) {
        fmt::print(
            "  * this source's registers, stack or shared memory differ from the measured kernel's: the kernel\n"
            "    changed after that run, and its figures above are the old kernel's. Its own await the next\n"
            "    scripts/gpu-check run on a GPU; the occupancy beside it is what the compiler's report "
            "predicts.\n");
    }
    print_every_row(gpu);
    figure_gpu_timings(gpu, figures_dir);
}

}  // namespace

int main(int argc, char** argv) {
    lesson::App app{"Lesson 06: attention as CUDA kernels (naive, online softmax, tiled), on a GPU or the CPU emulator",
                    "06_cuda_kernel"};
    cli::LessonOptions opt;
    opt.dims.batch = 1;
    opt.dims.heads = 2;
    opt.dims.seq = 512;
    int d_head = 64;
    bool causal = false;
    std::string schedule_name = "fibers";
    int warmup = 3, repeats = 20;
    std::string figures_dir;
    std::string gpu_results = HEADWISE_SOURCE_DIR "/docs/data/gpu-h200-2026-11-26.csv";
    std::string resources_file = HEADWISE_SOURCE_DIR "/docs/data/kernel_resources_sm90.txt";
    cli::add_lesson_options(app, opt, "batch,seq,heads,seed");
    app.add_option("--gpu-results", gpu_results,
                   "the CSV scripts/gpu-check wrote on a GPU machine (default: the committed H200 run); shown in "
                   "the last steps when the file exists")
        ->type_name("CSV")
        ->capture_default_str();
    app.add_option("--kernel-resources", resources_file,
                   "ptxas's registers, stack and shared memory per kernel (scripts/kernel-resources writes it)")
        ->type_name("FILE")
        ->capture_default_str();
    lesson::add_save_figures(app, figures_dir, "the traffic chart (PNG)");
    app.add_option("--d-head", d_head, "width of one head; the register-array kernels exist for 8, 16, 32, 64, 128")
        ->check_member({8, 16, 32, 64, 128})
        ->capture_default_str();
    app.add_flag("--causal", causal, "query i sees keys 0..i only (tiles above the diagonal are skipped)");
    app.add_option(
           "--schedule", schedule_name,
           "how the emulator runs a block's threads: fibers, fibers_reversed, or threads (one std::thread each)")
        ->check_member({"fibers", "fibers_reversed", "threads"})
        ->capture_default_str();
    lesson::add_bounded_option(app, "--warmup", warmup, "untimed launches before timing (GPU only)", 0, 100);
    lesson::add_bounded_option(app, "--repeats", repeats, "timed launches; the median is shown (GPU only)", 1, 1000);
    return lesson::run(app, argc, argv, [&] {
        const std::size_t B = opt.dims.batch, H = opt.dims.heads, N = opt.dims.seq, D = std::size_t(d_head);
        const std::map<std::string, emulator::Schedule> schedules{
            {"fibers", emulator::Schedule::fibers},
            {"fibers_reversed", emulator::Schedule::fibers_reversed},
            {"threads", emulator::Schedule::threads}};
        const emulator::Schedule schedule = schedules.at(schedule_name);
        const Tracer trace(!opt.quiet);
        Random rng(opt.seed);
        kernels::Problem p;
        p.batch = int(B), p.heads = int(H), p.seq = int(N), p.d_head = d_head, p.causal = causal;
        // The emulator's work, computed by the kernels library (memory is charged as allocated).
        if (const double accesses = kernels::emulation_accesses(p); accesses > kernels::emulation_budget) {
            throw usage_error(
                fmt::format("lesson 06 at these sizes would make about {:.2g} emulated memory accesses "
                            "(the limit is {:.0g}, about 15 s); use a smaller --seq, --heads or --batch",
                            accesses, kernels::emulation_budget));
        }
        fmt::print("Lesson 06: attention as CUDA kernels   B={} H={} N={} d_head={} causal={} seed={}\n", B, H, N, D,
                   causal ? "yes" : "no", opt.seed);
        const kernels::device::Status device = kernels::device::status();
        if (device.available) {
            fmt::print("{}: the kernels run on the GPU; the emulator runs them once more to count their traffic\n",
                       device.text);
        } else {
            fmt::print("no usable GPU was found ({}): the kernels run on the CPU emulator (schedule: {})\n",
                       device.text, emulator::name(schedule));
        }

        const Setup z{B, H, N, D, p, schedule, device};
        const Buffers x = step1_buffers(trace, rng, z);
        const Tensor4 ref = step2_reference(trace, x, causal);  // (B, H, N, d_head)
        int step = 3;
        Runs runs = steps_each_version(trace, z, x, ref, step);
        step_traffic(trace, z, x, runs, step);
        figure_traffic(z, causal, runs, figures_dir);
        if (!runs.all_ok) {
            fmt::print("\nA kernel disagrees with the reference: nothing is timed until every version is right.\n");
            return cli::exit_failure;
        }
        step_timing(trace, z, x, runs, warmup, repeats, step);
        step_gpu_ladder(trace, gpu_results, resources_file, figures_dir, step);
        return cli::exit_ok;
    });
}
