// headwise_gemm_bench -- the projections' GEMMs with every candidate library, on the same
// threads, calls interleaved in one process (which GEMM the projections should use).
//
//   HEADWISE_THREADS=2 build/bench/headwise_gemm_bench [rounds]     (default 9 rounds)
//
// The shapes are the benchmark set's projections, y (rows, out) = x (rows, in) . W^T + b with W
// stored (out, in) as nn.MultiheadAttention keeps it: at (8, 512, 512, 8) and (4, 1024, 768, 12),
// rows = B * N = 4096, the QKV projection (in = d_model, out = 3 * d_model) and the output
// projection (in = out = d_model). Candidates, each on the thread count headwise uses
// (HEADWISE_THREADS, or the CPUs the process may use):
//
//   openblas-split  headwise's linear_rows: one OpenBLAS call per row panel on headwise's threads
//   openblas-2d     the same calls on a 2-D grid of tiles (rows x columns), for many cores
//   openblas-own    one OpenBLAS call on OpenBLAS's own threads
//   blis            BLIS 0.9's bli_sgemm (libblis.so.4, loaded with dlopen when installed: its
//                   cblas_sgemm would otherwise clash with OpenBLAS's), on its own threads, with
//                   the widest kernels the CPU runs (BLIS_ARCH_TYPE, unless set)
//   onednn          a oneDNN 2.6 matmul primitive with the bias fused (built when CMake finds
//                   libdnnl-dev), on its OpenMP threads
//
// Every candidate's output is checked against openblas-split's before anything is timed. Each
// round runs every candidate in turn (a warm-up call, then the best of three); the table gives the
// medians over rounds of wall time and of the process's CPU time per call, and GFLOP/s.
#include "bench_common.hpp"
#include "headwise/fast/blas.hpp"
#include "headwise/fast/parallel.hpp"

#include "headwise/base/tensor.hpp"

#include <fmt/format.h>

#include <dlfcn.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#ifdef HEADWISE_WITH_DNNL
#include <dnnl.hpp>
#include <omp.h>
#endif

using namespace headwise;

namespace {

struct Shape {
    const char* name;
    std::size_t rows, in, out;
};

// y (rows, out) = x (rows, in) . W^T + b, W stored (out, in).
struct Problem {
    Shape shape;
    std::vector<float> x, w, b, y;
};

using Gemm = std::function<void(Problem&)>;

struct Candidate {
    std::string name;
    Gemm run;
    std::function<void()> after = [] {};  // after its timed calls, before the next candidate's
};

// OpenBLAS's own function that stops its worker threads (blas_coretype.cpp uses it too); weak, so
// an OpenBLAS without it leaves them spinning.
extern "C" int blas_thread_shutdown_(void) __attribute__((weak));

// BLIS through dlopen: its typed API, with W^T read through strides (no copy).
// bli_sgemm(transa, transb, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc), dim_t and
// inc_t 64-bit (BLIS's default on x86-64), BLIS_NO_TRANSPOSE = 0.
using BliSgemm = void (*)(int, int, std::int64_t, std::int64_t, std::int64_t, const float*, const float*, std::int64_t,
                          std::int64_t, const float*, std::int64_t, std::int64_t, const float*, float*, std::int64_t,
                          std::int64_t);
using BliSetThreads = void (*)(std::int64_t);

std::optional<Candidate> blis(std::size_t threads, std::string& note) {
    const char* path = std::getenv("HEADWISE_BLIS");  // another build of BLIS, if wanted
    // BLIS 0.9 picks its kernels from the CPU's family and model like OpenBLAS, and on a CPU newer
    // than its table (this project's Zen 5) falls back to its generic C kernels, 5-6x slower. Its
    // BLIS_ARCH_TYPE (read when it loads) names the kernels instead: 0 = skx (AVX-512), 3 = haswell.
    std::string arch = "its own pick";
    if (std::getenv("BLIS_ARCH_TYPE") == nullptr) {
        const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
        const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        if (avx512 || avx2) {
            setenv("BLIS_ARCH_TYPE", avx512 ? "0" : "3", 1);
            arch = avx512 ? "skx kernels, BLIS_ARCH_TYPE=0" : "haswell kernels, BLIS_ARCH_TYPE=3";
        }
    } else {
        arch = fmt::format("BLIS_ARCH_TYPE={} from the environment", std::getenv("BLIS_ARCH_TYPE"));
    }
    void* lib = dlopen(path != nullptr ? path : "libblis.so.4", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (lib == nullptr) {
        note = "BLIS not installed (apt-get install libblis-dev): skipped";
        return std::nullopt;
    }
    auto gemm = reinterpret_cast<BliSgemm>(dlsym(lib, "bli_sgemm"));
    auto set_threads = reinterpret_cast<BliSetThreads>(dlsym(lib, "bli_thread_set_num_threads"));
    if (gemm == nullptr || set_threads == nullptr) {
        note = "BLIS found but without bli_sgemm: skipped";
        return std::nullopt;
    }
    set_threads(static_cast<std::int64_t>(threads));
    note = fmt::format("BLIS ({}, {}, {} threads)", path != nullptr ? path : "libblis.so.4", arch, threads);
    return Candidate{"blis", [gemm](Problem& p) {
                         const auto [name, rows, in, out] = p.shape;
                         for (std::size_t r = 0; r < rows; ++r)
                             std::copy(p.b.begin(), p.b.end(), p.y.begin() + r * out);
                         const float one = 1.0f;
                         gemm(0, 0, std::int64_t(rows), std::int64_t(out), std::int64_t(in), &one, p.x.data(),
                              std::int64_t(in), 1, p.w.data(), 1, std::int64_t(in), &one, p.y.data(), std::int64_t(out),
                              1);
                     }};
}

#ifdef HEADWISE_WITH_DNNL
// One matmul primitive per shape (made once, as an engine would keep it), bias fused.
std::optional<Candidate> onednn(std::size_t threads, std::string& note) {
    omp_set_num_threads(static_cast<int>(threads));
    const dnnl_version_t* v = dnnl_version();
    note = fmt::format("oneDNN {}.{}.{} matmul ({} OpenMP threads)", v->major, v->minor, v->patch, threads);
    struct Cache {
        dnnl::engine engine{dnnl::engine::kind::cpu, 0};
        dnnl::stream stream{engine};
        std::vector<std::pair<const Problem*, dnnl::matmul>> made;
    };
    auto cache = std::make_shared<Cache>();
    return Candidate{
        "onednn", [cache](Problem& p) {
            using dt = dnnl::memory::data_type;
            using tag = dnnl::memory::format_tag;
            const auto rows = dnnl::memory::dim(p.shape.rows), in = dnnl::memory::dim(p.shape.in),
                       out = dnnl::memory::dim(p.shape.out);
            const dnnl::memory::desc src({rows, in}, dt::f32, tag::ab);
            const dnnl::memory::desc wei({in, out}, dt::f32, tag::ba);  // W (out, in) is W^T (in, out)
            const dnnl::memory::desc bias({1, out}, dt::f32, tag::ab);
            const dnnl::memory::desc dst({rows, out}, dt::f32, tag::ab);
            auto it =
                std::find_if(cache->made.begin(), cache->made.end(), [&](const auto& m) { return m.first == &p; });
            if (it == cache->made.end()) {
                const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, bias, dst), cache->engine);
                cache->made.emplace_back(&p, dnnl::matmul(pd));
                it = cache->made.end() - 1;
            }
            dnnl::memory m_src(src, cache->engine, p.x.data()), m_wei(wei, cache->engine, p.w.data()),
                m_bias(bias, cache->engine, p.b.data()), m_dst(dst, cache->engine, p.y.data());
            it->second.execute(
                cache->stream,
                {{DNNL_ARG_SRC, m_src}, {DNNL_ARG_WEIGHTS, m_wei}, {DNNL_ARG_BIAS, m_bias}, {DNNL_ARG_DST, m_dst}});
            cache->stream.wait();
        }};
}
#endif

// The grid of a x b tiles (a * b = threads) whose tiles read the least of x and W together: a
// tile of m rows and n columns reads (m + n) * in floats. Row panels (b = 1) are headwise's split;
// at 16 threads a QKV projection (4096 x 1536) reads 29% less in 8 x 2 tiles. At 2 threads the
// grid is the row panels themselves (a control: the same calls as openblas-split).
std::pair<std::size_t, std::size_t> grid(std::size_t rows, std::size_t out, std::size_t threads) {
    std::pair<std::size_t, std::size_t> best{threads, 1};
    double least = INFINITY;
    for (std::size_t a = 1; a <= threads; ++a) {
        if (threads % a != 0) continue;
        const std::size_t b = threads / a;
        const double reads = double((rows + a - 1) / a) + double((out + b - 1) / b);
        if (reads < least) least = reads, best = {a, b};
    }
    return best;
}

// A candidate for many cores: y = x . W^T + b in a x b tiles, one single-threaded OpenBLAS call
// per tile on headwise's threads (as linear_rows holds OpenBLAS at one thread inside them). Column
// tiles are multiples of 16 floats (64 bytes, one AVX-512 vector), so their edges split no vector.
void tiles_2d(Problem& p, std::size_t threads) {
    const auto [name, rows, in, out] = p.shape;
    const auto [a, b] = grid(rows, out, threads);
    const std::size_t m = (rows + a - 1) / a, n = ((out + b - 1) / b + 15) / 16 * 16;
    fast::parallel_for(a * b, [&](std::size_t tile, std::size_t) {
        const std::size_t r0 = (tile / b) * m, c0 = (tile % b) * n;
        const std::size_t r1 = std::min(rows, r0 + m), c1 = std::min(out, c0 + n);
        if (r0 >= r1 || c0 >= c1) return;
        for (std::size_t r = r0; r < r1; ++r) std::copy(p.b.begin() + c0, p.b.begin() + c1, p.y.begin() + r * out + c0);
        blas::gemm(false, true, r1 - r0, c1 - c0, in, 1.0f, p.x.data() + r0 * in, in, p.w.data() + c0 * in, in, 1.0f,
                   p.y.data() + r0 * out + c0, out);
    });
}

}  // namespace

int main(int argc, char** argv) {
    const std::size_t threads = bench::worker_count_or_exit("headwise_gemm_bench");
    const long rounds = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 9;
    if (argc > 2 || rounds < 1 || rounds > 1000) {
        fmt::print(stderr, "headwise_gemm_bench: usage: headwise_gemm_bench [rounds from 1 to 1000]\n");
        return 2;
    }

    std::vector<Problem> problems;
    for (const Shape& s :
         {Shape{"(8,512,512,8) QKV", 4096, 512, 1536}, Shape{"(8,512,512,8) out", 4096, 512, 512},
          Shape{"(4,1024,768,12) QKV", 4096, 768, 2304}, Shape{"(4,1024,768,12) out", 4096, 768, 768}}) {
        Problem p{s, std::vector<float>(s.rows * s.in), std::vector<float>(s.out * s.in), std::vector<float>(s.out),
                  std::vector<float>(s.rows * s.out)};
        for (std::size_t i = 0; i < p.x.size(); ++i) p.x[i] = float((i * 37) % 101) / 101.0f - 0.5f;
        for (std::size_t i = 0; i < p.w.size(); ++i) p.w[i] = float((i * 53) % 89) / 89.0f - 0.5f;
        for (std::size_t i = 0; i < p.b.size(); ++i) p.b[i] = 0.01f * float(i % 17);
        problems.push_back(std::move(p));
    }

    std::vector<Candidate> candidates;
    std::vector<std::string> notes;
    candidates.push_back({"openblas-split", [](Problem& p) {
                              fast::linear_rows(p.x.data(), p.shape.rows, p.shape.in, p.w.data(), p.shape.out,
                                                p.b.data(), p.y.data());
                          }});
    candidates.push_back({"openblas-own",
                          [threads](Problem& p) {
                              const auto [name, rows, in, out] = p.shape;
                              for (std::size_t r = 0; r < rows; ++r)
                                  std::copy(p.b.begin(), p.b.end(), p.y.begin() + r * out);
                              const int before = blas::threads();
                              if (before != int(threads)) blas::set_threads(int(threads));
                              blas::gemm(false, true, rows, out, in, 1.0f, p.x.data(), in, p.w.data(), in, 1.0f,
                                         p.y.data(), out);
                          },
                          [] {
                              // Its threads spin for a while after each call: stopped, so that they
                              // take no CPU from the next candidate.
                              blas::set_threads(1);
                              if (blas_thread_shutdown_ != nullptr) blas_thread_shutdown_();
                          }});
    candidates.push_back({"openblas-2d", [threads](Problem& p) { tiles_2d(p, threads); }});
    notes.push_back(
        fmt::format("OpenBLAS (split by headwise in row panels or in 2-D tiles, or on its own {} threads)", threads));
    std::string note;
    if (auto c = blis(threads, note)) candidates.push_back(std::move(*c));
    notes.push_back(note);
#ifdef HEADWISE_WITH_DNNL
    if (auto c = onednn(threads, note)) candidates.push_back(std::move(*c));
    notes.push_back(note);
#else
    notes.push_back("oneDNN not built in (apt-get install libdnnl-dev, then configure again): skipped");
#endif

    // The same numbers from every candidate before any timing.
    for (Problem& p : problems) {
        candidates[0].run(p);
        const std::vector<float> want = p.y;
        for (const Candidate& c : candidates) {
            std::fill(p.y.begin(), p.y.end(), std::nanf(""));
            c.run(p);
            double worst = 0;
            for (std::size_t i = 0; i < want.size(); ++i)
                worst = std::max(worst, std::isnan(p.y[i]) ? INFINITY : std::abs(double(p.y[i]) - double(want[i])));
            if (!(worst < 1e-3)) {
                fmt::print(stderr, "headwise_gemm_bench: {} differs from openblas-split by {:.3g} on {}\n", c.name,
                           worst, p.shape.name);
                return 1;
            }
        }
    }

    // wall[problem][candidate], cpu[problem][candidate]: one best-of-3 per round.
    std::vector<std::vector<std::vector<double>>> wall(problems.size(),
                                                       std::vector<std::vector<double>>(candidates.size())),
        cpu = wall;
    for (long r = 0; r < rounds; ++r)
        for (std::size_t pi = 0; pi < problems.size(); ++pi)
            for (std::size_t ci = 0; ci < candidates.size(); ++ci) {
                candidates[ci].run(problems[pi]);  // warm-up: the other candidates' caches and threads are cold
                double best_wall = INFINITY, best_cpu = INFINITY;
                for (int call = 0; call < 3; ++call) {
                    const double c0 = bench::cpu_now();
                    const auto t0 = std::chrono::steady_clock::now();
                    candidates[ci].run(problems[pi]);
                    best_wall = std::min(best_wall,
                                         std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
                    best_cpu = std::min(best_cpu, bench::cpu_now() - c0);
                }
                candidates[ci].after();
                wall[pi][ci].push_back(best_wall);
                cpu[pi][ci].push_back(best_cpu);
            }

    double load[3] = {0, 0, 0};
    if (getloadavg(load, 3) < 0) load[0] = -1;
    fmt::print("{} threads, {} rounds (medians of each round's best of 3), load average {:.2f}\n", threads, rounds,
               load[0]);
    for (const std::string& n : notes) fmt::print("  {}\n", n);
    fmt::print("{:<22}{:<16}{:>10}{:>10}{:>9}{:>10}\n", "projection", "GEMM", "wall ms", "cpu ms", "GFLOP/s",
               "vs split");
    for (std::size_t pi = 0; pi < problems.size(); ++pi) {
        const Shape& s = problems[pi].shape;
        const double gflop = 2.0 * double(s.rows) * double(s.in) * double(s.out) * 1e-9;
        const double split = bench::median(wall[pi][0]);
        for (std::size_t ci = 0; ci < candidates.size(); ++ci) {
            const double w = bench::median(wall[pi][ci]);
            fmt::print("{:<22}{:<16}{:>10.3f}{:>10.3f}{:>9.1f}{:>9.2f}x\n", s.name, candidates[ci].name, 1e3 * w,
                       1e3 * bench::median(cpu[pi][ci]), gflop / w, split / w);
        }
    }
    return 0;
}
