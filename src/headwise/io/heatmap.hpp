// headwise/io/heatmap.hpp -- attention weights drawn in the terminal, one cell per (query, key).
//
//   query \ key  the   black cat   sat   on
//   the          @@@@  ....  ::::  ....
//   black        ::::  ####  ....  ....
//
// The scale is absolute (0 = blank, 1 = darkest), so heads can be compared with each other.
// On a colour terminal each cell is a grey block with its weight written on it; otherwise
// (a pipe, a file, NO_COLOR) it is plain characters from a ten-step ramp.
#pragma once

#include "headwise/base/tensor.hpp"

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace headwise {

// Lightest to darkest: weight 0 is ' ', weight 1 is '@'.
inline constexpr std::string_view heatmap_ramp = " .:-=+*#%@";

// The ramp character for a weight; weights outside [0, 1] are clamped, NaN is '?'.
char heatmap_shade(float weight);

// The 256-colour grey (232 = nearly black ... 255 = white) used for a weight in colour mode.
int heatmap_grey(float weight);

struct HeatmapOptions {
    bool color = false;
    std::size_t max_size = 16;  // rows and columns beyond this are left out (and said so)
    std::string_view corner = "query \\ key";
};

// One line per query row plus a header of key labels, each ending in '\n'.
// `weights` is (N_query, N_key); the label counts must match (std::logic_error otherwise).
std::string heatmap(const Tensor2& weights, std::span<const std::string> row_labels,
                    std::span<const std::string> col_labels, const HeatmapOptions& options = {});

// The legend that goes with a heatmap, e.g. "weight 0 [ .:-=+*#%@] 1, darker = more".
std::string heatmap_legend(bool color);

// The first n words of `sentence` as token labels; tokens past its end are named "tok5", "tok6"...
std::vector<std::string> token_labels(std::string_view sentence, std::size_t n);

}  // namespace headwise
