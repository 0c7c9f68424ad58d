// tests/head_view_page.hpp -- the data a head view page carries (headwise/io/head_view.hpp), read
// back out of the HTML: the JSON inside its <script id="headwise-data"> element.
#pragma once

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>

namespace headwise::testing {

inline nlohmann::json head_view_data(const std::string& page) {
    const std::string open = R"(<script id="headwise-data" type="application/json">)";
    const std::size_t start = page.find(open);
    if (start == std::string::npos) throw std::runtime_error("the page has no headwise-data element");
    const std::size_t from = start + open.size(), to = page.find("</script>", from);
    if (to == std::string::npos) throw std::runtime_error("the page's headwise-data element is not closed");
    return nlohmann::json::parse(page.substr(from, to - from));
}

}  // namespace headwise::testing
