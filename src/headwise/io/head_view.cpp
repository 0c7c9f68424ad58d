#include "headwise/io/head_view.hpp"

#include "headwise/io/npy.hpp"

#include <fmt/format.h>

#include <cmath>
#include <string_view>

namespace headwise::head_view {

namespace generated {
extern const char* const page_template;  // head_view.html, embedded by CMake (head_view_page.cpp.in)
}

namespace {

constexpr std::string_view data_marker = "__HEADWISE_DATA__";

// A JSON string that is also safe inside <script>: '<' is escaped, so no "</script>" can end it.
void append_string(std::string& out, std::string_view s) {
    out += '"';
    for (const char c : s) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '<':
                out += "\\u003c";
                break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
                } else {
                    out += c;
                }
        }
    }
    out += '"';
}

// A JSON array of strings.
void append_strings(std::string& out, const std::vector<std::string>& items) {
    out += '[';
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i) out += ',';
        append_string(out, items[i]);
    }
    out += ']';
}

// A table with one row per layer (roles, ablation cosines): null when there is none, otherwise an
// array of the rows, each written by `row`.
template <class Row, class AppendRow>
void append_per_layer(std::string& out, const std::vector<Row>& table, AppendRow row) {
    if (table.empty()) {
        out += "null";
        return;
    }
    out += '[';
    for (std::size_t l = 0; l < table.size(); ++l) {
        if (l) out += ',';
        row(table[l]);
    }
    out += ']';
}

// A weight with weight_digits after the point, trailing zeros dropped ("0.25", "1", "0").
void append_weight(std::string& out, float w) {
    std::string s = fmt::format("{:.{}f}", w, weight_digits);
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') s.pop_back();
    if (s == "-0") s = "0";
    out += s;
}

void check(const Data& d) {
    if (d.weights.empty()) throw usage_error("head view: no layers of weights to show");
    const std::size_t L = d.weights.size(), H = d.weights[0].shape()[0], N = d.tokens.size();
    if (H == 0 || N == 0) throw usage_error("head view: no heads or no tokens to show");
    for (std::size_t l = 0; l < L; ++l) {
        const auto& s = d.weights[l].shape();
        if (s[0] != H || s[1] != N || s[2] != N) {
            throw usage_error(fmt::format("head view: layer {} weights are ({}, {}, {}); expected (H={}, N={}, N={})",
                                          l, s[0], s[1], s[2], H, N, N));
        }
        for (const float w : d.weights[l])
            if (!std::isfinite(w))
                throw usage_error(fmt::format("head view: layer {} has a weight that is not finite", l));
    }
    auto check_table = [&](std::size_t rows, auto cols, const char* what) {
        if (rows == 0) return;
        bool ok = rows == L;
        for (std::size_t l = 0; ok && l < L; ++l) ok = cols(l) == H;
        if (!ok)
            throw usage_error(fmt::format("head view: the {} must be one per layer and head ({} x {})", what, L, H));
    };
    check_table(
        d.roles.size(), [&](std::size_t l) { return d.roles[l].size(); }, "roles");
    check_table(
        d.ablation.size(), [&](std::size_t l) { return d.ablation[l].size(); }, "ablation cosines");
    for (const auto& row : d.ablation)
        for (const double c : row)
            if (!std::isfinite(c)) throw usage_error("head view: an ablation cosine is not finite");
    if (d.boundary >= N && d.boundary != 0) {
        throw usage_error(fmt::format("head view: the pair boundary {} is not inside the {} tokens", d.boundary, N));
    }
}

std::string json(const Data& d) {
    const std::size_t N = d.tokens.size();
    std::string out;
    out.reserve(d.weights.size() * d.weights[0].size() * 8 + 4096);
    out += "{\"title\":";
    append_string(out, d.title);
    out += ",\"subtitle\":";
    append_string(out, d.subtitle);
    out += ",\"tokens\":";
    append_strings(out, d.tokens);
    out += fmt::format(",\"boundary\":{},\"weights\":[", d.boundary);
    for (std::size_t l = 0; l < d.weights.size(); ++l) {  // weights[l][h] = the (N, N) matrix, row by row
        out += l ? ",[" : "[";
        const std::size_t H = d.weights[l].shape()[0];
        for (std::size_t h = 0; h < H; ++h) {
            out += h ? ",[" : "[";
            const float* w = d.weights[l].data() + h * N * N;
            for (std::size_t i = 0; i < N * N; ++i) {
                if (i) out += ',';
                append_weight(out, w[i]);
            }
            out += ']';
        }
        out += ']';
    }
    out += "],\"roles\":";
    append_per_layer(out, d.roles, [&](const std::vector<std::string>& row) { append_strings(out, row); });
    out += ",\"ablation\":";
    append_per_layer(out, d.ablation,
                     [&](const std::vector<double>& row) { out += fmt::format("[{:.6f}]", fmt::join(row, ",")); });
    out += ",\"ablation_label\":";
    append_string(out, d.ablation_label);
    out += '}';
    return out;
}

}  // namespace

std::string render(const Data& data) {
    check(data);
    std::string page = generated::page_template;
    const std::size_t at = page.find(data_marker);
    page.replace(at, data_marker.size(), json(data));
    return page;
}

void write(const std::filesystem::path& target, const Data& data) {
    npy::PendingFile file(target, render(data));
    file.commit();
}

}  // namespace headwise::head_view
