// headwise/io/figure.cpp -- heatmaps, bar charts and line plots drawn by PLplot (see figure.hpp).
//
// Why PLplot (libplplot-dev + plplot-driver-cairo) and not cairo with a font of our own choosing
// (libcairo2-dev + fonts-dejavu-core), measured on the 2-core build machine for issue 49:
// - Ticks. plbox() chooses every numeric axis's tick values and steps (linear and log) and hands
//   each value to our formatter (plslabelfunc); cairo has no axes, so with it the tick logic would
//   be ours again -- the code whose labels the issue found wrong.
// - Text. The pngcairo driver lays text out with pango and fontconfig (DejaVu Sans): anti-aliased,
//   every glyph whole. The svg driver keeps each label a <text> element, which is how
//   tests/figure_test.cpp reads the labels back; cairo's own SVG surface writes glyphs as paths.
// - Build cost. plplot.h and cairo.h are small C headers (4,200 and 1,800 preprocessed lines);
//   the charts' own code is most of this file's compile time; linking adds one shared library,
//   drivers load at run time. The cost is the install: libplplot-dev pulls 56 Debian packages (Qt5, wxWidgets and GTK
//   for drivers we never load) against libcairo2-dev's 20, once per machine, by the same apt-get as
//   the rest; nothing is fetched at build time (a fresh configure and build passed under unshare -n).
// - Look. Both render through cairo, so strokes and text look the same; PLplot's legend (pllegend)
//   and pattern fill (the hatched, masked cells) come with it.
//
// PLplot keeps one global stream, so rendering takes a lock. Coordinates: layouts are worked out in
// pixels from the top-left corner (the Canvas's size is fixed before anything is drawn); `Page`
// converts them to PLplot's viewports (normalised, from the bottom-left corner). The one estimate
// of our own is a string's width (0.6 em per character), used only to leave room for text.
#include "headwise/io/figure.hpp"

#include "headwise/base/tensor.hpp"  // usage_error

#include <fmt/format.h>
#include <plplot.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <system_error>

namespace headwise::figure {

namespace {

std::uint8_t mix(std::uint8_t a, std::uint8_t b, float t) {
    return static_cast<std::uint8_t>(std::lround(a + (float(b) - float(a)) * t));
}
Rgb mix(Rgb a, Rgb b, float t) { return {mix(a.r, b.r, t), mix(a.g, b.g, t), mix(a.b, b.b, t)}; }

using Format = std::function<std::string(double)>;
// Whole numbers in full up to ten million ("1000", not "1e+03"), others to three digits; no "-0".
std::string default_format(double v) {
    if (v == 0.0) return "0";
    if (v == std::round(v) && std::abs(v) < 1e7) return fmt::format("{:.0f}", v);
    return fmt::format("{:.3g}", v);
}

// Font sizes in pixels, and PLplot's character height in mm for one (both drivers: 3.6 px per mm,
// measured from the svg driver's font-size).
constexpr double title_px = 19, text_px = 14, small_px = 12;
constexpr double px_per_mm = 3.6;

std::size_t code_points(std::string_view s) {
    return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}
// A generous estimate of a string's width in pixels (DejaVu Sans averages about 0.55 em).
int text_width(std::string_view s, double px) {
    return static_cast<int>(std::ceil(0.6 * px * static_cast<double>(code_points(s))));
}

// PLplot reads '#' as the start of an escape sequence ("#u" superscript, ...); "##" is a '#'.
std::string escaped(std::string_view s) {
    std::string out;
    for (char c : s) out += c == '#' ? std::string("##") : std::string(1, c);
    return out;
}

// cmap0 indices: 0 background, 1 black (text, axes), 15 the scratch colour of fills, 16.. legend lines.
constexpr PLINT ink = 1, scratch = 15, first_line = 16;

std::mutex plplot_mutex;

// Whether PLplot can load a driver: without plplot-driver-cairo, plinit() would ask on stdin for
// another device instead of failing. Called under the lock.
bool driver_available(const std::string& name) {
    static const std::vector<std::string> drivers = [] {
        std::vector<const char*> menu(256), names(256);
        const char** m = menu.data();
        const char** d = names.data();
        int n = static_cast<int>(names.size());
        plgDevs(&m, &d, &n);
        return std::vector<std::string>(names.begin(), names.begin() + std::clamp(n, 0, 256));
    }();
    return std::find(drivers.begin(), drivers.end(), name) != drivers.end();
}

// One render: pixel layout -> PLplot calls, and the record of the text written.
struct Page {
    int W, H;
    std::vector<Text>& record;

    void color(Rgb c) const {
        plscol0a(scratch, c.r, c.g, c.b, 1.0);
        plcol0(scratch);
    }
    static void font(double px) { plschr(px / px_per_mm, 1.0); }
    // The whole page, in pixels with y up (PLplot mirrors text in a window whose y runs down).
    void page() const {
        plvpor(0.0, 1.0, 0.0, 1.0);
        plwind(0.0, W, 0.0, H);
    }
    // The rectangle [x0, x1) x [y0, y1) in pixels from the top-left, with world coordinates on it.
    void viewport(double x0, double x1, double y0, double y1, double wx0, double wx1, double wy0, double wy1) const {
        plvpor(x0 / W, x1 / W, 1.0 - y1 / H, 1.0 - y0 / H);
        plwind(wx0, wx1, wy0, wy1);
    }
    // Text whose reference point is (x, y) pixels from the top-left: `just` 0 starts there, 0.5
    // centres, 1 ends there; vertically the point is half a capital's height above the baseline.
    // `up`: rotated to read upwards.
    void text(double x, double y, std::string_view s, double px, Rgb c, Text::Role role, double just = 0.0,
              bool up = false, char axis = 0, double value = 0.0) const {
        if (s.empty()) return;
        page();
        font(px);
        color(c);
        plptex(x, H - y, up ? 0.0 : 1.0, up ? 1.0 : 0.0, just, escaped(s).c_str());
        record.push_back({role, std::string(s), axis, value});
    }
    void fill(double x0, double y0, double x1, double y1) const {  // in the current world coordinates
        PLFLT xs[4] = {x0, x1, x1, x0}, ys[4] = {y0, y0, y1, y1};
        plfill(4, xs, ys);
    }
    void outline(double x0, double y0, double x1, double y1) const {
        PLFLT xs[5] = {x0, x1, x1, x0, x0}, ys[5] = {y0, y0, y1, y1, y0};
        plline(5, xs, ys);
    }
};

// plslabelfunc's callback: PLplot chose `value` (log10 of it on a log axis); we format and record it.
struct TickLabels {
    Format x, y;
    bool log_x = false, log_y = false;
    std::vector<Text>* record = nullptr;
    std::function<double(double)> y_value = nullptr;  // maps PLplot's y to the value shown (heatmap rows)
};
void tick_label(PLINT axis, PLFLT value, char* label, PLINT length, PLPointer data) {
    auto& t = *static_cast<TickLabels*>(data);
    const bool is_x = axis == PL_X_AXIS;
    double v = (is_x ? t.log_x : t.log_y) ? std::pow(10.0, value) : value;
    if (!is_x && t.y_value) v = t.y_value(v);
    const std::string s = is_x ? t.x(v) : t.y(v);
    std::snprintf(label, static_cast<std::size_t>(length), "%s", escaped(s).c_str());
    t.record->push_back({Text::Role::tick, s, is_x ? 'x' : 'y', v});
}

// plbox with the tick labels formatted by `labels`: PLplot picks the ticks (`tick` 0: its own
// step), the grid lines under them in light grey first, then the axes in black.
void axes(const char* xopt, double xtick, const char* yopt, double ytick, TickLabels& labels, bool x_grid,
          bool y_grid) {
    const std::string xl = std::string(xopt).find('l') != std::string::npos ? "l" : "";
    const std::string yl = std::string(yopt).find('l') != std::string::npos ? "l" : "";
    if (x_grid || y_grid) {
        plscol0a(scratch, light_grey.r, light_grey.g, light_grey.b, 1.0);
        plcol0(scratch);
        plwidth(1.0);
        plbox(x_grid ? ("g" + xl).c_str() : "", xtick, 0, y_grid ? ("g" + yl).c_str() : "", ytick, 0);
    }
    plcol0(ink);
    plwidth(1.0);
    Page::font(small_px);
    plslabelfunc(tick_label, &labels);  // "o": the labels come from it
    const auto custom = [](const char* opt) {
        return std::string(opt) +
               (std::string(opt).find('n') != std::string::npos || std::string(opt).find('m') != std::string::npos
                    ? "o"
                    : "");
    };
    plbox(custom(xopt).c_str(), xtick, 0, custom(yopt).c_str(), ytick, 0);
    plslabelfunc(nullptr, nullptr);
}

// The widest label a formatter writes over [lo, hi] (estimated from a few values in it).
int widest_label(const Format& f, double lo, double hi, bool log) {
    int w = 0;
    for (int i = 0; i <= 8; ++i) {
        const double t = i / 8.0;
        const double v =
            log ? std::pow(10.0, std::log10(lo) + t * (std::log10(hi) - std::log10(lo))) : lo + t * (hi - lo);
        w = std::max(w, text_width(f(v), small_px));
    }
    return w;
}

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

Canvas::Canvas(int width, int height, Draw draw) : width_(width), height_(height), draw_(std::move(draw)) {
    if (width <= 0 || height <= 0 || width > 16384 || height > 16384)
        throw std::invalid_argument(fmt::format("figure: a {} x {} figure is not drawable", width, height));
}

std::vector<Text> Canvas::render(const std::filesystem::path& file) const {
    const std::string ext = file.extension().string();
    const char* device = ext == ".png" ? "pngcairo" : ext == ".svg" ? "svg" : nullptr;
    if (device == nullptr) throw std::invalid_argument(fmt::format("figure: {}: write .png or .svg", file.string()));
    std::vector<Text> record;
    const std::lock_guard lock(plplot_mutex);
    if (!driver_available(device))
        throw std::runtime_error(
            fmt::format("figure: PLplot has no '{}' driver here (Debian: plplot-driver-cairo; "
                        "scripts/install-deps installs it)",
                        device));
    // PLplot exits the process when it cannot open its output: find out first.
    if (!std::ofstream(file, std::ios::binary))
        throw std::runtime_error(fmt::format("figure: cannot write {}", file.string()));
    plsdev(device);
    plsfnam(file.string().c_str());
    plspage(0.0, 0.0, width_, height_, 0, 0);
    plscolbg(255, 255, 255);
    plinit();
    plscmap0n(64);
    plscol0(0, 255, 255, 255);
    plscol0(ink, 0, 0, 0);
    pladv(0);
    try {
        draw_(record);
    } catch (...) {
        plend();
        throw;
    }
    plend();
    return record;
}

// ---------------------------------------------------------------------------------------------
// Charts

namespace {

// Column labels lie flat when each fits the room up to the next label (labels may be sparse:
// "0", "", ..., "8"), and read upwards otherwise.
bool column_labels_upright(std::span<const HeatmapPanel> panels, int cell) {
    for (const auto& p : panels) {
        std::size_t prev = 0;
        bool any = false;
        for (std::size_t j = 0; j <= p.col_labels.size(); ++j) {
            if (j < p.col_labels.size() && p.col_labels[j].empty()) continue;
            if (any) {
                const int room = static_cast<int>(j - prev) * cell - 4;  // the last one's room runs on
                if (text_width(p.col_labels[prev], small_px) > (j == p.col_labels.size() ? room + cell : room))
                    return true;
            }
            prev = j, any = true;
        }
    }
    return false;
}

// A panel's cells in its viewport (world x = column, y = -row): weight_color(v), or with column
// groups each band's colour at |v| / max |v|; NaN (hidden) light grey, hatched by PLplot's pattern fill.
void draw_cells(const Page& pg, const HeatmapPanel& p) {
    float max_abs = 0.0f;
    for (float v : p.grid.values)
        if (!std::isnan(v)) max_abs = std::max(max_abs, std::abs(v));
    const std::size_t per = p.column_groups > 0 ? std::max<std::size_t>(p.grid.cols / p.column_groups, 1) : 1;
    for (std::size_t i = 0; i < p.grid.rows; ++i) {
        const double y = -static_cast<double>(i);
        for (std::size_t j = 0; j < p.grid.cols; ++j) {
            const float v = p.grid(i, j);
            const double x = static_cast<double>(j);
            if (std::isnan(v)) {
                pg.color(light_grey);
                pg.fill(x - 0.5, y - 0.5, x + 0.5, y + 0.5);
                pg.color(grey);
                plpsty(3);
                pg.fill(x - 0.5, y - 0.5, x + 0.5, y + 0.5);
                plpsty(0);
                continue;
            }
            pg.color(p.column_groups > 0 ? mix(white, palette(std::min(j / per, p.column_groups - 1)),
                                               max_abs > 0.0f ? std::abs(v) / max_abs : 0.0f)
                                         : weight_color(v));
            pg.fill(x - 0.5, y - 0.5, x + 0.5, y + 0.5);
        }
    }
}

}  // namespace

Canvas heatmaps(std::string_view title, std::span<const HeatmapPanel> panels, std::string_view legend, int cell) {
    if (panels.empty()) throw std::invalid_argument("figure: heatmaps() needs at least one panel");
    std::size_t rows = 0, cols = 0;
    int row_label_w = 0, col_label_w = 0;
    bool numbered_rows = false, numbered_cols = false;
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
        numbered_rows |= p.row_labels.empty();
        numbered_cols |= p.col_labels.empty();
        for (const auto& l : p.row_labels) row_label_w = std::max(row_label_w, text_width(l, small_px));
        for (const auto& l : p.col_labels) col_label_w = std::max(col_label_w, text_width(l, small_px));
    }
    if (numbered_rows) row_label_w = std::max(row_label_w, text_width(std::to_string(rows), small_px));
    if (cell <= 0) cell = std::clamp(static_cast<int>(320 / std::max(rows, cols)), 4, 48);
    const bool upright = column_labels_upright(panels, cell);
    const int col_label_h = numbered_cols ? 22 : upright ? col_label_w + 10 : 22;
    const int margin = 20, gap = 40, top = 54, panel_title_h = 24;
    const bool bands = std::any_of(panels.begin(), panels.end(), [](const auto& p) { return p.column_groups > 0; });
    const int bands_h = bands ? 22 : 0;
    const int panel_w = row_label_w + 10 + static_cast<int>(cols) * cell;
    const int grid_top = top + panel_title_h + bands_h + col_label_h;
    const int height = grid_top + static_cast<int>(rows) * cell + 44;
    int width = margin * 2 + static_cast<int>(panels.size()) * panel_w + static_cast<int>(panels.size() - 1) * gap;
    for (const auto& p : panels) width = std::max(width, 2 * margin + text_width(p.title, text_px));
    width = std::max({width, text_width(title, title_px) + 2 * margin, text_width(legend, text_px) + 2 * margin});

    std::vector<HeatmapPanel> copy(panels.begin(), panels.end());
    return Canvas(
        width, height, [=, title = std::string(title), legend = std::string(legend)](std::vector<Text>& record) {
            const Page pg{width, height, record};
            pg.text(margin, 22, title, title_px, black, Text::Role::title);
            for (std::size_t pi = 0; pi < copy.size(); ++pi) {
                const HeatmapPanel& p = copy[pi];
                const double gx = margin + static_cast<double>(pi) * (panel_w + gap) + row_label_w + 10;
                const double R = static_cast<double>(p.grid.rows), C = static_cast<double>(p.grid.cols);
                const double gx1 = gx + C * cell, gy1 = grid_top + R * cell;
                pg.text(gx, top + 8, p.title, text_px, black, Text::Role::title);
                if (p.column_groups > 0) {  // a coloured band naming each group of columns
                    const std::size_t per = p.grid.cols / p.column_groups;
                    for (std::size_t g = 0; g < p.column_groups; ++g) {
                        const double bx = gx + static_cast<double>(g * per) * cell,
                                     bw = static_cast<double>(per) * cell;
                        const double by = top + panel_title_h;
                        pg.page();
                        pg.color(palette(g));
                        pg.fill(bx, height - by, bx + bw - 1, height - (by + bands_h - 4));
                        const std::string name =
                            bw >= text_width("head 0", small_px) + 6 ? fmt::format("head {}", g) : std::to_string(g);
                        pg.text(bx + bw / 2, by + (bands_h - 4) / 2.0, name, bw >= 40 ? small_px : 9, white,
                                Text::Role::legend, 0.5);
                    }
                }
                // The cells: world x = column, world y = -row (row 0 at the top, and PLplot's ticks on
                // the row axis fall on round row numbers).
                pg.viewport(gx, gx1, grid_top, gy1, -0.5, C - 0.5, 0.5 - R, 0.5);
                draw_cells(pg, p);
                // Numbered axes: PLplot's ticks (every index up to 10, its own step beyond), labelled on
                // the top and the left; named ones: every non-empty label at its row or column.
                const bool num_x = p.col_labels.empty(), num_y = p.row_labels.empty();
                if (num_x || num_y) {
                    TickLabels labels{[](double v) { return fmt::format("{:.0f}", v); },
                                      [](double v) { return fmt::format("{:.0f}", v); }};
                    labels.record = &record;
                    labels.y_value = [](double v) { return v == 0.0 ? 0.0 : -v; };
                    pg.viewport(gx, gx1, grid_top, gy1, -0.5, C - 0.5, 0.5 - R, 0.5);
                    axes(num_x ? "cmti" : "", C <= 10 ? 1.0 : 0.0, num_y ? "bntiv" : "", R <= 10 ? 1.0 : 0.0, labels,
                         false, false);
                }
                if (!num_x)
                    for (std::size_t j = 0; j < p.grid.cols; ++j) {
                        const double cx = gx + (static_cast<double>(j) + 0.5) * cell;
                        if (upright)
                            pg.text(cx + 0.36 * small_px, grid_top - 5, p.col_labels[j], small_px, black,
                                    Text::Role::tick, 0.0, true, 'x', double(j));
                        else
                            pg.text(cx, grid_top - 10, p.col_labels[j], small_px, black, Text::Role::tick, 0.5, false,
                                    'x', double(j));
                    }
                if (!num_y)
                    for (std::size_t i = 0; i < p.grid.rows; ++i)
                        pg.text(gx - 6, grid_top + (static_cast<double>(i) + 0.5) * cell, p.row_labels[i], small_px,
                                black, Text::Role::tick, 1.0, false, 'y', double(i));
                pg.page();  // in the grid's own viewport, PLplot would clip lines that lie on its edges
                pg.color(grey);
                pg.outline(gx - 0.5, height - gy1 - 0.5, gx1 + 0.5, height - grid_top + 0.5);
            }
            pg.text(margin, height - 20, legend, text_px, black, Text::Role::note);
        });
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
        label_w = std::max(label_w, text_width(b.label, small_px));
    }
    const std::size_t n = chart.bars.size();
    // The value axis: from 0 (linear) or the decade below the smallest bar (log) to room above the tallest.
    double y_lo = 0.0, y_hi = hi > 0.0 ? hi * 1.15 : 1.0;
    if (chart.log_y) {
        y_lo = std::pow(10.0, std::floor(std::log10(lo)));
        y_hi = std::pow(10.0, std::ceil(std::log10(hi * 1.5)));
    }
    const int left = widest_label(format, y_lo, y_hi, chart.log_y) + 56, right = 30, top = 64;
    int value_w = 0;
    for (const auto& b : chart.bars) value_w = std::max(value_w, text_width(format(b.value), small_px));
    const int slot_min = std::max({48, std::min(label_w, 90) + 12, value_w + 8});
    const int width =
        chart.width > 0
            ? chart.width
            : std::max({left + right + static_cast<int>(n) * slot_min, text_width(chart.title, title_px) + 40,
                        left + right + text_width(chart.reference_label, small_px) + 40});
    const double slot = double(width - left - right) / static_cast<double>(n);
    const bool upright = label_w > slot - 6;  // bar labels read upwards when they do not fit flat
    const int bottom = upright ? label_w + 24 : 44;
    const int base = chart.height - bottom;
    if (base - top < 60)
        throw std::invalid_argument(fmt::format("figure: bar chart '{}' is too short for its labels", chart.title));

    return Canvas(width, chart.height, [=](std::vector<Text>& record) {
        const Page pg{width, chart.height, record};
        pg.text(20, 24, chart.title, title_px, black, Text::Role::title);
        // Pixel rows of values (for the labels written in page coordinates).
        const auto row = [&](double v) {
            const double t = chart.log_y ? (std::log10(v) - std::log10(y_lo)) / (std::log10(y_hi) - std::log10(y_lo))
                                         : (v - y_lo) / (y_hi - y_lo);
            return base - t * (base - top);
        };
        const auto world_y = [&](double v) { return chart.log_y ? std::log10(v) : v; };
        pg.viewport(left, width - right, top, base, 0.0, double(n), world_y(y_lo), world_y(y_hi));
        TickLabels labels{default_format, format, false, chart.log_y, &record};
        axes("bc", 0.0, chart.log_y ? "bcnstlv" : "bcnstv", 0.0, labels, false, true);
        for (std::size_t i = 0; i < n; ++i) {
            const Bar& b = chart.bars[i];
            const double half = std::min(0.38, 45.0 / slot);
            pg.viewport(left, width - right, top, base, 0.0, double(n), world_y(y_lo), world_y(y_hi));
            pg.color(b.color);
            pg.fill(double(i) + 0.5 - half, world_y(y_lo), double(i) + 0.5 + half, world_y(b.value));
        }
        for (std::size_t i = 0; i < n; ++i) {
            const Bar& b = chart.bars[i];
            const double cx = left + (double(i) + 0.5) * slot;
            pg.text(cx, row(b.value) - 10, format(b.value), small_px, black, Text::Role::value, 0.5);
            if (upright)
                pg.text(cx + 0.36 * small_px, base + 8, b.label, small_px, black, Text::Role::tick, 1.0, true, 'x',
                        double(i));
            else
                pg.text(cx, base + 16, b.label, small_px, black, Text::Role::tick, 0.5, false, 'x', double(i));
        }
        if (chart.reference) {
            pg.viewport(left, width - right, top, base, 0.0, double(n), world_y(y_lo), world_y(y_hi));
            pg.color(palette(3));
            plwidth(2.0);
            pllsty(2);
            PLFLT xs[2] = {0.0, double(n)}, ys[2] = {world_y(*chart.reference), world_y(*chart.reference)};
            plline(2, xs, ys);
            // Its name above the plot's top-right corner, after a dashed sample: never over a bar.
            const double lx = width - right - text_width(chart.reference_label, small_px), ly = top - 12;
            pg.page();
            PLFLT sx[2] = {lx - 34, lx - 8}, sy[2] = {chart.height - ly, chart.height - ly};
            plline(2, sx, sy);
            pllsty(1);
            plwidth(1.0);
            pg.text(lx, ly, chart.reference_label, small_px, palette(3), Text::Role::legend);
        }
        pg.text(18, (top + base) / 2.0, chart.y_label, text_px, black, Text::Role::label, 0.5, true, 'y');
    });
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
            if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
            x_lo = std::min(x_lo, s.x[i]), x_hi = std::max(x_hi, s.x[i]);
            y_lo = std::min(y_lo, s.y[i]), y_hi = std::max(y_hi, s.y[i]);
        }
        legend_w = std::max(legend_w, text_width(s.name, small_px));
    }
    if (!(x_lo < x_hi) || !(y_lo <= y_hi)) throw std::invalid_argument("figure: line_plot() has nothing to draw");
    // Log axes run over whole decades; a linear y axis from 0 (or below) to 5% over the top.
    if (plot.log_x)
        x_lo = std::pow(10.0, std::floor(std::log10(x_lo))), x_hi = std::pow(10.0, std::ceil(std::log10(x_hi)));
    if (plot.log_y) {
        y_lo = std::pow(10.0, std::floor(std::log10(y_lo)));
        y_hi = std::pow(10.0, std::ceil(std::log10(y_hi)));
        if (y_lo == y_hi) y_hi *= 10.0;
    } else {
        y_lo = std::min(0.0, y_lo);
        y_hi = y_hi > 0.0 ? y_hi * 1.05 : y_hi + 1.0;
    }
    const int left = widest_label(fy, y_lo, y_hi, plot.log_y) + 56, top = 64, bottom = 64;
    const int right = legend_w + 90;
    const int width = std::max({plot.width, text_width(plot.title, title_px) + 40, left + right + 200});
    const int height = plot.height;
    const std::vector<Series> series = plot.series;

    return Canvas(width, height, [=](std::vector<Text>& record) {
        const Page pg{width, height, record};
        pg.text(20, 24, plot.title, title_px, black, Text::Role::title);
        const auto wx = [&](double v) { return plot.log_x ? std::log10(v) : v; };
        const auto wy = [&](double v) { return plot.log_y ? std::log10(v) : v; };
        const int x1 = width - right, y1 = height - bottom;
        const auto set_plot = [&] { pg.viewport(left, x1, top, y1, wx(x_lo), wx(x_hi), wy(y_lo), wy(y_hi)); };
        set_plot();
        TickLabels labels{fx, fy, plot.log_x, plot.log_y, &record};
        axes(plot.log_x ? "bcnstl" : "bcnst", 0.0, plot.log_y ? "bcnstlv" : "bcnstv", 0.0, labels, true, true);
        // Each series: a line through its points, a small square on each; dashed when an earlier
        // series has its colour (the palette cycles after 8).
        std::vector<PLINT> styles(series.size(), 1);
        for (std::size_t si = 0; si < series.size(); ++si)
            for (std::size_t e = 0; e < si; ++e)
                if (series[e].color == series[si].color) styles[si] = std::min<PLINT>(styles[e] + 1, 8);
        const double mx = 3.5 * (wx(x_hi) - wx(x_lo)) / (x1 - left), my = 3.5 * (wy(y_hi) - wy(y_lo)) / (y1 - top);
        for (std::size_t si = 0; si < series.size(); ++si) {
            const Series& s = series[si];
            std::vector<PLFLT> xs, ys;
            for (std::size_t i = 0; i < s.x.size(); ++i) {
                if ((plot.log_x && s.x[i] <= 0.0) || (plot.log_y && s.y[i] <= 0.0)) continue;
                if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
                xs.push_back(wx(s.x[i])), ys.push_back(wy(s.y[i]));
            }
            plscol0a(first_line + PLINT(si % 48), s.color.r, s.color.g, s.color.b, 1.0);
            plcol0(first_line + PLINT(si % 48));
            plwidth(2.5);
            pllsty(styles[si]);
            plline(PLINT(xs.size()), xs.data(), ys.data());
            pllsty(1);
            plwidth(1.0);
            if (xs.size() <= 64)
                for (std::size_t i = 0; i < xs.size(); ++i) pg.fill(xs[i] - mx, ys[i] - my, xs[i] + mx, ys[i] + my);
        }
        // The legend, PLplot's own, to the right of the plot.
        std::vector<PLINT> opts(series.size(), PL_LEGEND_LINE), text_colors(series.size(), ink),
            line_colors(series.size()), line_styles = styles;
        std::vector<PLFLT> line_widths(series.size(), 2.5);
        std::vector<std::string> names;
        std::vector<const char*> texts;
        for (std::size_t si = 0; si < series.size(); ++si) {
            line_colors[si] = first_line + PLINT(si % 48);
            names.push_back(escaped(series[si].name));
        }
        for (const auto& nm : names) texts.push_back(nm.c_str());
        set_plot();
        Page::font(small_px);
        PLFLT legend_w_out = 0, legend_h_out = 0;
        // Its top-left corner 16 pixels right of the plot's top-right one (offsets are fractions of the page).
        pllegend(&legend_w_out, &legend_h_out, 0,
                 PL_POSITION_LEFT | PL_POSITION_TOP | PL_POSITION_INSIDE | PL_POSITION_SUBPAGE, double(x1 + 16) / width,
                 double(top) / height, 40.0 / width, 0, ink, 1, 0, 0, PLINT(series.size()), opts.data(), 1.0, 1.0, 2.0,
                 0.0, text_colors.data(), texts.data(), nullptr, nullptr, nullptr, nullptr, line_colors.data(),
                 line_styles.data(), line_widths.data(), nullptr, nullptr, nullptr, nullptr);
        for (const auto& s : series) record.push_back({Text::Role::legend, s.name, 0, 0.0});
        pg.text((left + x1) / 2.0, height - 18, plot.x_label, text_px, black, Text::Role::label, 0.5, false, 'x');
        pg.text(18, (top + y1) / 2.0, plot.y_label, text_px, black, Text::Role::label, 0.5, true, 'y');
    });
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
        canvas.render(file);
        canvas.render(std::filesystem::path(file).replace_extension(".svg"));
    } catch (const std::runtime_error& e) {
        throw usage_error(fmt::format("--save-figures {}: cannot write {} there ({})", dir.string(), name, e.what()));
    }
    fmt::print("  figure: {} ({} x {}), and .svg\n", file.string(), canvas.width(), canvas.height());
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
