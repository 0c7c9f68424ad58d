// tests/decoder_fixtures.hpp -- what lesson 12's tests share: the cached SmolLM2-135M-Instruct, found
// where the decoder looks for it (llama::default_model_path: $HEADWISE_DECODER_DIR, else the cache
// scripts/fetch-model fills), or the test ends here as skipped (ctest SKIP_RETURN_CODE 77) with the
// reason; and the fixtures in tests/fixtures/smollm2/.
#pragma once

#include "headwise/model/gguf.hpp"
#include "headwise/model/llama.hpp"

#include <cstdlib>
#include <filesystem>
#include <iostream>

namespace headwise::testing {

inline const std::filesystem::path decoder_fixtures = std::filesystem::path(HEADWISE_FIXTURES_DIR) / "smollm2";

inline std::filesystem::path decoder_path_or_skip() {
    const std::filesystem::path path = llama::default_model_path();
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
        std::cout << "skipped: the SmolLM2-135M-Instruct model is not at " << path.string()
                  << ": run scripts/fetch-model, or set HEADWISE_DECODER_DIR to the folder that holds it" << std::endl;
        std::exit(77);
    }
    return path;
}

// The file, mapped once per process.
inline const gguf::File& decoder_file_or_skip() {
    static const gguf::File file = gguf::File::open(decoder_path_or_skip());
    return file;
}

}  // namespace headwise::testing
