// headwise/io/figure.hpp -- the pictures in docs/figures/, drawn by the lessons themselves.
//
// PLplot draws them (Debian's libplplot-dev): its own tick logic (plbox) for every numeric axis,
// its legend (pllegend), anti-aliased text through its cairo driver for the PNG (pngcairo) and
// text kept as <text> by its SVG driver (svg). figure.cpp says why PLplot rather than cairo alone.
// There are three kinds of chart, which is all the course needs:
//
//   heatmaps()    matrices side by side (one panel per head), labels on both axes
//   bar_chart()   one bar per label, optionally against a reference line, linear or log scale
//   line_plot()   series of (x, y) points on log-log (or linear) axes
//
// Each returns a Canvas: the figure's size and how to draw it, rendered when it is written.
// save() writes NAME.png and NAME.svg side by side. Rendering returns every piece of text the
// figure asked PLplot to write (title, axis labels, tick labels with their values, legend), so a
// test can read the SVG back and compare.
//
// No xtensor in here: the charts take a Grid (rows, cols, values) and grid_of() converts any
// 2-D tensor, so tests of this file compile fast.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace headwise::figure {

struct Rgb {
    std::uint8_t r = 0, g = 0, b = 0;
    bool operator==(const Rgb&) const = default;
};

inline constexpr Rgb white{255, 255, 255};
inline constexpr Rgb black{0, 0, 0};
inline constexpr Rgb grey{150, 150, 150};
inline constexpr Rgb light_grey{225, 225, 225};

// A distinct colour per head (or per series); cycles after 8.
Rgb palette(std::size_t i);

// Weight 0 -> white, weight 1 -> dark blue, through light blue; clamped to [0, 1].
Rgb weight_color(float weight);

// One piece of text a figure asked PLplot to write, in the order it was written.
struct Text {
    enum class Role {
        title,   // the figure's title, a panel's title
        label,   // an axis's name
        tick,    // a tick label: PLplot chose `value` (numeric axes), or one per row/column/bar
        legend,  // a legend entry, a head band's name, the reference line's name
        value,   // the number written above a bar
        note,    // the line of explanation under a figure
    };
    Role role = Role::note;
    std::string text{};
    char axis = 0;     // 'x' or 'y' for tick labels and axis names, 0 otherwise
    double value = 0;  // a tick's value (the index for a row, column or bar label)
    bool operator==(const Text&) const = default;
};

class Canvas {
public:
    using Draw = std::function<void(std::vector<Text>&)>;  // PLplot calls; appends what it writes
    Canvas(int width, int height, Draw draw);

    int width() const { return width_; }
    int height() const { return height_; }

    // Renders with the PLplot driver the extension names: .png (pngcairo: anti-aliased, fonts from
    // fontconfig) or .svg (svg: text stays text). Returns the text written, in order. A file that
    // cannot be written is std::runtime_error naming it; any other extension std::invalid_argument.
    std::vector<Text> render(const std::filesystem::path& file) const;

private:
    int width_, height_;
    Draw draw_;
};

// A (rows, cols) matrix, row-major. NaN marks a hidden cell (e.g. masked): drawn hatched.
struct Grid {
    std::size_t rows = 0, cols = 0;
    std::vector<float> values{};
    float operator()(std::size_t r, std::size_t c) const { return values[r * cols + c]; }
};

// Any 2-D tensor with shape() and begin()/end() in row-major order (xt::xtensor<float, 2>).
template <class Tensor2>
Grid grid_of(const Tensor2& t) {
    return Grid{t.shape()[0], t.shape()[1], std::vector<float>(t.begin(), t.end())};
}

struct HeatmapPanel {
    std::string title{};
    Grid grid{};
    std::vector<std::string> row_labels{};  // one per row (may be empty: rows are numbered)
    std::vector<std::string> col_labels{};  // one per column (may be empty: columns are numbered)
    // > 0: the columns fall into this many equal bands ("head 0", "head 1", ...), each drawn in
    // its own colour with |value| / max |value| as the intensity. 0: weight_color(value).
    std::size_t column_groups = 0;
};

// Panels side by side under one title, with a legend line underneath. std::invalid_argument
// when a panel's label counts do not match its grid or the panels are empty.
Canvas heatmaps(std::string_view title, std::span<const HeatmapPanel> panels, std::string_view legend, int cell = 0);

struct Bar {
    std::string label{};
    double value = 0.0;
    Rgb color = palette(0);
};
struct BarChart {
    std::string title{};
    std::string y_label{};
    std::vector<Bar> bars{};
    std::optional<double> reference{};  // a dashed horizontal line, e.g. the uniform maximum
    std::string reference_label{};
    bool log_y = false;
    std::function<std::string(double)> format = nullptr;  // value labels and ticks; default "{:.3g}"
    int width = 0, height = 420;                          // width 0: fits the bars
};
Canvas bar_chart(const BarChart& chart);

struct Series {
    std::string name{};
    std::vector<double> x{}, y{};  // same length; non-positive values are skipped on a log axis
    Rgb color = palette(0);
};
struct LinePlot {
    std::string title{};
    std::string x_label{}, y_label{};
    std::vector<Series> series{};
    bool log_x = true, log_y = true;
    std::function<std::string(double)> format_x = nullptr, format_y = nullptr;  // tick labels
    int width = 900, height = 520;
};
Canvas line_plot(const LinePlot& plot);

// Writes `canvas` to dir/name, a .png (creating dir), and beside it the same figure as .svg; prints
// "  figure: dir/name (W x H), and .svg" and returns the PNG's path. A directory that cannot be
// made or written is a usage_error (one line, exit 2).
std::filesystem::path save(const Canvas& canvas, const std::filesystem::path& dir, std::string_view name);

// Reads the width and height from a PNG file's header (signature + IHDR), or nullopt when the
// file is missing or is not a PNG. Used by the tests and by `headwise figures`.
struct PngSize {
    std::uint32_t width = 0, height = 0;
};
std::optional<PngSize> png_size(const std::filesystem::path& file);

}  // namespace headwise::figure
