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
//   src/kernels/warp.cuh         a warp per query row at a time: lanes split the keys, then d_head;
//                                __shfl_xor_sync reductions; a K tile padded against bank conflicts
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
// says so and runs the kernels on the emulator.
//
// Dimension letters: B = batch, H = heads, N = sequence length, d_head = width of one head.
// Run:  ./headwise run 6      or      build/lessons/06_cuda_kernel --help

#include "emulator/fragment_layout.hpp"
#include "headwise/io/figure.hpp"
#include "headwise/lesson/lesson.hpp"
#include "kernels/attention_kernels.hpp"
#include "kernels/device.hpp"
#include "kernels/tolerance.hpp"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

using namespace headwise;
using kernels::Version;

namespace {

// ---------------------------------------------------------------------------------------------
// Step helpers.

// How far a kernel's output is from the reference. The verdict uses the tests' tolerance:
// |out - ref| <= 1e-5 + 1e-4 |ref| for every element (fp32 sums vs a double reference).
struct Errors {
    double max_abs = 0.0;
    double max_rel = 0.0;  // over elements with |ref| > 1e-3, so near-zero outputs do not dominate
    bool ok = true;
};

Errors compare(const Tensor4& out, const Tensor4& ref) {
    Errors e;
    for (std::size_t i = 0; i < ref.size(); ++i) {
        const double r = ref.data()[i], diff = std::abs(double(out.data()[i]) - r);
        if (!(diff <= 1e-5 + 1e-4 * std::abs(r))) e.ok = false;  // also catches NaN
        e.max_abs = std::max(e.max_abs, std::isnan(diff) ? INFINITY : diff);
        if (std::abs(r) > 1e-3) e.max_rel = std::max(e.max_rel, diff / std::abs(r));
    }
    return e;
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
            return "warp: a warp per query row at a time, lanes split keys then d_head, shuffles";
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

// One row of the CSV scripts/gpu-check writes (docs/figures/gpu/06_gpu_timings.csv).
struct GpuRow {
    std::string gpu, version, dtype, note;
    int seq = 0;
    double median_ms = 0.0, tflops = 0.0;
};
struct GpuResults {
    std::string provenance;  // the file's first line: which GPU, driver, CUDA, date
    std::vector<GpuRow> rows;
};

// Reads the CSV: a "# ..." provenance line, a header, then one row per (version, dtype, N).
// Columns by name, so later columns may be added. A malformed file is a usage_error.
GpuResults read_gpu_results(const std::filesystem::path& file) {
    std::ifstream in(file);
    if (!in) throw usage_error(fmt::format("cannot read {}", file.string()));
    GpuResults r;
    std::string line;
    std::vector<std::string> header;
    auto split = [](const std::string& text) {
        std::vector<std::string> cells;
        std::stringstream ss(text);
        for (std::string cell; std::getline(ss, cell, ',');) cells.push_back(cell);
        if (!text.empty() && text.back() == ',') cells.emplace_back();
        return cells;
    };
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        if (line[0] == '#') {
            if (r.provenance.empty()) r.provenance = line.substr(line.find_first_not_of("# "));
            continue;
        }
        const std::vector<std::string> cells = split(line);
        if (header.empty()) {
            header = cells;
            continue;
        }
        auto cell = [&](std::string_view name) -> std::string {
            for (std::size_t c = 0; c < header.size(); ++c)
                if (header[c] == name) return c < cells.size() ? cells[c] : "";
            throw usage_error(fmt::format("{}: no column '{}'", file.string(), name));
        };
        GpuRow row;
        row.gpu = cell("gpu"), row.version = cell("version"), row.dtype = cell("dtype"), row.note = cell("note");
        try {
            row.seq = std::stoi(cell("seq"));
            if (!cell("median_ms").empty())
                row.median_ms = std::stod(cell("median_ms")), row.tflops = std::stod(cell("tflops"));
        } catch (const std::exception&) {
            throw usage_error(fmt::format("{}: a malformed row: {}", file.string(), line));
        }
        r.rows.push_back(row);
    }
    if (header.empty()) throw usage_error(fmt::format("{} has no header line", file.string()));
    return r;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Lesson 06: attention as CUDA kernels (naive, online softmax, tiled), on a GPU or the CPU emulator",
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
    std::string gpu_results = HEADWISE_SOURCE_DIR "/docs/figures/gpu/06_gpu_timings.csv";
    cli::add_lesson_options(app, opt, "batch,seq,heads,seed");
    app.add_option("--gpu-results", gpu_results,
                   "the CSV scripts/gpu-check wrote on a GPU machine; shown in the last step when the file exists")
        ->type_name("CSV")
        ->capture_default_str();
    app.add_option("--save-figures", figures_dir, "also draw the traffic chart (PNG) into DIR")->type_name("DIR");
    app.add_option("--d-head", d_head, "width of one head; the register-array kernels exist for 8, 16, 32, 64, 128")
        ->check(CLI::IsMember({8, 16, 32, 64, 128}))
        ->capture_default_str();
    app.add_flag("--causal", causal, "query i sees keys 0..i only (tiles above the diagonal are skipped)");
    app.add_option(
           "--schedule", schedule_name,
           "how the emulator runs a block's threads: fibers, fibers_reversed, or threads (one std::thread each)")
        ->check(CLI::IsMember({"fibers", "fibers_reversed", "threads"}))
        ->capture_default_str();
    app.add_option("--warmup", warmup, "untimed launches before timing (GPU only)")
        ->check(CLI::Range(0, 100))
        ->capture_default_str();
    app.add_option("--repeats", repeats, "timed launches; the median is shown (GPU only)")
        ->check(CLI::Range(1, 1000))
        ->capture_default_str();
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

        // -----------------------------------------------------------------------------------------
        trace.section("step 1: the buffers the kernels read and write, all in global memory");
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
                   mebibytes(4.0 * double(kernels::qkv_elements(p))),
                   mebibytes(4.0 * double(kernels::scores_elements(p))));
        const kernels::Inputs in{q.data(), k.data(), v.data(), key_len.data()};

        // -----------------------------------------------------------------------------------------
        trace.section("step 2: the CPU reference every kernel must match (plain loops, double precision)");
        AttentionOptions ref_options;
        ref_options.causal = causal;
        const Tensor4 ref = attention_reference(q, k, v, ref_options);  // (B, H, N, d_head)
        trace("reference", ref, "B, H, N, d_head");

        // -----------------------------------------------------------------------------------------
        // Steps 3-7: each version, launched and checked. On a GPU the emulator still runs each
        // kernel once, because only it can count the global-memory traffic and the bank conflicts.
        std::map<Version, emulator::LaunchStats> traffic;
        std::map<Version, double> emulated_seconds;
        bool all_ok = true;
        int step = 3;
        for (Version version : kernels::versions) {
            if (version == Version::mma) {
                trace.section(fmt::format("step {}: who holds what in a tensor-core tile (mma.sync m16n8k16)", step++));
                print_fragment_layouts();
            }
            trace.section(fmt::format("step {}: {}", step++, what_it_does(version)));
            if (!kernels::supports(version, d_head)) {
                fmt::print("  (no build for d_head {}: {})\n", d_head,
                           kernels::needs_sm80(version)
                               ? "this version is built for d_head 64 and 128"
                               : "wmma tiles are 16 wide, so this version needs a multiple of 16");
                continue;
            }
            const kernels::LaunchConfig cfg = kernels::launch_config(version, p);
            const std::size_t threads = std::size_t(cfg.grid[0]) * cfg.grid[1] * cfg.grid[2] * cfg.block[0];
            fmt::print("  launch: grid {} x block {} = {} threads, {} bytes of shared memory per block\n",
                       dims3(cfg.grid), dims3(cfg.block), threads, cfg.shared_bytes);
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
                    "          4 warps of 32 lanes own {} query rows; shared: q_tile ({}, {}), k_tile (32, {} + 1 "
                    "padding column), v_tile (32, {})\n",
                    cfg.rows_per_block, cfg.rows_per_block, D, D, D);
                fmt::print(
                    "          per row and tile: lane j scores key j; max and sum over the warp by __shfl_xor_sync "
                    "(5 steps each); p_j broadcast by __shfl_sync; lane L adds columns L, L+32, ...\n");
            }
            if (version == Version::tensor_core) {
                fmt::print(
                    "          {} warps own 16 query rows each; per 32-key tile: S (16, 32) = {} wmma::mma_sync, "
                    "softmax in fp32, O (16, {}) += P V: {} more\n",
                    cfg.block[0] / 32, 2 * D / 16, D, 2 * D / 16);
                fmt::print(
                    "          q, k, v are rounded to fp16 first (round to nearest even); each mma multiplies fp16 "
                    "tiles and adds in fp32\n");
            }

            if (kernels::needs_sm80(version)) {
                const std::size_t Bc = D <= 64 ? 32 : 16;  // keys per tile (flash.cuh's FlashShape)
                fmt::print(
                    "          4 warps own 16 query rows each; per {}-key tile: S (16, {}) = {} mma.sync, the online "
                    "softmax\n"
                    "          on S's registers, O (16, {}) += P V: {} more; K and V (transposed) read by ldmatrix\n",
                    Bc, Bc, (D / 16) * (Bc / 8), D, (Bc / 16) * (D / 8));
                if (version == Version::mma)
                    fmt::print(
                        "          K/V tiles padded to {} + 8 halves per row; loaded, a barrier, then the math\n", D);
                else
                    fmt::print(
                        "          K/V tiles of {} halves per row, two stages: tile t + 1 is copied by cp.async "
                        "while tile t is multiplied; 16-byte chunks XOR-swizzled by row\n",
                        D);
            }

            Tensor4 out = Tensor4::from_shape({B, H, N, D});  // (B, H, N, d_head)
            const bool warp_level = version == Version::warp || kernels::sixteen_bit(version);
            const emulator::Schedule s =
                warp_level && schedule == emulator::Schedule::threads ? emulator::Schedule::fibers : schedule;
            if (s != schedule)
                fmt::print("  (warp collectives run under the fiber schedules: this version runs on fibers)\n");
            const auto start = std::chrono::steady_clock::now();
            traffic[version] = kernels::emulate(version, p, in, out.data(), s);
            emulated_seconds[version] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            if (device.available) kernels::device::run(version, p, in, out.data());  // the GPU's answer is checked
            trace(fmt::format("out ({})", kernels::name(version)), out, "B, H, N, d_head");

            const Errors e = compare(out, ref);
            const bool ok = kernels::sixteen_bit(version) ? within_fp16_bound(out, ref, q, k, v, p, key_len) : e.ok;
            all_ok = all_ok && ok;
            fmt::print("  {} vs the reference: max abs error {:.2e}, max rel error {:.2e}   {}\n",
                       kernels::name(version), e.max_abs, e.max_rel, ok ? trace.green("ok") : trace.red("WRONG"));
            if (kernels::sixteen_bit(version)) {
                fmt::print(
                    "  (fp16 inputs: checked against the bound derived in tensor_core.cuh, per row\n"
                    "   max|v| (3u + exp(2e) - 1) with u = 2^-11 and e = 2u scale sum_c |q_c k_c|, not fp32's 1e-4)\n");
            }
        }

        // -----------------------------------------------------------------------------------------
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
                "  in its busiest bank. In the warp kernel's score loop the 32 lanes read column c of 32 key rows:\n"
                "    k_tile (32, {})     {:>12} requests, {:>12} wavefronts, {:>12} conflicts (all lanes in bank c)\n"
                "    k_tile (32, {} + 1) {:>12} requests, {:>12} wavefronts, {:>12} conflicts (row j's word in bank j "
                "+ c)\n",
                D, unpadded.shared.requests, unpadded.shared.wavefronts, unpadded.shared.conflicts(), D,
                padded.requests, padded.wavefronts, padded.conflicts());
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
        if (!figures_dir.empty()) {
            figure::BarChart bars{
                fmt::format("Global-memory traffic per kernel (emulator's counts, B={} H={} N={} d_head={}{})", B, H, N,
                            D, causal ? ", causal" : ""),
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

        if (!all_ok) {
            fmt::print("\nA kernel disagrees with the reference: nothing is timed until every version is right.\n");
            return cli::exit_failure;
        }

        // -----------------------------------------------------------------------------------------
        trace.section(fmt::format("step {}: timing", step++));
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
                fmt::print("    {:<12} {:>12.3f} {:>12.3f} {:>10.1f} {:>10} {:>14}\n", kernels::name(version),
                           t.median_ms, t.min_ms, flops / (t.median_ms * 1e-3) / 1e9, t.registers, t.shared_bytes);
            }
        }

        // -----------------------------------------------------------------------------------------
        trace.section(fmt::format("step {}: figures from a real GPU (scripts/gpu-check)", step++));
        if (!std::filesystem::exists(gpu_results)) {
            fmt::print(
                "  no GPU figures yet: run scripts/gpu-check on a machine with an NVIDIA GPU; it writes\n"
                "  {} and this step shows it.\n",
                gpu_results);
            return cli::exit_ok;
        }
        const GpuResults gpu = read_gpu_results(gpu_results);
        fmt::print("  GPU figures from {}\n  ({})\n", gpu_results, gpu.provenance);
        fmt::print("    {:<18} {:<5} {:>6} {:>11} {:>9}   {}\n", "version", "dtype", "N", "median ms", "TFLOP/s",
                   "measured on");
        for (const GpuRow& r : gpu.rows) {
            if (r.median_ms > 0.0) {
                fmt::print("    {:<18} {:<5} {:>6} {:>11.3f} {:>9.2f}   {}\n", r.version, r.dtype, r.seq, r.median_ms,
                           r.tflops, r.gpu);
            } else {
                fmt::print("    {:<18} {:<5} {:>6} {:>11} {:>9}   {} ({})\n", r.version, r.dtype, r.seq, "-", "-",
                           r.gpu, r.note);
            }
        }
        if (!figures_dir.empty() && !gpu.rows.empty()) {
            figure::LinePlot plot{fmt::format("{}: attention TFLOP/s vs N (B=8 H=16 d_head=64)", gpu.rows.front().gpu),
                                  "N (sequence length)", "TFLOP/s"};
            plot.width = 1200;
            std::map<std::string, figure::Series> series;
            for (const GpuRow& r : gpu.rows) {
                if (r.median_ms <= 0.0) continue;
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
        return cli::exit_ok;
    });
}
