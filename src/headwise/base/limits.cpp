#include "headwise/base/limits.hpp"

#include <fmt/format.h>

#include <atomic>
#include <limits>
#include <string>

namespace headwise::limits {

namespace {
std::atomic<double> charged{0.0};
double work_limit = std::numeric_limits<double>::infinity();
std::string limited_program;
}  // namespace

void charge_work(double flops, std::string_view step) {
    double before = charged.load(std::memory_order_relaxed);
    while (!charged.compare_exchange_weak(before, before + flops, std::memory_order_relaxed)) {}
    if (before + flops > work_limit) {
        throw exceeded(
            fmt::format("at these sizes this would take more than {:.2g} floating-point operations ({} "
                        "alone needs {:.2g}); {} stops at {:.0g}, a few seconds: use smaller sizes",
                        before + flops, step, flops, limited_program, work_limit));
    }
}

double work_charged() { return charged.load(std::memory_order_relaxed); }

void set_work_limit(double flops, std::string_view who) {
    work_limit = flops;
    limited_program = who;
}

}  // namespace headwise::limits
