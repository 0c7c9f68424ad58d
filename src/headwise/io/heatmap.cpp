#include "headwise/io/heatmap.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace headwise {

namespace {

float clamp01(float w) { return std::clamp(w, 0.0f, 1.0f); }

std::string fit(std::string_view s, std::size_t width) { return fmt::format("{:<{}}", s.substr(0, width), width); }

}  // namespace

char heatmap_shade(float weight) {
    if (std::isnan(weight)) return '?';
    const auto steps = static_cast<float>(heatmap_ramp.size() - 1);
    return heatmap_ramp[static_cast<std::size_t>(std::lround(clamp01(weight) * steps))];
}

int heatmap_grey(float weight) {
    if (std::isnan(weight)) return 232;
    return 232 + static_cast<int>(std::lround(clamp01(weight) * 23.0f));
}

std::string heatmap(const Tensor2& weights, std::span<const std::string> row_labels,
                    std::span<const std::string> col_labels, const HeatmapOptions& options) {
    const std::size_t rows = weights.shape()[0], cols = weights.shape()[1];
    if (row_labels.size() != rows || col_labels.size() != cols) {
        throw std::logic_error(fmt::format("heatmap: {} row and {} column labels for a ({}, {}) matrix",
                                           row_labels.size(), col_labels.size(), rows, cols));
    }
    const std::size_t shown_rows = std::min(rows, options.max_size);
    const std::size_t shown_cols = std::min(cols, options.max_size);

    std::size_t cell = 4;  // wide enough for "0.42"
    for (std::size_t j = 0; j < shown_cols; ++j) cell = std::max(cell, std::min<std::size_t>(col_labels[j].size(), 7));
    std::size_t label = options.corner.size();
    for (std::size_t i = 0; i < shown_rows; ++i)
        label = std::max(label, std::min<std::size_t>(row_labels[i].size(), 12));

    std::string out = fit(options.corner, label);
    for (std::size_t j = 0; j < shown_cols; ++j) {
        out += ' ';
        out += fit(col_labels[j], cell);
    }
    if (shown_cols < cols) out += fmt::format("  (+{} keys)", cols - shown_cols);
    out += '\n';

    for (std::size_t i = 0; i < shown_rows; ++i) {
        out += fit(row_labels[i], label);
        for (std::size_t j = 0; j < shown_cols; ++j) {
            const float w = weights(i, j);
            out += ' ';
            if (options.color) {
                const int grey = heatmap_grey(w);
                const int ink = grey >= 244 ? 30 : 97;  // black on light cells, white on dark ones
                out += fmt::format("\x1b[48;5;{};{}m{:>{}.2f}\x1b[0m", grey, ink, w, cell);
            } else {
                out += std::string(cell, heatmap_shade(w));
            }
        }
        out += '\n';
    }
    if (shown_rows < rows) out += fmt::format("({} more query rows not shown)\n", rows - shown_rows);
    return out;
}

std::string heatmap_legend(bool color) {
    if (color) return "each cell shows its weight on a grey from black (0) to white (1)";
    return fmt::format("weight 0 [{}] 1, darker = more", heatmap_ramp);
}

std::vector<std::string> token_labels(std::string_view sentence, std::size_t n) {
    std::vector<std::string> words;
    std::size_t i = 0;
    while (words.size() < n && i < sentence.size()) {
        while (i < sentence.size() && sentence[i] == ' ') ++i;
        const std::size_t start = i;
        while (i < sentence.size() && sentence[i] != ' ') ++i;
        if (i > start) words.emplace_back(sentence.substr(start, i - start));
    }
    while (words.size() < n) words.push_back(fmt::format("tok{}", words.size()));
    return words;
}

}  // namespace headwise
