// tests for headwise/model/tokenizer.hpp: each rule of BERT's basic tokenizer and of WordPiece on a
// small hand-written vocabulary (expected pieces worked out by hand), then the real vocabulary
// against the ids Hugging Face's BertTokenizer gave for the strings in tests/fixtures/bert/
// tokenizer.json and special_casing.json (skipped, exit 77, when the model is not cached).
#include "headwise/model/tokenizer.hpp"

#include "model_fixtures.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace headwise;
using Catch::Matchers::Contains;
using Words = std::vector<std::string>;

namespace {

WordPiece small_vocab() {
    return WordPiece::from_tokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un",     "##aff", "##able",
                                   "the",   "cafe",  "##s",   "##a",   "!",      ",",      "a",     "##b",
                                   "ab",    "東",    "京",    "want",  "##ed",   "running"});
}

}  // namespace

TEST_CASE("tokenizer lower-cases, strips accents and splits punctuation off words", "[tokenizer]") {
    const WordPiece wp = small_vocab();
    CHECK(wp.basic_tokenize("Café, CAFÉS!") == Words{"cafe", ",", "cafes", "!"});
    CHECK(wp.basic_tokenize("naïve Zoë") == Words{"naive", "zoe"});
    CHECK(wp.basic_tokenize("don't") == Words{"don", "'", "t"});
    CHECK(wp.basic_tokenize("a$b^c`d") ==
          Words{"a", "$", "b", "^", "c", "`", "d"});  // ASCII symbols count as punctuation
    CHECK(wp.basic_tokenize("«quote»—dash") == Words{"«", "quote", "»", "—", "dash"});
}

TEST_CASE("tokenizer treats every kind of whitespace alike and drops control characters", "[tokenizer]") {
    const WordPiece wp = small_vocab();
    CHECK(wp.basic_tokenize("  a\tb\nc\r\nd\u00a0e\u3000f  ") == Words{"a", "b", "c", "d", "e", "f"});
    CHECK(wp.basic_tokenize(std::string("a\0b", 3)) == Words{"ab"});
    CHECK(wp.basic_tokenize("a\u200bb\u0007c\ufffdd") == Words{"abcd"});  // zero-width space is a format character (Cf)
    CHECK(wp.basic_tokenize("").empty());
    CHECK(wp.basic_tokenize(" \t\n").empty());
}

TEST_CASE("tokenizer makes each CJK ideograph a word, but not kana", "[tokenizer]") {
    const WordPiece wp = small_vocab();
    CHECK(wp.basic_tokenize("東京タワー") == Words{"東", "京", "タワー"});
}

TEST_CASE("tokenizer normalises to NFC before it strips accents (composed and decomposed agree)", "[tokenizer]") {
    const WordPiece wp = small_vocab();
    CHECK(wp.basic_tokenize("cafe\u0301") == wp.basic_tokenize("caf\u00e9"));
    CHECK(wp.basic_tokenize("cafe\u0301") == Words{"cafe"});
}

TEST_CASE("wordpiece takes the longest piece first, then ## continuations", "[tokenizer]") {
    const WordPiece wp = small_vocab();
    CHECK(wp.wordpiece("unaffable") == Words{"un", "##aff", "##able"});
    CHECK(wp.wordpiece("wanted") == Words{"want", "##ed"});
    CHECK(wp.wordpiece("ab") == Words{"ab"});  // "ab" beats "a" + "##b"
    CHECK(wp.wordpiece("abb") == Words{"ab", "##b"});
    CHECK(wp.wordpiece("running") == Words{"running"});
}

TEST_CASE("wordpiece makes a word [UNK] when it has no split or more than 100 characters", "[tokenizer]") {
    const WordPiece wp = small_vocab();
    CHECK(wp.wordpiece("unwanted") == Words{"[UNK]"});  // "un" then no "##w...": the whole word is unknown
    CHECK(wp.wordpiece("xyz") == Words{"[UNK]"});
    CHECK(wp.wordpiece(std::string(100, 'a')).size() == 100);  // "a" and 99 times "##a"
    CHECK(wp.wordpiece(std::string(101, 'a')) == Words{"[UNK]"});
}

TEST_CASE("encode wraps the pieces in [CLS] and [SEP] and keeps literal special tokens whole", "[tokenizer]") {
    const WordPiece wp = small_vocab();
    const auto e = wp.encode("The cafes!");
    CHECK(e.tokens == Words{"[CLS]", "the", "cafe", "##s", "!", "[SEP]"});
    CHECK(e.ids == std::vector<std::int32_t>{2, 8, 9, 10, 12, 3});
    CHECK(e.word == std::vector<std::size_t>{SIZE_MAX, 0, 1, 1, 2, SIZE_MAX});
    CHECK(wp.encode("the[MASK]cafe").tokens == Words{"[CLS]", "the", "[MASK]", "cafe", "[SEP]"});
    CHECK(wp.encode("").tokens == Words{"[CLS]", "[SEP]"});
}

TEST_CASE("encode refuses more tokens than the model takes, and invalid UTF-8", "[tokenizer]") {
    const WordPiece wp = small_vocab();
    std::string long_text;
    for (int i = 0; i < 510; ++i) long_text += "a ";
    CHECK(wp.encode(long_text).tokens.size() == 512);  // 510 words + [CLS] + [SEP]: just fits
    CHECK_THROWS_WITH(wp.encode(long_text + "a"), Contains("513 tokens long") && Contains("at most 512"));
    CHECK_THROWS_WITH(wp.encode("ab\xff"), Contains("not valid UTF-8"));
    CHECK_THROWS_WITH(wp.encode("\xc3"), Contains("not valid UTF-8"));
}

TEST_CASE("a vocabulary without [UNK], [CLS], [SEP] or [PAD] is refused", "[tokenizer]") {
    CHECK_THROWS_WITH(WordPiece::from_tokens({"[PAD]", "[CLS]", "[SEP]"}), Contains("no [UNK] token"));
    CHECK_THROWS_WITH(WordPiece::from_tokens({}), Contains("empty"));
    CHECK_THROWS_WITH(WordPiece::load("/nonexistent/vocab.txt"), Contains("cannot read"));
}

// BertTokenizer lower-cases a text one character at a time, then its basic tokenizer lower-cases
// each word again: a capital sigma becomes "σ" wherever it stands (the word-final "ς" of Python's
// str.lower() never arises), "İ" becomes "i" plus a dot above that the accent stripping removes,
// and "ß" stays. tests/fixtures/bert/special_casing.json holds the words it gave.
TEST_CASE("tokenizer lower-cases letter by letter as BertTokenizer does: Σ is σ even at a word's end, İ is i, ß stays",
          "[tokenizer]") {
    const WordPiece wp = small_vocab();
    CHECK(wp.basic_tokenize("ΟΔΟΣ") == Words{"οδοσ"});
    CHECK(wp.basic_tokenize("Σ") == Words{"σ"});
    const auto cases = testing::read_json(testing::bert_fixtures / "special_casing.json")["cases"];
    REQUIRE(cases.size() >= 10);
    for (const auto& c : cases) {
        INFO(c["text"].get<std::string>());
        CHECK(wp.basic_tokenize(c["text"].get<std::string>()) == c["words"].get<Words>());
    }
}

namespace {

// Every case of a fixture file of BertTokenizer's answers, encoded with the real vocabulary.
void check_bert_tokenizer_cases(const char* fixture, std::size_t at_least) {
    const auto dir = testing::model_or_skip();
    const WordPiece wp = WordPiece::load(dir / "vocab.txt");
    const auto cases = testing::read_json(testing::bert_fixtures / fixture)["cases"];
    REQUIRE(cases.size() >= at_least);
    for (const auto& c : cases) {
        const auto text = c["text"].get<std::string>();
        INFO(text);
        const auto e = wp.encode(text);
        CHECK(e.tokens == c["tokens"].get<Words>());
        CHECK(e.ids == c["ids"].get<std::vector<std::int32_t>>());
    }
}

}  // namespace

TEST_CASE("tokenizer gives BertTokenizer's ids for every fixture string (real vocabulary)", "[tokenizer][model]") {
    check_bert_tokenizer_cases("tokenizer.json", 12);
}

TEST_CASE("tokenizer gives BertTokenizer's ids for letters with special casing (real vocabulary)",
          "[tokenizer][model]") {
    check_bert_tokenizer_cases("special_casing.json", 10);
}
