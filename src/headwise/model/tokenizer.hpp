// headwise/model/tokenizer.hpp -- BERT's WordPiece tokenizer (lower-cased vocabularies such as
// all-MiniLM-L6-v2's), written to give the same ids as Hugging Face's BertTokenizer.
//
// Two stages, as in BERT:
//   1. the basic tokenizer turns text into words: drop NUL, U+FFFD and control characters, turn
//      every kind of whitespace into a space, put spaces around CJK ideographs (each is a word),
//      normalise to NFC, split on whitespace, lower-case, strip accents (NFD, then drop the
//      combining marks, category Mn), and split every punctuation character off as its own word.
//      Unicode comes from Debian's libutf8proc.
//   2. WordPiece splits each word greedily into the longest vocabulary piece from the left, then
//      the longest "##"-prefixed continuation, and so on. A word with no such split, or longer
//      than 100 characters, becomes [UNK].
// encode() wraps the pieces in [CLS] ... [SEP]. The literal strings [CLS], [SEP], [PAD], [UNK]
// and [MASK] in the text are kept whole as those special tokens (BertTokenizer does the same).
// Known gap: lower-casing is per character (utf8proc), so Greek final sigma and the few
// characters whose lower case is two characters differ from Python's str.lower().
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace headwise {

class WordPiece {
public:
    // One token per line, id = line number (BERT's vocab.txt). usage_error if the file cannot be
    // read, is empty, or lacks one of [PAD] [UNK] [CLS] [SEP].
    static WordPiece load(const std::filesystem::path& vocab_txt);
    static WordPiece from_tokens(std::vector<std::string> tokens, const std::string& label = "vocabulary");

    struct Encoding {
        std::vector<std::string> tokens;  // "[CLS]", "the", ..., "[SEP]"
        std::vector<std::int32_t> ids;    // the same, as vocabulary ids
        std::vector<std::size_t> word;    // which basic-tokenizer word each token came from (specials: SIZE_MAX)
    };

    // Stage 1 only: the words. usage_error if `text` is not valid UTF-8.
    std::vector<std::string> basic_tokenize(std::string_view text) const;
    // Stage 2 only, for one word.
    std::vector<std::string> wordpiece(std::string_view word) const;
    // [CLS] pieces... [SEP]; usage_error when that is more than `max_tokens` tokens (BERT: 512).
    Encoding encode(std::string_view text, std::size_t max_tokens = 512) const;

    std::int32_t id(std::string_view token) const;  // -1 when not in the vocabulary
    const std::string& token(std::int32_t id) const;
    std::size_t size() const { return tokens_.size(); }

    std::int32_t pad_id() const { return pad_; }
    std::int32_t unk_id() const { return unk_; }
    std::int32_t cls_id() const { return cls_; }
    std::int32_t sep_id() const { return sep_; }

    static constexpr std::size_t max_word_chars = 100;

private:
    std::vector<std::string> tokens_;
    std::unordered_map<std::string, std::int32_t> ids_;
    std::int32_t pad_ = -1, unk_ = -1, cls_ = -1, sep_ = -1;
};

}  // namespace headwise
