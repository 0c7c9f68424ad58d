// gradekit/text.cpp -- see text.hpp.
#include "gradekit/text.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace headwise::gradekit {

std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::invalid_argument(fmt::format("cannot read {}", path.string()));
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace headwise::gradekit
