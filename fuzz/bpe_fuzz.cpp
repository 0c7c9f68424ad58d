// Fuzz target: the byte-level BPE tokenizer must turn any bytes (UTF-8 or not, special tokens or
// parts of them) into ids of its vocabulary -- never a crash or undefined behaviour -- and decoding
// them must give the same bytes back (its vocabulary has a token for every byte). The token stream
// must give valid UTF-8 that Python's errors="replace" would give: checked here as the decoded text
// itself whenever that is valid UTF-8.
#include "headwise/model/bpe.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

// GPT-2's alphabet: bytes ! .. ~, ¡ .. ¬, ® .. ÿ as themselves, the 68 others as U+0100, U+0101, ...
std::string byte_piece(unsigned b) {
    const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    const unsigned cp = printable ? b : 0x100 + (b <= 0x20 ? b : b <= 0xA0 ? 33 + (b - 0x7F) : 67);
    if (cp < 0x80) return std::string(1, static_cast<char>(cp));
    return {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
}

headwise::bpe::Tokenizer make_tokenizer() {
    std::vector<std::string> tokens;
    for (unsigned b = 0; b < 256; ++b) tokens.push_back(byte_piece(b));
    const std::vector<std::string> merges = {"Ġ t",   "h e", "Ġt he", "a a", "aa aa", "Ġ Ġ",
                                             "ĠĠ ĠĠ", "ð Ł", "ðŁ ĺ",  "Ã ©", "i n",   "Ġ in"};
    for (const std::string& m : merges) {
        const std::size_t space = m.find(' ');
        tokens.push_back(m.substr(0, space) + m.substr(space + 1));
    }
    std::vector<std::int64_t> types(tokens.size(), 1);
    for (const char* special : {"<|im_start|>", "<|im_end|>", "<|im", "<t>"}) {
        tokens.emplace_back(special);
        types.push_back(3);
    }
    return headwise::bpe::Tokenizer(tokens, merges, types);
}

bool valid_utf8(const std::string& s) {
    for (std::size_t i = 0; i < s.size();) {
        const auto b = static_cast<unsigned char>(s[i]);
        std::size_t n = b < 0x80                 ? 1
                        : b >= 0xC2 && b <= 0xDF ? 2
                        : b >= 0xE0 && b <= 0xEF ? 3
                        : b >= 0xF0 && b <= 0xF4 ? 4
                                                 : 0;
        if (n == 0 || i + n > s.size()) return false;
        for (std::size_t k = 1; k < n; ++k) {
            const auto c = static_cast<unsigned char>(s[i + k]);
            unsigned lo = 0x80, hi = 0xBF;
            if (k == 1 && b == 0xE0) lo = 0xA0;
            if (k == 1 && b == 0xED) hi = 0x9F;
            if (k == 1 && b == 0xF0) lo = 0x90;
            if (k == 1 && b == 0xF4) hi = 0x8F;
            if (c < lo || c > hi) return false;
        }
        i += n;
    }
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const headwise::bpe::Tokenizer tokenizer = make_tokenizer();
    const std::string text(reinterpret_cast<const char*>(data), size);
    for (bool parse_special : {true, false}) {
        const std::vector<std::int32_t> ids = tokenizer.encode(text, parse_special);
        for (std::int32_t id : ids)
            if (id < 0 || static_cast<std::size_t>(id) >= tokenizer.size()) std::abort();
        if (tokenizer.decode(ids) != text) std::abort();
        headwise::bpe::Tokenizer::Stream stream(tokenizer);
        std::string streamed;
        for (std::int32_t id : ids) streamed += stream.push(id);
        streamed += stream.flush();
        if (!valid_utf8(streamed)) std::abort();
        if (valid_utf8(text) && streamed != text) std::abort();
    }
    std::size_t joined = 0;
    for (const std::string& piece : tokenizer.pre_tokenize(text)) joined += piece.size();
    if (joined != size) std::abort();
    return 0;
}
