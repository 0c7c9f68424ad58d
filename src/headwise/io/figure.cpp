// headwise/io/figure.cpp -- canvas, charts and PNG output (see figure.hpp).
#include "headwise/io/figure.hpp"

#include "headwise/base/tensor.hpp"  // usage_error

#include <fmt/format.h>
#include <stb/stb_easy_font.h>
#include <stb/stb_image_write.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <system_error>

namespace headwise::figure {

namespace {

std::uint8_t mix(std::uint8_t a, std::uint8_t b, float t) {
    return static_cast<std::uint8_t>(std::lround(a + (float(b) - float(a)) * t));
}
Rgb mix(Rgb a, Rgb b, float t) { return {mix(a.r, b.r, t), mix(a.g, b.g, t), mix(a.b, b.b, t)}; }

using Format = std::function<std::string(double)>;
std::string default_format(double v) { return fmt::format("{:.3g}", v); }

// Log-scale tick positions: every power of ten in [lo, hi].
std::vector<double> decades(double lo, double hi) {
    std::vector<double> out;
    for (double p = std::pow(10.0, std::floor(std::log10(lo))); p <= hi * 1.0001; p *= 10.0)
        if (p >= lo * 0.9999) out.push_back(p);
    return out;
}

// Linear ticks: about five round steps covering [0, hi].
std::vector<double> linear_ticks(double hi) {
    const double raw = hi / 5.0, mag = std::pow(10.0, std::floor(std::log10(raw)));
    const double step = raw / mag < 2.0 ? 2.0 * mag : raw / mag < 5.0 ? 5.0 * mag : 10.0 * mag;
    std::vector<double> out;
    for (double t = 0.0; t <= hi * 1.0001; t += step) out.push_back(t);
    return out;
}

// Maps a value to a pixel coordinate along one axis (linear or log10).
struct Axis {
    double lo, hi;
    int p0, p1;  // pixel of lo, pixel of hi
    bool log;
    int operator()(double v) const {
        const double t =
            log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) : (v - lo) / (hi - lo);
        return p0 + static_cast<int>(std::lround(t * (p1 - p0)));
    }
};

}  // namespace

Rgb palette(std::size_t i) {
    static constexpr Rgb colors[] = {{31, 119, 180},  {255, 127, 14}, {44, 160, 44},   {214, 39, 40},
                                     {148, 103, 189}, {140, 86, 75},  {227, 119, 194}, {23, 190, 207}};
    return colors[i % 8];
}

Rgb weight_color(float weight) {
    const float w = std::isnan(weight) ? 0.0f : std::clamp(weight, 0.0f, 1.0f);
    constexpr Rgb light{198, 219, 239}, dark{8, 48, 107};
    return w < 0.25f ? mix(white, light, w / 0.25f) : mix(light, dark, (w - 0.25f) / 0.75f);
}

// ---------------------------------------------------------------------------------------------
// Canvas

Canvas::Canvas(int width, int height, Rgb background) : width_(width), height_(height) {
    if (width <= 0 || height <= 0 || width > 16384 || height > 16384)
        throw std::invalid_argument(fmt::format("figure: a {} x {} canvas is not drawable", width, height));
    pixels_.resize(std::size_t(width) * std::size_t(height) * 3);
    fill_rect(0, 0, width, height, background);
}

Rgb Canvas::at(int x, int y) const {
    const std::size_t i = (std::size_t(y) * std::size_t(width_) + std::size_t(x)) * 3;
    return {pixels_.at(i), pixels_.at(i + 1), pixels_.at(i + 2)};
}

void Canvas::fill_rect(int x, int y, int w, int h, Rgb color) {
    const int x0 = std::max(x, 0), y0 = std::max(y, 0), x1 = std::min(x + w, width_), y1 = std::min(y + h, height_);
    for (int yy = y0; yy < y1; ++yy) {
        for (int xx = x0; xx < x1; ++xx) {
            std::uint8_t* p = &pixels_[(std::size_t(yy) * std::size_t(width_) + std::size_t(xx)) * 3];
            p[0] = color.r, p[1] = color.g, p[2] = color.b;
        }
    }
}

void Canvas::rect_outline(int x, int y, int w, int h, Rgb color) {
    fill_rect(x, y, w, 1, color);
    fill_rect(x, y + h - 1, w, 1, color);
    fill_rect(x, y, 1, h, color);
    fill_rect(x + w - 1, y, 1, h, color);
}

void Canvas::line(int x0, int y0, int x1, int y1, Rgb color, int thickness) {
    // Bresenham, with a square brush for thickness.
    const int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0), sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
    int err = dx + dy;
    for (;;) {
        fill_rect(x0 - thickness / 2, y0 - thickness / 2, thickness, thickness, color);
        if (x0 == x1 && y0 == y1) break;
        const int e2 = 2 * err;
        if (e2 >= dy) err += dy, x0 += sx;
        if (e2 <= dx) err += dx, y0 += sy;
    }
}

void Canvas::text(int x, int y, std::string_view s, Rgb color, int scale) {
    // stb_easy_font emits quads (4 vertices of x, y, z floats + 4 colour bytes = 16 bytes each)
    // at one pixel per font unit; each quad is an axis-aligned rectangle, scaled up here.
    std::string buf(s);
    std::vector<char> vertices(buf.size() * 300 + 64);  // ~270 bytes per character at most
    const int quads =
        stb_easy_font_print(0.0f, 0.0f, buf.data(), nullptr, vertices.data(), static_cast<int>(vertices.size()));
    for (int q = 0; q < quads; ++q) {
        float v0[2], v2[2];  // the quad's first and third corners: top-left and bottom-right
        std::memcpy(v0, &vertices[std::size_t(q) * 64], sizeof v0);
        std::memcpy(v2, &vertices[std::size_t(q) * 64 + 32], sizeof v2);
        const int qx0 = static_cast<int>(std::lround(v0[0] * scale)),
                  qy0 = static_cast<int>(std::lround(v0[1] * scale));
        const int qx1 = static_cast<int>(std::lround(v2[0] * scale)),
                  qy1 = static_cast<int>(std::lround(v2[1] * scale));
        fill_rect(x + qx0, y + qy0, std::max(qx1 - qx0, 1), std::max(qy1 - qy0, 1), color);
    }
}

void Canvas::text_centered(int x, int y, std::string_view s, Rgb color, int scale) {
    text(x - text_width(s, scale) / 2, y, s, color, scale);
}

int Canvas::text_width(std::string_view s, int scale) {
    std::string buf(s);
    return stb_easy_font_width(buf.data()) * scale;
}

int Canvas::text_height(int scale) { return 7 * scale; }

void Canvas::save_png(const std::filesystem::path& file) const {
    const std::string name = file.string();
    if (stbi_write_png(name.c_str(), width_, height_, 3, pixels_.data(), width_ * 3) == 0)
        throw usage_error(fmt::format("figure: cannot write {}", name));  // e.g. a directory that does not exist
}

// ---------------------------------------------------------------------------------------------
// Charts

Canvas heatmaps(std::string_view title, std::span<const HeatmapPanel> panels, std::string_view legend, int cell) {
    if (panels.empty()) throw std::invalid_argument("figure: heatmaps() needs at least one panel");
    std::size_t rows = 0, cols = 0;
    int label_w = 0, col_label_w = 0;
    for (const auto& p : panels) {
        if (p.grid.values.size() != p.grid.rows * p.grid.cols || p.grid.rows == 0 || p.grid.cols == 0)
            throw std::invalid_argument(fmt::format("figure: panel '{}' has an empty or inconsistent grid", p.title));
        if ((!p.row_labels.empty() && p.row_labels.size() != p.grid.rows) ||
            (!p.col_labels.empty() && p.col_labels.size() != p.grid.cols))
            throw std::invalid_argument(
                fmt::format("figure: panel '{}' has {} row and {} column labels for a ({}, {}) grid", p.title,
                            p.row_labels.size(), p.col_labels.size(), p.grid.rows, p.grid.cols));
        rows = std::max(rows, p.grid.rows);
        cols = std::max(cols, p.grid.cols);
        for (const auto& l : p.row_labels) label_w = std::max(label_w, Canvas::text_width(l, 2));
        for (const auto& l : p.col_labels) col_label_w = std::max(col_label_w, Canvas::text_width(l, 2));
    }
    if (label_w == 0) label_w = Canvas::text_width(std::to_string(rows), 2);
    // Column labels are written vertically (one character per line) when they are wider than a cell.
    if (cell <= 0) cell = std::clamp(static_cast<int>(320 / std::max(rows, cols)), 4, 48);
    const bool vertical = col_label_w + 4 > cell;
    std::size_t longest = 1;
    for (const auto& p : panels)
        for (const auto& l : p.col_labels) longest = std::max(longest, l.size());
    const int col_label_h = vertical ? static_cast<int>(longest) * 16 + 4 : 20;
    const bool show_col_labels = cell >= 14;
    const int panel_w = label_w + 10 + static_cast<int>(cols) * cell;
    const int gap = 30, margin = 20;
    const int width =
        margin * 2 + static_cast<int>(panels.size()) * panel_w + static_cast<int>(panels.size() - 1) * gap;
    const int top = 50, panel_title_h = 26, bands_h = 22;
    const int height =
        top + panel_title_h + bands_h + (show_col_labels ? col_label_h : 0) + static_cast<int>(rows) * cell + 50;
    Canvas c(std::max(width, Canvas::text_width(title, 3) + 2 * margin), height);
    c.text(margin, 14, title, black, 3);

    for (std::size_t pi = 0; pi < panels.size(); ++pi) {
        const HeatmapPanel& p = panels[pi];
        const int x0 = margin + static_cast<int>(pi) * (panel_w + gap), gx = x0 + label_w + 10;
        c.text(gx, top, p.title, black, 2);
        int gy = top + panel_title_h;
        if (p.column_groups > 0) {  // a coloured band naming each group of columns
            const std::size_t per = p.grid.cols / p.column_groups;
            for (std::size_t g = 0; g < p.column_groups; ++g) {
                const int bx = gx + static_cast<int>(g * per) * cell, bw = static_cast<int>(per) * cell;
                c.fill_rect(bx, gy, bw - 1, bands_h - 4, palette(g));
                const std::string name =
                    bw >= Canvas::text_width("head 0", 2) + 4 ? fmt::format("head {}", g) : std::to_string(g);
                c.text_centered(bx + bw / 2, gy + 2, name, white, bw >= 40 ? 2 : 1);
            }
        }
        gy += bands_h;
        if (show_col_labels) {
            for (std::size_t j = 0; j < p.grid.cols; ++j) {
                const std::string l = p.col_labels.empty() ? std::to_string(j) : p.col_labels[j];
                const int cx = gx + static_cast<int>(j) * cell + cell / 2;
                if (!vertical) {
                    c.text_centered(cx, gy, l, black, 2);
                } else {
                    for (std::size_t ch = 0; ch < l.size(); ++ch)
                        c.text_centered(cx, gy + static_cast<int>(ch) * 16, l.substr(ch, 1), black, 2);
                }
            }
            gy += col_label_h;
        }
        float max_abs = 0.0f;
        for (float v : p.grid.values)
            if (!std::isnan(v)) max_abs = std::max(max_abs, std::abs(v));
        const std::size_t per = p.column_groups > 0 ? std::max<std::size_t>(p.grid.cols / p.column_groups, 1) : 1;
        for (std::size_t i = 0; i < p.grid.rows; ++i) {
            if (cell >= 14 || i % 8 == 0) {
                const std::string l = p.row_labels.empty() ? std::to_string(i) : p.row_labels[i];
                c.text(gx - 6 - Canvas::text_width(l, 2), gy + static_cast<int>(i) * cell + (cell - 14) / 2, l, black,
                       2);
            }
            for (std::size_t j = 0; j < p.grid.cols; ++j) {
                const float v = p.grid(i, j);
                const int x = gx + static_cast<int>(j) * cell, y = gy + static_cast<int>(i) * cell;
                if (std::isnan(v)) {  // hidden: light grey with a diagonal hatch
                    c.fill_rect(x, y, cell, cell, light_grey);
                    for (int t = 0; t < cell; t += 2) c.fill_rect(x + t, y + t, 1, 1, grey);
                    continue;
                }
                const Rgb color = p.column_groups > 0 ? mix(white, palette(std::min(j / per, p.column_groups - 1)),
                                                            max_abs > 0.0f ? std::abs(v) / max_abs : 0.0f)
                                                      : weight_color(v);
                c.fill_rect(x, y, cell, cell, color);
            }
        }
        c.rect_outline(gx - 1, gy - 1, static_cast<int>(p.grid.cols) * cell + 2,
                       static_cast<int>(p.grid.rows) * cell + 2, grey);
    }
    c.text(margin, height - 30, legend, black, 2);
    return c;
}

Canvas bar_chart(const BarChart& chart) {
    if (chart.bars.empty()) throw std::invalid_argument("figure: bar_chart() needs at least one bar");
    const Format format = chart.format ? chart.format : Format(default_format);
    double hi = chart.reference.value_or(0.0), lo = std::numeric_limits<double>::infinity();
    int label_w = 0;
    for (const auto& b : chart.bars) {
        if (!std::isfinite(b.value) || (chart.log_y && b.value <= 0.0))
            throw std::invalid_argument(fmt::format("figure: bar '{}' has value {}", b.label, b.value));
        hi = std::max(hi, b.value);
        lo = std::min(lo, b.value);
        label_w = std::max(label_w, Canvas::text_width(b.label, 2));
    }
    const int bar_w = std::max(48, label_w + 12), left = 110, right = 30, top = 60, bottom = 70;
    const int width = chart.width > 0 ? chart.width
                                      : std::max(left + right + static_cast<int>(chart.bars.size()) * bar_w + 40,
                                                 Canvas::text_width(chart.title, 3) + 40);
    Canvas c(width, chart.height);
    c.text(20, 14, chart.title, black, 3);
    const int plot_h = chart.height - top - bottom, base = top + plot_h;
    std::vector<double> ticks;
    Axis y{0.0, hi * 1.1, base, top, false};
    if (chart.log_y) {
        y = Axis{std::pow(10.0, std::floor(std::log10(lo))), std::pow(10.0, std::ceil(std::log10(hi * 1.0001))), base,
                 top, true};
        ticks = decades(y.lo, y.hi);
    } else {
        ticks = linear_ticks(y.hi);
    }
    for (double t : ticks) {
        const int py = y(t);
        c.fill_rect(left, py, width - left - right, 1, light_grey);
        const std::string l = format(t);
        c.text(left - 8 - Canvas::text_width(l, 2), py - 7, l, black, 2);
    }
    c.text(20, top - 22, chart.y_label, black, 2);
    const int slot = (width - left - right) / static_cast<int>(chart.bars.size());
    for (std::size_t i = 0; i < chart.bars.size(); ++i) {
        const Bar& b = chart.bars[i];
        const int cx = left + static_cast<int>(i) * slot + slot / 2, w = std::min(slot - 12, 90);
        const int py = y(b.value);
        c.fill_rect(cx - w / 2, py, w, base - py, b.color);
        c.text_centered(cx, py - 18, format(b.value), black, 2);
        c.text_centered(cx, base + 10, b.label, black, 2);
    }
    c.fill_rect(left, base, width - left - right, 2, black);
    c.fill_rect(left, top, 2, plot_h, black);
    if (chart.reference) {
        const int py = y(*chart.reference);
        for (int x = left; x < width - right; x += 12) c.fill_rect(x, py - 1, 7, 3, palette(3));
        c.text(left + 8, py - 20, chart.reference_label, palette(3), 2);
    }
    return c;
}

Canvas line_plot(const LinePlot& plot) {
    if (plot.series.empty()) throw std::invalid_argument("figure: line_plot() needs at least one series");
    const Format fx = plot.format_x ? plot.format_x : Format(default_format);
    const Format fy = plot.format_y ? plot.format_y : Format(default_format);
    double x_lo = INFINITY, x_hi = -INFINITY, y_lo = INFINITY, y_hi = -INFINITY;
    int legend_w = 0;
    for (const auto& s : plot.series) {
        if (s.x.size() != s.y.size())
            throw std::invalid_argument(
                fmt::format("figure: series '{}' has {} x and {} y values", s.name, s.x.size(), s.y.size()));
        for (std::size_t i = 0; i < s.x.size(); ++i) {
            if ((plot.log_x && s.x[i] <= 0.0) || (plot.log_y && s.y[i] <= 0.0)) continue;
            x_lo = std::min(x_lo, s.x[i]), x_hi = std::max(x_hi, s.x[i]);
            y_lo = std::min(y_lo, s.y[i]), y_hi = std::max(y_hi, s.y[i]);
        }
        legend_w = std::max(legend_w, Canvas::text_width(s.name, 2));
    }
    if (!(x_lo < x_hi) || !(y_lo <= y_hi)) throw std::invalid_argument("figure: line_plot() has nothing to draw");
    const int left = 120, right = legend_w + 70, top = 60, bottom = 70;
    Canvas c(plot.width, plot.height);
    c.text(20, 14, plot.title, black, 3);
    Axis x{x_lo, x_hi, left, plot.width - right, plot.log_x};
    Axis y{plot.log_y ? y_lo : 0.0, y_hi * 1.05, plot.height - bottom, top, plot.log_y};
    if (plot.log_y)
        y.lo = std::pow(10.0, std::floor(std::log10(y_lo))), y.hi = std::pow(10.0, std::ceil(std::log10(y_hi)));
    if (plot.log_x)
        x.lo = std::pow(10.0, std::floor(std::log10(x_lo))), x.hi = std::pow(10.0, std::ceil(std::log10(x_hi)));
    for (double t : plot.log_y ? decades(y.lo, y.hi) : linear_ticks(y.hi)) {
        c.fill_rect(left, y(t), x.p1 - left, 1, light_grey);
        const std::string l = fy(t);
        c.text(left - 8 - Canvas::text_width(l, 2), y(t) - 7, l, black, 2);
    }
    for (double t : plot.log_x ? decades(x.lo, x.hi) : linear_ticks(x.hi)) {
        c.fill_rect(x(t), top, 1, y.p0 - top, light_grey);
        c.text_centered(x(t), y.p0 + 10, fx(t), black, 2);
    }
    c.fill_rect(left, y.p0, x.p1 - left, 2, black);
    c.fill_rect(left, top, 2, y.p0 - top, black);
    c.text_centered((left + x.p1) / 2, plot.height - 30, plot.x_label, black, 2);
    c.text(20, top - 22, plot.y_label, black, 2);
    for (std::size_t si = 0; si < plot.series.size(); ++si) {
        const Series& s = plot.series[si];
        bool have_prev = false;
        int px = 0, py = 0;
        for (std::size_t i = 0; i < s.x.size(); ++i) {
            if ((plot.log_x && s.x[i] <= 0.0) || (plot.log_y && s.y[i] <= 0.0)) continue;
            const int nx = x(s.x[i]), ny = y(s.y[i]);
            if (have_prev) c.line(px, py, nx, ny, s.color, 3);
            c.fill_rect(nx - 3, ny - 3, 7, 7, s.color);
            px = nx, py = ny, have_prev = true;
        }
        const int ly = top + 10 + static_cast<int>(si) * 24;
        c.fill_rect(x.p1 + 20, ly + 4, 24, 6, s.color);
        c.text(x.p1 + 50, ly, s.name, black, 2);
    }
    return c;
}

// ---------------------------------------------------------------------------------------------
// Files

std::filesystem::path save(const Canvas& canvas, const std::filesystem::path& dir, std::string_view name) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec || !std::filesystem::is_directory(dir))
        throw usage_error(fmt::format("--save-figures {}: cannot create that directory ({})", dir.string(),
                                      ec ? ec.message() : "a file is in the way"));
    const std::filesystem::path file = dir / name;
    try {
        canvas.save_png(file);
    } catch (const std::runtime_error&) {
        throw usage_error(fmt::format("--save-figures {}: cannot write {} there", dir.string(), name));
    }
    fmt::print("  figure: {} ({} x {})\n", file.string(), canvas.width(), canvas.height());
    return file;
}

std::optional<PngSize> png_size(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    unsigned char h[24] = {};
    if (!in.read(reinterpret_cast<char*>(h), sizeof h)) return std::nullopt;
    static constexpr unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (!std::equal(signature, signature + 8, h) || !std::equal(h + 12, h + 16, "IHDR")) return std::nullopt;
    const auto be32 = [](const unsigned char* p) {
        return std::uint32_t(p[0]) << 24 | std::uint32_t(p[1]) << 16 | std::uint32_t(p[2]) << 8 | std::uint32_t(p[3]);
    };
    return PngSize{be32(h + 16), be32(h + 20)};
}

}  // namespace headwise::figure
