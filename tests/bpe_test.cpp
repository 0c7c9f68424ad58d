// tests for headwise/model/bpe.hpp: the pre-tokenizer's rules, BPE's merge order, special tokens,
// decoding and the token stream on a small hand-built vocabulary (the expected ids worked out by hand
// below), then SmolLM2-135M-Instruct's real vocabulary, read from its GGUF, against the ids Hugging
// Face's `tokenizers` gave for every text of tests/fixtures/smollm2/tokenizer_ids.json
// (scripts/make_fixtures_tokenizer.py; skipped, exit 77, when the GGUF is not cached).
#include "headwise/model/bpe.hpp"

#include "headwise/base/tensor.hpp"
#include "headwise/model/gguf.hpp"

#include "decoder_fixtures.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

using namespace headwise;
using Catch::Matchers::Contains;
using Ids = std::vector<std::int32_t>;
using Pieces = std::vector<std::string>;
namespace fs = std::filesystem;

namespace {

// ---------------------------------------------------------------------------------------------
// The small vocabulary. Ids 0..255: the token of each byte, id = the byte's value, spelled in GPT-2's
// alphabet (bytes ! .. ~, ¡ .. ¬, ® .. ÿ as themselves, the 68 others as U+0100, U+0101, ... in order).
// Then the merges' tokens, 256.. in rank order, and the special tokens.

std::string byte_piece(unsigned b) {
    const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    unsigned cp = b;
    if (!printable) cp = 0x100 + (b <= 0x20 ? b : b <= 0xA0 ? 33 + (b - 0x7F) : 67);
    std::string s;
    if (cp < 0x80) {
        s.push_back(static_cast<char>(cp));
    } else {
        s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
    return s;
}

// rank: merge            -> id
//    0: "Ġ t"            -> 256 "Ġt"
//    1: "h e"            -> 257 "he"
//    2: "Ġt he"          -> 258 "Ġthe"
//    3: "a a"            -> 259 "aa"
//    4: "aa aa"          -> 260 "aaaa"
//    5: "Ġ Ġ"            -> 261 "ĠĠ"
//    6: "l o"            -> 262 "lo"
//    7: "lo w"           -> 263 "low"
//    8: "e r"            -> 264 "er"
//    9: "low er"         -> 265 "lower"
//   10: "ð Ł"            -> 266 "ðŁ"    (bytes F0 9F: the start of most emoji)
//   11: "ðŁ ĺ"           -> 267 "ðŁĺ"   (F0 9F 98: three of 😀's four bytes, F0 9F 98 80)
// specials: 268 "<|im_start|>" (control), 269 "<|im_end|>" (control), 270 "<tool>" (user-defined),
//           271 "<|im" (control, a prefix of the two others)
bpe::Tokenizer small() {
    std::vector<std::string> tokens;
    for (unsigned b = 0; b < 256; ++b) tokens.push_back(byte_piece(b));
    for (const char* t : {"Ġt", "he", "Ġthe", "aa", "aaaa", "ĠĠ", "lo", "low", "er", "lower", "ðŁ", "ðŁĺ"})
        tokens.emplace_back(t);
    for (const char* t : {"<|im_start|>", "<|im_end|>", "<tool>", "<|im"}) tokens.emplace_back(t);
    const std::vector<std::string> merges = {"Ġ t", "h e",  "Ġt he", "a a",    "aa aa", "Ġ Ġ",
                                             "l o", "lo w", "e r",   "low er", "ð Ł",   "ðŁ ĺ"};
    std::vector<std::int64_t> types(tokens.size(), 1);
    types[268] = types[269] = types[271] = 3;
    types[270] = 4;
    return bpe::Tokenizer(tokens, merges, types);
}

// ---------------------------------------------------------------------------------------------
// SmolLM2's vocabulary, from its GGUF (headwise/model/gguf.hpp).

// Loaded once per process, or the test ends here as skipped (ctest SKIP_RETURN_CODE 77).
const bpe::Tokenizer& smollm2_or_skip() {
    static const bpe::Tokenizer tokenizer = [] {
        const gguf::File& file = testing::decoder_file_or_skip();
        return bpe::Tokenizer(file.get_strings("tokenizer.ggml.tokens"), file.get_strings("tokenizer.ggml.merges"),
                              file.get_ints("tokenizer.ggml.token_type"));
    }();
    return tokenizer;
}

nlohmann::json fixture_cases() {
    std::ifstream in(fs::path(HEADWISE_FIXTURES_DIR) / "smollm2" / "tokenizer_ids.json");
    return nlohmann::json::parse(in).at("cases");
}

std::string stream_all(const bpe::Tokenizer& tokenizer, const Ids& ids) {
    bpe::Tokenizer::Stream stream(tokenizer);
    std::string out;
    for (std::int32_t id : ids) out += stream.push(id);
    return out + stream.flush();
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The small vocabulary

TEST_CASE("bpe spells the bytes in GPT-2's alphabet: 0x20 is Ġ, 0x0A is Ċ, 0xAD is Ń", "[bpe]") {
    const bpe::Tokenizer t = small();
    CHECK(t.size() == 272);
    CHECK(t.piece(0x20) == "Ġ");
    CHECK(t.piece(0x0A) == "Ċ");
    CHECK(t.piece(0xAD) == "Ń");
    CHECK(t.piece(0x41) == "A");
    CHECK(t.token_bytes(0x20) == " ");
    CHECK(t.token_bytes(258) == " the");
    CHECK(t.find("Ġthe") == 258);
    CHECK(t.find("nope") == -1);
    CHECK(t.is_special(268));
    CHECK(t.is_special(270));
    CHECK_FALSE(t.is_special(258));
}

TEST_CASE("bpe pre-tokenizer: words keep their leading space, each digit is a piece", "[bpe]") {
    const bpe::Tokenizer t = small();
    CHECK(t.pre_tokenize("Hello world 2024") == Pieces{"Hello", " world", " ", "2", "0", "2", "4"});
    CHECK(t.pre_tokenize("3.14 and  42") == Pieces{"3", ".", "1", "4", " and", "  ", "4", "2"});
    CHECK(t.pre_tokenize("Hi!!! ok?") == Pieces{"Hi", "!!!", " ok", "?"});
    CHECK(t.pre_tokenize("café 東京") == Pieces{"café", " 東京"});  // \p{L} beyond ASCII
    CHECK(t.pre_tokenize("Ⅻ ½x") == Pieces{"Ⅻ", " ", "½", "x"});    // \p{N}: letter numbers and fractions too
    CHECK(t.pre_tokenize("") == Pieces{});
}

TEST_CASE("bpe pre-tokenizer: the contractions are lower-case only", "[bpe]") {
    const bpe::Tokenizer t = small();
    CHECK(t.pre_tokenize("I'm don't we'll they're I've she'd it's") ==
          Pieces{"I", "'m", " don", "'t", " we", "'ll", " they", "'re", " I", "'ve", " she", "'d", " it", "'s"});
    CHECK(t.pre_tokenize("DON'T") == Pieces{"DON", "'", "T"});
    CHECK(t.pre_tokenize("?'s 'x") == Pieces{"?'", "s", " '", "x"});  // a run of punctuation takes the '
}

TEST_CASE("bpe pre-tokenizer: a run of whitespace leaves its last character to the next word", "[bpe]") {
    const bpe::Tokenizer t = small();
    CHECK(t.pre_tokenize("a  b") == Pieces{"a", " ", " b"});
    CHECK(t.pre_tokenize("a\n\nb") == Pieces{"a", "\n", "\n", "b"});  // only a space joins a word
    CHECK(t.pre_tokenize("a \n b") == Pieces{"a", " \n", " b"});
    CHECK(t.pre_tokenize("x   ") == Pieces{"x", "   "});  // at the end, the whole run
    CHECK(t.pre_tokenize("\t\tif") == Pieces{"\t", "\t", "if"});
    CHECK(t.pre_tokenize("a\u00a0b\u3000c") == Pieces{"a", "\u00a0", "b", "\u3000", "c"});  // Zs is \s
    CHECK(t.pre_tokenize("a \u0085b") == Pieces{"a", " ", "\u0085", "b"});  // so is U+0085 (a control, Cc)
}

TEST_CASE("bpe pre-tokenizer: combining marks and emoji are neither letters nor spaces", "[bpe]") {
    const bpe::Tokenizer t = small();
    CHECK(t.pre_tokenize("e\u0301t") == Pieces{"e", "\u0301", "t"});
    CHECK(t.pre_tokenize("I \u2764\ufe0f \U0001F917!") == Pieces{"I", " \u2764\ufe0f", " \U0001F917!"});
}

TEST_CASE("bpe pre-tokenizer: each byte that is not UTF-8 is a piece of its own", "[bpe]") {
    const bpe::Tokenizer t = small();
    CHECK(t.pre_tokenize("a\xff"
                         "b\xe2\x82") == Pieces{"a", "\xff", "b", "\xe2", "\x82"});
    CHECK(t.pre_tokenize("\xed\xa0\x80 x") == Pieces{"\xed", "\xa0", "\x80", " x"});  // a surrogate
}

TEST_CASE("bpe merges the pair of lowest rank first, the leftmost on a tie", "[bpe]") {
    const bpe::Tokenizer t = small();
    CHECK(t.merge(" the") == Ids{258});       // "Ġ t" (0), "h e" (1), then "Ġt he" (2)
    CHECK(t.merge("lower") == Ids{265});      // lo, low, er, lower
    CHECK(t.merge("aaaaa") == Ids{260, 97});  // aa·a·a·a -> aa·aa·a -> aaaa·a
    CHECK(t.merge("aaa") == Ids{259, 97});
    CHECK(t.merge("    ") == Ids{261, 261});
    CHECK(t.merge("xyz") == Ids{'x', 'y', 'z'});
}

TEST_CASE("bpe encode: pieces, then BPE inside each piece", "[bpe]") {
    const bpe::Tokenizer t = small();
    // " the", " lower", " aaaaa", " ", "4", "2", "!"
    CHECK(t.encode(" the lower aaaaa 42!") == Ids{258, 32, 265, 32, 260, 97, 32, '4', '2', '!'});
    CHECK(t.encode("") == Ids{});
    CHECK(t.encode("\xff\xfe") == Ids{0xFF, 0xFE});  // bytes that are not UTF-8 still have tokens
}

TEST_CASE("bpe encode: special tokens written in the text, the longest at each place", "[bpe]") {
    const bpe::Tokenizer t = small();
    // "user": u s er; "\n" is byte 0x0A
    CHECK(t.encode("<|im_start|>user\nhi<|im_end|>") == Ids{268, 'u', 's', 264, '\n', 'h', 'i', 269});
    CHECK(t.encode("<|im<|im_start|><tool>") == Ids{271, 268, 270});
    CHECK(t.encode("<|im_start|") == Ids{271, '_', 's', 't', 'a', 'r', 't', '|'});
    // Without parse_special they are text: "<|", "im", "_", "end", "|>"
    CHECK(t.encode("<|im_end|>", false) == Ids{'<', '|', 'i', 'm', '_', 'e', 'n', 'd', '|', '>'});
}

TEST_CASE("bpe decode gives back the bytes, special tokens as their text", "[bpe]") {
    const bpe::Tokenizer t = small();
    for (const std::string text : {" the lower aaaaa 42!", "<|im_start|>user\nhi<|im_end|>", "\U0001F600 é\t\n",
                                   "bad \xff\xc3 bytes \xe2\x82"}) {
        CHECK(t.decode(t.encode(text)) == text);
    }
    CHECK(t.decode({268, 258, 269}) == "<|im_start|> the<|im_end|>");
    CHECK_THROWS_WITH(t.decode({258, 272}), Contains("token id 272 is outside the vocabulary (0..271)"));
    CHECK_THROWS_WITH(t.decode({-1}), Contains("token id -1"));
}

TEST_CASE("bpe stream holds back an emoji split across tokens until it is complete", "[bpe]") {
    const bpe::Tokenizer t = small();
    REQUIRE(t.encode("\U0001F600!") == Ids{267, 0x80, '!'});  // ðŁĺ + Ģ: F0 9F 98 | 80
    bpe::Tokenizer::Stream s(t);
    CHECK(s.push(258) == " the");
    CHECK(s.push(267).empty());
    CHECK(s.push(0x80) == "\U0001F600");
    CHECK(s.push(268) == "<|im_start|>");
    CHECK(s.flush().empty());
    CHECK_THROWS_WITH(s.push(999), Contains("token id 999"));
}

TEST_CASE("bpe stream turns bytes that cannot be UTF-8 into U+FFFD, as Python's errors=replace", "[bpe]") {
    const bpe::Tokenizer t = small();
    bpe::Tokenizer::Stream s(t);
    CHECK(s.push(0x80) == "\uFFFD");  // a lone continuation byte: at once
    CHECK(s.push(266).empty());       // F0 9F: may still become an emoji
    CHECK(s.push('a') == "\uFFFDa");  // it did not: one U+FFFD for the two
    CHECK(s.push(0xE2).empty());
    CHECK(s.flush() == "\uFFFD");  // never completed
    CHECK(s.flush().empty());
    CHECK(stream_all(t, {0xC0, 0xAF, 'x', 0xED, 0xA0, 0x80}) == "\uFFFD\uFFFDx\uFFFD\uFFFD\uFFFD");
}

TEST_CASE("bpe refuses a vocabulary it cannot use, naming the entry", "[bpe]") {
    const std::vector<std::string> tokens = {"a", "b", "ab"};
    CHECK_NOTHROW(bpe::Tokenizer(tokens, {"a b"}, {}));
    CHECK_THROWS_AS(bpe::Tokenizer({}, {}, {}), usage_error);
    CHECK_THROWS_WITH(bpe::Tokenizer(tokens, {"a b", "ab"}, {}),
                      Contains("merge 1 \"ab\" is not two tokens separated by a space"));
    CHECK_THROWS_WITH(bpe::Tokenizer(tokens, {"b a"}, {}), Contains("merge 0 \"b a\" names \"ba\""));
    CHECK_THROWS_WITH(bpe::Tokenizer(tokens, {"a c"}, {}), Contains("names \"c\", which is not in the vocabulary"));
    CHECK_THROWS_WITH(bpe::Tokenizer(tokens, {}, {1, 1}), Contains("2 token types for 3 tokens"));
}

TEST_CASE("bpe drops a byte that has no token, and its neighbours may merge", "[bpe]") {
    // Only "a", "b" and "ab": the space (Ġ) has none, as Hugging Face's BPE with no unknown token.
    const bpe::Tokenizer t({"a", "b", "ab"}, {"a b"}, {});
    CHECK(t.merge("a b") == Ids{2});
    CHECK(t.encode("a b") == Ids{0, 1});  // "a", " b": the pieces still come from the text
}

TEST_CASE("bpe encodes a run of 100k identical characters in well under a second", "[bpe]") {
    const bpe::Tokenizer t = small();
    const auto start = std::chrono::steady_clock::now();
    const Ids as = t.encode(std::string(100000, 'a'));  // one piece: 25000 x "aaaa"
    const Ids spaces = t.encode(std::string(100001, ' '));
    const Ids bangs = t.encode(std::string(100000, '!'));
    CHECK(seconds_since(start) < 1.0);
    CHECK(as == Ids(25000, 260));
    CHECK(spaces.size() == 50001);
    CHECK(bangs == Ids(100000, '!'));
}

// ---------------------------------------------------------------------------------------------
// SmolLM2-135M-Instruct

TEST_CASE("bpe reads SmolLM2's vocabulary: 49152 tokens, 17 special", "[bpe][smollm2]") {
    const bpe::Tokenizer& t = smollm2_or_skip();
    CHECK(t.size() == 49152);
    CHECK(t.merge_count() == 48900);
    CHECK(t.piece(0) == "<|endoftext|>");
    CHECK(t.find("<|im_start|>") == 1);
    CHECK(t.find("<|im_end|>") == 2);
    int specials = 0;
    for (std::int32_t id = 0; id < static_cast<std::int32_t>(t.size()); ++id) specials += t.is_special(id);
    CHECK(specials == 17);
    CHECK(t.encode("Hello world 2024") == Ids{19556, 905, 216, 34, 32, 34, 36});
}

TEST_CASE("bpe gives Hugging Face's ids for every fixture text, and decodes them back", "[bpe][smollm2]") {
    const bpe::Tokenizer& t = smollm2_or_skip();
    for (const auto& c : fixture_cases()) {
        const auto text = c.at("text").get<std::string>();
        const auto decoded = c.at("decoded").get<std::string>();
        INFO("text: " << text);
        CHECK(t.pre_tokenize(text) == c.at("pieces").get<Pieces>());
        const Ids ids = t.encode(text);
        CHECK(ids == c.at("ids").get<Ids>());
        CHECK(t.encode(text, false) == c.at("ids_plain").get<Ids>());
        CHECK(t.decode(ids) == decoded);
        CHECK(stream_all(t, ids) == decoded);
        if (text.find_first_of("\x04\x1d") == std::string::npos) CHECK(decoded == text);  // bytes with no token
    }
}

TEST_CASE("bpe on SmolLM2: long runs and bytes that are not UTF-8 encode and decode", "[bpe][smollm2]") {
    const bpe::Tokenizer& t = smollm2_or_skip();
    const auto start = std::chrono::steady_clock::now();
    for (const std::string& run : {std::string(100000, 'a'), std::string(100000, ' '), std::string(100000, '\n'),
                                   std::string(100000, '\0') + "x", std::string(100000, '7')}) {
        CHECK(t.decode(t.encode(run)) == run);
    }
    std::string e_acute;
    for (int i = 0; i < 50000; ++i) e_acute += "é";
    CHECK(t.decode(t.encode(e_acute)) == e_acute);
    CHECK(seconds_since(start) < 5.0);
    // 0x80..0xBF and 0xC2..0xF0 have tokens in SmolLM2; 0xC0, 0xC1, 0xF1, 0xF2 and 0xF5..0xFF do not.
    const std::string bad = "a\x80\xbf\xc3 \xe2\x82 \xf0\x9f";
    CHECK(t.decode(t.encode(bad)) == bad);
    CHECK(t.decode(t.encode("x\xc0\xffy")) == "xy");
}
