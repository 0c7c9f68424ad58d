#include "headwise/base/trace.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <unistd.h>

namespace headwise {

std::string format_shape(std::span<const std::size_t> shape) {
    std::string out = "(";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i) out += ", ";
        out += std::to_string(shape[i]);
    }
    return out + ")";
}

std::string format_shape(std::span<const std::size_t> shape, std::string_view dims) {
    std::size_t names = dims.empty() ? 0 : 1;
    for (char c : dims) names += (c == ',');
    if (names != shape.size()) {
        throw std::logic_error(fmt::format("dimension names [{}] do not match rank {} of shape {}", dims, shape.size(),
                                           format_shape(shape)));
    }
    return fmt::format("{} [{}]", format_shape(shape), dims);
}

static bool stdout_wants_color(Tracer::Color c) {
    if (c == Tracer::Color::always) return true;
    if (c == Tracer::Color::never) return false;
    if (std::getenv("NO_COLOR") != nullptr) return false;
    const char* term = std::getenv("TERM");
    if (term != nullptr && std::string_view(term) == "dumb") return false;
    return isatty(fileno(stdout)) != 0;
}

Tracer::Tracer(bool enabled, Color color) : enabled_(enabled), color_(stdout_wants_color(color)) {}

void Tracer::shape_line(std::string_view name, std::span<const std::size_t> shape, std::string_view dims) const {
    if (!enabled_) return;
    const std::string s = format_shape(shape);
    std::string check = format_shape(shape, dims);  // validates the names against the rank
    (void)check;
    const std::string line = fmt::format("  {:<{}} {:<{}} [{}]", name, trace_name_width, s, trace_shape_width, dims);
    if (!color_) {
        fmt::print("{}\n", line);
        return;
    }
    fmt::print("  {}{:<{}}{} {}{:<{}}{} {}[{}]{}\n", "\x1b[1m", name, trace_name_width, "\x1b[0m", "\x1b[36m", s,
               trace_shape_width, "\x1b[0m", "\x1b[2m", dims, "\x1b[0m");
}

void Tracer::section(std::string_view title) const {
    if (!enabled_) return;
    fmt::print("\n{}\n", bold(fmt::format("== {} ==", title)));
}

void Tracer::note(std::string_view text) const {
    if (!enabled_) return;
    fmt::print("  {}\n", text);
}

static std::string wrap(bool on, const char* code, std::string_view s) {
    if (!on) return std::string(s);
    return fmt::format("{}{}\x1b[0m", code, s);
}
std::string Tracer::bold(std::string_view s) const { return wrap(color_, "\x1b[1m", s); }
std::string Tracer::dim(std::string_view s) const { return wrap(color_, "\x1b[2m", s); }
std::string Tracer::green(std::string_view s) const { return wrap(color_, "\x1b[32m", s); }
std::string Tracer::red(std::string_view s) const { return wrap(color_, "\x1b[31m", s); }

}  // namespace headwise
