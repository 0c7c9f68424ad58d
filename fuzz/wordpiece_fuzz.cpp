// Fuzz target: the WordPiece tokenizer must turn any bytes into tokens or one usage_error (invalid
// UTF-8, too many tokens) -- never a crash or undefined behaviour -- and every id it returns must
// name a token of the vocabulary.
#include "headwise/base/tensor.hpp"  // headwise::usage_error
#include "headwise/model/tokenizer.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const headwise::WordPiece vocab =
        headwise::WordPiece::from_tokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "##a", "the", "##s", "un",
                                          "##aff", "##able", ",", "!", "東"});
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        const auto e = vocab.encode(text);
        for (std::int32_t id : e.ids)
            if (id < 0 || static_cast<std::size_t>(id) >= vocab.size()) std::abort();
    } catch (const headwise::usage_error&) {}
    return 0;
}
