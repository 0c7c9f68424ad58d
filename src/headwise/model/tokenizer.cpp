#include "headwise/model/tokenizer.hpp"

#include "headwise/base/tensor.hpp"

#include <fmt/format.h>
#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <memory>

namespace headwise {

namespace {

using Codepoints = std::u32string;

Codepoints decode(std::string_view text) {
    Codepoints out;
    out.reserve(text.size());
    const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
    std::size_t i = 0;
    while (i < text.size()) {
        utf8proc_int32_t cp = 0;
        const utf8proc_ssize_t n = utf8proc_iterate(p + i, static_cast<utf8proc_ssize_t>(text.size() - i), &cp);
        if (n <= 0 || cp < 0) throw usage_error(fmt::format("the text is not valid UTF-8 (at byte {})", i));
        out.push_back(static_cast<char32_t>(cp));
        i += static_cast<std::size_t>(n);
    }
    return out;
}

std::string encode_utf8(const Codepoints& cps) {
    std::string out;
    out.reserve(cps.size());
    for (char32_t c : cps) {
        utf8proc_uint8_t buf[4];
        const auto n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(c), buf);
        out.append(reinterpret_cast<const char*>(buf), static_cast<std::size_t>(n));
    }
    return out;
}

// One of utf8proc's normal forms (UTF8PROC_COMPOSE = NFC, UTF8PROC_DECOMPOSE = NFD) of valid codepoints.
Codepoints normalize(const Codepoints& cps, int form) {
    if (cps.empty()) return cps;
    const std::string utf8 = encode_utf8(cps);
    utf8proc_uint8_t* out = nullptr;
    const auto options = static_cast<utf8proc_option_t>(UTF8PROC_STABLE | form);
    const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(utf8.data()),
                                            static_cast<utf8proc_ssize_t>(utf8.size()), &out, options);
    if (n < 0) throw usage_error(fmt::format("unicode normalisation failed: {}", utf8proc_errmsg(n)));
    std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(out, &std::free);
    return decode(std::string_view(reinterpret_cast<const char*>(out), static_cast<std::size_t>(n)));
}

utf8proc_category_t category(char32_t c) { return utf8proc_category(static_cast<utf8proc_int32_t>(c)); }

bool is_whitespace(char32_t c) {
    return c == U' ' || c == U'\t' || c == U'\n' || c == U'\r' || category(c) == UTF8PROC_CATEGORY_ZS;
}

// Control and format characters and unassigned code points (categories C*), except \t \n \r.
bool is_control(char32_t c) {
    if (c == U'\t' || c == U'\n' || c == U'\r') return false;
    switch (category(c)) {
        case UTF8PROC_CATEGORY_CC:
        case UTF8PROC_CATEGORY_CF:
        case UTF8PROC_CATEGORY_CN:
        case UTF8PROC_CATEGORY_CO:
        case UTF8PROC_CATEGORY_CS:
            return true;
        default:
            return false;
    }
}

// Every non-alphanumeric ASCII printable counts ($ ^ ` + < = > | ~ are symbols in Unicode), and
// every Unicode punctuation category.
bool is_punctuation(char32_t c) {
    if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126)) return true;
    switch (category(c)) {
        case UTF8PROC_CATEGORY_PC:
        case UTF8PROC_CATEGORY_PD:
        case UTF8PROC_CATEGORY_PS:
        case UTF8PROC_CATEGORY_PE:
        case UTF8PROC_CATEGORY_PI:
        case UTF8PROC_CATEGORY_PF:
        case UTF8PROC_CATEGORY_PO:
            return true;
        default:
            return false;
    }
}

// The CJK Unified Ideographs blocks BERT treats as words of their own (not kana or hangul).
bool is_cjk(char32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

constexpr std::array<std::string_view, 5> specials = {"[CLS]", "[SEP]", "[PAD]", "[UNK]", "[MASK]"};

// Splits on whitespace (after the clean-up that made all whitespace a plain space).
std::vector<Codepoints> split_spaces(const Codepoints& text) {
    std::vector<Codepoints> words;
    Codepoints cur;
    for (char32_t c : text) {
        if (c == U' ') {
            if (!cur.empty()) words.push_back(std::move(cur));
            cur.clear();
        } else {
            cur.push_back(c);
        }
    }
    if (!cur.empty()) words.push_back(std::move(cur));
    return words;
}

// The basic tokenizer on a stretch of text that holds no special token.
void basic_words(std::string_view text, std::vector<std::string>& out) {
    Codepoints cleaned;
    for (char32_t c : decode(text)) {
        if (c == 0 || c == 0xFFFD || is_control(c)) continue;
        if (is_whitespace(c)) {
            cleaned.push_back(U' ');
        } else if (is_cjk(c)) {
            cleaned.append({U' ', c, U' '});
        } else {
            cleaned.push_back(c);
        }
    }
    for (Codepoints word : split_spaces(normalize(cleaned, UTF8PROC_COMPOSE))) {
        for (char32_t& c : word) c = static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c)));
        Codepoints stripped;
        for (char32_t c : normalize(word, UTF8PROC_DECOMPOSE))
            if (category(c) != UTF8PROC_CATEGORY_MN) stripped.push_back(c);
        Codepoints cur;
        for (char32_t c : stripped) {
            if (is_punctuation(c)) {
                if (!cur.empty()) out.push_back(encode_utf8(cur));
                cur.clear();
                out.push_back(encode_utf8(Codepoints(1, c)));
            } else {
                cur.push_back(c);
            }
        }
        if (!cur.empty()) out.push_back(encode_utf8(cur));
    }
}

}  // namespace

WordPiece WordPiece::from_tokens(std::vector<std::string> tokens, const std::string& label) {
    if (tokens.empty()) throw usage_error(fmt::format("{}: the vocabulary is empty", label));
    if (tokens.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
        throw usage_error(fmt::format("{}: too many tokens", label));
    }
    WordPiece wp;
    wp.tokens_ = std::move(tokens);
    for (std::size_t i = 0; i < wp.tokens_.size(); ++i) wp.ids_.emplace(wp.tokens_[i], static_cast<std::int32_t>(i));
    for (auto [name, slot] :
         {std::pair{"[PAD]", &wp.pad_}, {"[UNK]", &wp.unk_}, {"[CLS]", &wp.cls_}, {"[SEP]", &wp.sep_}}) {
        *slot = wp.id(name);
        if (*slot < 0) throw usage_error(fmt::format("{}: the vocabulary has no {} token", label, name));
    }
    return wp;
}

WordPiece WordPiece::load(const std::filesystem::path& vocab_txt) {
    std::ifstream in(vocab_txt, std::ios::binary);
    if (!in) throw usage_error(fmt::format("{}: cannot read the vocabulary", vocab_txt.string()));
    std::vector<std::string> tokens;
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        tokens.push_back(line);
    }
    return from_tokens(std::move(tokens), vocab_txt.string());
}

std::int32_t WordPiece::id(std::string_view token) const {
    auto it = ids_.find(std::string(token));
    return it == ids_.end() ? -1 : it->second;
}

const std::string& WordPiece::token(std::int32_t id) const {
    if (id < 0 || static_cast<std::size_t>(id) >= tokens_.size()) {
        throw usage_error(fmt::format("token id {} is outside the vocabulary (0..{})", id, tokens_.size() - 1));
    }
    return tokens_[static_cast<std::size_t>(id)];
}

std::vector<std::string> WordPiece::basic_tokenize(std::string_view text) const {
    std::vector<std::string> words;
    std::size_t start = 0;
    while (start <= text.size()) {
        // The next special token written literally in the text, if any.
        std::size_t at = std::string_view::npos, len = 0;
        for (std::string_view s : specials) {
            const std::size_t p = text.find(s, start);
            if (p < at) at = p, len = s.size();
        }
        basic_words(text.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start), words);
        if (at == std::string_view::npos) break;
        words.emplace_back(text.substr(at, len));
        start = at + len;
    }
    return words;
}

std::vector<std::string> WordPiece::wordpiece(std::string_view word) const {
    if (id(word) >= 0 && std::find(specials.begin(), specials.end(), word) != specials.end())
        return {std::string(word)};
    const Codepoints chars = decode(word);
    if (chars.size() > max_word_chars) return {tokens_[static_cast<std::size_t>(unk_)]};
    std::vector<std::string> pieces;
    std::size_t start = 0;
    while (start < chars.size()) {
        std::size_t end = chars.size();
        std::string found;
        for (; end > start; --end) {  // the longest piece first
            std::string piece = encode_utf8(chars.substr(start, end - start));
            if (start > 0) piece = "##" + piece;
            if (ids_.count(piece)) {
                found = std::move(piece);
                break;
            }
        }
        if (found.empty()) return {tokens_[static_cast<std::size_t>(unk_)]};  // no split: the whole word is unknown
        pieces.push_back(std::move(found));
        start = end;
    }
    return pieces;
}

WordPiece::Encoding WordPiece::encode(std::string_view text, std::size_t max_tokens) const {
    Encoding e;
    e.tokens.push_back(tokens_[static_cast<std::size_t>(cls_)]);
    e.word.push_back(std::numeric_limits<std::size_t>::max());
    const std::vector<std::string> words = basic_tokenize(text);
    for (std::size_t w = 0; w < words.size(); ++w) {
        for (std::string& piece : wordpiece(words[w])) {
            e.tokens.push_back(std::move(piece));
            e.word.push_back(w);
        }
    }
    e.tokens.push_back(tokens_[static_cast<std::size_t>(sep_)]);
    e.word.push_back(std::numeric_limits<std::size_t>::max());
    if (e.tokens.size() > max_tokens) {
        throw usage_error(fmt::format("the text is {} tokens long with [CLS] and [SEP]; the model takes at most {}",
                                      e.tokens.size(), max_tokens));
    }
    for (const std::string& t : e.tokens) e.ids.push_back(id(t));
    return e;
}

}  // namespace headwise
