// tests/grade/grade.cpp -- comparing results, localising a difference, failing with a diagnosis
// (see grade.hpp).
#include "grade.hpp"

#include <fmt/format.h>
#include <regex>

#include <cxxabi.h>
#include <execinfo.h>
#include <algorithm>
#include <limits>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <numeric>
#include <set>
#include <typeinfo>

namespace headwise::grade {

bool agrees(double actual, double expected, Tolerance tol) {
    if (std::isnan(actual) || std::isnan(expected)) return std::isnan(actual) && std::isnan(expected);
    if (std::isinf(actual) || std::isinf(expected)) return actual == expected;
    return std::abs(actual - expected) <= tol.abs + tol.rel * std::abs(expected);
}

namespace {

std::vector<std::string> axis_names(std::string_view dims, std::size_t rank) {
    std::vector<std::string> names;
    std::size_t pos = 0;
    while (pos <= dims.size() && !dims.empty()) {
        const std::size_t comma = dims.find(',', pos);
        std::string_view part =
            dims.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
        while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
        while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
        names.emplace_back(part);
        if (comma == std::string_view::npos) break;
        pos = comma + 1;
    }
    if (names.size() != rank) {
        names.clear();
        for (std::size_t d = 0; d < rank; ++d) names.push_back(fmt::format("axis {}", d));
    }
    return names;
}

// A multi-index of a tensor of rank <= 8, without a heap allocation: the pattern checks unravel
// every element, for every catalogued mistake a failing check is compared with.
struct Index {
    std::array<std::size_t, 8> at{};
    std::size_t rank = 0;
    explicit Index(std::size_t r) : rank(r) {}
    std::size_t& operator[](std::size_t d) { return at[d]; }
    std::size_t operator[](std::size_t d) const { return at[d]; }
    std::size_t size() const { return rank; }
    operator std::span<const std::size_t>() const { return {at.data(), rank}; }
};

Index unravel(std::size_t flat, std::span<const std::size_t> shape) {
    Index index(shape.size());
    for (std::size_t d = shape.size(); d-- > 0;) {
        index[d] = shape[d] == 0 ? 0 : flat % shape[d];
        flat = shape[d] == 0 ? 0 : flat / shape[d];
    }
    return index;
}

std::size_t ravel(std::span<const std::size_t> index, std::span<const std::size_t> shape) {
    std::size_t flat = 0;
    for (std::size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + index[d];
    return flat;
}

// "(B=0, H=1, N_q=2, N_k=3)"
std::string named_index(std::size_t flat, std::span<const std::size_t> shape, const std::vector<std::string>& names) {
    const auto index = unravel(flat, shape);
    std::string s = "(";
    for (std::size_t d = 0; d < index.size(); ++d) s += fmt::format("{}{}={}", d ? ", " : "", names[d], index[d]);
    return s + ")";
}

std::optional<Outcome> compare_shapes(std::span<const std::size_t> actual, std::span<const std::size_t> expected,
                                      std::string_view dims) {
    if (std::ranges::equal(actual, expected)) return std::nullopt;
    const std::string want = actual.size() == expected.size() ? format_shape(expected, dims) : format_shape(expected);
    std::string message = fmt::format("expected {}, got {}", want, format_shape(actual));
    // An axis with another axis's length says where it came from: N_k with N_q's (the keys made
    // from the query), d_head with d_model's (one head at full width).
    if (actual.size() == expected.size() && !dims.empty()) {
        const auto names = axis_names(dims, expected.size());
        for (std::size_t a = 0; a < actual.size(); ++a) {
            if (actual[a] == expected[a]) continue;
            for (std::size_t e = 0; e < expected.size(); ++e) {
                if (e == a || expected[e] != actual[a] || expected[e] == expected[a]) continue;
                message += fmt::format("; its {} axis has {}'s length, {}", names[a], names[e], actual[a]);
                if (names[a] == "N_k" && names[e] == "N_q") message += " (the keys made from the query?)";
                break;
            }
        }
    }
    return Outcome{false, message, {}};
}

// ---------------------------------------------------------------------------------------------
// The diagnosis of a wrong tensor, clause by clause. Each clause is a small function of the
// failing data that returns its text only when it holds on that data (nullopt otherwise), so no
// clause printed can be false for the case at hand. A pattern read from a few numbers says
// nothing: the clauses that fit one (a scale, an offset, a factor per row, a shift) ask for
// enough values to mean it. Decisive facts (every value 0, whole rows or columns 0, where the
// differences are) come before the patterns.

// The failing data every clause reads.
struct Failing {
    std::span<const std::size_t> shape;
    std::span<const float> actual, expected;
    std::vector<std::string> names;
    Tolerance tol;
    std::vector<char> differs;  // per element: 1 when actual and expected disagree
    std::size_t wrong = 0;
    std::size_t rank() const { return shape.size(); }
    std::size_t size() const { return expected.size(); }
};

using Clause = std::optional<std::string>;

// A fit of one or two parameters means something only on this many values.
constexpr std::size_t enough_values = 4;

// How many clearly different values `v` holds (at most `cap` counted).
std::size_t distinct_values(std::span<const float> v, double apart, std::size_t cap) {
    std::vector<float> seen;
    for (const float x : v) {
        if (!std::isfinite(x)) continue;
        if (std::ranges::none_of(seen, [&](float s) { return std::abs(double(s) - x) <= apart; })) seen.push_back(x);
        if (seen.size() >= cap) break;
    }
    return seen.size();
}

// "0 .. 126, 128, 130 .. 222, ..." -- runs of three or more read "a .. b"; at most six items.
std::string index_list(const std::vector<std::size_t>& at) {
    std::string list;
    std::size_t items = 0, k = 0;
    for (; k < at.size() && items < 6; ++items) {
        std::size_t end = k;
        while (end + 1 < at.size() && at[end + 1] == at[end] + 1) ++end;
        list += items ? ", " : "";
        if (end >= k + 2) {
            list += fmt::format("{} .. {}", at[k], at[end]);
        } else {
            list += fmt::format("{}", at[k]);
            end = k;
        }
        k = end + 1;
    }
    return list + (k < at.size() ? ", ..." : "");
}

bool is_zero(float x) { return x == 0.0f; }

// Every value is 0 (and the expected ones are not).
Clause every_value_zero(const Failing& f) {
    if (!std::ranges::all_of(f.actual, is_zero)) return std::nullopt;
    if (std::ranges::all_of(f.expected, [&](float e) { return std::abs(e) <= f.tol.abs; })) return std::nullopt;
    return f.size() == 1 ? std::string("it is 0") : std::string("every value is 0");
}

// Whole lines along one axis all 0 where the expected ones are not, and every difference inside
// them: "rows N_q in {4, 5} are all zero (every value along N_k)".
Clause zero_lines(const Failing& f) {
    const std::size_t rank = f.rank();
    if (rank < 2 || every_value_zero(f)) return std::nullopt;
    for (const std::size_t axis : {rank - 1, rank - 2}) {
        const std::size_t len = f.shape[axis];
        if (len < 2) continue;
        std::size_t stride = 1;
        for (std::size_t d = axis + 1; d < rank; ++d) stride *= f.shape[d];
        // A line starts at every element whose index along `axis` is 0.
        std::vector<std::size_t> zeroed;
        std::vector<char> covered(f.size(), 0);
        for (std::size_t start = 0; start < f.size(); ++start) {
            if (unravel(start, f.shape)[axis] != 0) continue;
            bool zero = true, expected_zero = true;
            for (std::size_t k = 0; k < len; ++k) {
                zero = zero && is_zero(f.actual[start + k * stride]);
                expected_zero = expected_zero && std::abs(f.expected[start + k * stride]) <= f.tol.abs;
            }
            if (!zero || expected_zero) continue;
            zeroed.push_back(start);
            for (std::size_t k = 0; k < len; ++k) covered[start + k * stride] = 1;
        }
        if (zeroed.empty()) continue;
        bool explains_all = true;
        for (std::size_t i = 0; i < f.size() && explains_all; ++i) explains_all = !f.differs[i] || covered[i];
        if (!explains_all) continue;
        // Which indices of the other axes the zero lines sit at. Axes where every index has one
        // are "every H"; the lines are then listed by the other axes, when each such place has
        // its lines at every index of those axes.
        std::vector<std::vector<char>> at(rank);
        for (std::size_t d = 0; d < rank; ++d) at[d].assign(f.shape[d], 0);
        for (const std::size_t start : zeroed) {
            const auto idx = unravel(start, f.shape);
            for (std::size_t d = 0; d < rank; ++d) at[d][idx[d]] = 1;
        }
        std::vector<std::size_t> listed;  // the axes that name a line's place
        std::size_t every = 1;            // lines per place: the product of the full axes
        std::string full;
        for (std::size_t d = 0; d < rank; ++d) {
            if (d == axis) continue;
            if (std::ranges::all_of(at[d], [](char c) { return c != 0; }) && f.shape[d] > 1) {
                every *= f.shape[d];
                full += (full.empty() ? "every " : ", every ") + f.names[d];
            } else {
                listed.push_back(d);
            }
        }
        std::vector<std::string> places;
        for (const std::size_t start : zeroed) {
            const auto idx = unravel(start, f.shape);
            std::string place;
            for (const std::size_t d : listed)
                place += fmt::format("{}{}={}", place.empty() ? "" : ", ", f.names[d], idx[d]);
            if (std::ranges::find(places, place) == places.end()) places.push_back(place);
        }
        const char* lines = axis == rank - 1 ? "rows" : "columns";
        if (!listed.empty() && places.size() * every == zeroed.size() && places.size() <= 6) {
            std::string list;
            for (const auto& place : places) list += (list.empty() ? "(" : ", (") + place + ")";
            return fmt::format("{} {} are all zero ({}{}every value along {} is 0 there, the expected ones are not)",
                               lines, list, full, full.empty() ? "" : "; ", f.names[axis]);
        }
        std::string first = named_index(zeroed.front(), f.shape, f.names);
        first = first.substr(0, first.find(f.names[axis] + "=") - (axis == 0 ? 0 : 2)) + ")";
        return fmt::format("{} whole {} along {} are all zero where the expected ones are not, the first at {}",
                           zeroed.size(), lines, f.names[axis], first);
    }
    return std::nullopt;
}

// Where the differences are: the axes along which only some indices differ ("only at H in {1}"),
// or, when most do, the few that do not ("at every d_model but 3 (127, 223, 255)").
Clause where_they_differ(const Failing& f) {
    std::vector<std::vector<char>> touched(f.rank());
    for (std::size_t d = 0; d < f.rank(); ++d) touched[d].assign(f.shape[d], 0);
    for (std::size_t i = 0; i < f.size(); ++i) {
        if (!f.differs[i]) continue;
        const auto idx = unravel(i, f.shape);
        for (std::size_t d = 0; d < f.rank(); ++d) touched[d][idx[d]] = 1;
    }
    std::vector<std::string> only, all_but;
    for (std::size_t d = 0; d < f.rank(); ++d) {
        std::vector<std::size_t> at, not_at;
        for (std::size_t k = 0; k < touched[d].size(); ++k) (touched[d][k] ? at : not_at).push_back(k);
        if (not_at.empty() || touched[d].size() < 2) continue;
        if (at.size() > 2 * not_at.size() && at.size() > 6)
            all_but.push_back(fmt::format("every {} but {} ({})", f.names[d], not_at.size(), index_list(not_at)));
        else
            only.push_back(fmt::format("{} in {{{}}}", f.names[d], index_list(at)));
    }
    std::string text;
    if (!only.empty()) {
        text = "only at ";
        for (std::size_t k = 0; k < only.size(); ++k) text += (k ? ", " : "") + only[k];
    }
    if (!all_but.empty()) {
        text += text.empty() ? "at " : "; at ";
        for (std::size_t k = 0; k < all_but.size(); ++k) text += (k ? ", " : "") + all_but[k];
    }
    return text.empty() ? std::nullopt : Clause(text);
}

// Where a (query, key) matrix differs against its diagonal: only at keys after each query's own
// ("only where key > query": what a causal query must not see), only at or before it, or only on
// it. Said where every differing value sits on that side; the axes must be a query's and a key's.
Clause beside_the_diagonal(const Failing& f) {
    const std::size_t rank = f.rank();
    if (rank < 2) return std::nullopt;
    const std::string &rows = f.names[rank - 2], &cols = f.names[rank - 1];
    if (!((rows == "query" && cols == "key") || (rows == "N_q" && cols == "N_k"))) return std::nullopt;
    long lo = std::numeric_limits<long>::max(), hi = std::numeric_limits<long>::min();
    std::size_t n = 0;
    bool future_live = false;  // an expected value after a query's position that is not 0: no causal mask
    std::set<std::size_t> rows_hit, cols_hit;
    for (std::size_t i = 0; i < f.size(); ++i) {
        const auto idx = unravel(i, f.shape);
        const long d = static_cast<long>(idx[rank - 1]) - static_cast<long>(idx[rank - 2]);
        future_live = future_live || (d > 0 && std::abs(f.expected[i]) > f.tol.abs);
        if (!f.differs[i]) continue;
        lo = std::min(lo, d), hi = std::max(hi, d), ++n;
        rows_hit.insert(idx[rank - 2]), cols_hit.insert(idx[rank - 1]);
    }
    // A triangle spans rows and keys: one key's column, or one query's row, is no side of a diagonal.
    if (n < 3 || rows_hit.size() < 2 || cols_hit.size() < 2) return std::nullopt;
    if (lo == 0 && hi == 0) return fmt::format("every one on the diagonal ({} = {})", cols, rows);
    if (lo >= 1)
        return lo == 1 ? fmt::format("every one where {} > {} (after the query's own position)", cols, rows)
                       : fmt::format("every one where {} > {} + {}", cols, rows, lo - 1);
    // At or before it: news only where the keys after it count (under a causal mask they are all 0).
    if (hi <= 0 && future_live)
        return fmt::format("every one where {} <= {} (at or before the query's own position)", cols, rows);
    return std::nullopt;
}

// How many of the differing values have exactly these bits.
std::size_t differing_with_bits(const Failing& f, std::uint32_t bits) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < f.size(); ++i)
        if (std::bit_cast<std::uint32_t>(f.actual[i]) == bits && f.differs[i]) ++n;
    return n;
}

// "n of them hold <the float with these bits>, <why>": values a grade build wrote itself, or nothing.
Clause fill_bits(const Failing& f, std::uint32_t bits, std::string_view why) {
    const std::size_t n = differing_with_bits(f, bits);
    if (n == 0) return std::nullopt;
    return fmt::format("{} of them hold {:.6g}, {}", n, std::bit_cast<float>(bits), why);
}

// Values with the bits grade builds fill fresh memory with: never written.
Clause fill_pattern(const Failing& f) {
    return fill_bits(f, fresh_heap_bits,
                     "the pattern grade builds fill fresh memory with: elements read or returned before they were "
                     "ever written (uninitialised; from_shape does not fill)");
}

// Values with the bits -ftrivial-auto-var-init=pattern gives every local of a grade build
// (0xfe bytes, -1.69e38 as a float): a local variable read before it was ever set. A value added
// to it is lost in its rounding, so the bits survive an accumulation.
Clause local_fill_pattern(const Failing& f) {
    return fill_bits(f, fresh_local_bits,
                     "the pattern grade builds fill every local variable with: a local read before it was ever set "
                     "(a missing \"= 0\"?)");
}

constexpr std::string_view non_finite_where_finite = "where the expected value is finite";

// NaN or inf where the expected value is finite: the quiet NaN graders fill an output with
// (exercise 06: never written), or one the code computed.
Clause not_finite(const Failing& f) {
    std::size_t first_bad = f.size(), never_written = 0;
    for (std::size_t i = 0; i < f.size(); ++i) {
        if (std::isfinite(f.actual[i]) || !std::isfinite(f.expected[i])) continue;
        if (first_bad == f.size()) first_bad = i;
        // std::numeric_limits<float>::quiet_NaN()'s bits, which arithmetic on x86 never makes
        // (0/0, inf - inf give 0xffc00000).
        if (std::bit_cast<std::uint32_t>(f.actual[i]) == 0x7fc00000u) ++never_written;
    }
    if (first_bad == f.size()) return std::nullopt;
    if (never_written > 0 && std::bit_cast<std::uint32_t>(f.actual[first_bad]) == 0x7fc00000u) {
        return fmt::format(
            "{} of them, the first at {}, hold the NaN of std::numeric_limits<float>::quiet_NaN(), not one "
            "arithmetic makes (0/0 gives another): elements never written where the output starts as that NaN "
            "(exercise 06) -- a row, head or batch the code skips, or writes somewhere else",
            never_written, named_index(first_bad, f.shape, f.names));
    }
    return fmt::format("first {} at {} {}", std::isnan(f.actual[first_bad]) ? "NaN" : "inf",
                       named_index(first_bad, f.shape, f.names), non_finite_where_finite);
}

// Weights (last axis N_k): does each row still have its expected sum (1; 0 for a row with
// nothing to attend to)? A row holding NaN or inf has no sum.
Clause weight_rows(const Failing& f) {
    if (f.rank() < 2 || (f.names.back() != "N_k" && f.names.back() != "N_key")) return std::nullopt;
    const std::size_t row = f.shape.back(), rows = f.size() / std::max<std::size_t>(row, 1);
    std::size_t off = 0, first_off = rows;
    double first_sum = 0, first_expected = 0;
    bool all_one = true;
    for (std::size_t r = 0; r < rows; ++r) {
        double sa = 0, se = 0;
        for (std::size_t j = 0; j < row; ++j) {
            sa += f.actual[r * row + j];
            se += f.expected[r * row + j];
        }
        all_one = all_one && std::abs(se - 1) <= 1e-3;
        if (std::isfinite(sa) && std::abs(sa - se) <= 1e-3) continue;
        if (off++ == 0) first_off = r, first_sum = sa, first_expected = se;
    }
    if (off == 0) {
        return all_one ? "every weights row still sums to 1 (the rows are normalised; the values normalised differ)"
                       : "every weights row still has its expected sum (1, or 0 for a row with no key to attend to)";
    }
    std::string at = named_index(first_off * row, f.shape, f.names);
    at = at.substr(0, at.rfind(", ")) + ")";  // the row: every axis but N_k
    const std::string sum = std::isfinite(first_sum) ? fmt::format("sums to {:.5g}", first_sum)
                                                     : fmt::format("holds {}", std::isnan(first_sum) ? "NaN" : "inf");
    if (all_one) return fmt::format("{} of {} weights rows do not sum to 1, the first at {} {}", off, rows, at, sum);
    return fmt::format(
        "{} of {} weights rows do not have the expected sum, the first at {} {} where it should sum to "
        "{:.5g}",
        off, rows, at, sum, first_expected);
}

// Weights (last axis N_k) whose every row is exactly uniform, 1/N_k, where the expected rows
// are not: the softmax saw equal scores in every row.
Clause uniform_weights(const Failing& f) {
    if (f.rank() < 2 || (f.names.back() != "N_k" && f.names.back() != "N_key")) return std::nullopt;
    const std::size_t row = f.shape.back();
    if (row < 2) return std::nullopt;
    const double u = 1.0 / double(row);
    if (!std::ranges::all_of(f.actual, [&](float w) { return agrees(w, u, f.tol); })) return std::nullopt;
    if (std::ranges::all_of(f.expected, [&](float w) { return agrees(w, u, f.tol); })) return std::nullopt;
    return fmt::format(
        "every weight is 1/{} = 1/{}: uniform rows, what softmax gives when all the scores of a row are equal",
        f.names.back(), row);
}

std::string name_factor(double c, const std::string& shown);

// Weights (last axis N_k) that are the softmax of the expected scores times one factor c: in
// every row, log w - mean(log w) is c times the expected one. Read from the weights alone, so it
// holds whatever the scores were; said only when every weight is rebuilt within tolerance.
Clause scaled_scores(const Failing& f) {
    if (f.rank() < 2 || (f.names.back() != "N_k" && f.names.back() != "N_key")) return std::nullopt;
    const std::size_t width = f.shape.back(), rows = f.size() / std::max<std::size_t>(width, 1);
    if (width < 2 || f.size() < enough_values) return std::nullopt;
    std::vector<double> la(f.size()), le(f.size());
    double num = 0, den = 0;
    for (std::size_t r = 0; r < rows; ++r) {
        double ma = 0, me = 0;
        for (std::size_t j = r * width; j < (r + 1) * width; ++j) {
            if (!(f.actual[j] > 0 && f.expected[j] > 0)) return std::nullopt;  // a mask or a 0: not a scale
            la[j] = std::log(double(f.actual[j])), le[j] = std::log(double(f.expected[j]));
            ma += la[j], me += le[j];
        }
        for (std::size_t j = r * width; j < (r + 1) * width; ++j) {
            la[j] -= ma / double(width), le[j] -= me / double(width);
            num += la[j] * le[j], den += le[j] * le[j];
        }
    }
    if (den <= 1e-6) return std::nullopt;
    const double c = num / den;
    if (!std::isfinite(c) || c <= 1e-3 || std::abs(c - 1) <= 1e-3) return std::nullopt;
    for (std::size_t r = 0; r < rows; ++r) {
        double sum = 0;
        for (std::size_t j = r * width; j < (r + 1) * width; ++j) sum += std::exp(c * le[j]);
        for (std::size_t j = r * width; j < (r + 1) * width; ++j)
            if (!agrees(f.actual[j], std::exp(c * le[j]) / sum, f.tol)) return std::nullopt;
    }
    const std::string shown = fmt::format("{:.4g}", c);
    return fmt::format(
        "the weights are softmax(c x the expected scores) with c = {}{}: every score is off by that one factor "
        "(the 1/sqrt(d) scale, or what it multiplies?)",
        shown, name_factor(c, shown));
}

// One constant per column (the last axis) added to every row, different from column to column:
// what a bias vector added twice, or forgotten, does.
Clause column_offsets(const Failing& f) {
    if (f.rank() < 2) return std::nullopt;
    const std::size_t width = f.shape.back(), rows = f.size() / std::max<std::size_t>(width, 1);
    if (width < 2 || rows < 2) return std::nullopt;
    std::vector<double> delta(width);
    for (std::size_t c = 0; c < width; ++c) delta[c] = double(f.actual[c]) - f.expected[c];
    if (!std::ranges::all_of(delta, [](double d) { return std::isfinite(d); })) return std::nullopt;
    const auto [lo, hi] = std::ranges::minmax(delta);
    if (hi - lo <= 10 * f.tol.abs) return std::nullopt;  // one constant for all: offset() says that
    for (std::size_t i = 0; i < f.size(); ++i)
        if (!agrees(f.actual[i], f.expected[i] + delta[i % width], f.tol)) return std::nullopt;
    return fmt::format(
        "every row differs from the expected one by the same vector along {} ({:.4g}, {:.4g}, ...): a constant per "
        "column",
        f.names.back(), delta[0], delta[1]);
}

// Every value above every value of its expected row (last axis), where the expected row's values
// differ: a sum where a maximum or an average was meant reads so.
Clause above_every_expected(const Failing& f) {
    if (f.rank() < 1 || f.size() < enough_values) return std::nullopt;
    const std::size_t width = f.shape.back(), rows = f.size() / std::max<std::size_t>(width, 1);
    if (width < 2) return std::nullopt;
    for (std::size_t r = 0; r < rows; ++r) {
        const auto row = f.expected.subspan(r * width, width);
        const float top = *std::ranges::max_element(row);
        if (!(std::isfinite(top) && *std::ranges::min_element(row) < top)) return std::nullopt;
        for (std::size_t j = 0; j < width; ++j)
            if (!(f.actual[r * width + j] > top + f.tol.abs + f.tol.rel * std::abs(top))) return std::nullopt;
    }
    return fmt::format(
        "every value is above the largest expected value of its row along {} (a sum where a maximum or a mean was "
        "meant?)",
        f.names.back());
}

// "1/sqrt(8)" when c is a simple factor a learner might have introduced, to float precision: the
// square roots of 2..1024 lie closer together than 1e-3 (any c near 26 is within 1e-3 of some
// sqrt(k)), so a looser match would name a coincidence as a cause. Nothing when `shown` (c as
// printed) already reads as that number ("c = 2", not "c = 2 = 2").
std::string name_factor(double c, const std::string& shown) {
    constexpr double close = 2e-5;
    for (int k = 2; k <= 1024; ++k) {
        const double r = std::sqrt(double(k));
        if (std::abs(c - r) < close * r) return fmt::format(" = sqrt({})", k);
        if (std::abs(c - 1 / r) < close / r) return fmt::format(" = 1/sqrt({})", k);
        if (k <= 64 && std::abs(c - k) < close * k) return shown == std::to_string(k) ? "" : fmt::format(" = {}", k);
        if (k <= 64 && std::abs(c - 1.0 / k) < close / k) return fmt::format(" = 1/{}", k);
    }
    return "";
}

// One number against one number: their ratio is a fact, not a pattern.
Clause ratio(const Failing& f) {
    if (f.size() != 1 || f.expected[0] == 0.0f || f.actual[0] == 0.0f || !std::isfinite(f.actual[0]) ||
        !std::isfinite(f.expected[0]) || never_written(f.actual[0]))  // a fill, not a factor
        return std::nullopt;
    const double c = double(f.actual[0]) / f.expected[0];
    const std::string shown = fmt::format("{:.6g}", c);
    return fmt::format("got / expected = {}{}", shown, name_factor(c, shown));
}

// One constant factor on every value (not 0: every_value_zero says that), fitted on enough
// values that are not negligible.
Clause scale(const Failing& f) {
    const auto sizable = std::ranges::count_if(f.expected, [&](float e) { return std::abs(e) > 10 * f.tol.abs; });
    if (std::size_t(sizable) < enough_values) return std::nullopt;
    // A result of (nearly) zeros is some tiny multiple of anything: that is not a factor.
    const auto own = std::ranges::count_if(f.actual, [&](float a) { return std::abs(a) > 10 * f.tol.abs; });
    if (std::size_t(own) < enough_values) return std::nullopt;
    double ae = 0, ee = 0;
    for (std::size_t i = 0; i < f.size(); ++i) {
        ae += double(f.actual[i]) * f.expected[i];
        ee += double(f.expected[i]) * f.expected[i];
    }
    if (ee == 0 || !std::isfinite(ae)) return std::nullopt;
    const double c = ae / ee;
    if (std::abs(c - 1) <= 1e-3 || std::abs(c) <= 1e-6) return std::nullopt;
    for (std::size_t i = 0; i < f.size(); ++i)
        if (!agrees(f.actual[i], c * f.expected[i], f.tol)) return std::nullopt;
    const std::string shown = fmt::format("{:.6g}", c);
    return fmt::format("it is the expected result times {}{} (a scale factor)", shown, name_factor(c, shown));
}

// A factor per row (every axis but the last): each row right up to its own scale (what a wrong
// softmax normaliser does, among others: the message says only the factors). Each row must be wide enough (3) and not constant.
Clause row_factors(const Failing& f) {
    if (f.rank() < 2 || f.shape.back() < 3 || scale(f)) return std::nullopt;
    const std::size_t width = f.shape.back(), rows = f.size() / width;
    if (rows < 2) return std::nullopt;
    double low = INFINITY, high = -INFINITY, smallest = INFINITY;
    for (std::size_t r = 0; r < rows; ++r) {
        double re = 0, rr = 0, lo = INFINITY, hi = -INFINITY;
        for (std::size_t j = r * width; j < (r + 1) * width; ++j) {
            re += double(f.actual[j]) * f.expected[j];
            rr += double(f.expected[j]) * f.expected[j];
            lo = std::min(lo, double(f.expected[j])), hi = std::max(hi, double(f.expected[j]));
        }
        // A row whose entries are all equal is a multiple of any other such row: it says nothing.
        if (rr == 0 || !std::isfinite(re) || hi - lo <= f.tol.abs) return std::nullopt;
        const double c = re / rr;
        for (std::size_t j = r * width; j < (r + 1) * width; ++j)
            if (!agrees(f.actual[j], c * f.expected[j], f.tol)) return std::nullopt;
        low = std::min(low, c), high = std::max(high, c), smallest = std::min(smallest, std::abs(c));
    }
    // A factor of 0 is a row of zeros, which zero_lines says as such.
    if (high - low <= 1e-3 || smallest <= 1e-3) return std::nullopt;
    return fmt::format(
        "each row along {} is the expected row times its own factor (from {:.4g} to {:.4g}): the rows are right up "
        "to a scale",
        f.names.back(), low, high);
}

// One constant added to every value (e.g. += into memory never set to 0), on enough values
// that differ from each other (two numbers always differ by a constant).
Clause offset(const Failing& f) {
    // The got values must still vary as the expected ones do: a value so large that every one
    // rounds to the same float (a fill pattern) is not "the expected plus" anything.
    if (f.size() < enough_values || distinct_values(f.expected, 10 * f.tol.abs, 3) < 3 ||
        distinct_values(f.actual, 10 * f.tol.abs, 3) < 3)
        return std::nullopt;
    const double c = double(f.actual[0]) - f.expected[0];
    if (!std::isfinite(c) || std::abs(c) <= f.tol.abs) return std::nullopt;
    for (std::size_t i = 0; i < f.size(); ++i)
        if (!agrees(f.actual[i], f.expected[i] + c, f.tol)) return std::nullopt;
    const bool fill = std::abs(c - double(std::bit_cast<float>(fresh_heap_bits))) < 1e-6;
    return fmt::format("it is the expected result plus {:.6g}{}", c,
                       fill ? ", the pattern grade builds fill fresh memory with: added (+=) to elements never set "
                              "(uninitialised; from_shape does not fill)"
                            : " (an offset)");
}

// Two axes of the same size swapped (a transpose).
Clause transposed(const Failing& f) {
    for (std::size_t a = 0; a < f.rank(); ++a)
        for (std::size_t b = a + 1; b < f.rank(); ++b) {
            if (f.shape[a] != f.shape[b] || f.shape[a] < 2) continue;
            bool all = true;
            for (std::size_t i = 0; all && i < f.size(); ++i) {
                auto idx = unravel(i, f.shape);
                std::swap(idx[a], idx[b]);
                all = agrees(f.actual[i], f.expected[ravel(idx, f.shape)], f.tol);
            }
            if (all)
                return fmt::format("it is the expected result with axes {} and {} swapped (transposed)", f.names[a],
                                   f.names[b]);
        }
    return std::nullopt;
}

// Shifted by one along an axis: every element compared agrees with its neighbour, and that
// explains most of the differences (at least two of them), not just a few at the edges.
Clause shifted(const Failing& f) {
    for (std::size_t a = 0; a < f.rank(); ++a) {
        if (f.shape[a] < 3) continue;
        for (int shift : {-1, 1}) {
            bool all = true;
            std::size_t explained = 0;
            for (std::size_t i = 0; all && i < f.size(); ++i) {
                auto idx = unravel(i, f.shape);
                const long from = long(idx[a]) + shift;
                if (from < 0 || from >= long(f.shape[a])) continue;
                idx[a] = std::size_t(from);
                all = agrees(f.actual[i], f.expected[ravel(idx, f.shape)], f.tol);
                // Only a value the code wrote counts: zeros agree with every zero neighbour (a row
                // of zeros is no shifted row).
                explained += f.differs[i] && !agrees(f.actual[i], 0.0, f.tol) ? 1 : 0;
            }
            if (all && explained >= 2 && 2 * explained >= f.wrong)
                return fmt::format("element {}=i holds the expected element {}=i{}1 (shifted by one, off by one)",
                                   f.names[a], f.names[a], shift > 0 ? "+" : "-");
        }
    }
    return std::nullopt;
}

// Slices along an axis that equal other expected slices (rows or heads permuted, or one
// repeated). A slice that equals its own expected slice is taken as itself first, so only the
// slices that really differ are said to have moved.
Clause permuted(const Failing& f) {
    for (std::size_t a = 0; a < f.rank(); ++a) {
        const std::size_t m = f.shape[a];
        // A slice of a few values equals another by coincidence too easily: each needs enough.
        if (m < 2 || f.size() / m < enough_values) continue;
        // An expected slice of (nearly) zeros equals every other such slice: holding one says nothing.
        std::vector<std::size_t> sizable(m, 0);
        for (std::size_t i = 0; i < f.size(); ++i)
            if (std::abs(f.expected[i]) > 10 * f.tol.abs) ++sizable[unravel(i, f.shape)[a]];
        const auto slice_equals = [&](std::size_t s, std::size_t t) {
            if (t != s && sizable[t] < enough_values) return false;
            for (std::size_t i = 0; i < f.size(); ++i) {
                auto idx = unravel(i, f.shape);
                if (idx[a] != s) continue;
                idx[a] = t;
                if (!agrees(f.actual[i], f.expected[ravel(idx, f.shape)], f.tol)) return false;
            }
            return true;
        };
        std::vector<std::size_t> perm(m, m);
        bool all = true;
        for (std::size_t s = 0; all && s < m; ++s) {
            if (slice_equals(s, s)) perm[s] = s;
            for (std::size_t t = 0; t < m && perm[s] == m; ++t)
                if (t != s && slice_equals(s, t)) perm[s] = t;
            all = perm[s] != m;
        }
        if (!all) continue;
        bool identity = true, bijection = true, constant = true;
        std::vector<bool> used(m, false);
        for (std::size_t s = 0; s < m; ++s) {
            identity = identity && perm[s] == s;
            constant = constant && perm[s] == perm[0];
            bijection = bijection && !used[perm[s]];
            used[perm[s]] = true;
        }
        std::size_t moved = 0;
        for (std::size_t t = 0; t < m; ++t) moved += perm[t] != t ? 1 : 0;
        // One slice moved is one coincidence; an index stuck is seen on two slices at least.
        if (identity || moved < 2) continue;
        std::string order;
        for (std::size_t s = 0; s < std::min<std::size_t>(m, 8); ++s)
            order += fmt::format("{}{}", s ? ", " : "", perm[s]);
        if (bijection)
            return fmt::format("its {} slices are the expected ones in another order ({}{})", f.names[a], order,
                               m > 8 ? ", ..." : "");
        if (constant && perm[0] + 1 == m)  // the last slice: a stuck index, or writes that each covered every slice
            return fmt::format(
                "every {} slice equals the expected {} slice {}, the last: each write may have filled every {} "
                "slice (the last staying), or an index is stuck at {} where it should follow {}",
                f.names[a], f.names[a], perm[0], f.names[a], perm[0], f.names[a]);
        if (constant)
            return fmt::format(
                "every {} slice equals the expected {} slice {}: an index stuck at {} where it should "
                "follow {}",
                f.names[a], f.names[a], perm[0], perm[0], f.names[a]);
        return fmt::format(
            "its {} slices are copies of expected ones, slice i holding the expected slice ({}{}) -- "
            "some repeated, some missing",
            f.names[a], order, m > 8 ? ", ..." : "");
    }
    return std::nullopt;
}

// Every clause, decisive facts first; only those that hold are printed.
constexpr Clause (*clauses[])(const Failing&) = {
    every_value_zero, zero_lines,  where_they_differ, beside_the_diagonal,  fill_pattern, local_fill_pattern,
    not_finite,       weight_rows, uniform_weights,   scaled_scores,        ratio,        scale,
    row_factors,      offset,      column_offsets,    above_every_expected, transposed,   shifted,
    permuted};

}  // namespace

Outcome compare_values(std::span<const std::size_t> actual_shape, std::span<const float> actual,
                       std::span<const std::size_t> expected_shape, std::span<const float> expected,
                       std::string_view dims, Tolerance tol) {
    if (auto shape = compare_shapes(actual_shape, expected_shape, dims)) return *shape;
    Failing f{expected_shape, actual, expected, axis_names(dims, expected_shape.size()), tol, {}, 0};
    f.differs.assign(expected.size(), 0);
    std::size_t first = 0;
    std::vector<std::size_t> shown;
    for (std::size_t i = 0; i < expected.size(); ++i) {
        if (agrees(actual[i], expected[i], tol)) continue;
        f.differs[i] = 1;
        if (f.wrong++ == 0) first = i;
        if (shown.size() < 5) shown.push_back(i);
    }
    if (f.wrong == 0) return {};
    Outcome o;
    o.same = false;
    const double allowed = tol.abs + tol.rel * std::abs(expected[first]);
    const std::string allowance =
        allowed == 0.0 ? std::string("must be exact") : fmt::format("allowed difference {:.1e}", allowed);
    o.detail = fmt::format("first differs at {}: got {:.6g}, expected {:.6g} ({}); {} of {} values differ",
                           named_index(first, expected_shape, f.names), actual[first], expected[first], allowance,
                           f.wrong, expected.size());
    for (const auto clause : clauses)
        if (const Clause text = clause(f)) o.detail += "; " + *text;
    o.details.push_back(fmt::format("shape {} ({}), tolerance |got - expected| <= {:.1e} + {:.1e} * |expected|",
                                    format_shape(expected_shape), dims, tol.abs, tol.rel));
    for (std::size_t i : shown) {
        o.details.push_back(fmt::format("at {}: expected {:.7g}, got {:.7g}", named_index(i, expected_shape, f.names),
                                        expected[i], actual[i]));
    }
    return o;
}

Outcome compare_flags(std::span<const std::size_t> actual_shape, const std::vector<bool>& actual,
                      std::span<const std::size_t> expected_shape, const std::vector<bool>& expected,
                      std::string_view dims) {
    if (auto shape = compare_shapes(actual_shape, expected_shape, dims)) return *shape;
    const auto names = axis_names(dims, expected_shape.size());
    std::size_t wrong = 0, first = 0;
    std::vector<std::size_t> shown;
    for (std::size_t i = 0; i < expected.size(); ++i) {
        if (actual[i] != expected[i] && wrong++ == 0) first = i;
        if (actual[i] != expected[i] && shown.size() < 5) shown.push_back(i);
    }
    if (wrong == 0) return {};
    Outcome o{false,
              fmt::format("first differs at {}: got {}, expected {}; {} of {} entries differ",
                          named_index(first, expected_shape, names), bool(actual[first]), bool(expected[first]), wrong,
                          expected.size()),
              {}};
    if (expected_shape.size() == 2 && expected_shape[0] == expected_shape[1]) {
        const std::size_t m = expected_shape[0];
        bool transposed = true;
        for (std::size_t i = 0; i < m && transposed; ++i)
            for (std::size_t j = 0; j < m && transposed; ++j) transposed = actual[i * m + j] == expected[j * m + i];
        if (transposed) o.detail += "; it is the expected mask transposed (rows and columns swapped)";
    }
    o.details.push_back(fmt::format("shape {} ({}), entries must be exact", format_shape(expected_shape), dims));
    for (std::size_t i : shown) {
        o.details.push_back(fmt::format("at {}: expected {}, got {}", named_index(i, expected_shape, names),
                                        bool(expected[i]), bool(actual[i])));
    }
    return o;
}

namespace {
// A count's clauses, each true of the two numbers before it is printed.
Clause wrapped_32_bits(std::size_t actual, std::size_t expected) {
    // Counted in a 32-bit int or unsigned: the low 32 bits are right, the rest lost (an int
    // that went negative reads, sign-extended, as a huge std::size_t with the same low bits).
    if (expected <= 0xFFFFFFFFull || (actual & 0xFFFFFFFFull) != (expected & 0xFFFFFFFFull)) return std::nullopt;
    return std::string("overflowed 32 bits: it is the expected count modulo 2^32 (counted in int or unsigned?)");
}
Clause whole_multiple(std::size_t actual, std::size_t expected) {
    if (expected == 0 || actual == 0) return std::nullopt;
    // A fact about the two numbers, not a cause: one count cannot tell a factor from a coincidence.
    if (actual > expected && actual % expected == 0) return fmt::format("got = {} x expected", actual / expected);
    if (actual < expected && expected % actual == 0) return fmt::format("got = expected / {}", expected / actual);
    return std::nullopt;
}
}  // namespace

Outcome compare(std::size_t actual, std::size_t expected, std::string_view, Tolerance) {
    if (actual == expected) return {};
    Outcome o{false, fmt::format("got {}, expected {}", actual, expected), {}};
    for (const auto clause : {wrapped_32_bits, whole_multiple})
        if (const Clause text = clause(actual, expected)) o.detail += " -- " + *text;
    return o;
}

std::string count_difference(std::size_t actual, std::size_t expected, std::span<const Term> terms) {
    if (actual == expected) return {};
    const long double diff = static_cast<long double>(expected) - static_cast<long double>(actual);
    std::vector<std::pair<std::size_t, int>> fit;  // (term, coefficient), the one sum that fits
    int fits = 0;
    const auto check = [&](std::vector<std::pair<std::size_t, int>> sum) {
        long double total = 0;
        for (const auto& [t, c] : sum) total += static_cast<long double>(c) * static_cast<long double>(terms[t].value);
        if (total == diff && ++fits == 1) fit = std::move(sum);
    };
    // One kind of term only: a sum of two kinds fits many a difference by coincidence, and would
    // tell the learner of terms their code never had.
    for (std::size_t a = 0; a < terms.size(); ++a)
        for (int ca = -4; ca <= 4; ++ca)
            if (ca != 0) check({{a, ca}});
    // Terms of equal value (d_model = 1, so d_model^2 = d_model) give several sums: say none.
    if (fits != 1) return {};
    std::string text;
    for (const auto& [t, c] : fit) {
        const Term& term = terms[t];
        const int n = std::abs(c);
        // The plural of the term's head noun: its first word ("products with the keys"), or its last.
        const std::size_t space = term.name.find(' ');
        const bool head_first = term.name.find(" with ") != std::string::npos;
        const std::string plural = head_first ? term.name.substr(0, space) + "s" + term.name.substr(space)
                                   : term.name.ends_with("matrix") ? term.name.substr(0, term.name.size() - 1) + "ces"
                                                                   : term.name + "s";
        const std::string what = n == 1 ? fmt::format("one {} ({} = {})", term.name, term.unit, term.value)
                                        : fmt::format("{} {} ({} x {} = {})", n, plural, n, term.unit, n * term.value);
        text += (text.empty() ? "" : " and ") + (c > 0 ? "short by " + what : what + " too many");
    }
    return text;
}

bool values_agree(std::span<const std::size_t> a_shape, std::span<const float> a, std::span<const std::size_t> b_shape,
                  std::span<const float> b, Tolerance tol) {
    if (!std::ranges::equal(a_shape, b_shape) || a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (!agrees(a[i], b[i], tol)) return false;
    return true;
}

std::size_t unwritten_flags(const bool* data, std::size_t n) {
    std::size_t count = 0;
    for (std::size_t i = 0; i < n; ++i) {
        unsigned char byte;
        std::memcpy(&byte, data + i, 1);
        if (byte > 1) ++count;
    }
    return count;
}

bool is_large(std::span<const std::size_t> shape) {
    if (shape.empty()) return false;
    // A matrix: both sides >= 4, or (ex06's warps) at least two rows of 32 lanes.
    if (shape.size() == 2) return (shape[0] >= 4 && shape[1] >= 4) || (shape[0] >= 2 && shape[1] >= 32);
    const auto [lo, hi] = std::ranges::minmax(shape);
    return lo >= 2 && hi >= 4 && lo != hi;
}

// ---------------------------------------------------------------------------------------------

std::vector<Diagnosis>& case_failures() {
    static std::vector<Diagnosis> failures;
    return failures;
}

std::vector<Diagnosis>& run_failures() {
    static std::vector<Diagnosis> failures;
    return failures;
}

namespace {
std::map<std::string, std::string>& explanations() {
    static std::map<std::string, std::string> all;
    return all;
}
// The catalogued mistakes a passing check ruled out.
std::set<std::string>& ruled_out() {
    static std::set<std::string> names;
    return names;
}
}  // namespace

bool still_possible(const std::string& name) {
    // The repair step's runs (gradekit/repair.cpp) read only which checks pass and what the failing
    // ones say: no catalogued mistake is run beside them (a third of each edit's run, exercise 10).
    static const bool catalogue_off = [] {
        const char* c = std::getenv("HEADWISE_GRADE_CATALOGUE");
        return c != nullptr && std::string_view(c) == "off";
    }();
    if (catalogue_off || ruled_out().contains(name)) return false;
    return std::ranges::all_of(
        run_failures(), [&](const Diagnosis& d) { return std::ranges::find(d.matching, name) != d.matching.end(); });
}

void rule_out(const std::string& name, const std::string& check) {
    if (std::getenv("HEADWISE_GRADE_DEBUG") != nullptr)
        std::fprintf(stderr, "[headwise-debug] '%s' ruled out: it differs on the passing check %s\n", name.c_str(),
                     check.c_str());
    ruled_out().insert(name);
}

void remember_explanation(const std::string& name, const std::string& explanation) {
    explanations()[name] = explanation;
}

std::string explanation_of(const std::string& name) {
    const auto it = explanations().find(name);
    return it == explanations().end() ? std::string() : it->second;
}

std::string with_cause_of_non_finite(const std::string& detail, bool exp_of_finite_inputs) {
    const auto at = detail.find(non_finite_where_finite);
    if (!exp_of_finite_inputs || at == std::string::npos) return detail;
    std::string text = detail;
    text.insert(at + non_finite_where_finite.size(), " (the inputs are finite, so your code produced it)");
    return text;
}

std::string without_locations(std::string_view message) {
    static const std::regex location(R"([A-Za-z0-9_./-]+\.(cpp|hpp|cuh|cu):[0-9]+(:[0-9]+)?)");
    return std::regex_replace(std::string(message), location, "<file:line>");
}

std::string fitting_mistake() {
    const auto& all = run_failures();
    if (all.empty()) return {};
    bool large = false;
    std::vector<std::string> fits = all.front().matching;
    std::erase_if(fits, [](const std::string& name) { return ruled_out().contains(name); });
    for (const Diagnosis& d : all) {
        large = large || d.large;
        std::erase_if(fits,
                      [&](const std::string& name) { return std::ranges::find(d.matching, name) == d.matching.end(); });
    }
    return large && !fits.empty() ? fits.front() : std::string();
}

void fail_check(Diagnosis d) {
    if (std::getenv("HEADWISE_GRADE_DEBUG") != nullptr) {  // which mistakes each failing check matched
        std::string names;
        for (const auto& n : d.matching) names += "'" + n + "' ";
        std::fprintf(stderr, "[headwise-debug] large=%d matches: %s| %s\n", int(d.large), names.c_str(),
                     d.message.c_str());
    }
    std::string text = d.message;
    if (!d.where.empty()) text += "\n    " + d.source;
    case_failures().push_back(d);
    run_failures().push_back(std::move(d));
    FAIL_CHECK(text);
}

void fail(const std::string& message, const std::string* mistake, const std::string* explanation) {
    Diagnosis d;
    d.message = message;
    d.large = true;
    if (mistake != nullptr) {
        d.matching.push_back(*mistake);
        remember_explanation(*mistake, explanation ? *explanation : std::string());
    }
    case_failures().push_back(d);
    run_failures().push_back(std::move(d));
    FAIL(message);
    throw std::logic_error("unreachable: Catch2's FAIL returned");
}

void announce(const std::string& what) {
    static const bool trace = std::getenv("HEADWISE_GRADE_TRACE") != nullptr;
    if (!trace) return;
    std::string test;
    if (auto* capture = Catch::getCurrentContext().getResultCapture()) test = capture->getCurrentTestName();
    std::fprintf(stderr, "[headwise-check] %s\t%s\n", test.c_str(), what.c_str());
}

// ---------------------------------------------------------------------------------------------
// Where a subject's exception was thrown: __cxa_throw is wrapped (-Wl,--wrap=__cxa_throw in
// grade builds) to keep the stack of the last throw; it is symbolised only when reported.

namespace {
thread_local void* throw_stack[64];
thread_local int throw_depth = 0;

std::vector<std::string> subject_files() {
    std::vector<std::string> files;
    const char* env = std::getenv("HEADWISE_GRADE_SUBJECT");
    std::string_view rest = env ? env : "";
    while (!rest.empty()) {
        const auto semi = rest.find(';');
        files.emplace_back(rest.substr(0, semi));
        rest = semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
    }
    return files;
}

// Whether `path` ends with the path components `tail` ("a/b.cpp" ends with "b.cpp", "ab.cpp" does not).
bool ends_with_components(std::string_view path, std::string_view tail) {
    return !tail.empty() && path.size() > tail.size() && path.ends_with(tail) &&
           path[path.size() - tail.size() - 1] == '/';
}

// The subject file `path` names (a symboliser's path may be relative to the build directory:
// ccache's base_dir rewrites the compiler's paths so), or empty.
std::string subject_file_of(const std::string& path, const std::vector<std::string>& files) {
    std::string_view tail = path;
    while (tail.starts_with("../") || tail.starts_with("./")) tail.remove_prefix(tail.starts_with("./") ? 2 : 3);
    for (const std::string& f : files) {
        if (f == path) return f;
        if (!path.starts_with("/") && ends_with_components(f, tail)) return f;
    }
    return {};
}

std::string relative_to_source(const std::string& path) {
    const char* root = std::getenv("HEADWISE_GRADE_SOURCE_DIR");
    const std::string prefix = root ? std::string(root) + "/" : std::string();
    return !prefix.empty() && path.rfind(prefix, 0) == 0 ? path.substr(prefix.size()) : path;
}

std::string line_of(const std::string& file, long line) {
    FILE* f = std::fopen(file.c_str(), "r");
    if (f == nullptr) return {};
    char buffer[1024];
    std::string text;
    for (long i = 0; i < line && std::fgets(buffer, sizeof buffer, f) != nullptr; ++i) text = buffer;
    std::fclose(f);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    const auto first = text.find_first_not_of(" \t");
    return first == std::string::npos ? std::string() : text.substr(first);
}

// A thread that returned before a barrier (the emulator's "which returned before it"): the
// kernel's returns above the barrier's line, up to its signature at column 0 -- "your line 68
// (`if (row >= a.seq) return;`) returns before it", or empty when it has none.
std::string returns_before(const std::string& file, long barrier) {
    std::vector<std::string> lines;
    if (FILE* f = std::fopen(file.c_str(), "r")) {
        char buffer[1024];
        while (std::fgets(buffer, sizeof buffer, f) != nullptr) lines.emplace_back(buffer);
        std::fclose(f);
    }
    std::string said;
    int found = 0;
    static const std::regex word(R"(\breturn\b)");
    for (long n = std::min<long>(barrier, long(lines.size())) - 1; n >= 1; --n) {
        const std::string& raw = lines[std::size_t(n - 1)];
        if (!raw.empty() && raw[0] != ' ' && raw[0] != '\t' && raw.find('(') != std::string::npos)
            break;  // its signature
        const auto first = raw.find_first_not_of(" \t"), last = raw.find_last_not_of(" \t\r\n");
        const std::string line = first == std::string::npos ? std::string() : raw.substr(first, last + 1 - first);
        if (!line.starts_with("//") && std::regex_search(line, word) && ++found)
            said = fmt::format("your line {} (`{}`)", n, line) + (said.empty() ? "" : " and " + said);
    }
    return found == 0 ? said : "; " + said + (found == 1 ? " returns" : " return") + " before it";
}

// xtensor's messages, in the learner's terms.
std::string translate(std::string message) {
    for (char& c : message)
        if (c == '\n' || c == '\t') c = ' ';
    if (message.find("Incompatible dimension of arrays") != std::string::npos) {
        std::string shapes;
        const auto lhs = message.find("LHS shape = ("), rhs = message.find("RHS shape = (");
        if (lhs != std::string::npos && rhs != std::string::npos) {
            auto cut = [&](std::size_t at) {
                std::string s = message.substr(at + 12, message.find(')', at) - at - 11);
                if (const auto tail = s.rfind(", )"); tail != std::string::npos) s.replace(tail, 3, ")");
                return s;
            };
            shapes = fmt::format(" shapes {} and {}", cut(lhs), cut(rhs));
        }
        return fmt::format(
            "two tensors of{} were combined element by element (or assigned), but their shapes do not "
            "broadcast: every axis must be equal or 1, counted from the last (xtensor: \"Incompatible "
            "dimension of arrays\")",
            shapes.empty() ? " different shapes" : shapes);
    }
    if (const auto at = message.find("index ");
        at != std::string::npos && message.find("is out of bounds for axis") != std::string::npos) {
        // xtensor's bounds check (grade builds): "...: check failed  index 5 is out of bounds for axis 2 with size 5"
        unsigned long index = 0, axis = 0, size = 0;
        if (std::sscanf(message.c_str() + at, "index %lu is out of bounds for axis %lu with size %lu", &index, &axis,
                        &size) == 3) {
            if (index > (1ul << 63)) {  // a size_t that went below 0 and wrapped around
                return fmt::format(
                    "an index is outside its tensor: index {} on axis {}, whose size is {} -- that is {} "
                    "wrapped around: an unsigned index (std::size_t) went below 0 (i - 1 at i = 0?)",
                    index, axis, size, static_cast<long>(index));
            }
            if (size == 0) {
                // Nothing is wrong with the index: the tensor was made without elements on that axis.
                return fmt::format(
                    "an index is outside its tensor: index {} on axis {}, whose size is 0 -- that axis holds no "
                    "element at all (an empty tensor)",
                    index, axis);
            }
            // Only where it is: one past the end comes from a loop run one too far, a loop over a
            // longer axis, a computed index (h % g for h / g)... the line below shows which, and a
            // guess printed here would be wrong as often as right.
            const std::string how =
                index == size ? std::string("one past the last") : fmt::format("{} past the last", index - size + 1);
            return fmt::format(
                "an index is outside its tensor: index {} on axis {}, whose size is {} (valid: 0 to {}), {}", index,
                axis, size, size - 1, how);
        }
        return "an index is outside its tensor (xtensor's bounds check: " + message + ")";
    }
    if (message.find("assertion failed") != std::string::npos) {
        return "an xtensor check failed (" + message + ")";
    }
    // The emulator's bounds check on global memory: "global memory load out of bounds: index 800
    // of a 800-element buffer, in block (1,0,0) thread (36,0,0)".
    if (const auto at = message.find("out of bounds: index ");
        message.starts_with("global memory ") && at != std::string::npos) {
        long index = 0;
        unsigned long size = 0;
        if (std::sscanf(message.c_str() + at, "out of bounds: index %ld of a %lu-element buffer", &index, &size) == 2) {
            if (size == 0) return message + " (the buffer holds no element)";
            const std::string how = index < 0 ? fmt::format("{} before its start", -index)
                                    : std::size_t(index) == size
                                        ? std::string("one past its end")
                                        : fmt::format("{} past its end", std::size_t(index) - size);
            return fmt::format("{} (valid: 0 to {}; the index is {})", message, size - 1, how);
        }
    }
    return message;
}
}  // namespace

Diagnosis describe_exception(const std::string& what, const std::exception& e) {
    Diagnosis d;
    // The exception's type as the learner wrote it (std::invalid_argument, not St16invalid_argument).
    int status = 0;
    char* demangled = abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &status);
    const std::string type = status == 0 && demangled != nullptr ? demangled : typeid(e).name();
    std::free(demangled);
    // The emulator stops a launch with a launch_error: out of bounds, a race, a barrier not
    // every thread reaches, a warp that diverged. It is the kernel that went wrong, not a throw.
    if (type == "headwise::emulator::launch_error")
        d.message = fmt::format("{}: the emulator stopped the kernel: {}", what, translate(e.what()));
    else
        d.message = fmt::format("{}: threw an exception ({}): {}", what, type, translate(e.what()));
    const auto files = subject_files();
    // The emulator names the kernel's line itself ("... at attention_kernels.cpp:96"): a race, a
    // barrier not every thread reaches, a shared tile's bounds. Its first line in the subject's
    // file is where: the throw may come from the launch, below the kernel.
    if (type == "headwise::emulator::launch_error") {
        static const std::regex site(R"(([A-Za-z0-9_.-]+\.(cpp|cuh|cu|hpp)):([0-9]+))");
        const std::string message = e.what();
        for (auto it = std::sregex_iterator(message.begin(), message.end(), site);
             it != std::sregex_iterator() && d.where.empty(); ++it) {
            for (const std::string& file : files) {
                if (!ends_with_components(file, (*it)[1].str())) continue;
                d.where = relative_to_source(file) + ":" + (*it)[3].str();
                d.source = line_of(file, std::atol((*it)[3].str().c_str()));
                if (message.find("which returned before it") != std::string::npos)
                    d.message += returns_before(file, std::atol((*it)[3].str().c_str()));
                break;
            }
        }
    }
    if (__sanitizer_symbolize_pc != nullptr) {
        for (int i = 0; i < throw_depth && d.where.empty(); ++i) {
            char buffer[4096] = {};
            // The return address points after the call: step back one byte into it. One string
            // per frame inlined at that address, most inlined first, then an empty one: the
            // learner's line may be any of them (xtensor's operator() is inlined into it).
            __sanitizer_symbolize_pc(static_cast<char*>(throw_stack[i]) - 1, "%s:%l:%c", buffer, sizeof buffer - 1);
            for (const char* at = buffer; *at != '\0' && at < buffer + sizeof buffer - 1 && d.where.empty();
                 at += std::strlen(at) + 1) {
                const std::string frame = at;
                const auto colon = frame.find(':');
                const std::string file = subject_file_of(frame.substr(0, colon), files);
                if (file.empty()) continue;
                const long line = std::atol(frame.c_str() + colon + 1);
                d.where = relative_to_source(file + frame.substr(colon));
                if (d.where.ends_with(":0")) d.where.resize(d.where.size() - 2);
                d.source = line_of(file, line);
            }
        }
    }
    if (!d.where.empty()) d.message = d.where + ": " + d.message;
    if (d.message.find("broadcast") != std::string::npos) {
        d.lesson = "docs/xtensor-for-pytorch-users.md, \"Broadcasting\"";
    } else if (d.message.find("index is outside") != std::string::npos) {
        d.lesson = "docs/xtensor-for-pytorch-users.md, \"Indices, shapes and loop bounds\"";
    } else if (d.message.find("the emulator stopped the kernel") != std::string::npos) {
        d.lesson = "docs/06_cuda_kernel.md, \"Pitfalls, with the lesson's numbers\"";
    }
    d.large = false;
    return d;
}

long search::solution_throw_line() {
    if (__sanitizer_symbolize_pc == nullptr) return 0;
    for (int i = 0; i < throw_depth; ++i) {
        char buffer[4096] = {};
        __sanitizer_symbolize_pc(static_cast<char*>(throw_stack[i]) - 1, "%s:%l", buffer, sizeof buffer - 1);
        for (const char* at = buffer; *at != '\0' && at < buffer + sizeof buffer - 1; at += std::strlen(at) + 1) {
            const std::string_view frame = at;
            if (frame.find("headwise-solution/") == std::string_view::npos) continue;
            return std::atol(at + frame.rfind(':') + 1);
        }
    }
    return 0;
}

long search::line_of_where(std::string_view where) {
    // "path:line" or "path:line:column"
    const auto first = where.find(':');
    return first == std::string_view::npos ? 0 : std::atol(std::string(where.substr(first + 1)).c_str());
}

}  // namespace headwise::grade

extern "C" {
[[noreturn]] void __real___cxa_throw(void* thrown, std::type_info* type, void (*destructor)(void*));
[[noreturn]] void __wrap___cxa_throw(void* thrown, std::type_info* type, void (*destructor)(void*)) {
    headwise::grade::throw_depth = backtrace(headwise::grade::throw_stack, 64);
    __real___cxa_throw(thrown, type, destructor);
}
}
