// gradekit/stub.cpp -- see stub.hpp.
#include "gradekit/stub.hpp"

#include <fmt/format.h>

namespace headwise::gradekit {

namespace {

// The line without surrounding blanks and its line end.
std::string_view stripped(std::string_view line) {
    const auto first = line.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) return {};
    const auto last = line.find_last_not_of(" \t\r\n");
    return line.substr(first, last - first + 1);
}

}  // namespace

SplitSolution split_solution(const std::string& text, const std::string& name) {
    enum class State { outside, solution, stub };
    SplitSolution out;
    State state = State::outside;
    std::size_t line_no = 0, block_start = 0, pos = 0;
    while (pos < text.size()) {
        const std::size_t nl = text.find('\n', pos);
        const std::size_t end = nl == std::string::npos ? text.size() : nl + 1;  // with its newline
        const std::string_view line(text.data() + pos, end - pos);
        pos = end;
        ++line_no;
        const std::string_view s = stripped(line);
        if (s == "// BEGIN SOLUTION") {
            if (state != State::outside)
                throw std::runtime_error(fmt::format("{}:{}: BEGIN SOLUTION inside another block", name, line_no));
            state = State::solution;
            block_start = line_no;
        } else if (s == "// STUB") {
            if (state != State::solution)
                throw std::runtime_error(fmt::format("{}:{}: STUB outside a BEGIN SOLUTION block", name, line_no));
            state = State::stub;
        } else if (s == "// END SOLUTION") {
            if (state != State::stub) {
                throw std::runtime_error(
                    fmt::format("{}:{}: END SOLUTION without BEGIN SOLUTION and STUB before it", name, line_no));
            }
            state = State::outside;
        } else {
            if (state != State::solution) out.stub.append(line);
            if (state != State::stub) out.solution.append(line);
        }
    }
    if (state != State::outside) {
        throw std::runtime_error(
            fmt::format("{}:{}: block opened here is never closed with // END SOLUTION", name, block_start));
    }
    return out;
}

}  // namespace headwise::gradekit
