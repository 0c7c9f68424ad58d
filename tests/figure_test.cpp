// Tests for headwise/io/figure.hpp: the PNGs are read back by an independent decoder (stb_image,
// from Debian's libstb) and by the header parser, never by the code that wrote them.
#include "headwise/io/figure.hpp"
#include "headwise/base/tensor.hpp"

#include <catch2/catch.hpp>
#include <stb/stb_image.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <memory>

using namespace headwise;
using namespace headwise::figure;

namespace {

std::filesystem::path temp_dir(const std::string& name) {
    const auto dir = std::filesystem::temp_directory_path() / ("headwise_figure_test_" + name);
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

struct Decoded {
    int width = 0, height = 0;
    std::unique_ptr<unsigned char, void (*)(void*)> pixels{nullptr, stbi_image_free};
    Rgb at(int x, int y) const {
        const unsigned char* p = pixels.get() + (std::size_t(y) * std::size_t(width) + std::size_t(x)) * 3;
        return {p[0], p[1], p[2]};
    }
};

Decoded decode(const std::filesystem::path& file) {
    Decoded d;
    int channels = 0;
    d.pixels.reset(stbi_load(file.string().c_str(), &d.width, &d.height, &channels, 3));
    return d;
}

std::size_t count_non_white(const Canvas& c, int x0, int y0, int x1, int y1) {
    std::size_t n = 0;
    for (int y = std::max(y0, 0); y < std::min(y1, c.height()); ++y)
        for (int x = std::max(x0, 0); x < std::min(x1, c.width()); ++x) n += c.at(x, y) != white;
    return n;
}

}  // namespace

TEST_CASE("a saved canvas is a PNG whose header and pixels are what was drawn", "[figure]") {
    const auto dir = temp_dir("roundtrip");
    Canvas c(123, 45);
    c.fill_rect(10, 5, 20, 10, Rgb{200, 30, 40});
    const auto file = save(c, dir, "box.png");
    const auto size = png_size(file);
    REQUIRE(size.has_value());
    CHECK(size->width == 123);
    CHECK(size->height == 45);
    const Decoded d = decode(file);
    REQUIRE(d.pixels);
    REQUIRE(d.width == 123);
    CHECK(d.at(15, 10) == Rgb{200, 30, 40});
    CHECK(d.at(29, 14) == Rgb{200, 30, 40});
    CHECK(d.at(30, 10) == white);  // the rectangle is [10, 30) x [5, 15)
    CHECK(d.at(15, 15) == white);
}

TEST_CASE("png_size refuses a file that is not a PNG, and a missing one", "[figure]") {
    const auto dir = temp_dir("notpng");
    std::ofstream(dir / "fake.png") << "GIF89a, not a PNG at all, long enough to have a header";
    CHECK_FALSE(png_size(dir / "fake.png").has_value());
    CHECK_FALSE(png_size(dir / "missing.png").has_value());
}

TEST_CASE("drawing outside the canvas is clipped, not a crash", "[figure]") {
    Canvas c(20, 20);
    c.fill_rect(-50, -50, 60, 60, black);
    c.line(-10, 5, 100, 5, black, 3);
    c.text(15, 15, "clipped text", black, 3);
    CHECK(c.at(9, 9) == black);
    CHECK(c.at(10, 10) != black);  // the rectangle ended at x, y = 10
}

TEST_CASE("text leaves ink inside its measured width and none beyond it", "[figure]") {
    Canvas c(200, 40);
    const int w = Canvas::text_width("head 3", 2);
    CHECK(w > 40);
    CHECK(w < 90);
    c.text(10, 10, "head 3", black, 2);
    CHECK(count_non_white(c, 10, 10, 10 + w, 10 + Canvas::text_height(2)) > 30);
    CHECK(count_non_white(c, 10 + w + 2, 0, 200, 40) == 0);
    CHECK(count_non_white(c, 0, 0, 10, 40) == 0);
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
    const Canvas c = heatmaps("title", {&p, 1}, "legend", cell);
    // Find the dark cell (weight 1) and read its neighbours relative to it.
    int fx = -1, fy = -1;
    for (int y = 0; y < c.height() && fx < 0; ++y)
        for (int x = 0; x < c.width(); ++x)
            if (c.at(x, y) == weight_color(1.0f)) {
                fx = x, fy = y;
                break;
            }
    REQUIRE(fx >= 0);
    CHECK(c.at(fx + cell - 1, fy + cell - 1) == weight_color(1.0f));
    CHECK(c.at(fx + cell / 2, fy + cell + cell / 2) == weight_color(0.25f));
    CHECK(c.at(fx + cell + cell / 2, fy + cell + cell / 2) == white);  // weight 0
    const Rgb hidden = c.at(fx + cell + 1, fy + 2);                    // off the hatch diagonal
    CHECK(hidden == light_grey);
    CHECK(c.at(fx + cell + 4, fy + 4) == grey);  // on it
}

TEST_CASE("heatmaps tint column groups by head and refuse mismatched labels", "[figure]") {
    HeatmapPanel p{"w_q", Grid{1, 4, {1.0f, 1.0f, -1.0f, -1.0f}}, {}, {}, 2};
    const Canvas c = heatmaps("split", {&p, 1}, "", 20);
    std::size_t head0 = 0, head1 = 0;  // full-intensity cells of each head's colour (|-1| = |1|)
    for (int y = 0; y < c.height(); ++y)
        for (int x = 0; x < c.width(); ++x) head0 += c.at(x, y) == palette(0), head1 += c.at(x, y) == palette(1);
    CHECK(head0 >= 2 * 20 * 20);
    CHECK(head1 >= 2 * 20 * 20);

    HeatmapPanel bad{"bad", Grid{2, 2, {0, 0, 0, 0}}, {"only one"}, {}};
    CHECK_THROWS_AS(heatmaps("x", {&bad, 1}, ""), std::invalid_argument);
    HeatmapPanel ragged{"ragged", Grid{2, 2, {0, 0, 0}}, {}, {}};
    CHECK_THROWS_AS(heatmaps("x", {&ragged, 1}, ""), std::invalid_argument);
}

TEST_CASE("bar charts make taller bars for larger values and refuse what a log axis cannot show", "[figure]") {
    BarChart chart{"t", "y", {{"small", 1.0, palette(0)}, {"large", 3.0, palette(1)}}};
    chart.width = 400;
    const Canvas c = bar_chart(chart);
    std::size_t small = 0, large = 0;
    for (int y = 0; y < c.height(); ++y)
        for (int x = 0; x < c.width(); ++x) small += c.at(x, y) == palette(0), large += c.at(x, y) == palette(1);
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
    // y = x on log-log axes: the points 10, 100, 1000 are evenly spaced along a straight line.
    LinePlot plot{"t", "x", "y", {{"y = x", {10.0, 100.0, 1000.0}, {10.0, 100.0, 1000.0}, palette(2)}}};
    const Canvas c = line_plot(plot);
    // The markers are 7 x 7 squares of the series colour; find their centres by column.
    std::vector<int> xs;
    // The plot ends where the legend column starts (line_plot leaves text width + 70 pixels for
    // it); a marker centred on the plot's right edge overhangs it by 3.
    const int plot_right = c.width() - (Canvas::text_width("y = x", 2) + 70);
    for (int x = 0; x <= plot_right + 3; ++x) {
        int run = 0;
        for (int y = 0; y < c.height(); ++y)
            run = c.at(x, y) == palette(2) ? run + 1 : 0, xs.push_back(run >= 7 ? x : -1);
    }
    std::vector<int> cols;
    for (int x : xs)
        if (x >= 0 && (cols.empty() || x > cols.back() + 10)) cols.push_back(x);
    REQUIRE(cols.size() == 3);
    CHECK(std::abs((cols[1] - cols[0]) - (cols[2] - cols[1])) <= 2);

    LinePlot empty{"t", "x", "y", {{"nothing", {-1.0}, {-1.0}, palette(0)}}};
    CHECK_THROWS_AS(line_plot(empty), std::invalid_argument);
    LinePlot ragged{"t", "x", "y", {{"ragged", {1.0, 2.0}, {1.0}, palette(0)}}};
    CHECK_THROWS_AS(line_plot(ragged), std::invalid_argument);
}

TEST_CASE("saving where no directory can be made is bad input, not a crash", "[figure]") {
    const auto dir = temp_dir("blocked");
    std::ofstream(dir / "a_file") << "x";
    CHECK_THROWS_AS(save(Canvas(4, 4), dir / "a_file" / "sub", "x.png"), usage_error);
}
