// `headwise bench` -- build the benchmarks and put headwise, ONNX Runtime, PyTorch and NumPy side by side
// (scripts/bench-compare). Benchmarks are measured here, never asserted in timed tests.
#include "common.hpp"

#include "headwise/fast/blas_coretype.hpp"
#include "headwise/fast/parallel.hpp"

#include <fmt/format.h>

#include <memory>
#include <stdexcept>

namespace headwise::runner {

void add_bench_command(CLI::App& app, Action& action) {
    auto extra = std::make_shared<std::vector<std::string>>();
    auto* cmd = app.add_subcommand("bench",
                                   "benchmark the attention forward against ONNX Runtime, PyTorch and NumPy (minutes)");
    cmd->add_option("args", *extra, "arguments for scripts/bench-compare (after --), e.g. -- --quick --rounds 3");
    cmd->callback([&action, extra] {
        action = [extra] {
            // Which BLAS kernels every figure below is made with (blas_coretype.hpp chose them
            // before main(); the programs started from here inherit the choice).
            const blas::KernelReport k = blas::kernel_report();
            fmt::print("headwise: BLAS kernels {} ({}); {}\n", k.corename, k.source, k.config);
            if (!k.warning.empty()) fmt::print(stderr, "headwise: warning: {}\n", k.warning);
            std::size_t threads = 0;
            try {
                threads = detail::worker_count();
            } catch (const std::runtime_error& e) {  // only a bad HEADWISE_THREADS: one line, exit 2
                throw usage_error(e.what());
            }
            fmt::print(
                "headwise: {} threads (the CPUs this process may use, within its cgroup's quota; "
                "HEADWISE_THREADS overrides)\n",
                threads);
            fmt::print("headwise: building the benchmarks\n");
            if (const int rc = run_program({"cmake", "--build", "--preset", "default", "--target", "headwise_bench"},
                                           source_dir());
                rc != 0)
                return rc;
            std::vector<std::string> args{(source_dir() / "scripts" / "bench-compare").string(), "--bench",
                                          (binary_dir() / "bench" / "headwise_bench").string()};
            args.insert(args.end(), extra->begin(), extra->end());
            return run_program(args);
        };
    });
}

}  // namespace headwise::runner
