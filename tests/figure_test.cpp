// Tests for headwise/io/figure.hpp. Every figure is read back from its files, never from the code
// that drew it: the SVG's <text> elements (PLplot's svg driver keeps text as text) against the text
// the figure asked PLplot to write, tick labels against their positions, and the PNG's pixels
// through an independent decoder (stb_image, from Debian's libstb).
#include "headwise/io/figure.hpp"
#include "headwise/base/tensor.hpp"

#include "temp_dir.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <stb/stb_image.h>

#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <memory>
#include <regex>
#include <set>
#include <sstream>

using namespace headwise;
using namespace headwise::figure;

namespace {

// A fresh folder `name` in this process's own temporary folder: ctest runs the cases as separate
// processes two at a time, and a shared path let one case delete the files of another.
std::filesystem::path temp_dir(const std::string& name) {
    static const test::TempDir root;
    const auto dir = root.path / name;
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

std::string slurp(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// ---------------------------------------------------------------------------------------------
// Reading an SVG's text back

std::string utf8(char32_t c) {
    std::string s;
    if (c < 0x80) {
        s += char(c);
    } else if (c < 0x800) {
        s += char(0xC0 | (c >> 6)), s += char(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        s += char(0xE0 | (c >> 12)), s += char(0x80 | ((c >> 6) & 0x3F)), s += char(0x80 | (c & 0x3F));
    } else {
        s += char(0xF0 | (c >> 18)), s += char(0x80 | ((c >> 12) & 0x3F)), s += char(0x80 | ((c >> 6) & 0x3F)),
            s += char(0x80 | (c & 0x3F));
    }
    return s;
}

// An XML text node: the tags inside dropped, character references and the five entities decoded.
std::string xml_text(std::string_view raw) {
    std::string out;
    for (std::size_t i = 0; i < raw.size();) {
        if (raw[i] == '<') {
            i = raw.find('>', i);
            i = i == std::string_view::npos ? raw.size() : i + 1;
        } else if (raw[i] == '&') {
            const std::size_t semi = raw.find(';', i);
            const std::string_view e = raw.substr(i + 1, semi - i - 1);
            if (e.size() > 1 && e[0] == '#') {
                const bool hex = e[1] == 'x' || e[1] == 'X';
                unsigned long c = 0;
                std::from_chars(e.data() + (hex ? 2 : 1), e.data() + e.size(), c, hex ? 16 : 10);
                out += utf8(char32_t(c));
            } else {
                out += e == "amp" ? "&" : e == "lt" ? "<" : e == "gt" ? ">" : e == "quot" ? "\"" : "'";
            }
            i = semi + 1;
        } else {
            out += raw[i++];
        }
    }
    return out;
}

// How PLplot's svg driver writes a string: one character reference per code point.
std::string svg_encoded(std::string_view s) {
    std::string out;
    for (unsigned char c : s) out += fmt::format("&#x{:x};", c);  // ASCII in these tests
    return out;
}

struct SvgText {
    std::string text;
    double x = 0, y = 0;             // the anchor, in pixels from the top-left
    std::size_t begin = 0, end = 0;  // the element's content in the file (for planting a wrong label)
};

// Every <text> element of the file, in document order. PLplot draws in a group flipped to y-up
// (matrix(1 0 0 -1 0 H)); each text's own matrix puts its anchor at (e, f) in that group.
std::vector<SvgText> svg_texts(const std::string& svg) {
    std::smatch vb;
    REQUIRE(std::regex_search(svg, vb, std::regex(R"re(viewBox="0 0 ([0-9.]+) ([0-9.]+)")re")));
    const double height = std::stod(vb[2]);
    std::vector<SvgText> out;
    const std::regex matrix(R"(matrix\(([-0-9.e]+) ([-0-9.e]+) ([-0-9.e]+) ([-0-9.e]+) ([-0-9.e]+) ([-0-9.e]+)\))");
    for (std::size_t at = svg.find("<text"); at != std::string::npos; at = svg.find("<text", at + 1)) {
        const std::size_t open_end = svg.find('>', at), close = svg.find("</text>", at);
        REQUIRE(open_end < close);
        const std::string open = svg.substr(at, open_end - at);
        std::smatch m;
        REQUIRE(std::regex_search(open, m, matrix));
        out.push_back({xml_text(std::string_view(svg).substr(open_end + 1, close - open_end - 1)), std::stod(m[5]),
                       height - std::stod(m[6]), open_end + 1, close});
    }
    return out;
}

std::optional<double> number(const std::string& s) {
    double v = 0;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
    return v;
}

// Fits position = a + b * value by least squares; the largest miss in pixels.
double worst_fit(const std::vector<std::pair<double, double>>& pts) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    const double n = double(pts.size());
    for (auto [v, p] : pts) sx += v, sy += p, sxx += v * v, sxy += v * p;
    const double b = (n * sxy - sx * sy) / (n * sxx - sx * sx), a = (sy - b * sx) / n;
    double worst = 0;
    for (auto [v, p] : pts) worst = std::max(worst, std::abs(a + b * v - p));
    return worst;
}

// What the label check found wrong, one line each; empty when the SVG says what was asked.
// 1. The SVG's texts are, in order, the texts the figure asked PLplot to write (titles, axis
//    names, tick labels, legend entries, notes): nothing missing, nothing extra, nothing altered.
// 2. Tick labels that are numbers sit where their numbers belong: within one run of ticks on an
//    axis, the printed number (or its log, on a log axis) against the label's position is a
//    straight line. A label printing 0.9 at 0.8's place is off that line by a tenth of the axis.
std::vector<std::string> label_problems(const std::string& svg, const std::vector<Text>& asked) {
    std::vector<std::string> problems;
    const std::vector<SvgText> found = svg_texts(svg);
    if (found.size() != asked.size())
        problems.push_back(fmt::format("the SVG has {} texts, the figure wrote {}", found.size(), asked.size()));
    for (std::size_t i = 0; i < std::min(found.size(), asked.size()); ++i)
        if (found[i].text != asked[i].text)
            problems.push_back(
                fmt::format("text {}: the SVG says '{}', the figure asked for '{}'", i, found[i].text, asked[i].text));
    // Runs of consecutive numeric ticks on one axis (one panel's, one chart's).
    for (std::size_t i = 0; i < std::min(found.size(), asked.size());) {
        const char axis = asked[i].axis;
        std::size_t j = i;
        std::vector<std::pair<double, double>> lin, lg;
        while (j < asked.size() && j < found.size() && asked[j].role == Text::Role::tick && asked[j].axis == axis &&
               axis != 0) {
            const double pos = axis == 'x' ? found[j].x : found[j].y;
            if (const auto v = number(found[j].text)) {
                lin.emplace_back(*v, pos);
                if (*v > 0) lg.emplace_back(std::log10(*v), pos);
            }
            ++j;
        }
        if (lin.size() >= 3) {
            const double worst = std::min(worst_fit(lin), lg.size() == lin.size() ? worst_fit(lg) : INFINITY);
            if (worst > 1.5) {
                std::string labels;
                for (auto [v, p] : lin) labels += fmt::format(" {:g}@{:.1f}", v, p);
                problems.push_back(fmt::format(
                    "{} tick labels are not where their numbers belong (off by {:.1f} px):{}", axis, worst, labels));
            }
        }
        i = j > i ? j : i + 1;
    }
    return problems;
}

std::vector<std::string> texts_of(const std::vector<Text>& asked, Text::Role role, char axis = 0) {
    std::vector<std::string> out;
    for (const Text& t : asked)
        if (t.role == role && (axis == 0 || t.axis == axis)) out.push_back(t.text);
    return out;
}

struct Rendered {
    std::string svg;
    std::vector<Text> asked;
};
Rendered render_svg(const Canvas& c, const std::string& name) {
    const auto file = temp_dir("labels") / (name + ".svg");
    Rendered r;
    r.asked = c.render(file);
    r.svg = slurp(file);
    return r;
}

// ---------------------------------------------------------------------------------------------
// Reading a PNG's pixels back

struct Decoded {
    int width = 0, height = 0;
    std::unique_ptr<unsigned char, void (*)(void*)> pixels{nullptr, stbi_image_free};
    Rgb at(int x, int y) const {
        const unsigned char* p = pixels.get() + (std::size_t(y) * std::size_t(width) + std::size_t(x)) * 3;
        return {p[0], p[1], p[2]};
    }
    std::size_t count(Rgb c) const {
        std::size_t n = 0;
        for (int y = 0; y < height; ++y)
            for (int x = 0; x < width; ++x) n += at(x, y) == c;
        return n;
    }
};

Decoded decode(const std::filesystem::path& file) {
    Decoded d;
    int channels = 0;
    d.pixels.reset(stbi_load(file.string().c_str(), &d.width, &d.height, &channels, 3));
    REQUIRE(d.pixels);
    return d;
}

Decoded render_png(const Canvas& c, const std::string& name) {
    const auto file = temp_dir("pixels") / (name + ".png");
    c.render(file);
    return decode(file);
}

LinePlot y_equals_x(bool log) {
    LinePlot p{"y = x, sampled", "x value", "y value", {{"y = x", {}, {}, palette(2)}}};
    p.log_x = p.log_y = log;
    for (double x = log ? 10.0 : 0.0; x <= (log ? 1000.0 : 1.0) * 1.0001; x = log ? x * 10.0 : x + 0.125)
        p.series[0].x.push_back(x), p.series[0].y.push_back(x);
    return p;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Labels, read back from the SVG

TEST_CASE("a line plot's SVG holds its title, axis names, PLplot's ticks and its legend", "[figure][labels]") {
    for (const bool log : {false, true}) {
        INFO((log ? "log-log" : "linear"));
        LinePlot plot = y_equals_x(log);
        plot.series.push_back({"second series",
                               {plot.series[0].x.front(), plot.series[0].x.back()},
                               {plot.series[0].y.back(), plot.series[0].y.back()},
                               palette(3)});
        const auto [svg, asked] = render_svg(line_plot(plot), log ? "line_log" : "line_linear");
        for (const auto& p : label_problems(svg, asked)) UNSCOPED_INFO(p);
        CHECK(label_problems(svg, asked).empty());
        // What the test asked for, independently of the figure's record.
        CHECK(texts_of(asked, Text::Role::title) == std::vector<std::string>{"y = x, sampled"});
        CHECK(texts_of(asked, Text::Role::label) == std::vector<std::string>{"x value", "y value"});
        CHECK(texts_of(asked, Text::Role::legend) == std::vector<std::string>{"y = x", "second series"});
        // PLplot's ticks: several per axis, inside the data's range, written as "{:.3g}".
        for (const char axis : {'x', 'y'}) {
            const auto ticks = texts_of(asked, Text::Role::tick, axis);
            CHECK(ticks.size() >= 3);
            for (const auto& t : ticks) {
                REQUIRE(number(t).has_value());
                CHECK(*number(t) >= (log ? 10.0 : 0.0));
                CHECK(*number(t) <= (log ? 1000.0 : 1.05));
            }
        }
        if (log) CHECK(texts_of(asked, Text::Role::tick, 'x') == std::vector<std::string>{"10", "100", "1000"});
    }
}

TEST_CASE("a bar chart's SVG holds its title, bar labels, values, ticks and reference", "[figure][labels]") {
    for (const bool log : {false, true}) {
        INFO((log ? "log" : "linear"));
        BarChart chart{"entropy per head", "nats", {{"head 0", 0.5, palette(0)}, {"head 1", 1.25, palette(1)}}};
        chart.bars.push_back({"head 2", log ? 80.0 : 1.75, palette(2)});
        chart.reference = log ? 10.0 : 2.0;
        chart.reference_label = "uniform maximum";
        chart.log_y = log;
        const auto [svg, asked] = render_svg(bar_chart(chart), log ? "bars_log" : "bars_linear");
        for (const auto& p : label_problems(svg, asked)) UNSCOPED_INFO(p);
        CHECK(label_problems(svg, asked).empty());
        CHECK(texts_of(asked, Text::Role::title) == std::vector<std::string>{"entropy per head"});
        CHECK(texts_of(asked, Text::Role::label) == std::vector<std::string>{"nats"});
        CHECK(texts_of(asked, Text::Role::tick, 'x') == std::vector<std::string>{"head 0", "head 1", "head 2"});
        CHECK(texts_of(asked, Text::Role::value) == std::vector<std::string>{"0.5", "1.25", log ? "80" : "1.75"});
        CHECK(texts_of(asked, Text::Role::legend) == std::vector<std::string>{"uniform maximum"});
        CHECK(texts_of(asked, Text::Role::tick, 'y').size() >= 2);
    }
}

TEST_CASE("a heatmap's SVG holds its titles, row and column labels, head bands and note", "[figure][labels]") {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const std::vector<std::string> tokens{"the", "black", "cat"};
    std::vector<HeatmapPanel> panels{
        {"head 0", Grid{3, 3, {1, 0, 0, 0.5f, 0.5f, 0, 0.2f, 0.3f, 0.5f}}, tokens, tokens},
        {"masked", Grid{3, 3, {1, nan, nan, 0.5f, 0.5f, nan, 0.2f, 0.3f, 0.5f}}, {}, {}},
        {"W_Q #1", Grid{2, 4, {1, 1, -1, -1, 0.5f, 0.5f, 0, 0}}, {}, {}, 2},
    };
    const auto [svg, asked] = render_svg(heatmaps("three panels", panels, "rows: queries"), "heatmaps");
    for (const auto& p : label_problems(svg, asked)) UNSCOPED_INFO(p);
    CHECK(label_problems(svg, asked).empty());
    CHECK(texts_of(asked, Text::Role::title) == std::vector<std::string>{"three panels", "head 0", "masked", "W_Q #1"});
    CHECK(texts_of(asked, Text::Role::note) == std::vector<std::string>{"rows: queries"});
    CHECK(texts_of(asked, Text::Role::legend) == std::vector<std::string>{"head 0", "head 1"});  // the bands
    // The named panel: every token on both axes, in order; the numbered ones: every index (PLplot
    // ticks each one on an axis of 10 or fewer; rows from the bottom up).
    std::vector<std::string> x = texts_of(asked, Text::Role::tick, 'x'), y = texts_of(asked, Text::Role::tick, 'y');
    CHECK(std::vector<std::string>(x.begin(), x.begin() + 3) == tokens);
    CHECK(std::vector<std::string>(x.begin() + 3, x.end()) ==
          std::vector<std::string>{"0", "1", "2", "0", "1", "2", "3"});
    CHECK(std::vector<std::string>(y.begin(), y.begin() + 3) == tokens);
    CHECK(std::vector<std::string>(y.begin() + 3, y.end()) == std::vector<std::string>{"2", "1", "0", "1", "0"});
}

TEST_CASE("the label check fails on a planted wrong label", "[figure][labels]") {
    const auto [svg, asked] = render_svg(line_plot(y_equals_x(false)), "planted");
    REQUIRE(label_problems(svg, asked).empty());
    const std::vector<SvgText> found = svg_texts(svg);
    const auto plant = [&](std::size_t i, const std::string& wrong) {
        std::string bad = svg;
        bad.replace(found[i].begin, found[i].end - found[i].begin,
                    fmt::format(R"(<tspan font-family="sans-serif">{}</tspan>)", svg_encoded(wrong)));
        return label_problems(bad, asked);
    };
    // A y tick one step off (the bug issue 49 found: "0.9" where the value is 0.8): both checks see it.
    std::size_t tick = 0;
    for (std::size_t i = 0; i < asked.size(); ++i)
        if (asked[i].role == Text::Role::tick && asked[i].axis == 'y' && asked[i].value > 0.5) tick = i;
    REQUIRE(tick > 0);
    const double value = *number(found[tick].text);
    const auto wrong = plant(tick, fmt::format("{:.3g}", value + 0.1));
    REQUIRE(wrong.size() == 2);
    CHECK_THAT(wrong[0], Catch::Contains(fmt::format("the figure asked for '{}'", found[tick].text)));
    CHECK_THAT(wrong[1], Catch::Contains("y tick labels are not where their numbers belong"));
    // A cut-off title, a misspelt legend entry, a label dropped, one added.
    CHECK(plant(0, "y = x, sam").size() == 1);
    std::size_t legend = 0;
    while (asked[legend].role != Text::Role::legend) ++legend;
    CHECK(plant(legend, "y = X").size() == 1);
    std::string dropped = svg;
    dropped.erase(svg.rfind("<text", found[legend].begin),
                  svg.find("</text>", found[legend].begin) + 7 - svg.rfind("<text", found[legend].begin));
    CHECK_FALSE(label_problems(dropped, asked).empty());
    std::string added = svg;
    added.insert(svg.rfind("</svg>"), R"re(<text transform="matrix(1 0 0 -1 5 5)">extra</text>)re");
    CHECK_FALSE(label_problems(added, asked).empty());
}

TEST_CASE("text the figure writes stays text in the SVG, '#' and all", "[figure][labels]") {
    // PLplot reads '#' as an escape ("#u" is superscript): the figure must write it literally.
    BarChart chart{"#1 and #u, ## kept", "y # units", {{"a#b", 1.0, palette(0)}}};
    const auto [svg, asked] = render_svg(bar_chart(chart), "escapes");
    CHECK(label_problems(svg, asked).empty());
    CHECK(svg_texts(svg).front().text == "#1 and #u, ## kept");
}

// ---------------------------------------------------------------------------------------------
// Files and pixels

TEST_CASE("save writes a PNG of the figure's size and the SVG beside it", "[figure]") {
    const auto dir = temp_dir("save");
    const auto file =
        save(bar_chart({"t", "y", {{"one", 1.0, palette(0)}}, {}, {}, false, nullptr, 300, 240}), dir, "box.png");
    CHECK(file == dir / "box.png");
    const auto size = png_size(file);
    REQUIRE(size.has_value());
    CHECK(size->width == 300);
    CHECK(size->height == 240);
    const Decoded d = decode(file);
    CHECK(d.width == 300);
    CHECK(d.height == 240);
    CHECK(slurp(dir / "box.svg").find(R"(viewBox="0 0 300 240")") != std::string::npos);
}

TEST_CASE("png_size refuses a file that is not a PNG, and a missing one", "[figure]") {
    const auto dir = temp_dir("notpng");
    std::ofstream(dir / "fake.png") << "GIF89a, not a PNG at all, long enough to have a header";
    CHECK_FALSE(png_size(dir / "fake.png").has_value());
    CHECK_FALSE(png_size(dir / "missing.png").has_value());
}

TEST_CASE("text in the PNG is anti-aliased", "[figure]") {
    // A title in black on white, anti-aliased: many levels of grey, not only black and white.
    const Decoded d = render_png(bar_chart({"Anti-aliased title text", "y", {{"one", 1.0, palette(0)}}}), "aa");
    std::set<int> greys;
    for (int y = 0; y < 40; ++y)
        for (int x = 0; x < d.width; ++x)
            if (const Rgb c = d.at(x, y); c.r == c.g && c.g == c.b) greys.insert(c.r);
    CHECK(greys.size() > 20);
}

TEST_CASE("weight colours run from white at 0 to dark blue at 1, clamped", "[figure]") {
    CHECK(weight_color(0.0f) == white);
    CHECK(weight_color(-3.0f) == white);
    CHECK(weight_color(1.0f) == weight_color(7.0f));
    const Rgb half = weight_color(0.5f), full = weight_color(1.0f);
    CHECK(int(full.r) + full.g + full.b < int(half.r) + half.g + half.b);  // darker as the weight grows
    CHECK(full.b > full.r);
}

TEST_CASE("heatmaps draw each cell in its weight's colour and hidden (NaN) cells hatched", "[figure]") {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    HeatmapPanel p{"t", Grid{2, 2, {1.0f, nan, 0.25f, 0.0f}}, {"a", "b"}, {"a", "b"}};
    const int cell = 40;
    const Decoded c = render_png(heatmaps("title", {&p, 1}, "legend", cell), "cells");
    // The dark cell (weight 1): its extent, then its neighbours' centres relative to it.
    int x0 = c.width, y0 = c.height, x1 = -1, y1 = -1;
    for (int y = 0; y < c.height; ++y)
        for (int x = 0; x < c.width; ++x)
            if (c.at(x, y) == weight_color(1.0f)) x0 = std::min(x0, x), y0 = std::min(y0, y), x1 = x, y1 = y;
    REQUIRE(x1 >= 0);
    CHECK(std::abs((x1 - x0 + 1) - cell) <= 2);  // PLplot's page coordinates round to pixels
    CHECK(std::abs((y1 - y0 + 1) - cell) <= 2);
    const int cx = (x0 + x1) / 2, cy = (y0 + y1) / 2;
    CHECK(c.at(cx, cy + cell) == weight_color(0.25f));
    CHECK(c.at(cx + cell, cy + cell) == white);  // weight 0
    // The hidden cell: light grey with PLplot's hatch lines in grey across it.
    std::size_t light = 0, dark = 0;
    for (int y = y0 + 2; y < y0 + cell - 2; ++y)
        for (int x = x0 + cell + 2; x < x0 + 2 * cell - 2; ++x) {
            const Rgb v = c.at(x, y);
            light += v == light_grey;
            dark += v.r < light_grey.r - 30;
        }
    CHECK(light > std::size_t(cell * cell / 3));
    CHECK(dark > std::size_t(cell));
}

TEST_CASE("heatmaps tint column groups by head and refuse mismatched labels", "[figure]") {
    HeatmapPanel p{"w_q", Grid{1, 4, {1.0f, 1.0f, -1.0f, -1.0f}}, {}, {}, 2};
    const Decoded c = render_png(heatmaps("split", {&p, 1}, "", 20), "groups");
    CHECK(c.count(palette(0)) >= 2 * 20 * 20);  // full-intensity cells of each head's colour (|-1| = |1|)
    CHECK(c.count(palette(1)) >= 2 * 20 * 20);

    HeatmapPanel bad{"bad", Grid{2, 2, {0, 0, 0, 0}}, {"only one"}, {}};
    CHECK_THROWS_AS(heatmaps("x", {&bad, 1}, ""), std::invalid_argument);
    HeatmapPanel ragged{"ragged", Grid{2, 2, {0, 0, 0}}, {}, {}};
    CHECK_THROWS_AS(heatmaps("x", {&ragged, 1}, ""), std::invalid_argument);
    CHECK_THROWS_AS(heatmaps("x", {}, ""), std::invalid_argument);
}

TEST_CASE("bar charts make taller bars for larger values and refuse what a log axis cannot show", "[figure]") {
    BarChart chart{"t", "y", {{"small", 1.0, palette(0)}, {"large", 3.0, palette(1)}}};
    chart.width = 400;
    const Decoded c = render_png(bar_chart(chart), "bars");
    const std::size_t small = c.count(palette(0)), large = c.count(palette(1));
    REQUIRE(small > 0);
    CHECK(double(large) / double(small) == Approx(3.0).epsilon(0.05));

    chart.log_y = true;
    chart.bars[0].value = 0.0;
    CHECK_THROWS_AS(bar_chart(chart), std::invalid_argument);
    chart.log_y = false;
    chart.bars[0].value = std::nan("");
    CHECK_THROWS_AS(bar_chart(chart), std::invalid_argument);
}

TEST_CASE("a log-log line plot puts equal ratios at equal distances", "[figure]") {
    // y = x at 10, 100, 1000 on log-log axes: the line's points, and PLplot's tick labels at those
    // decades, are evenly spaced. Read from the SVG: the polyline in the series' colour.
    const auto [svg, asked] = render_svg(line_plot(y_equals_x(true)), "loglog");
    const Rgb c = palette(2);
    const std::regex line(fmt::format(R"re(stroke="#{:02X}{:02X}{:02X}"[^/]*points="([^"]+)")re", c.r, c.g, c.b));
    std::smatch m;
    REQUIRE(std::regex_search(svg, m, line));
    std::vector<double> xs;
    std::istringstream pts(m[1].str());
    for (std::string pt; pts >> pt;) xs.push_back(std::stod(pt.substr(0, pt.find(','))));
    REQUIRE(xs.size() == 3);
    CHECK(std::abs((xs[1] - xs[0]) - (xs[2] - xs[1])) <= 0.5);
    std::vector<double> ticks;
    const std::vector<SvgText> found = svg_texts(svg);
    for (std::size_t i = 0; i < asked.size(); ++i)
        if (asked[i].role == Text::Role::tick && asked[i].axis == 'x') ticks.push_back(found[i].x);
    REQUIRE(ticks.size() == 3);
    CHECK(ticks[0] == Approx(xs[0]).margin(1.0));
    CHECK(ticks[2] == Approx(xs[2]).margin(1.0));

    LinePlot empty{"t", "x", "y", {{"nothing", {-1.0}, {-1.0}, palette(0)}}};
    CHECK_THROWS_AS(line_plot(empty), std::invalid_argument);
    LinePlot ragged{"t", "x", "y", {{"ragged", {1.0, 2.0}, {1.0}, palette(0)}}};
    CHECK_THROWS_AS(line_plot(ragged), std::invalid_argument);
}

TEST_CASE("saving where no directory can be made is bad input, not a crash", "[figure]") {
    const auto dir = temp_dir("blocked");
    std::ofstream(dir / "a_file") << "x";
    const Canvas c = bar_chart({"t", "y", {{"one", 1.0, palette(0)}}});
    CHECK_THROWS_AS(save(c, dir / "a_file" / "sub", "x.png"), usage_error);
    CHECK_THROWS_AS(c.render(dir / "x.gif"), std::invalid_argument);
}
