// Lesson 06 -- attention as a CUDA kernel: naive, online softmax, tiled (flash-style).
//
// On a GPU, attention is one kernel launch: a grid of blocks of threads, each thread computing
// part of the output. How the work is cut decides how often each byte of Q, K and V travels
// from global memory (big, slow) to the cores -- and that, not arithmetic, is what limits it.
// Three versions, each in its own file beside this one's output:
//
//   src/kernels/naive.cuh   a thread per query row; the row of N scores parked in global memory
//   src/kernels/online.cuh  a thread per query row; one pass with a running max and sum (no N x N)
//   src/kernels/tiled.cuh   a block per 64 query rows; K and V staged through __shared__ memory
//
// The .cuh files are plain CUDA. nvcc compiles them for the GPU; g++ compiles the very same text
// against src/emulator/, which runs the threads on the CPU (with real barriers) and counts every
// global-memory load and store. This lesson checks every version against the CPU reference
// (headwise::attention_reference, double precision) before it times anything; without a GPU it
// says so and runs the kernels on the emulator.
//
// Dimension letters: B = batch, H = heads, N = sequence length, d_head = width of one head.
// Run:  ./headwise run 6      or      build/lessons/06_cuda_kernel --help

#include "headwise/figure.hpp"
#include "headwise/lesson.hpp"
#include "kernels/attention_kernels.hpp"
#include "kernels/device.hpp"

#include <chrono>
#include <map>

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
        case Version::naive: return "naive: one thread per query row, three passes over an N x N scratch";
        case Version::online: return "online softmax: one thread per query row, one pass, no scratch";
        case Version::tiled: return "tiled: one block per 64 query rows, K/V tiles in shared memory";
    }
    return "?";
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Lesson 06: attention as CUDA kernels (naive, online softmax, tiled), on a GPU or the CPU emulator",
                 "06_cuda_kernel"};
    cli::LessonOptions opt;
    opt.dims.batch = 1;
    opt.dims.heads = 2;
    opt.dims.seq = 1024;
    int d_head = 64;
    bool causal = false;
    std::string schedule_name = "fibers";
    int warmup = 3, repeats = 20;
    std::string figures_dir;
    cli::add_lesson_options(app, opt, "batch,seq,heads,seed");
    app.add_option("--save-figures", figures_dir, "also draw the traffic chart (PNG) into DIR")->type_name("DIR");
    app.add_option("--d-head", d_head, "width of one head; the register-array kernels exist for 8, 16, 32, 64, 128")
        ->check(CLI::IsMember({8, 16, 32, 64, 128}))
        ->capture_default_str();
    app.add_flag("--causal", causal, "query i sees keys 0..i only (tiles above the diagonal are skipped)");
    app.add_option("--schedule", schedule_name,
                   "how the emulator runs a block's threads: fibers, fibers_reversed, or threads (one std::thread each)")
        ->check(CLI::IsMember({"fibers", "fibers_reversed", "threads"}))
        ->capture_default_str();
    app.add_option("--warmup", warmup, "untimed launches before timing (GPU only)")->check(CLI::Range(0, 100))->capture_default_str();
    app.add_option("--repeats", repeats, "timed launches; the median is shown (GPU only)")
        ->check(CLI::Range(1, 1000))
        ->capture_default_str();
    if (const int rc = cli::parse(app, argc, argv); rc >= 0) return rc;

    return cli::guard(argv[0], [&] {
        const std::size_t B = opt.dims.batch, H = opt.dims.heads, N = opt.dims.seq, D = std::size_t(d_head);
        const std::map<std::string, emulator::Schedule> schedules{{"fibers", emulator::Schedule::fibers},
                                                                  {"fibers_reversed", emulator::Schedule::fibers_reversed},
                                                                  {"threads", emulator::Schedule::threads}};
        const emulator::Schedule schedule = schedules.at(schedule_name);
        // Refuse sizes that would not fit or would keep the emulator busy for minutes, before
        // allocating: q, k, v, the reference and three outputs are (B, H, N, d_head), naive's
        // scratch is (B, H, N, N). The emulator makes ~8 d_head global accesses per (query, key)
        // pair over the three versions and the reference, at roughly 0.5e9 per second.
        const std::size_t bhnd = cli::checked_product({B, H, N, D}, "--batch x --heads x --seq x --d-head");
        const std::size_t bhnn = cli::checked_product({B, H, N, N}, "--batch x --heads x --seq x --seq");
        cli::require_memory(4 * (7 * bhnd + bhnn), "lesson 06 at these sizes");
        const double accesses = 8.0 * double(bhnn) * double(D);
        if (accesses > 4e9) {
            throw usage_error(fmt::format("lesson 06 at these sizes would make about {:.2g} emulated memory accesses "
                                          "(the limit is 4e9, about 10 s); use a smaller --seq, --heads or --batch",
                                          accesses));
        }
        const Tracer trace(!opt.quiet);
        Random rng(opt.seed);

        kernels::Problem p;
        p.batch = int(B), p.heads = int(H), p.seq = int(N), p.d_head = d_head, p.causal = causal;
        fmt::print("Lesson 06: attention as CUDA kernels   B={} H={} N={} d_head={} causal={} seed={}\n", B, H, N, D,
                   causal ? "yes" : "no", opt.seed);
        const kernels::device::Status device = kernels::device::status();
        if (device.available) {
            fmt::print("{}: the kernels run on the GPU; the emulator runs them once more to count their traffic\n",
                       device.text);
        } else {
            fmt::print("no CUDA device: running the kernels on the CPU emulator ({}; schedule: {})\n", device.text,
                       emulator::name(schedule));
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
                   mebibytes(4.0 * double(bhnd)), mebibytes(4.0 * double(bhnn)));
        const kernels::Inputs in{q.data(), k.data(), v.data(), key_len.data()};

        // -----------------------------------------------------------------------------------------
        trace.section("step 2: the CPU reference every kernel must match (plain loops, double precision)");
        AttentionOptions ref_options;
        ref_options.causal = causal;
        const Tensor4 ref = attention_reference(q, k, v, ref_options);  // (B, H, N, d_head)
        trace("reference", ref, "B, H, N, d_head");

        // -----------------------------------------------------------------------------------------
        // Steps 3-5: each version, launched and checked. On a GPU the emulator still runs each
        // kernel once, because only it can count the global-memory traffic.
        std::map<Version, emulator::LaunchStats> traffic;
        std::map<Version, double> emulated_seconds;
        bool all_ok = true;
        int step = 3;
        for (Version version : kernels::versions) {
            trace.section(fmt::format("step {}: {}", step++, what_it_does(version)));
            const kernels::LaunchConfig cfg = kernels::launch_config(version, p);
            const std::size_t threads = std::size_t(cfg.grid[0]) * cfg.grid[1] * cfg.grid[2] * cfg.block[0];
            fmt::print("  launch: grid {} x block {} = {} threads, {} bytes of shared memory per block\n",
                       dims3(cfg.grid), dims3(cfg.block), threads, cfg.shared_bytes);
            if (version == Version::naive) {
                fmt::print("          grid = (ceil(N / {}) query blocks, H, B): thread x of block (bx, h, b) owns query "
                           "row bx * {} + x\n",
                           cfg.block[0], cfg.block[0]);
            }
            if (cfg.shared_bytes > 0) {
                const std::size_t tile_rows = cfg.shared_bytes / (2 * sizeof(float) * D);
                fmt::print("          shared: k_tile and v_tile, ({}, {}) floats each; a query block walks at most {} K/V "
                           "tile(s)\n",
                           tile_rows, D, (N + tile_rows - 1) / tile_rows);
            }

            Tensor4 out = Tensor4::from_shape({B, H, N, D});  // (B, H, N, d_head)
            const auto start = std::chrono::steady_clock::now();
            traffic[version] = kernels::emulate(version, p, in, out.data(), schedule);
            emulated_seconds[version] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            if (device.available) kernels::device::run(version, p, in, out.data());  // the GPU's answer is checked
            trace(fmt::format("out ({})", kernels::name(version)), out, "B, H, N, d_head");

            const Errors e = compare(out, ref);
            all_ok = all_ok && e.ok;
            fmt::print("  {} vs the reference: max abs error {:.2e}, max rel error {:.2e}   {}\n", kernels::name(version),
                       e.max_abs, e.max_rel,
                       e.ok ? trace.green("ok") : trace.red("WRONG"));
        }

        // -----------------------------------------------------------------------------------------
        trace.section(fmt::format("step {}: global-memory traffic, counted by the emulator", step++));
        const double tiled_bytes = double(traffic[Version::tiled].traffic.bytes());
        fmt::print("    {:<8} {:>14} {:>12} {:>14} {:>10} {:>10}\n", "version", "loads", "stores", "moved", "x tiled",
                   "emulated");
        for (Version version : kernels::versions) {
            const emulator::Traffic& t = traffic[version].traffic;
            fmt::print("    {:<8} {:>14} {:>12} {:>14} {:>9.1f}x {:>9.2f}s\n", kernels::name(version), t.loads, t.stores,
                       mebibytes(double(t.bytes())), double(t.bytes()) / tiled_bytes, emulated_seconds[version]);
        }
        fmt::print("  naive reads q and k inside its dot products, and the row of scores twice more;\n"
                   "  online keeps q and the output in registers but still reads every k and v row once per query;\n"
                   "  tiled reads every k and v row once per block of {} queries -- that factor is FlashAttention's point.\n",
                   kernels::launch_config(Version::tiled, p).block[0]);
        fmt::print("  (Counted: what the kernels ask of global memory, before any cache would serve it.)\n");
        if (!figures_dir.empty()) {
            figure::BarChart bars{fmt::format("Global-memory traffic per kernel (emulator's counts, B={} H={} N={} d_head={}{})", B,
                                              H, N, D, causal ? ", causal" : ""),
                                  "bytes loaded + stored (log scale)"};
            for (Version version : kernels::versions) {
                bars.bars.push_back({std::string(kernels::name(version)), double(traffic[version].traffic.bytes()),
                                     figure::palette(std::size_t(version))});
            }
            bars.log_y = true;
            bars.format = [](double b) { return mebibytes(b); };
            bars.width = 900;
            figure::save(figure::bar_chart(bars), figures_dir, "06_kernel_traffic.png");
        }

        if (!all_ok) {
            fmt::print("\nA kernel disagrees with the reference: nothing is timed until every version is right.\n");
            return cli::exit_failure;
        }

        // -----------------------------------------------------------------------------------------
        trace.section(fmt::format("step {}: timing", step++));
        if (!device.available) {
            fmt::print("  timing needs a GPU: the emulator's seconds above say nothing about one.\n"
                       "  On a CUDA machine this step shows each version's median time over {} launches and its GFLOP/s.\n",
                       repeats);
            return cli::exit_ok;
        }
        const double flops = attention_flops(p);
        fmt::print("  median of {} launches after {} warm-up launches, cudaEvent timing; {:.3g} GFLOP per launch\n",
                   repeats, warmup, flops / 1e9);
        fmt::print("    {:<8} {:>12} {:>12} {:>10} {:>10} {:>14}\n", "version", "median ms", "best ms", "GFLOP/s",
                   "registers", "shared bytes");
        for (Version version : kernels::versions) {
            const kernels::device::Timing t = kernels::device::time(version, p, in, warmup, repeats);
            fmt::print("    {:<8} {:>12.3f} {:>12.3f} {:>10.1f} {:>10} {:>14}\n", kernels::name(version), t.median_ms,
                       t.min_ms, flops / (t.median_ms * 1e-3) / 1e9, t.registers, t.shared_bytes);
        }
        return cli::exit_ok;
    });
}
