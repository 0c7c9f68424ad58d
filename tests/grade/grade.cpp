// tests/grade/grade.cpp -- comparing results and failing with a diagnosis (see grade.hpp).
#include "grade.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace headwise::grade {

namespace {

bool agrees(double actual, double expected, Tolerance tol) {
    if (std::isnan(actual) || std::isnan(expected)) return std::isnan(actual) && std::isnan(expected);
    if (std::isinf(actual) || std::isinf(expected)) return actual == expected;
    return std::abs(actual - expected) <= tol.abs + tol.rel * std::abs(expected);
}

// Flat row-major index -> "(0, 1, 2)".
std::string index_of(std::size_t flat, std::span<const std::size_t> shape) {
    std::vector<std::size_t> index(shape.size());
    for (std::size_t d = shape.size(); d-- > 0;) {
        index[d] = shape[d] == 0 ? 0 : flat % shape[d];
        flat = shape[d] == 0 ? 0 : flat / shape[d];
    }
    return format_shape(index);
}

std::optional<Outcome> compare_shapes(std::span<const std::size_t> actual, std::span<const std::size_t> expected,
                                      std::string_view dims) {
    if (std::ranges::equal(actual, expected)) return std::nullopt;
    const std::string want = actual.size() == expected.size() ? format_shape(expected, dims) : format_shape(expected);
    return Outcome{false, fmt::format("expected {}, got {}", want, format_shape(actual))};
}

}  // namespace

Outcome compare_values(std::span<const std::size_t> actual_shape, std::span<const float> actual,
                       std::span<const std::size_t> expected_shape, std::span<const float> expected,
                       std::string_view dims, Tolerance tol) {
    if (auto shape = compare_shapes(actual_shape, expected_shape, dims)) return *shape;
    std::size_t wrong = 0, first = 0;
    for (std::size_t i = 0; i < expected.size(); ++i) {
        if (!agrees(actual[i], expected[i], tol) && wrong++ == 0) first = i;
    }
    if (wrong == 0) return {};
    const double allowed = tol.abs + tol.rel * std::abs(expected[first]);
    return {false, fmt::format("at {} got {:.6g}, expected {:.6g} ({}); {} of {} values differ",
                               index_of(first, expected_shape), actual[first], expected[first],
                               allowed == 0.0 ? std::string("must be exact") : fmt::format("allowed difference {:.1e}", allowed),
                               wrong, expected.size())};
}

Outcome compare_flags(std::span<const std::size_t> actual_shape, const std::vector<bool>& actual,
                      std::span<const std::size_t> expected_shape, const std::vector<bool>& expected,
                      std::string_view dims) {
    if (auto shape = compare_shapes(actual_shape, expected_shape, dims)) return *shape;
    std::size_t wrong = 0, first = 0;
    for (std::size_t i = 0; i < expected.size(); ++i) {
        if (actual[i] != expected[i] && wrong++ == 0) first = i;
    }
    if (wrong == 0) return {};
    return {false, fmt::format("at {} got {}, expected {}; {} of {} entries differ", index_of(first, expected_shape),
                               bool(actual[first]), bool(expected[first]), wrong, expected.size())};
}

Outcome compare(std::size_t actual, std::size_t expected, std::string_view, Tolerance) {
    if (actual == expected) return {};
    return {false, fmt::format("got {}, expected {}", actual, expected)};
}

std::optional<Diagnosis>& pending_diagnosis() {
    static std::optional<Diagnosis> pending;
    return pending;
}

void fail(const std::string& message, const std::string* mistake, const std::string* explanation) {
    pending_diagnosis() = Diagnosis{message, mistake ? *mistake : std::string(), explanation ? *explanation : std::string()};
    std::string text = message;
    if (mistake != nullptr) {
        text += fmt::format("\nThis is the known mistake \"{}\":", *mistake);
        std::string_view rest = explanation ? std::string_view(*explanation) : std::string_view();
        while (!rest.empty()) {
            const auto nl = rest.find('\n');
            text += fmt::format("\n    {}", rest.substr(0, nl));
            rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
        }
    }
    FAIL(text);
    throw std::logic_error("unreachable: Catch2's FAIL returned");
}

}  // namespace headwise::grade
