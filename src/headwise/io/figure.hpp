// headwise/io/figure.hpp -- the pictures in docs/figures/, drawn by the lessons themselves.
//
// A Canvas is a plain RGB image. Text comes from stb_easy_font (a segment font, scaled up), and
// save_png() hands the pixels to stb_image_write (Debian's libstb). On top of the canvas there
// are three kinds of chart, which is all the course needs:
//
//   heatmaps()    matrices side by side (one panel per head), labels on both axes
//   bar_chart()   one bar per label, optionally against a reference line, linear or log scale
//   line_plot()   series of (x, y) points on log-log (or linear) axes
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

class Canvas {
public:
    Canvas(int width, int height, Rgb background = white);

    int width() const { return width_; }
    int height() const { return height_; }
    Rgb at(int x, int y) const;

    // Everything is clipped to the canvas: drawing outside it is not an error.
    void fill_rect(int x, int y, int w, int h, Rgb color);
    void rect_outline(int x, int y, int w, int h, Rgb color);
    void line(int x0, int y0, int x1, int y1, Rgb color, int thickness = 1);
    // Text with its top-left corner at (x, y); `scale` multiplies the 1-pixel segment font.
    void text(int x, int y, std::string_view s, Rgb color = black, int scale = 2);
    // Centred on x.
    void text_centered(int x, int y, std::string_view s, Rgb color = black, int scale = 2);

    static int text_width(std::string_view s, int scale = 2);
    static int text_height(int scale = 2);

    // Writes a PNG through stb_image_write; std::runtime_error naming the file if that fails.
    void save_png(const std::filesystem::path& file) const;

private:
    int width_, height_;
    std::vector<std::uint8_t> pixels_;  // (height, width, 3), row-major
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

// Writes `canvas` to dir/name (creating dir), prints "  figure: dir/name (W x H)" and returns
// the path. A directory that cannot be made or written is a usage_error (one line, exit 2).
std::filesystem::path save(const Canvas& canvas, const std::filesystem::path& dir, std::string_view name);

// Reads the width and height from a PNG file's header (signature + IHDR), or nullopt when the
// file is missing or is not a PNG. Used by the tests and by `headwise figures`.
struct PngSize {
    std::uint32_t width = 0, height = 0;
};
std::optional<PngSize> png_size(const std::filesystem::path& file);

}  // namespace headwise::figure
