// `headwise bench` -- build the benchmarks and put headwise, ONNX Runtime, PyTorch and NumPy side by side
// (scripts/bench-compare); `--threads 1,2,4` sweeps thread counts. Benchmarks are measured here, never
// asserted in timed tests.
#include "common.hpp"

#include "headwise/fast/blas_coretype.hpp"
#include "headwise/fast/fused_attention.hpp"
#include "headwise/fast/isa.hpp"
#include "headwise/fast/parallel.hpp"

#include <CLI/CLI.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <stdexcept>

namespace headwise::runner {

void add_bench_command(CLI::App& app, Action& action) {
    auto extra = std::make_shared<std::vector<std::string>>();
    auto* cmd = app.add_subcommand(
        "bench",
        "benchmark the attention forward against ONNX Runtime, PyTorch and NumPy, and lesson 12's decoder against "
        "llama.cpp (minutes)");
    auto threads_list = std::make_shared<std::string>();
    cmd->add_option("--threads", *threads_list,
                    "thread counts to sweep, e.g. 1,2,4,8,16: headwise, ONNX Runtime and PyTorch at each count, with "
                    "GFLOP/s and parallel efficiency (default: the count headwise uses here)")
        ->check([](const std::string& text) -> std::string {
            // What scripts/bench-compare accepts, said here in one line.
            std::vector<long> seen;
            std::size_t start = 0;
            while (start <= text.size()) {
                const std::size_t comma = std::min(text.find(',', start), text.size());
                const std::string item = text.substr(start, comma - start);
                char* end = nullptr;
                const long t = item.empty() ? 0 : std::strtol(item.c_str(), &end, 10);
                if (item.empty() || *end != '\0' || t < 1 || t > 1024 ||
                    std::find(seen.begin(), seen.end(), t) != seen.end())
                    return "expected distinct whole numbers from 1 to 1024 such as 1,2,4, got '" + text + "'";
                seen.push_back(t);
                start = comma + 1;
            }
            return {};
        });
    cmd->add_option("args", *extra, "arguments for scripts/bench-compare (after --), e.g. -- --quick --rounds 3");
    cmd->callback([&action, extra, threads_list] {
        action = [extra, threads_list] {
            std::size_t threads = 0;
            try {
                threads = fast::worker_count();
            } catch (const std::runtime_error& e) {  // only a bad HEADWISE_THREADS: one line, exit 2
                throw usage_error(e.what());
            }
            Isa isa = Isa::scalar;
            try {
                isa = fast::fast_isa();
            } catch (const headwise::usage_error& e) {  // a bad HEADWISE_ISA: one line, exit 2
                throw usage_error(e.what());
            }
            // Which BLAS kernels every figure below is made with (blas_coretype.hpp chose them
            // before main(); the programs started from here inherit the choice). After the checks
            // above, so that a bad variable is one line, with no warning before it.
            const blas::KernelReport k = blas::kernel_report();
            fmt::print("headwise: BLAS kernels {} ({}); {}\n", k.corename, k.source, k.config);
            if (!k.warning.empty()) fmt::print(stderr, "headwise: warning: {}\n", k.warning);
            fmt::print(
                "headwise: {} threads (the CPUs this process may use, within its cgroup's quota; "
                "HEADWISE_THREADS overrides)\n",
                threads);
            fmt::print(
                "headwise: attention kernel at d_head 64: {} (instruction set {}; HEADWISE_ISA=avx2 runs an "
                "AVX2 CPU's)\n",
                fast::to_string(fast::choose_kernel(64)), to_string(isa));
            fmt::print("headwise: building the benchmarks\n");
            if (const int rc = run_program({"cmake", "--build", "--preset", "default", "--target", "headwise_bench"},
                                           source_dir());
                rc != 0)
                return rc;
            std::vector<std::string> args{(source_dir() / "scripts" / "bench-compare").string(), "--bench",
                                          (binary_dir() / "bench" / "headwise_bench").string()};
            if (!threads_list->empty()) args.insert(args.end(), {"--threads", *threads_list});
            args.insert(args.end(), extra->begin(), extra->end());
            if (const int rc = run_program(args); rc != 0) return rc;
            // Lesson 12's decoder beside llama.cpp and PyTorch eager (scripts/bench-decode says
            // how to get the model or a peer that is missing).
            fmt::print("\nheadwise: the decoder of lesson 12 (scripts/bench-decode)\n");
            return run_program({(source_dir() / "scripts" / "bench-decode").string(), "--runner",
                                (binary_dir() / "src" / "headwise").string(), "--threads", std::to_string(threads)});
        };
    });
}

}  // namespace headwise::runner
