// tests/model_fixtures.hpp -- what the lesson 07 tests share: the cached model (or exit 77,
// "skipped", with the reason, when it is not there) and the transformers fixtures in
// tests/fixtures/bert/ (scripts/make-fixtures-bert).
#pragma once

#include "headwise/model/bert.hpp"
#include "headwise/io/npy.hpp"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace headwise::testing {

inline const std::filesystem::path bert_fixtures = std::filesystem::path(HEADWISE_FIXTURES_DIR) / "bert";

// The model folder, or the test ends here as skipped (ctest SKIP_RETURN_CODE 77).
inline std::filesystem::path model_or_skip() {
    const auto dir = bert::model_dir();
    try {
        bert::require_model(dir);
    } catch (const bert::model_missing& e) {
        std::cout << "skipped: " << e.what() << std::endl;
        std::exit(77);
    }
    return dir;
}

// Loaded once per process (each ctest test is its own process; a Catch run of all loads once).
inline const bert::Model& model_or_skip_loaded() {
    static const bert::Model model = bert::Model::load(model_or_skip());
    return model;
}

inline nlohmann::json read_json(const std::filesystem::path& p) {
    std::ifstream in(p);
    return nlohmann::json::parse(in);
}

template <std::size_t R>
Tensor<R> fixture(const std::filesystem::path& p) {
    return npy::to_tensor<R>(npy::read(p), p.string());
}

}  // namespace headwise::testing
