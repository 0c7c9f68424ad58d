// headwise/model/bpe.hpp -- GPT-2's byte-level BPE tokenizer as SmolLM2 configures it (lesson 12),
// written to give the same ids as Hugging Face's `tokenizers` with SmolLM2's tokenizer.json.
//
// encode() runs four stages:
//   1. special tokens: the control and user-defined tokens written in the text ("<|im_start|>") are
//      cut out first and become their ids (the leftmost match, the longest at that place).
//   2. the pre-tokenizer cuts the text between them into pieces: Digits(individual_digits) makes
//      every number character (\p{N}) a piece of its own, then GPT-2's pattern
//          's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//      cuts each stretch between them ("Hello world 2024" -> "Hello", " world", " ", "2", "0", "2", "4").
//      Bytes that are not valid UTF-8 (no text Hugging Face accepts holds them) are pieces of one byte.
//   3. byte level: each byte of a piece is one starting symbol, the token of that byte's printable
//      stand-in in GPT-2's alphabet ("Ġ" for the space, 0x20).
//   4. BPE: inside each piece, the adjacent pair of lowest merge rank is merged (leftmost first on a
//      tie) until no pair of the piece has a merge.
// decode() maps each token's characters back to their bytes. A byte with no token of its own is
// dropped, as Hugging Face's BPE drops it without an unknown token: SmolLM2's vocabulary lacks 21
// bytes (0x04, 0x06, 0x13, 0x14, 0x16, 0x1D, 0xC0, 0xC1, 0xF1, 0xF2, 0xF5..0xFF), so decode(encode(text))
// == text holds for every text without them.
// Known gap: the Unicode categories are Debian's libutf8proc 2.8's (Unicode 15). Characters assigned
// since (Unicode 16 and 17: new scripts' letters and digits, such as U+11DE0..11DE9) are "other" here
// and letters or numbers to Hugging Face, so a text holding them can split differently.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace headwise::bpe {

// GGUF's tokenizer.ggml.token_type values.
enum class TokenType : std::int64_t { normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6 };

class Tokenizer {
public:
    // tokens: id -> piece in GPT-2's byte-level alphabet ("Ġthe" for " the"); merges: "left right" in
    // rank order (rank 0 first); token_types: GGUF's per-token types, or empty (all normal). Control and
    // user-defined tokens are the special tokens, stored as their plain text ("<|im_start|>").
    // usage_error, naming the entry, for an empty vocabulary, types of another length, or a merge that is
    // not two tokens of the vocabulary whose concatenation is a token too.
    Tokenizer(std::vector<std::string> tokens, const std::vector<std::string>& merges,
              const std::vector<std::int64_t>& token_types);

    std::size_t size() const { return pieces_.size(); }
    std::size_t merge_count() const { return merges_.size(); }
    std::string_view piece(std::int32_t id) const;    // as stored (byte-level alphabet); usage_error if no such id
    std::int32_t find(std::string_view piece) const;  // -1 when absent
    bool is_special(std::int32_t id) const;
    // The bytes token `id` stands for (a special token: its text); usage_error if no such id.
    std::string_view token_bytes(std::int32_t id) const;

    // Text -> ids. With parse_special, special tokens written in the text become their ids; without it
    // they are plain text. Any bytes are accepted (see stage 2).
    std::vector<std::int32_t> encode(std::string_view text, bool parse_special = true) const;
    // Stage 2 alone, on plain text: the pieces as UTF-8, before the byte mapping.
    std::vector<std::string> pre_tokenize(std::string_view text) const;
    // Stages 3 and 4 alone, on one piece (UTF-8 bytes): its ids.
    std::vector<std::int32_t> merge(std::string_view piece) const;
    // Ids -> the bytes they stand for, concatenated (not checked to be UTF-8: a stretch of tokens may
    // end inside a character). usage_error for an id outside the vocabulary.
    std::string decode(const std::vector<std::int32_t>& ids) const;

    // Token-by-token printing: push() returns the text complete so far, holding back a trailing
    // incomplete UTF-8 sequence until a later token completes it; bytes that cannot start or continue
    // a character come out as U+FFFD at once, so the text returned is always valid UTF-8 (the same as
    // Python's bytes.decode(errors="replace") on everything pushed). flush() returns what is left: ""
    // or one U+FFFD for a sequence that never completed. The tokenizer must outlive the stream.
    class Stream {
    public:
        explicit Stream(const Tokenizer& tokenizer) : tokenizer_(&tokenizer) {}
        std::string push(std::int32_t id);
        std::string flush();

    private:
        const Tokenizer* tokenizer_;
        std::string pending_;  // the start of a UTF-8 sequence (at most 3 bytes)
    };

private:
    struct Merge {
        std::int32_t rank;    // position in the merges list
        std::int32_t merged;  // the id of left + right
    };
    struct StringHash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    using PieceMap = std::unordered_map<std::string, std::int32_t, StringHash, std::equal_to<>>;
    struct Cache;  // piece -> ids of pieces already merged, shared by copies of one tokenizer

    std::int32_t check_id(std::int32_t id) const;
    void encode_plain(std::string_view text, std::vector<std::int32_t>& out) const;
    void merge_into(std::string_view piece, std::vector<std::int32_t>& out) const;

    std::vector<std::string> pieces_;                  // id -> piece (byte-level alphabet)
    std::vector<std::string> bytes_;                   // id -> the bytes it stands for
    std::vector<bool> special_;                        // id -> control or user-defined
    PieceMap ids_;                                     // piece -> id (the first id of a repeated piece)
    std::array<std::int32_t, 256> byte_ids_{};         // byte -> the id of its one-character token, -1 if none
    std::unordered_map<std::uint64_t, Merge> merges_;  // (left id << 32 | right id) -> merge
    std::vector<std::int32_t> specials_;               // special ids to match in text, longest first
    std::array<bool, 256> special_first_byte_{};       // some special token starts with this byte
    std::shared_ptr<Cache> cache_;
};

}  // namespace headwise::bpe
