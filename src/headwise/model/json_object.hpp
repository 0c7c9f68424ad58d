// headwise/model/json_object.hpp -- the model's JSON (config.json, a safetensors header) parsed
// into an object, or refused with one line that names the file. Used by bert.cpp and safetensors.cpp.
#pragma once

#include "headwise/base/tensor.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <utility>

namespace headwise {

// `input` (text or a stream) parsed as JSON; usage_error "FILE: WHAT is not valid JSON (why)" or
// "FILE: WHAT is not a JSON object" otherwise.
template <class Input>
nlohmann::json parse_json_object(Input&& input, const std::string& file, std::string_view what) {
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(std::forward<Input>(input));
    } catch (const nlohmann::json::exception& e) {
        throw usage_error(fmt::format("{}: {} is not valid JSON ({})", file, what, e.what()));
    }
    if (!j.is_object()) throw usage_error(fmt::format("{}: {} is not a JSON object", file, what));
    return j;
}

}  // namespace headwise
