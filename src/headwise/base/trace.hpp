// headwise/base/trace.hpp -- every lesson step prints its tensor's shape through one helper.
//
//   q                   (2, 4, 7, 16)   [B, H, N, d_head]
//
// Names are aligned in columns; colour is used only when stdout is a terminal.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace headwise {

// Formats "(2, 4, 7, 16)".
std::string format_shape(std::span<const std::size_t> shape);

// Formats "(2, 4, 7, 16) [B, H, N, d_head]"; throws std::logic_error when the number of
// dimension names differs from the rank (a lesson bug, caught the first time it runs).
std::string format_shape(std::span<const std::size_t> shape, std::string_view dims);

class Tracer {
public:
    enum class Color { automatic, always, never };

    explicit Tracer(bool enabled = true, Color color = Color::automatic);

    bool enabled() const { return enabled_; }

    // One line: name, shape, dimension names. Costs nothing when disabled.
    template <class T>
    void operator()(std::string_view name, const T& tensor, std::string_view dims) const {
        if (!enabled_) return;
        const auto& s = tensor.shape();
        std::vector<std::size_t> shape(s.begin(), s.end());
        shape_line(name, shape, dims);
    }

    void shape_line(std::string_view name, std::span<const std::size_t> shape, std::string_view dims) const;
    // A section heading ("== step 2: scores ==") and free text, in the same style.
    void section(std::string_view title) const;
    void note(std::string_view text) const;

    // ANSI helpers that collapse to plain text when colour is off.
    std::string bold(std::string_view s) const;
    std::string dim(std::string_view s) const;
    std::string green(std::string_view s) const;
    std::string red(std::string_view s) const;
    bool colored() const { return color_; }

private:
    bool enabled_;
    bool color_;
};

// Column widths shared by every shape line, so lessons line up with each other.
inline constexpr std::size_t trace_name_width = 22;
inline constexpr std::size_t trace_shape_width = 18;

}  // namespace headwise
