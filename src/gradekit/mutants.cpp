// gradekit/mutants.cpp -- see mutants.hpp. A small tokenizer and a statement parser just good
// enough for the solutions' plain loops; what it cannot read it leaves without variants.
#include "gradekit/mutants.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

namespace headwise::gradekit {

namespace {

enum class Tok { ident, number, string, punct };

struct Token {
    Tok kind;
    std::string text;
    std::size_t begin, end;  // offsets in the solution text
};

const char* const puncts[] = {
    "<<=", ">>=", "::", "->", "++", "--", "<=", ">=", "==", "!=", "&&", "||", "+=", "-=", "*=", "/=", "%=", "<<", ">>"};

// The tokens of `text` from `from` to `to`, comments and preprocessor lines skipped.
std::vector<Token> tokenize(const std::string& text, std::size_t from, std::size_t to) {
    std::vector<Token> out;
    std::size_t p = from;
    while (p < to) {
        const char c = text[p];
        if (std::isspace(static_cast<unsigned char>(c))) {
            ++p;
        } else if (text.compare(p, 2, "//") == 0 || c == '#') {
            p = std::min(to, text.find('\n', p) == std::string::npos ? to : text.find('\n', p));
        } else if (text.compare(p, 2, "/*") == 0) {
            p = std::min(to, text.find("*/", p) + 2);
        } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
            std::size_t e = p;
            while (e < to && (std::isalnum(static_cast<unsigned char>(text[e])) || text[e] == '_')) ++e;
            out.push_back({Tok::ident, text.substr(p, e - p), p, e});
            p = e;
        } else if (std::isdigit(static_cast<unsigned char>(c)) ||
                   (c == '.' && p + 1 < to && std::isdigit(static_cast<unsigned char>(text[p + 1])))) {
            std::size_t e = p;
            while (e < to && (std::isalnum(static_cast<unsigned char>(text[e])) || text[e] == '.' ||
                              ((text[e] == '-' || text[e] == '+') && (text[e - 1] == 'e' || text[e - 1] == 'E'))))
                ++e;
            out.push_back({Tok::number, text.substr(p, e - p), p, e});
            p = e;
        } else if (c == '"' || c == '\'') {
            std::size_t e = p + 1;
            while (e < to && text[e] != c) e += text[e] == '\\' ? 2 : 1;
            out.push_back({Tok::string, text.substr(p, e + 1 - p), p, e + 1});
            p = e + 1;
        } else {
            std::string op(1, c);
            for (const char* candidate : puncts)
                if (text.compare(p, std::char_traits<char>::length(candidate), candidate) == 0 &&
                    std::char_traits<char>::length(candidate) > op.size())
                    op = candidate;
            out.push_back({Tok::punct, op, p, p + op.size()});
            p += op.size();
        }
    }
    return out;
}

// The assignment operators among `code`'s tokens outside brackets (`=`, `+=`, `<<=`, ...).
int assignments(const std::string& code) {
    static const std::set<std::string> assign = {"=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "|=", "^="};
    int count = 0, depth = 0;
    for (const Token& t : tokenize(code, 0, code.size())) {
        if (t.text == "(" || t.text == "[" || t.text == "{") ++depth;
        if (t.text == ")" || t.text == "]" || t.text == "}") --depth;
        count += depth == 0 && assign.contains(t.text);
    }
    return count;
}

// Do the (), [] and {} among `code`'s tokens close in order?
bool brackets_balanced(const std::string& code) {
    static const std::map<std::string, std::string> opener = {{")", "("}, {"]", "["}, {"}", "{"}};
    std::vector<std::string> open;
    for (const Token& t : tokenize(code, 0, code.size())) {
        if (t.text == "(" || t.text == "[" || t.text == "{") open.push_back(t.text);
        const auto closes = opener.find(t.text);
        if (closes == opener.end()) continue;
        if (open.empty() || open.back() != closes->second) return false;
        open.pop_back();
    }
    return open.empty();
}

struct Var {
    std::string name, type;
    std::size_t from, to;   // token indices where it is in scope
    bool loop = false;      // a loop's counter
    bool constant = false;  // declared const (not through a pointer): never written
};

// A built-in number's type, as the file spells it.
bool number_type(const std::string& t) {
    return t == "std::size_t" || t == "int" || t == "std::uint64_t" || t == "long" || t == "unsigned" || t == "float" ||
           t == "double" || t == "std::int32_t" || t == "std::int64_t" || t == "std::uint32_t";
}

// A variable's type from its declaration's tokens [first, last), joined: no `const`, `&` or
// `static` of its own, but a const inside template arguments stays (`global_ptr<const float>` is no
// `global_ptr<float>`: an emulator's input swapped for its output does not compile).
std::string type_words(const std::vector<Token>& t, std::size_t first, std::size_t last) {
    std::string type;
    int angle = 0;
    for (std::size_t q = first; q < last; ++q) {
        angle += t[q].text == "<" ? 1 : t[q].text == ">" ? -1 : 0;
        if ((t[q].text != "const" || angle > 0) && t[q].text != "&" && t[q].text != "static") type += t[q].text;
    }
    return type;
}

// A learner's names for types (`using u64 = std::uint64_t;`, `typedef std::size_t idx;`), each
// name -> the type's tokens joined: their variables are of the type named, swapped with the others
// of it (`in` and `out`, both u64).
std::map<std::string, std::string> type_aliases(const std::vector<Token>& t) {
    std::map<std::string, std::string> aliases;
    for (std::size_t p = 0; p + 3 < t.size(); ++p) {
        std::size_t first = 0, last = 0, name = 0;
        if (t[p].text == "using" && t[p + 1].kind == Tok::ident && t[p + 2].text == "=") {
            name = p + 1, first = p + 3;
            for (last = first; last < t.size() && t[last].text != ";"; ++last) {}
        } else if (t[p].text == "typedef") {
            first = p + 1;
            for (last = first; last < t.size() && t[last].text != ";"; ++last) {}
            if (last == t.size() || last < first + 2 || t[last - 1].kind != Tok::ident) continue;
            name = --last;
        } else {
            continue;
        }
        if (last >= t.size() || last == first) continue;
        std::string type;
        for (std::size_t q = first; q < last; ++q) type += t[q].text;
        aliases[t[name].text] = type;
    }
    return aliases;
}

// The parser: walks one solution block's statements, records regions and the variables in scope.
// The token after what may stand between a function's parameters (ending before `p`) and its body
// in a learner's file: `const`, `noexcept` (and its condition), `override`, `final`, `&`, `&&`, a
// trailing return type (`-> float`, `-> std::pair<int, int>`). `p` itself when there is none.
std::size_t after_function_qualifiers(const std::vector<Token>& t, std::size_t p) {
    const auto is = [&](std::size_t q, const char* s) { return q < t.size() && t[q].text == s; };
    while (p < t.size()) {
        if (is(p, "const") || is(p, "override") || is(p, "final") || is(p, "&") || is(p, "&&")) {
            ++p;
        } else if (is(p, "noexcept") && is(p + 1, "(")) {
            int depth = 0;
            for (++p; p < t.size(); ++p) {
                depth += is(p, "(") ? 1 : is(p, ")") ? -1 : 0;
                if (depth == 0) break;
            }
            ++p;
        } else if (is(p, "noexcept")) {
            ++p;
        } else if (is(p, "->")) {
            for (++p; p < t.size() && !is(p, "{") && !is(p, ";") && !is(p, "="); ++p) {}
        } else {
            break;
        }
    }
    return p;
}

class Parser {
public:
    // `own`: a learner's own file (generate_own_mutants): lambdas' bodies are read too.
    Parser(const std::string& text, std::vector<Token> toks, std::string function, std::vector<Var> params,
           bool own = false)
        : text_(text), t_(std::move(toks)), function_(std::move(function)), vars_(std::move(params)), own_(own) {
        read_aliases();
    }

    void run() {
        std::size_t p = 0;
        while (p < t_.size()) p = statement(p);
    }

    struct Found {
        std::size_t first, last;  // token range [first, last)
        bool statement, droppable;
        std::vector<std::string> loops;
        bool loop_condition = false;  // a for's condition: its counter is not swapped (an endless loop)
        std::string type;             // a declarator's initializer: the declared type
        std::string function;         // the function it is in
        std::size_t range_copy = 0;   // a range-for that writes its copy: the copy's name
        // A learner's place for a statement left out, not a region of their text: the end of an if's
        // block inside a loop, that block ending in no jump (first: its `}`; `block_of`: the `if`).
        std::size_t block_of = 0;
        std::string value_type{};  // a declarator's initializer: a class's type as spelled (class_spelled)
    };
    std::vector<Found> found;
    const std::vector<Var>& vars() const { return vars_; }
    const std::vector<Token>& tokens() const { return t_; }
    const std::string& function() const { return function_; }
    bool own() const { return own_; }
    // The members of one struct of a header the learner's file includes, per type (d and m of
    // BlockQ4_1): a member may be swapped for another of its family though the file never names it.
    const std::vector<HeaderStruct>& header_structs() const { return structs_; }
    void set_header_structs(std::vector<HeaderStruct> structs) { structs_ = std::move(structs); }
    // A learner's numeric constants at namespace scope that the file never reads (constant_put_back).
    const std::vector<std::string>& file_constants() const { return file_constants_; }
    void set_file_constants(std::vector<std::string> names) { file_constants_ = std::move(names); }
    void set_aliases(const std::map<std::string, std::string>& aliases) {
        aliases_ = aliases;
        read_aliases();
    }

private:
    bool is(std::size_t p, const char* s) const { return p < t_.size() && t_[p].text == s; }

    // The token after the one that closes the bracket opened at `p`.
    std::size_t close(std::size_t p) const {
        int depth = 0;
        for (; p < t_.size(); ++p) {
            const std::string& s = t_[p].text;
            if (t_[p].kind != Tok::punct) continue;
            if (s == "(" || s == "[" || s == "{") ++depth;
            if (s == ")" || s == "]" || s == "}") {
                if (--depth == 0) return p + 1;
            }
        }
        return t_.size();
    }

    // The first token at bracket depth 0 from `p` on that is one of `stops` (or `end`).
    std::size_t until(std::size_t p, std::size_t end, std::initializer_list<const char*> stops) const {
        while (p < end) {
            if (t_[p].kind == Tok::punct) {
                for (const char* s : stops)
                    if (t_[p].text == s) return p;
                if (t_[p].text == "(" || t_[p].text == "[" || t_[p].text == "{") {
                    p = close(p);
                    continue;
                }
            }
            ++p;
        }
        return end;
    }

    // Whether a block's statements [from, to) hold a jump of their own (`continue;`, `break;`,
    // `return ...;`, `throw ...;`; not one in a loop of theirs).
    bool jumps(std::size_t from, std::size_t to) const {
        int depth = 0;
        for (std::size_t q = from; q < to; ++q) {
            const std::string& x = t_[q].text;
            depth += x == "{" ? 1 : x == "}" ? -1 : 0;
            if (x == "return" || x == "throw" || (depth == 0 && (x == "continue" || x == "break"))) return true;
        }
        return false;
    }

    void region(std::size_t first, std::size_t last, bool statement, bool droppable) {
        // A region runs to the end of its block at most (a learner's statement the reader lost its way in: none).
        if (first < last && last <= t_.size())
            found.push_back({first, last, statement, droppable, loops_, false, {}, function_});
    }

    std::size_t statement(std::size_t p) {
        if (p >= t_.size()) return p;
        if (const std::size_t end = function_definition(p); end != 0) return end;
        if (is(p, "{")) {
            const std::size_t end = close(p);
            std::size_t q = p + 1;
            while (q < end - 1) q = statement(q);
            return end;
        }
        if (is(p, "for")) return for_statement(p);
        if (is(p, "while") || is(p, "if")) {
            const std::size_t rp = close(p + 1);
            region(p + 2, rp - 1, false, false);
            std::size_t end = statement(rp);
            if (own_ && is(p, "if") && is(rp, "{") && !loops_.empty() && !jumps(rp + 1, end - 1)) {
                found.push_back({end - 1, end - 1, true, false, loops_, false, {}, function_});
                found.back().block_of = p;
            }
            if (is(p, "if") && is(end, "else")) end = statement(end + 1);
            return end;
        }
        const std::size_t semi = until(p, t_.size(), {";"});
        if (is(p, "throw")) return semi + 1;
        if (is(p, "return")) {
            region(p, semi + 1, true, false);
            return semi + 1;
        }
        if (!declaration(p, semi) && !(own_ && looks_declared(p, semi))) region(p, semi + 1, true, true);
        return semi + 1;
    }

    // A whole function defined inside a solution block (`Tensor3 linear(const Tensor3& x, ...) {`):
    // its parameters are variables of its body, its regions are "in linear". The token after its
    // body, or 0 when `p` starts no function definition.
    std::size_t function_definition(std::size_t p) {
        // [[nodiscard]], [[gnu::always_inline]]: a learner's attributes before the type.
        while (own_ && is(p, "[") && is(p + 1, "[")) p = close(p);
        std::size_t q = p;
        // template <int D, typename VRow>, xt::xtensor<float, 2>: a comma or a number between the
        // brackets (a learner's helper returning xt::xtensor<float, 2> was no function: none of its
        // lines had an edit).
        int angle = 0;
        while (q < t_.size() &&
               (t_[q].kind == Tok::ident || t_[q].text == "::" || t_[q].text == "<" || t_[q].text == ">" ||
                t_[q].text == "&" || t_[q].text == "*" || (own_ && angle > 1 && t_[q].text == ">>") ||
                (own_ && angle > 0 && (t_[q].text == "," || t_[q].kind == Tok::number)))) {
            angle += t_[q].text == "<" ? 1 : t_[q].text == ">" ? -1 : t_[q].text == ">>" ? -2 : 0;
            ++q;
        }
        if (q < p + 2 || !is(q, "(") || t_[q - 1].kind != Tok::ident) return 0;
        const std::size_t params_end = close(q);
        const std::size_t body = own_ ? after_function_qualifiers(t_, params_end) : params_end;
        if (!is(body, "{")) return 0;
        const std::size_t end = close(body);
        const std::string outer = function_;
        function_ = t_[q - 1].text;
        std::size_t first = q + 1;
        for (std::size_t r = q + 1; r < params_end; ++r) {  // each parameter: its type, then its name
            if (t_[r].text != "," && r + 1 != params_end) continue;
            const std::size_t last = r;  // the ',' or the ')'
            if (last > first + 1 && t_[last - 1].kind == Tok::ident)
                vars_.push_back(
                    {t_[last - 1].text, type_of(first, last - 1), body, end, false, constant(first, last - 1)});
            first = r + 1;
        }
        std::size_t s = body + 1;
        while (s < end - 1) s = statement(s);
        function_ = outer;
        return end;
    }

    // A declaration the parser does not read (`float acc[64];`, `const auto [a, b] = pair;`): in a
    // learner's file it is no statement to drop or rewrite, whose braces would end its names' scope.
    bool looks_declared(std::size_t p, std::size_t semi) const {
        if (is(p, "const") || is(p, "auto") || is(p, "static") || is(p, "constexpr")) return true;
        for (std::size_t q = p; q + 1 < semi; ++q)
            if (t_[q].text == "auto" && t_[q + 1].text == "[") return true;
        return p + 1 < semi && t_[p].kind == Tok::ident && t_[p + 1].kind == Tok::ident;
    }

    // A named lambda's body (`auto dot = [&](std::size_t i, std::size_t j) { ... };`, the `[` at
    // `p`): its parameters are variables of its body, its regions are "in dot".
    void lambda_body(std::size_t p, const std::string& name) {
        const std::size_t params = close(p);
        if (!is(params, "(")) return;
        const std::size_t after = close(params);
        std::size_t body = after;
        while (body < t_.size() && !is(body, "{") && !is(body, ";")) ++body;  // mutable, -> float
        if (!is(body, "{")) return;
        const std::size_t end = close(body);
        std::size_t first = params + 1;
        for (std::size_t r = params + 1; r < after; ++r) {
            if (t_[r].text != "," && r + 1 != after) continue;
            if (r > first + 1 && t_[r - 1].kind == Tok::ident)
                vars_.push_back({t_[r - 1].text, type_of(first, r - 1), body, end, false, constant(first, r - 1)});
            first = r + 1;
        }
        const std::string outer = function_;
        function_ = name;
        std::size_t s = body + 1;
        while (s < end - 1) s = statement(s);
        function_ = outer;
    }

    std::size_t for_statement(std::size_t p) {
        const std::size_t rp = close(p + 1);
        if (own_)
            if (const std::size_t end = range_copy_written(p, rp); end != 0) return end;
        const std::size_t s1 = until(p + 2, rp - 1, {";"}), s2 = until(s1 + 1, rp - 1, {";"});
        loops_.push_back("");
        std::size_t var = vars_.size();
        // for (std::size_t j = 1; ...): j is a loop counter, in scope to the end of the statement.
        const std::size_t eq = until(p + 2, s1, {"="});
        if (eq < s1 && eq > p + 3 && t_[eq - 1].kind == Tok::ident) {
            vars_.push_back({t_[eq - 1].text, type_of(p + 2, eq - 1), s1, 0, true});
            loops_.back() = t_[eq - 1].text;
            region(eq + 1, s1, false, false);
        } else {
            var = vars_.size() + 1;
        }
        region(s1 + 1, s2, false, false);
        if (!found.empty() && found.back().first == s1 + 1) found.back().loop_condition = true;
        // A learner's step other than ++: `h += 2` (every other slope), its size one of the edits.
        // And `++h` (every other: `h += 2`). Its counter is not swapped there either (an endless loop).
        if (own_ && rp - 1 >= s2 + 3) {
            region(s2 + 1, rp - 1, false, false);
            if (!found.empty() && found.back().first == s2 + 1) found.back().loop_condition = true;
        }
        const std::size_t end = statement(rp);
        if (var < vars_.size()) vars_[var].to = end;
        loops_.pop_back();
        return end;
    }

    // A learner's `for (auto w : row) w /= total;`: each element copied, the copy written, the row
    // unchanged. The whole loop is one region (its one extra edit: `auto& w`); the token after it,
    // or 0 when the loop at `p` (its `)` before `rp`) is no range-for that writes its copy.
    std::size_t range_copy_written(std::size_t p, std::size_t rp) {
        const std::size_t colon = until(p + 2, rp - 1, {":"});
        if (colon >= rp - 1 || colon < p + 4 || t_[colon - 1].kind != Tok::ident) return 0;
        if (std::any_of(t_.begin() + long(p + 2), t_.begin() + long(colon),
                        [](const Token& x) { return x.text == "&" || x.text == "&&" || x.text == "*"; }))
            return 0;
        static const std::set<std::string> writes = {"=", "+=", "-=", "*=", "/=", "++", "--"};
        const std::string& name = t_[colon - 1].text;
        std::size_t end = rp;
        if (is(rp, "{")) {
            end = close(rp);
        } else {
            end = until(rp, t_.size(), {";"}) + 1;
        }
        bool written = false;
        for (std::size_t q = rp; q + 1 < end && !written; ++q)
            written = t_[q].text == name && (writes.contains(t_[q + 1].text) || writes.contains(t_[q - 1].text));
        if (!written || end > t_.size()) return 0;
        found.push_back({p, end, true, false, loops_, false, {}, function_});
        found.back().range_copy = colon - 1;
        return end;
    }

    // Whether the declaration's type [first, last) is const or constexpr, not through a pointer.
    bool constant(std::size_t first, std::size_t last) const {
        bool c = false;
        for (std::size_t q = first; q < last; ++q) {
            if (t_[q].text == "*") return false;
            c = c || t_[q].text == "const" || t_[q].text == "constexpr";
        }
        return c;
    }

    // A declaration's type [first, last) as the file spells it (`std::vector<float>`, `Tensor3`), with
    // no const or static of its own, where it names a class held by value; else "" (a reference, a
    // pointer, `auto`, a built-in number such as `unsigned long`).
    std::string class_spelled(std::size_t first, std::size_t last) const {
        static const std::set<std::string> builtin = {"auto", "unsigned", "signed", "long", "short", "int",
                                                      "char", "float",    "double", "bool", "void"};
        std::string type;
        int angle = 0;
        for (std::size_t q = first; q < last; ++q) {
            const std::string& s = t_[q].text;
            if (angle == 0 && (s == "&" || s == "&&" || s == "*" || builtin.contains(s))) return "";
            angle += s == "<" ? 1 : s == ">" ? -1 : 0;
            if (angle == 0 && (s == "const" || s == "static" || s == "inline" || s == "thread_local")) continue;
            const bool word = t_[q].kind == Tok::ident || t_[q].kind == Tok::number;
            if (word && q > first && (t_[q - 1].kind == Tok::ident || t_[q - 1].kind == Tok::number) && !type.empty())
                type += ' ';
            type += s;
        }
        return number_type(type) ? "" : type;
    }

    std::string type_of(std::size_t first, std::size_t last) const {
        const std::string type = type_words(t_, first, last);
        const auto alias = aliases_.find(type);
        return alias != aliases_.end() ? alias->second : type;
    }

    // The file's names for types (type_aliases), set before run(), and the block's own.
    void read_aliases() { std::ranges::copy(type_aliases(t_), std::inserter(aliases_, aliases_.end())); }

    // A declaration (`const std::size_t a = x, b = y;`, `Tensor4 out = ...;`, `std::vector<float> w(n);`):
    // its names are variables to the end of the enclosing block, its initializers regions.
    bool declaration(std::size_t p, std::size_t semi) {
        const std::size_t stop = declarator_stop(p, semi);
        if (stop <= p + 1 || stop >= semi + 1 || t_[stop - 1].kind != Tok::ident) return false;
        bool typed = false;
        int angle = 0;  // inside a template's arguments (std::array<std::size_t, 4>) sizes and commas are types
        for (std::size_t q = p; q + 1 < stop; ++q) {
            const std::string& s = t_[q].text;
            angle += s == "<" ? 1 : s == ">" ? -1 : 0;
            const bool argument = angle > 0 && (t_[q].kind == Tok::number || s == ",");
            if (t_[q].kind != Tok::ident && s != "::" && s != "<" && s != ">" && s != "&" && s != "*" && !argument)
                return false;
            typed = typed || t_[q].kind == Tok::ident;
        }
        if (!typed || t_[stop - 2].text == "::" || t_[stop - 2].text == "(") return false;
        const std::string type = type_of(p, stop - 1);
        const std::size_t scope_end = block_end(semi);
        std::size_t q = stop - 1;
        while (q < semi) {
            const std::size_t comma = until(q, semi, {","});
            const std::string name = t_[q].text;
            const bool lambda = is(q + 1, "=") && is(q + 2, "[");  // auto f = [&](...) { ... };
            // A learner's constexpr is evaluated at compile time: no run-time selector in it.
            const bool compile_time = own_ && std::any_of(t_.begin() + long(p), t_.begin() + long(stop),
                                                          [](const Token& x) { return x.text == "constexpr"; });
            if (is(q + 1, "=") && !lambda && !compile_time) {
                region(q + 2, comma, false, false);
                if (!found.empty() && found.back().first == q + 2) {
                    found.back().type = type;
                    found.back().value_type = class_spelled(p, stop - 1);
                }
            }
            // A learner's `const Strides3 o{N * D, dh};` or `std::vector<float> scores(pos);`: each
            // argument is an expression of its own (a braced list is no operand of ?:).
            if (own_ && !compile_time && (is(q + 1, "{") || is(q + 1, "("))) {
                const std::size_t close_at = close(q + 1) - 1;
                for (std::size_t a = q + 2; a < close_at;) {
                    const std::size_t next = until(a, close_at, {","});
                    region(a, next, false, false);
                    a = next + 1;
                }
            }
            if (lambda && own_) lambda_body(q + 2, name);
            // A learner's `const auto d = q.shape()[2];` (or `x.size()`, or `d_model / heads`) is a size:
            // it swaps with the others.
            std::string var_type = lambda ? "lambda" : type;
            if (own_ && type == "auto" && is(q + 1, "=")) {
                bool sized = false, called = false;  // a call of anything but shape() or size(): not a size
                for (std::size_t r = q + 2; r < comma; ++r) {
                    const std::string& x = t_[r].text;
                    if (t_[r].kind == Tok::ident && is(r + 1, "(") && x != "shape" && x != "size") called = true;
                    if (x == "{" || x == "array" || x == "vector") called = true;  // a list of sizes is no size
                    if (x == "shape" && !is(r + 3, "[")) called = true;            // q.shape() whole: a shape, no size
                    sized = sized || x == "shape" || x == "size" || std::ranges::any_of(vars_, [&](const Var& v) {
                                return v.name == x && v.type == "std::size_t" && v.from <= r && r < v.to;
                            });
                }
                if (sized && !called) var_type = "std::size_t";
            }
            vars_.push_back({name, var_type, semi + 1, scope_end, false, constant(p, stop - 1)});
            q = comma + 1;
        }
        return true;
    }

    // The first `=`, `(`, `{` or `,` at depth 0 from `p` on, a template's <...> skipped (or `semi`).
    std::size_t declarator_stop(std::size_t p, std::size_t semi) const {
        int angle = 0;
        while (p < semi) {
            const std::string& s = t_[p].text;
            if (s == "<") ++angle;
            if (s == ">" && angle > 0) --angle;
            if (angle == 0 && (s == "=" || s == "(" || s == "{" || s == ",")) return p;
            p = t_[p].kind == Tok::punct && (s == "(" || s == "[" || s == "{") ? close(p) : p + 1;
        }
        return semi;
    }

    // Where the block holding token `p` ends (brace depth 0 relative to it).
    std::size_t block_end(std::size_t p) const {
        int depth = 0;
        for (; p < t_.size(); ++p) {
            if (t_[p].text == "{") ++depth;
            if (t_[p].text == "}" && --depth < 0) return p;
        }
        return t_.size();
    }

    const std::string& text_;
    std::vector<Token> t_;
    std::map<std::string, std::string> aliases_;  // read_aliases
    std::string function_;
    std::vector<Var> vars_;
    std::vector<std::string> loops_;
    bool own_ = false;
    std::vector<HeaderStruct> structs_;
    std::vector<std::string> file_constants_;
};

// The function a block sits in, and its parameters: the last line before `at` that opens a
// function at column 0 ("Tensor3 attention(const Tensor3& q, ...) {").
std::pair<std::string, std::vector<Var>> signature_before(const std::string& text, std::size_t at) {
    std::size_t line = std::string::npos, end = text.rfind('\n', at == 0 ? 0 : at - 1);
    while (end != std::string::npos && end > 0) {
        const std::size_t nl = text.rfind('\n', end - 1);
        const std::size_t start = nl == std::string::npos ? 0 : nl + 1;
        const std::string l = text.substr(start, end - start);
        if (!l.empty() && !std::isspace(static_cast<unsigned char>(l[0])) && !l.starts_with("//") &&
            !l.starts_with("}") && l.find('(') != std::string::npos) {
            line = start;
            break;
        }
        if (nl == std::string::npos) break;
        end = nl;
    }
    if (line == std::string::npos) return {"", {}};
    const std::size_t paren = text.find('(', line);
    const auto toks = tokenize(text, line, text.find('{', paren));
    std::string name;
    std::vector<Var> params;
    std::size_t k = 0;
    while (k < toks.size() && toks[k].text != "(") name = toks[k++].text;
    std::size_t first = k + 1;
    for (std::size_t q = first; q < toks.size(); ++q) {
        if (toks[q].text != "," && toks[q].text != ")") continue;
        std::size_t n = q;
        while (n > first && toks[n - 1].kind != Tok::ident) --n;
        if (n > first + 1 && toks[n - 1].kind == Tok::ident) {
            const std::string type = type_words(toks, first, n - 1);
            // Only whole-value parameters swap with each other (a pointer's '*' stays in the type).
            params.push_back({toks[n - 1].text, type, 0, std::string::npos, false});
        }
        first = q + 1;
        if (toks[q].text == ")") break;
    }
    return {name, params};
}

int line_of(const std::string& text, std::size_t at) {
    return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
}

std::string trimmed_line(const std::string& text, std::size_t at) {
    const std::size_t start = text.rfind('\n', at == 0 ? 0 : at - 1);
    const std::size_t b = start == std::string::npos ? 0 : start + 1;
    std::size_t e = text.find('\n', at);
    if (e == std::string::npos) e = text.size();
    std::string s = text.substr(b, e - b);
    if (const auto c = s.find("  //"); c != std::string::npos) s.resize(c);
    const auto f = s.find_first_not_of(" \t");
    const auto l = s.find_last_not_of(" \t");
    return f == std::string::npos ? std::string() : s.substr(f, l - f + 1);
}

bool scalar_type(const std::string& t) {
    return t == "std::size_t" || t == "float" || t == "double" || t == "std::uint64_t" || t == "int" ||
           t.starts_with("Tensor") || t == "Mask2";
}

// `text` on one line: each run of whitespace one space.
std::string one_line(const std::string& text) {
    std::string out;
    for (const char c : text) {
        const bool space = std::isspace(static_cast<unsigned char>(c)) != 0;
        if (space && (out.empty() || out.back() == ' ')) continue;
        out += space ? ' ' : c;
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
}

// Every (span, replacement, kind) of one region.
struct Edit {
    std::size_t begin, end;
    std::string with, kind;
};

// A lambda's body and what it captures: a name from outside a `[peak](float s) { ... }` that its
// list does not hold is no name to swap in there (the compiler refuses it: "not captured").
struct LambdaScope {
    std::size_t list_open, list_close;  // the capture list's brackets (token indices)
    std::size_t open, close;            // the body's braces
    bool every = false;                 // [&] or [=]: whatever it names
    std::set<std::string> names;
};

std::vector<LambdaScope> lambda_scopes(const std::vector<Token>& t) {
    const auto match = [&](std::size_t p) {  // the token that closes the bracket opened at p
        int depth = 0;
        for (; p < t.size(); ++p) {
            if (t[p].kind != Tok::punct) continue;
            const std::string& x = t[p].text;
            depth += (x == "(" || x == "[" || x == "{") ? 1 : (x == ")" || x == "]" || x == "}") ? -1 : 0;
            if (depth == 0) return p;
        }
        return t.size();
    };
    std::vector<LambdaScope> out;
    for (std::size_t p = 1; p < t.size(); ++p) {
        const Token& prev = t[p - 1];
        if (t[p].text != "[" || prev.kind == Tok::ident || prev.kind == Tok::number || prev.text == ")" ||
            prev.text == "]")
            continue;  // a subscript
        LambdaScope scope;
        const std::size_t last = match(p);
        scope.list_open = p;
        scope.list_close = last;
        for (std::size_t q = p + 1; q < last; ++q) {
            const bool alone =
                (t[q - 1].text == "[" || t[q - 1].text == ",") && (q + 1 == last || t[q + 1].text == ",");
            if ((t[q].text == "&" || t[q].text == "=") && alone) scope.every = true;
            if (t[q].kind == Tok::ident) scope.names.insert(t[q].text);
        }
        std::size_t q = last + 1;
        if (q < t.size() && t[q].text == "(") q = match(q) + 1;
        while (q < t.size() && t[q].text != "{" && t[q].text != ";" && t[q].text != ")") ++q;
        if (q >= t.size() || t[q].text != "{") continue;
        scope.open = q;
        scope.close = match(q);
        out.push_back(std::move(scope));
    }
    return out;
}

class Editor {
public:
    Editor(const std::string& text, const Parser& parser, const Parser::Found& f)
        : text_(text),
          t_(parser.tokens()),
          vars_(parser.vars()),
          f_(f),
          own_(parser.own()),
          structs_(parser.header_structs()),
          lambdas_(lambda_scopes(t_)),
          file_constants_(parser.file_constants()) {}

    std::vector<Edit> edits() {
        if (f_.block_of != 0) {  // the end of an if's block in a loop: the loop's next pass taken there
            out_.push_back({t_[f_.first].begin, t_[f_.first].begin, "continue;", "a continue put back"});
            return out_;
        }
        if (own_) unused_in_place();  // first: the same text as a variable swap keeps this kind
        for (std::size_t k = f_.first; k < f_.last; ++k) {
            const Token& tok = t_[k];
            if (tok.kind == Tok::ident) identifier(k);
            if (tok.kind == Tok::number) number(k);
            if (tok.kind == Tok::punct) op(k);
        }
        if (f_.statement && f_.droppable)
            out_.push_back({t_[f_.first].begin, t_[f_.last - 1].end, ";", "statement dropped"});
        if (own_) result_doubled();
        if (own_) loop_one_step_shorter();
        if (own_) count_multiplied();
        // A scalar started at 0 instead of its value (float m = 0.0f for the row's first score).
        if ((f_.type == "float" || f_.type == "double") && f_.last > f_.first + 1)
            add(f_.first, f_.last, f_.type == "float" ? "0.0f" : "0.0", "a constant changed");
        if (f_.range_copy != 0)
            add(f_.range_copy - 1, f_.range_copy + 1, t_[f_.range_copy - 1].text + "& " + t_[f_.range_copy].text,
                "a reference for a copy");
        if (own_) unused_put_back();
        if (own_) rescale_put_back();
        if (own_) optional_term_put_back();
        if (own_) unused_member_put_back();
        if (own_) saved_value_read();
        if (own_) pairs_swapped();
        if (own_) guard_put_back();
        if (own_) normaliser_put_back();
        if (own_) factor_put_back();
        if (own_) divisor_swapped();
        if (own_) exp_sum_put_back();
        if (own_) offset_put_back();
        if (own_) tile_clipped();
        if (own_) constant_put_back();
        if (own_) shift_put_back();
        if (own_) count_advanced();
        if (own_) reset_put_back();
        if (own_) flag_raised();
        if (own_) sum_put_back();
        if (own_) step_doubled();
        if (own_) list_neighbours_swapped();
        if (own_)
            for (const Parser::Found* twin : twins_) made_like_twin(*twin);
        return out_;
    }

    // The regions beside this one that are written like it (a learner's parallel lines: the key's
    // line and the value's, the low nibble's and the high one's), as twin_regions finds them.
    void set_twins(std::vector<const Parser::Found*> twins) { twins_ = std::move(twins); }

    // An edit of several regions at once: `edit` of the region `target`, and each of `others`
    // (an index into the parser's regions) replaced whole. `before`: the token of the line it is
    // said at.
    struct Joint {
        Edit edit;
        std::size_t target = 0;
        std::vector<std::pair<std::size_t, std::string>> others;
        std::size_t before = 0;
        std::pair<std::size_t, std::size_t> moved = {0, 0};  // a move's statements, as offsets of the text
    };

    // A step taken too late: the last statements of a block (`append_row(cache.k, pr.k, pos);
    // append_row(cache.v, pr.v, pos); cache.length = pos + 1;` before its `return`), this region
    // the first of them, moved before the first statement of the block that reads what they write
    // once what they read is declared -- the new token appended after attending, where it attends to
    // itself too. The move: the statements put in front of that statement's first region (a
    // statement, or the value of a declaration, an if's condition or a for's start, each run once)
    // and each of theirs emptied. `all`: the parser's regions, this one at `at`.
    std::vector<Joint> moves(const std::vector<Parser::Found>& all, std::size_t at) const;

    // Two values of one declaration on one line swapped: `N = x.shape()[2], dh = x.shape()[3]` for
    // `N = x.shape()[3], dh = x.shape()[2]` (two axes read in each other's place).
    std::vector<Joint> swaps(const std::vector<Parser::Found>& all, std::size_t at) const;

private:
    // Whether `other` may be named at token k: not from outside a lambda that does not capture it.
    bool usable(const Var& other, std::size_t k) const {
        return std::ranges::none_of(lambdas_, [&](const LambdaScope& l) {
            return l.open < k && k < l.close && !l.every && other.from < l.open && !l.names.contains(other.name);
        });
    }

    // Whether token k is a name in a lambda's capture list (`[total]`: no place for another name).
    bool captured_name(std::size_t k) const {
        return std::ranges::any_of(lambdas_, [&](const LambdaScope& l) { return l.list_open < k && k < l.list_close; });
    }

    // Whether the variable at token k is written there: `k0 += Bc`, `++j`, `out(b, i, j) = x`, `w[j] /= s`.
    // The token after the subscripts and calls that start at q (`(b, i, j)[0]` in `out(b, i, j)[0] = x`).
    std::size_t after_subscripts(std::size_t q) const {
        while (q < t_.size() && (t_[q].text == "(" || t_[q].text == "[")) {
            int depth = 0;
            for (; q < t_.size(); ++q) {
                if (t_[q].text == "(" || t_[q].text == "[") ++depth;
                if ((t_[q].text == ")" || t_[q].text == "]") && --depth == 0) break;
            }
            ++q;
        }
        return q;
    }

    bool written_at(std::size_t k) const {
        static const std::set<std::string> writes = {"=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "++", "--"};
        if (k > 0 && (t_[k - 1].text == "++" || t_[k - 1].text == "--")) return true;
        const std::size_t q = after_subscripts(k + 1);
        // Where a std algorithm writes: `std::transform(a.begin(), a.end(), out.begin(), f)`.
        if (k + 2 < t_.size() && t_[k + 1].text == "." && (t_[k + 2].text == "begin" || t_[k + 2].text == "data")) {
            const auto [call, at] = argument_of(k);
            if (((call == "transform" || call == "copy" || call == "copy_n") && at >= 2) ||
                ((call == "fill" || call == "fill_n" || call == "iota" || call == "generate") && at == 0))
                return true;
        }
        // A method that changes its object: `out.fill(0.0f)`.
        static const std::set<std::string> changes = {"fill", "resize",       "push_back", "assign", "clear",
                                                      "swap", "emplace_back", "insert",    "erase",  "reshape"};
        if (q + 1 < t_.size() && (t_[q].text == "." || t_[q].text == "->") && changes.contains(t_[q + 1].text))
            return true;
        return q < t_.size() && writes.contains(t_[q].text);
    }

    const Var* var_at(std::size_t k) const {
        if (k > 0 && (t_[k - 1].text == "." || t_[k - 1].text == "->" || t_[k - 1].text == "::")) return nullptr;
        if (k + 1 < t_.size() && t_[k + 1].text == "::") return nullptr;
        const Var* found = nullptr;
        for (const Var& v : vars_)
            if (v.name == t_[k].text && v.from <= k && k < v.to) found = &v;
        return found;
    }

    bool primary_end(std::size_t k) const {  // does token k end an operand?
        return t_[k].kind == Tok::ident || t_[k].kind == Tok::number || t_[k].text == ")" || t_[k].text == "]";
    }

    void add(std::size_t k, std::string with, std::string kind) { add(k, k + 1, std::move(with), std::move(kind)); }
    void add(std::size_t first, std::size_t last, std::string with, std::string kind) {
        out_.push_back({t_[first].begin, t_[last - 1].end, std::move(with), std::move(kind)});
    }

    // A math function's closing parenthesis on the wrong side of an operand: `std::exp(s) - top`
    // for `std::exp(s - top)` (the shift taken after the exp), `std::sqrt(var) + eps` for
    // `std::sqrt(var + eps)`, and back. `k`: the binary operator between the call and the operand.
    void call_parenthesis_moved(std::size_t k) {
        static const std::set<std::string> math = {"exp",  "expf",  "exp2",  "expm1", "log",   "logf", "log2", "log1p",
                                                   "sqrt", "sqrtf", "rsqrt", "tanh",  "tanhf", "pow",  "powf", "erf"};
        const auto math_call = [&](std::size_t open) {
            return open > f_.first && t_[open].text == "(" && t_[open - 1].kind == Tok::ident &&
                   math.count(t_[open - 1].text) > 0;
        };
        const std::size_t e = operand_end(k + 1);
        if (e == 0 || e <= k + 1) return;
        const bool loose = t_[k].text == "+" || t_[k].text == "-";
        if (loose && e < f_.last && (t_[e].text == "*" || t_[e].text == "/" || t_[e].text == "%")) return;
        const std::string operand = text_.substr(t_[k].begin, t_[e - 1].end - t_[k].begin);  // `- top`
        // Out of the call, into it: `f(x) - top` -> `f(x - top)`.
        if (t_[k - 1].text == ")") {
            int depth = 0;
            std::size_t q = k - 1;
            for (; q > f_.first; --q) {
                if (t_[q].text == ")" || t_[q].text == "]") ++depth;
                if ((t_[q].text == "(" || t_[q].text == "[") && --depth == 0) break;
            }
            if (depth == 0 && math_call(q)) add(k - 1, e, " " + operand + ")", "a call's parenthesis moved");
        }
        // In the call, out of it: `f(x - top)` -> `f(x) - top`, the operator in the call's last argument.
        if (e < f_.last && t_[e].text == ")") {
            int depth = 0;
            std::size_t q = k;
            for (; q > f_.first; --q) {
                const std::string& t = t_[q - 1].text;
                if (t == ")" || t == "]") ++depth;
                if ((t == "(" || t == "[") && depth-- == 0) break;
            }
            if (q > f_.first && math_call(q - 1) && close_in_region(q - 1) == e + 1)
                add(k - 1, e + 1, t_[k - 1].text + ") " + operand, "a call's parenthesis moved");
        }
    }

    // A learner's square root forgotten, or one too many: std::sqrt(x) for x (a cast, a size) and
    // back, and around a functional cast or a static_cast: std::sqrt(float(D)) for float(D).
    void square_root_edits(std::size_t k) {
        const std::string& s = t_[k].text;
        if (s == "sqrt" && k >= 2 && t_[k - 1].text == "::" && t_[k - 2].text == "std" && k + 1 < t_.size() &&
            t_[k + 1].text == "(") {
            const std::size_t close = close_in_region(k + 1);
            if (close <= f_.last && close > k + 3)
                out_.push_back({t_[k - 2].begin, t_[close - 1].end,
                                text_.substr(t_[k + 2].begin, t_[close - 2].end - t_[k + 2].begin),
                                "a square root dropped"});
        }
        // The cast's `(` (a functional cast's, or a static_cast's after its `<...>`).
        std::size_t open = 0;
        if ((s == "float" || s == "double") && k + 1 < t_.size() && t_[k + 1].text == "(") open = k + 1;
        if (s == "static_cast" && k + 1 < t_.size() && t_[k + 1].text == "<") {
            std::size_t q = k + 1;
            while (q < f_.last && t_[q].text != ">") ++q;
            if (q + 1 < f_.last && t_[q + 1].text == "(") open = q + 1;
        }
        if (open == 0 || (k >= 2 && t_[k - 1].text == "(" && t_[k - 2].text == "sqrt")) return;
        const std::size_t close = close_in_region(open);
        if (close <= f_.last && close > open + 1)
            out_.push_back({t_[k].begin, t_[close - 1].end,
                            "std::sqrt(" + text_.substr(t_[k].begin, t_[close - 1].end - t_[k].begin) + ")",
                            "a square root added"});
    }

    void identifier(std::size_t k) {
        const std::string& s = t_[k].text;
        if (k >= 2 && (t_[k - 1].text == "." || t_[k - 1].text == "->") && t_[k - 2].kind == Tok::ident) {
            member(k);
            return;
        }
        if (s == "max" || s == "min") {
            if (k > 0 && t_[k - 1].text == "::") add(k, s == "max" ? "min" : "max", "std::max for std::min");
            return;
        }
        name_edits(k);
        const Var* v = var_at(k);
        if (own_ && v != nullptr && !scalar_type(v->type)) {
            object_swapped(k, *v);
            return;
        }
        if (v == nullptr || !scalar_type(v->type) || (v->loop && f_.loop_condition)) return;
        // An index argument: t(b, kv, i, c), w[j].
        const bool argument = k > 0 && k + 1 < t_.size() &&
                              (t_[k - 1].text == "(" || t_[k - 1].text == "," || t_[k - 1].text == "[") &&
                              (t_[k + 1].text == "," || t_[k + 1].text == ")" || t_[k + 1].text == "]");
        // A variable written here (`k0 += Bc`, `++j`, `out(b, i, j) = x`) is not swapped for a const one,
        // nor a name in a capture list for any other.
        const bool written = written_at(k);
        if (own_ && captured_name(k)) return;
        // The one operand of a cast to a number (`std::size_t(n)`, `static_cast<double>(n)`): any
        // number of another type may stand there too (`std::size_t(t)`, t an int target).
        const bool cast_operand = own_ && k >= 2 && t_[k - 1].text == "(" && k + 1 < t_.size() &&
                                  t_[k + 1].text == ")" &&
                                  (t_[k - 2].text == ">" || t_[k - 2].text == "size_t" || t_[k - 2].text == "int" ||
                                   t_[k - 2].text == "double" || t_[k - 2].text == "float") &&
                                  number_type(v->type);
        for (const Var& other : vars_) {
            if (other.name == v->name || !(other.from <= k && k < other.to)) continue;
            if (other.type != v->type && !(cast_operand && number_type(other.type) && !other.loop)) continue;
            if (own_ && ((written && other.constant) || !usable(other, k))) continue;
            // Swaps among loop counters, or of a size for another size (d for d_head), or tensors;
            // and a computed index for a loop's counter where it indexes (cache.v(b, h, ...) for
            // cache.v(b, kv, ...), kv = h / group).
            // And back, in a learner's file: an index computed inside the counter's loop for the
            // counter (`v(b, h, j, c)` for `v(b, h, t, c)`, j = visible[t]).
            const bool computed_for_counter = own_ && argument && v->loop && !other.loop && other.from > v->from;
            if (v->loop != other.loop && v->type == "std::size_t" && !(argument && !v->loop && other.loop) &&
                !computed_for_counter)
                continue;
            if (std::ranges::any_of(out_,
                                    [&](const Edit& e) { return e.begin == t_[k].begin && e.with == other.name; }))
                continue;
            add(k, other.name, v->loop ? "index swap" : "variable swap");
        }
        if (own_ && v->type == "std::size_t") signed_compared(k);
        // An index one off: t(b, i + 1, c).
        // A size one off where it is passed on: std::sqrt(static_cast<float>(d + 1)).
        // A learner's (or a kernel's) int too, and a count alone in an integer's initializer or in a
        // branch of its ?: (`const int last = a.causal ? i + 1 : n;` for `a.causal ? i : n`).
        const bool integral = v->type == "std::size_t" || (own_ && v->type == "int");
        const auto lone = [&] {
            if (!own_ || (f_.type != "int" && f_.type != "std::size_t" && f_.type != "auto")) return false;
            const bool open = k == f_.first || t_[k - 1].text == "?" || t_[k - 1].text == ":";
            return open && (k + 1 == f_.last || t_[k + 1].text == ":" || t_[k + 1].text == "?");
        };
        // Or alone on the right of an assignment: `cache.length = t + 1;` for `cache.length = t;`.
        const bool assigned_alone = own_ && f_.statement && k > f_.first && t_[k - 1].text == "=" &&
                                    (k + 1 == f_.last || t_[k + 1].text == ";");
        if (integral && !written && (argument || lone() || assigned_alone)) {
            add(k, s + " + 1", v->loop ? "index +1" : "bound +1");
            add(k, s + " - 1", v->loop ? "index -1" : "bound -1");
        }
        // A learner's pointer moved by a counter unscaled: `keys + j * d_head` for `keys + j`.
        if (own_ && v->loop && !written && k >= 2 && t_[k - 1].text == "+" &&
            (k + 1 >= t_.size() || t_[k + 1].text != "*")) {
            const Var* base = var_at(k - 2);
            if (base != nullptr && base->type.find('*') != std::string::npos)
                for (const Var& size : vars_)
                    if (!size.loop && size.type == "std::size_t" && size.from <= k && k < size.to)
                        add(k, s + " * " + size.name, "an index scaled");
        }
        // A learner's pair or stride one step in two: `x + 2 * i` for `x + i` (RoPE's pairs, a block's bytes).
        if (own_ && v->loop && !written && (k == 0 || t_[k - 1].text != "*") &&
            (k + 1 >= t_.size() || t_[k + 1].text != "*"))
            add(k, "2 * " + s, "an index doubled");
        if (argument && v->loop) {
            // A fixed index where the loop's was meant: scores(b, 0, 0) for scores(b, i, 0).
            add(k, "0", "index replaced by 0");
            // Two indices swapped at once: out(b, c, i) for out(b, i, c).
            const Var* next = k + 2 < t_.size() && t_[k + 1].text == "," ? var_at(k + 2) : nullptr;
            if (next != nullptr && next->loop && next->name != s &&
                (t_[k + 3].text == "," || t_[k + 3].text == ")" || t_[k + 3].text == "]"))
                add(k, k + 3, next->name + ", " + s, "indices swapped");
        }
    }

    // (identifier) The edits of a name that are not a variable's: a named constant, a function or
    // algorithm of the other kind (`fminf`, `min_element`), a square root, a call's arguments.
    void name_edits(std::size_t k) {
        const std::string& s = t_[k].text;
        // A learner's named constant for another of theirs: kBlock for kHalfBlock.
        if (own_ && named_constant(s) && (k == 0 || t_[k - 1].text != "::")) {
            if (file_tokens_.empty()) file_tokens_ = tokenize(text_, 0, text_.size());
            std::set<std::string> others;
            for (const Token& t : file_tokens_)
                if (t.kind == Tok::ident && t.text != s && named_constant(t.text)) others.insert(t.text);
            for (const std::string& other : others) add(k, other, "constant swap");
        }
        // The size of the other floating type: sizeof(double) for sizeof(float).
        if ((s == "float" || s == "double") && k >= 2 && t_[k - 1].text == "(" && t_[k - 2].text == "sizeof")
            add(k, s == "float" ? "double" : "float", "float for double");
        // A learner's std algorithms: the other end (std::max_element for std::min_element).
        if (own_ && (s == "max_element" || s == "min_element") && k > 0 && t_[k - 1].text == "::")
            add(k, s == "max_element" ? "min_element" : "max_element", "std::max_element for std::min_element");
        if (own_) square_root_edits(k);
        if (own_ && (s == "exp" || s == "expf" || s == "__expf") && k + 1 < t_.size() && t_[k + 1].text == "(")
            maximum_subtracted(k + 1);
        // A learner's (a kernel's) C maximum for the minimum: fmaxf for fminf.
        static const std::map<std::string, std::string> c_extremes = {{"fmaxf", "fminf"}, {"fminf", "fmaxf"},
                                                                      {"fmax", "fmin"},   {"fmin", "fmax"},
                                                                      {"isnan", "isinf"}, {"isinf", "isnan"}};
        if (const auto other = c_extremes.find(s);
            own_ && other != c_extremes.end() && k + 1 < t_.size() && t_[k + 1].text == "(")
            add(k, other->second, s + " for " + other->second);
        if (own_ && s == "range" && k >= 2 && t_[k - 1].text == "::" && k + 1 < t_.size() && t_[k + 1].text == "(")
            range_shifted(k + 1);
        if (own_ && k + 1 < t_.size() && t_[k + 1].text == "(" &&
            (k == 0 || (t_[k - 1].text != "." && t_[k - 1].text != "::"))) {
            argument_put_back(k);
            argument_like_neighbour(k);
        }
        if (s == "INFINITY") add(k, "1e9f", "a constant changed");
        if (s == "infinity" && k >= 7 && t_[k - 7].text == "std" && k + 2 < t_.size() && t_[k + 2].text == ")")
            add(k - 7, k + 3, "1e9f", "a constant changed");
    }

    // (identifier) A name of a type not a number's, at token k.
    void object_swapped(std::size_t k, const Var& v) {
        // A learner's object read like a tensor for another of its type: `k_tile(r, c)` for
        // `v_tile(r, c)` (two shared tiles of a kernel), `scores[j]` for `weights[j]` (two vectors).
        // Not pointers: a kernel's many inputs would make dozens of edits of each line that reads one.
        if (v.type != "lambda" && !v.type.ends_with('*') && k + 1 < t_.size() &&
            (t_[k + 1].text == "(" || t_[k + 1].text == "[") && !captured_name(k)) {
            const bool written = written_at(k);
            for (const Var& other : vars_)
                if (other.name != v.name && other.type == v.type && other.from <= k && k < other.to &&
                    usable(other, k) && !(written && other.constant))
                    add(k, other.name, "variable swap");
        }
    }

    // (identifier) A size at token k, beside `==` or `!=`.
    void signed_compared(std::size_t k) {
        // A size compared with a signed value of the file, cast: `j == std::size_t(t)` for `j == n`
        // (a target id, an int32, where the counter of the row stood).
        if ((t_[k - 1].text == "==" || t_[k - 1].text == "!=" || t_[k + 1].text == "==" || t_[k + 1].text == "!="))
            for (const Var& other : vars_)
                if (!other.loop && other.from <= k && k < other.to &&
                    (other.type == "int" || other.type == "std::int32_t" || other.type == "std::int64_t"))
                    add(k, "std::size_t(" + other.name + ")", "variable swap");
    }

    // The call an argument at token `k` is passed to, and its position: ("dense", 2). Empty when
    // `k` is no call's argument.
    std::pair<std::string, int> argument_of(std::size_t k) const {
        int depth = 0, commas = 0;
        for (std::size_t q = k; q > 0; --q) {
            const std::string& s = t_[q - 1].text;
            if (s == ")" || s == "]" || s == "}") ++depth;
            if (s == "(" || s == "[" || s == "{") {
                if (depth-- == 0)
                    return s == "(" && q >= 2 && t_[q - 2].kind == Tok::ident ? std::pair{t_[q - 2].text, commas}
                                                                              : std::pair{std::string(), 0};
            }
            if (s == "," && depth == 0) ++commas;
            if (s == ";" && depth == 0) break;
        }
        return {};
    }

    // Another member of the same object: cache.k for cache.v, p.q for p.k (those the block uses).
    // In a learner's file, whose types the reader does not know, only one passed to the same call
    // at the same place somewhere (dense(x, w.w_k, w.b_k) for dense(x, w.w_q, w.b_q)), or one of
    // its family: a member of another type would not compile.
    void member(std::size_t k) {
        std::set<std::string> others;
        const auto place = own_ ? argument_of(k) : std::pair<std::string, int>{};
        // Or one of the same family: the same name but for one character (beta1, beta2; w_q, w_k).
        const auto family = [](const std::string& a, const std::string& b) {
            return a.size() == b.size() &&
                   std::inner_product(a.begin(), a.end(), b.begin(), 0, std::plus<>(), std::not_equal_to<>()) == 1;
        };
        for (std::size_t q = 2; q < t_.size(); ++q)
            if (t_[q].kind == Tok::ident && t_[q - 1].text == t_[k - 1].text && t_[q - 2].text == t_[k - 2].text &&
                (!own_ || argument_of(q) == place || family(t_[q].text, t_[k].text)))
                others.insert(t_[q].text);
        // A learner's file: the same object's members anywhere in it (cache.v in append_kv for
        // cache.k in decode_step, where the slip left no cache.v).
        if (own_) {
            const auto& f = file_tokens();
            for (std::size_t q = 2; q < f.size(); ++q)
                if (f[q].kind == Tok::ident && f[q - 1].text == t_[k - 1].text && f[q - 2].text == t_[k - 2].text &&
                    (q + 1 < f.size() && k + 1 < t_.size() && (f[q + 1].text == "(") == (t_[k + 1].text == "(")))
                    others.insert(f[q].text);
        }
        // The header's struct that holds every member the file uses on this object: its members of
        // the same type join (block.m for block.d); one of another type leaves (cache.length for
        // cache.k would not compile).
        const auto type = [&](const std::string& member) -> std::optional<std::string> {
            std::optional<std::string> found;
            for (const HeaderStruct* h : structs_of(t_[k - 2].text))
                for (const auto& [name, of] : h->members)
                    if (name == member) {
                        if (found && *found != of) return std::nullopt;
                        found = of;
                    }
            return found;
        };
        const auto mine = type(t_[k].text);
        if (mine) {
            // A member of that type in every struct that may be the object's (AttentionArgs and a
            // kernel's Args both hold seq, scale and causal: only Args has bf16).
            const auto candidates = structs_of(t_[k - 2].text);
            for (const auto& [name, of] : candidates.front()->members)
                if (of == *mine && std::ranges::all_of(candidates, [&](const HeaderStruct* h) {
                        return std::ranges::find(h->members, std::pair{name, of}) != h->members.end();
                    }))
                    others.insert(name);
            std::erase_if(others, [&](const std::string& other) {
                const auto theirs = type(other);
                return theirs && *theirs != *mine;
            });
        }
        // A method for another: one the file calls with arguments as this call has them (or none as
        // it has none), and not one that returns another kind of thing (p.size() for p.begin()).
        if (own_ && k + 2 < t_.size() && t_[k + 1].text == "(") {
            static const std::map<std::string, std::string> returns = {
                {"begin", "iterator"},    {"end", "iterator"},  {"cbegin", "iterator"}, {"cend", "iterator"},
                {"rbegin", "iterator"},   {"rend", "iterator"}, {"size", "count"},      {"dimension", "count"},
                {"data", "pointer"},      {"shape", "shape"},   {"fill", "nothing"},    {"resize", "nothing"},
                {"push_back", "nothing"}, {"front", "element"}, {"back", "element"}};
            const bool none = t_[k + 2].text == ")";
            const auto& f = file_tokens();
            std::erase_if(others, [&](const std::string& other) {
                const auto a = returns.find(t_[k].text), b = returns.find(other);
                if (a != returns.end() && b != returns.end() && a->second != b->second) return true;
                for (std::size_t q = 1; q + 2 < f.size(); ++q)
                    if (f[q].text == other && (f[q - 1].text == "." || f[q - 1].text == "->") && f[q + 1].text == "(")
                        return (f[q + 2].text == ")") != none;
                return false;
            });
        }
        for (const std::string& other : others)
            if (other != t_[k].text) add(k, other, "member swap");
    }

    const std::vector<Token>& file_tokens() {
        if (file_tokens_.empty()) file_tokens_ = tokenize(text_, 0, text_.size());
        return file_tokens_;
    }

    // The header structs that hold every data member the file uses on `object` (none: its type
    // is not one of theirs).
    std::vector<const HeaderStruct*> structs_of(const std::string& object) {
        if (const auto known = structs_of_.find(object); known != structs_of_.end()) return known->second;
        // Its declared type, where the function declares it (`const BlockQ4_1& block`): that struct;
        // for `const auto& block = blocks[b]`, the type `blocks` points to.
        for (const Var& v : vars_) {
            if (v.name != object) continue;
            std::string type = v.type;
            if (type == "auto") {
                for (std::size_t q = 0; q + 3 < t_.size() && q < v.from; ++q)
                    if (t_[q].text == object && t_[q + 1].text == "=" && t_[q + 3].text == "[")
                        for (const Var& w : vars_)
                            if (w.name == t_[q + 2].text && w.from <= q) type = w.type;
            }
            if (const auto colons = type.rfind("::"); colons != std::string::npos) type = type.substr(colons + 2);
            std::erase(type, '*');
            for (const HeaderStruct& h : structs_)
                if (h.name == type) return structs_of_[object] = {&h};
            // Declared here as something else (`const Tensor2& w` in a helper, where another
            // function's `w` is the layer's weights): none of the file's structs.
            if (type != "auto" && !type.empty() && v.from <= f_.first && f_.first < v.to)
                return structs_of_[object] = {};
        }
        std::set<std::string> used;
        const auto& f = file_tokens();
        for (std::size_t q = 2; q + 1 < f.size(); ++q)
            if (f[q].kind == Tok::ident && (f[q - 1].text == "." || f[q - 1].text == "->") && f[q - 2].text == object &&
                f[q + 1].text != "(")
                used.insert(f[q].text);
        std::vector<const HeaderStruct*> out;
        for (const HeaderStruct& h : structs_)
            if (!used.empty() && std::ranges::all_of(used, [&](const std::string& u) {
                    return std::ranges::any_of(h.members, [&](const auto& m) { return m.first == u; });
                }))
                out.push_back(&h);
        return structs_of_[object] = out;
    }

    void number(std::size_t k) {
        const std::string& s = t_[k].text;
        // A template's argument (`std::array<std::size_t, 4>`, `xt::xtensor<float, 2>`) is a type: any
        // other number makes another type, which the schemata's ?: refuses -- a compile more each
        // (three compiles of a learner's exercise 4 file, 1.5 s each).
        if (own_ && k > 0 && (t_[k - 1].text == "," || t_[k - 1].text == "<") && k + 1 < t_.size() &&
            (t_[k + 1].text == ">" || t_[k + 1].text == ">>"))
            return;
        const bool floating = s.find_first_of(".eE") != std::string::npos && s.rfind("0x", 0) != 0;
        // A square root forgotten around a constant: `z / std::sqrt(2.0f)` for `z / 2.0f`.
        if (own_ && floating && k > f_.first && (t_[k - 1].text == "/" || t_[k - 1].text == "*") &&
            (k + 1 >= t_.size() || t_[k + 1].text != "("))
            add(k, "std::sqrt(" + s + ")", "a square root added");
        std::set<std::string> alternatives;
        if (floating) {
            const std::string suffix = s.back() == 'f' ? "f" : "";
            const double x = std::stod(s);
            // A learner's constant twice what it is: sqrt(4.0f) for sqrt(2.0f), 0.25f for 0.125f.
            for (const double y : {0.0, 1.0, -x, 2.0 * x, own_ ? x / 2.0 : 0.0})
                // Not in a learner's file: a sum started at 1 for 0 shifts every score alike, which a
                // softmax forgives -- a "repair" that would hide their slip, not undo it.
                if (y != x && !(own_ && x == 0.0 && y == 1.0)) {
                    // A learner's: its shortest exact form (0.0625f, not 0.1f); the solution's as it was.
                    std::string literal = own_ ? fmt::format("{}", y) : fmt::format("{:.1f}", y);
                    if (literal.find_first_of(".e") == std::string::npos) literal += ".0";
                    alternatives.insert(literal + suffix);
                }
        } else {
            const long n = std::stol(s);
            for (const long y : {n + 1, n - 1, 0L, 1L})
                if (y != n && y >= 0) alternatives.insert(std::to_string(y));
            // A learner's block or part number: any other of 0 .. 3 (in_proj's third block, 2, for its first).
            if (own_ && n <= 3)
                for (long y = 0; y <= 3; ++y)
                    if (y != n) alternatives.insert(std::to_string(y));
            // A learner's size twice or half what it is (16 for a block's 32 weights, 2 bytes a float).
            if (own_ && n >= 2) alternatives.insert(std::to_string(2 * n));
            if (own_ && n >= 4 && n % 2 == 0) alternatives.insert(std::to_string(n / 2));
            // A learner's int start value (std::accumulate(first, last, 0)): its float, or a 64-bit
            // count (std::accumulate(dims.begin(), dims.end(), 4, times) overflows 32 bits).
            if (own_ && k > 0 && k + 1 < t_.size() && t_[k - 1].text == "," &&
                (t_[k + 1].text == ")" || t_[k + 1].text == ",") &&
                s.find_first_not_of("0123456789") == std::string::npos && (t_[k + 1].text == ")" || in_a_fold(k))) {
                add(k, s + ".0f", "an int for a float");
                if (in_a_fold(k)) add(k, "std::size_t{" + s + "}", "an int for a std::size_t");
            }
        }
        // A high nibble masked where it is shifted down: `byte >> 4` for `byte & 0xF0`; and one
        // nibble's mask for the other's (`byte & 0x0Fu` for `byte & 0xF0u`), its suffix kept.
        const std::string digits = s.substr(0, s.find_last_not_of("uUlL") + 1), suffix = s.substr(digits.size());
        const auto nibble = [&](const char* a, const char* b) { return digits == a || digits == b; };
        if (own_ && k > 0 && t_[k - 1].text == "&" && (nibble("0xF0", "0xf0") || nibble("0x0F", "0x0f"))) {
            if (nibble("0xF0", "0xf0")) out_.push_back({t_[k - 1].begin, t_[k].end, ">> 4", "a mask for a shift"});
            add(k, (nibble("0xF0", "0xf0") ? "0x0F" : "0xF0") + suffix, "the other nibble's mask");
        }
        // After a minus, a negative number is bracketed (`-(-2.0)`, never `--2.0`).
        const bool after_minus = own_ && k > 0 && (t_[k - 1].text == "-" || t_[k - 1].text == "+");
        for (const auto& a : alternatives)
            add(k, after_minus && a.starts_with('-') ? "(" + a + ")" : a, "a constant changed");
    }

    void op(std::size_t k) {
        const std::string& s = t_[k].text;
        const bool binary = k > f_.first && primary_end(k - 1);
        // (Not a for's step, `; ++i)`: its value is never read.)
        const bool step =
            f_.first > 0 && t_[f_.first - 1].text == ";" && f_.last < t_.size() && t_[f_.last].text == ")";
        if (own_ && !f_.statement && !step && (s == "++" || s == "--")) increment_order(k);
        // Last, a learner's comparison turned round (`j < i` for `j > i`: a causal mask that hides
        // the past), not in a loop's condition (a loop that never runs says nothing).
        static const std::vector<std::tuple<std::string, std::string, bool>> relational = {
            {"<", "<=", false},  {"<=", "<", false}, {">", ">=", false}, {">=", ">", false}, {"==", "!=", false},
            {"!=", "==", false}, {"<", ">", true},   {">", "<", true},   {"<=", ">=", true}, {">=", "<=", true}};
        for (const auto& [from, to, mirrored] : relational) {
            if (s != from || !binary || (mirrored && (!own_ || f_.loop_condition))) continue;
            // A template's angle bracket follows a name that is no variable (static_cast<float>).
            // A learner's member (`cache.length > capacity`) is compared: a member template needs `template`.
            const bool member = own_ && k >= 2 && (t_[k - 2].text == "." || t_[k - 2].text == "->");
            // A number after it makes it a comparison (`t > 0` in an unnamed lambda, whose `t` the
            // parser does not know): no template argument list ends before a number.
            const bool number_after = k + 1 < t_.size() && t_[k + 1].kind == Tok::number;
            if ((s == "<" || s == ">") && t_[k - 1].kind == Tok::ident && var_at(k - 1) == nullptr && !member &&
                !number_after)
                continue;
            // A template's closing bracket before its braces or call (`std::array<std::size_t, 4>{B, H}`).
            if (s == ">" && k + 1 < t_.size() &&
                (t_[k + 1].text == "{" || t_[k + 1].text == "(" || t_[k + 1].text == "::") &&
                (t_[k - 1].kind == Tok::number || (t_[k - 1].kind == Tok::ident && var_at(k - 1) == nullptr)))
                continue;
            add(k, to, s + " for " + to);
            // for (...; j < n; ...): the bound one further or one short.
            if ((s == "<" || s == "<=") && !f_.statement && !mirrored) {
                const std::size_t last = f_.last;
                bool simple = true;
                for (std::size_t q = k + 1; q < last; ++q) simple = simple && t_[q].text != "&&" && t_[q].text != "||";
                if (simple && last > k + 1) {
                    const std::string bound = text_.substr(t_[k + 1].begin, t_[last - 1].end - t_[k + 1].begin);
                    add(k + 1, last, bound + " + 1", "bound +1");
                    add(k + 1, last, bound + " - 1", "bound -1");
                }
            }
        }
        if (binary && (s == "+" || s == "-" || s == "*" || s == "/")) {
            static const std::map<std::string, std::string> flip = {{"+", "-"}, {"-", "+"}, {"*", "/"}, {"/", "*"}};
            add(k, flip.at(s), s + " for " + flip.at(s));
            // A learner's sum for a product and back: `heads * d_head` for `heads + d_head`.
            // Not a pointer's offset: `x * h` does not compile (exercise 12's `q + h * d_head`).
            const Var* left = t_[k - 1].kind == Tok::ident ? var_at(k - 1) : nullptr;
            const bool pointer = left != nullptr && left->type.ends_with("*");
            if (own_ && (s == "+" || s == "*") && !pointer)
                add(k, s == "+" ? "*" : "+", s + " for " + (s == "+" ? "*" : "+"));
            if (s == "-" || s == "/") swap_operands(k);
            drop_operand(k);
            // A square's factor left out: `3 * d * d + d * d` for `3 * d * d + d` (a count's W_O).
            if (own_ && (s == "+" || s == "-") && k >= 3 && k + 1 < f_.last && t_[k + 1].kind == Tok::ident &&
                operand_end(k + 1) == k + 2 && t_[k - 1].text == t_[k + 1].text && t_[k - 2].text == "*" &&
                t_[k - 3].text == t_[k + 1].text)
                add(k + 1, t_[k + 1].text + " * " + t_[k + 1].text, "a square's factor put back");
        }
        // Integer division and remainder mixed up (h % group for h / group), on sizes only.
        if (binary && (s == "/" || s == "%") && integer_operand(k - 1))
            add(k, s == "/" ? "%" : "/", s + " for " + (s == "/" ? "%" : "/"));
        if (own_ && binary && s == "%") swap_operands(k);  // `heads % d_model` for `d_model % heads`
        if (own_ && binary && s == "/") real_division(k);
        if (own_ && (s == "&&" || s == "||")) add(k, s == "&&" ? "||" : "&&", s + " for " + (s == "&&" ? "||" : "&&"));
        if (own_ && binary && (s == "+" || s == "-" || s == "*" || s == "/")) call_parenthesis_moved(k);
        if (own_ && binary && s == "*") multiplied_whole(k, "-");
        if (own_ && binary && s == "*") multiplied_in_part(k);
        static const std::map<std::string, std::string> assign = {
            {"+=", "="}, {"-=", "+="}, {"*=", "/="}, {"/=", "*="}, {"=", "+="}};
        // (Not into an element of a std::vector<bool>: its proxy reference has no `+=`.)
        const Var* target = t_[f_.first].kind == Tok::ident ? var_at(f_.first) : nullptr;
        const bool bits = target != nullptr && target->type.find("vector<bool>") != std::string::npos;
        if (f_.statement && f_.droppable && assign.count(s) && !bits) add(k, assign.at(s), s + " for " + assign.at(s));
    }

    // A learner's division that truncates or binds too little: `double(h) / double(pow2)` for
    // `h / pow2` (two integers; `1.0 / n` for `1 / n`), and `a / (b * c)` for `a / b * c`.
    void real_division(std::size_t k) {
        const auto integer_literal = [&](std::size_t q) {
            return t_[q].kind == Tok::number && t_[q].text.find_first_of(".eEfxX") == std::string::npos;
        };
        const auto single = [&](std::size_t q) {  // token q is an operand by itself
            return (integer_literal(q) || integer_operand(q)) && q + 1 < t_.size() && t_[q + 1].text != "(" &&
                   t_[q + 1].text != "[" && t_[q + 1].text != "." && t_[q + 1].text != "->";
        };
        const bool left_alone =
            k - 1 == f_.first || (t_[k - 2].kind == Tok::punct && t_[k - 2].text != ")" && t_[k - 2].text != "]" &&
                                  t_[k - 2].text != "." && t_[k - 2].text != "->" && t_[k - 2].text != "::");
        if (k + 1 < f_.last && left_alone && single(k - 1) && single(k + 1) &&
            (integer_literal(k - 1) || integer_literal(k + 1) || integer_operand(k + 1)))
            add(k - 1, integer_literal(k - 1) ? t_[k - 1].text + ".0" : "double(" + t_[k - 1].text + ")",
                "an integer division made real");
        multiplied_whole(k, "*");
    }

    // `a / (b * c)` for `a / b * c` (at `/`), `a * (b - c)` for `a * b - c` (at `*`): the operator
    // at k taken over the next operation too.
    void multiplied_whole(std::size_t k, const std::string& next) {
        const std::size_t b_end = operand_end(k + 1);
        if (b_end == 0 || b_end + 1 >= f_.last || (t_[b_end].text != next && !(next == "-" && t_[b_end].text == "+")))
            return;
        const std::size_t c_end = operand_end(b_end + 1);
        if (c_end == 0 || c_end > f_.last) return;
        add(k + 1, c_end, "(" + text_.substr(t_[k + 1].begin, t_[c_end - 1].end - t_[k + 1].begin) + ")",
            next == "*" ? "a product divided whole" : "a difference multiplied whole");
    }

    // `a * b + c` for `a * (b + c)` (at `*`): a product taken over a sum where only its first term
    // was meant (exercise 5's `heads * (per_head + out)`: the shared W_O counted once per head).
    void multiplied_in_part(std::size_t k) {
        if (k + 1 >= f_.last || t_[k + 1].text != "(") return;
        const std::size_t after = close_in_region(k + 1);
        if (after > f_.last || after < k + 5) return;
        bool sum = false;
        for (std::size_t q = k + 2; q + 1 < after; ++q) {
            if (t_[q].text == "(" || t_[q].text == "[") {
                q = close_in_region(q) - 1;
                continue;
            }
            if (t_[q].text == "?" || t_[q].text == "&&" || t_[q].text == "||" || t_[q].text == ",") return;
            sum = sum || ((t_[q].text == "+" || t_[q].text == "-") && q > k + 2);
        }
        if (sum)
            add(k + 1, after, text_.substr(t_[k + 2].begin, t_[after - 2].end - t_[k + 2].begin),
                "a sum multiplied in part");
    }

    // Whether token `k` is an argument of std::accumulate, std::inner_product or std::reduce.
    bool in_a_fold(std::size_t k) const {
        int depth = 0;
        for (std::size_t q = k; q > f_.first; --q) {
            const std::string& s = t_[q - 1].text;
            if (s == ")" || s == "]") ++depth;
            if ((s == "(" || s == "[") && depth-- == 0)
                return q >= 2 && (t_[q - 2].text == "accumulate" || t_[q - 2].text == "inner_product" ||
                                  t_[q - 2].text == "reduce" || t_[q - 2].text == "transform_reduce");
        }
        return false;
    }

    bool integer_operand(std::size_t k) const {
        const Var* v = t_[k].kind == Tok::ident ? var_at(k) : nullptr;
        return v != nullptr && (v->type == "std::size_t" || v->type == "int");
    }

    // Where the operand starting at token `k` ends: a (qualified) name with its calls and
    // subscripts, a number, or a parenthesised expression; 0 when it is none of these.
    std::size_t operand_end(std::size_t k) const {
        std::size_t q = k;
        if (q < f_.last && t_[q].text == "(") return close_in_region(q);
        if (q >= f_.last || (t_[q].kind != Tok::ident && t_[q].kind != Tok::number)) return 0;
        for (++q; q < f_.last;) {
            const std::string& s = t_[q].text;
            if (s == "(" || s == "[") {
                q = close_in_region(q);
            } else if ((s == "::" || s == "." || s == "->") && q + 1 < f_.last && t_[q + 1].kind == Tok::ident) {
                q += 2;
            } else if (const std::size_t after = own_ ? template_arguments_end(q) : 0; after != 0) {
                q = after;  // static_cast<float>(d), std::numeric_limits<float>::max()
            } else {
                break;
            }
        }
        return q;
    }

    // The token after the `>` of template arguments opened at `q` (`<float>`, `<std::size_t, 4>`)
    // when a call or `::` follows them; else 0 (a comparison).
    std::size_t template_arguments_end(std::size_t q) const {
        if (q == 0 || q >= f_.last || t_[q].text != "<" || t_[q - 1].kind != Tok::ident) return 0;
        std::size_t r = q + 1;
        while (r < f_.last && (t_[r].kind == Tok::ident || t_[r].kind == Tok::number || t_[r].text == "::" ||
                               t_[r].text == "," || t_[r].text == "*" || t_[r].text == "&"))
            ++r;
        if (r + 1 >= f_.last || t_[r].text != ">" || (t_[r + 1].text != "(" && t_[r + 1].text != "::")) return 0;
        return r + 1;
    }

    std::size_t close_in_region(std::size_t q) const {
        int depth = 0;
        for (; q < f_.last; ++q) {
            if (t_[q].text == "(" || t_[q].text == "[") ++depth;
            if ((t_[q].text == ")" || t_[q].text == "]") && --depth == 0) return q + 1;
        }
        return f_.last;
    }

    // A constant's name by the usual conventions: kBlock, or HALF_BLOCK (not a macro such as INFINITY).
    static bool named_constant(const std::string& s) {
        const bool k_style = s.size() > 1 && s[0] == 'k' && std::isupper(static_cast<unsigned char>(s[1]));
        const bool caps = s.size() > 1 &&
                          std::ranges::all_of(s,
                                              [](char c) {
                                                  return std::isupper(static_cast<unsigned char>(c)) ||
                                                         std::isdigit(static_cast<unsigned char>(c)) || c == '_';
                                              }) &&
                          s != "INFINITY" && s != "NAN";
        return k_style || caps;
    }

    // A learner's value computed and never read (the compiler's "unused variable"; its missing term
    // or factor, forgotten where it belongs): put back into each operand after it, as a term taken
    // away, a factor or a divisor -- `std::exp(e - top)` for `std::exp(e)`, `dot * scale` for `dot`.
    // A value computed and never read, read in place of a name of its type: `my_keys - t0` for
    // `keys_for_block - t0` (the block's bound where the row's own belongs). The same text as a
    // variable swap, but a kind the file points at (evidence_rank): where the failing checks are
    // too slow for every edit, these are screened.
    void unused_in_place() {
        for (const Var& u : vars_) {
            if (u.loop || f_.first < u.from || f_.last > u.to || read(u) || u.type.empty() || u.type == "lambda")
                continue;
            for (std::size_t k = f_.first; k < f_.last; ++k) {
                if (t_[k].kind != Tok::ident || t_[k].text == u.name || !usable(u, k) || written_at(k)) continue;
                if (k > 0 && (t_[k - 1].text == "." || t_[k - 1].text == "->" || t_[k - 1].text == "::")) continue;
                const Var* v = var_at(k);
                if (v == nullptr || v->type != u.type || (k + 1 < t_.size() && t_[k + 1].text == "(")) continue;
                add(k, k + 1, u.name, "an unused value read");
            }
        }
    }

    void unused_put_back() {
        static const std::set<std::string> before = {"(", ",", "=", "+=",     "-=", "*=", "/=", "+",
                                                     "-", "*", "/", "return", "?",  ":",  "{"};
        static const std::set<std::string> assigned = {"=", "+=", "-=", "*=", "/=", "::", "++", "--"};
        for (const Var& u : vars_) {
            const bool scalar = (u.type == "float" || u.type == "double" || u.type == "auto");
            // A count computed and left out of the total: `scores + mixing` (a term only).
            const bool count = u.type == "std::size_t" || u.type == "std::uint64_t" || u.type == "int" ||
                               u.type == "long" || u.type == "unsigned";
            if (u.loop || !(scalar || count) || f_.first < u.from || f_.last > u.to || read(u)) continue;
            // An `auto` the file reads through a subscript (`auto vs = slice(v, ...)`, `vs[j]`): a
            // pointer or a view, no number to add or multiply.
            if (u.type == "auto" && subscripted_in_file(u.name)) continue;
            // Or what it was made to stand for, where the learner wrote a product of names in its
            // place: `double(counted)` for `double(B * N)` (the count of targets not -1).
            for (std::size_t k = f_.first + 1; k + 3 < f_.last; ++k) {
                if (t_[k - 1].text != "(" || !usable(u, k)) continue;
                std::size_t c = k;
                while (c < f_.last && (t_[c].kind == Tok::ident || t_[c].text == "*") &&
                       (t_[c].kind == Tok::ident) == ((c - k) % 2 == 0))
                    ++c;
                if (c < f_.last && t_[c].text == ")" && c >= k + 3 && (c - k) % 2 == 1)
                    add(k, c, u.name, "an unused value in place of a product");
            }
            for (std::size_t k = f_.first; k < f_.last; ++k) {
                if (t_[k].kind != Tok::ident || t_[k].text == "return" ||
                    (k > f_.first && !before.contains(t_[k - 1].text)) || !usable(u, k))
                    continue;
                const std::size_t end = operand_end(k);
                if (end <= k || end > f_.last || (end < f_.last && assigned.contains(t_[end].text))) continue;
                // A template's name (`std::array<...>`), a type's braced value (`std::uint64_t{4}`).
                if (end < f_.last && (t_[end].text == "<" || t_[end].text == "{")) continue;
                // The whole initializer of something not a number (`Tensor4 out = Tensor4::from_shape(...)`).
                if (k == f_.first && end == f_.last && !f_.type.empty() && f_.type != "auto" && !number_type(f_.type))
                    continue;
                // A whole statement's value is dropped (and a call's may be void: `__syncthreads() + my_end`).
                if (f_.statement && k == f_.first && (end == f_.last || (end + 1 == f_.last && t_[end].text == ";")))
                    continue;
                const std::string x = text_.substr(t_[k].begin, t_[end - 1].end - t_[k].begin);
                if (count) {
                    add(k, end, x + " + " + u.name, "an unused value put back");
                    continue;
                }
                add(k, end, "(" + x + " - " + u.name + ")", "an unused value put back");
                add(k, end, x + " * " + u.name, "an unused value put back");
                add(k, end, x + " / " + u.name, "an unused value put back");
            }
        }
    }

    bool subscripted_in_file(const std::string& name) {
        const auto& f = file_tokens();
        for (std::size_t q = 0; q + 1 < f.size(); ++q)
            if (f[q].text == name && f[q + 1].text == "[" && (q == 0 || f[q - 1].text != ".")) return true;
        return false;
    }

    // A rescale forgotten: `l = l * shrink + p` for `l = l + p`, where another statement of the
    // function rescales its own target by `shrink` (`acc[c] = acc[c] * shrink + p * v_row(c)`): the
    // online softmax's running sum left out of a correction its accumulator gets.
    void rescale_put_back() {
        const auto same = [&](std::size_t a, std::size_t b, std::size_t n) {
            for (std::size_t i = 0; i < n; ++i)
                if (a + i >= t_.size() || b + i >= t_.size() || t_[a + i].text != t_[b + i].text) return false;
            return true;
        };
        // `target = target ...`: the length of the target's tokens (a name and its subscripts), or 0.
        const auto self_update = [&](std::size_t q) -> std::size_t {
            std::size_t eq = q + 1;
            while (eq + 1 < t_.size() && (t_[eq].text == "." || t_[eq].text == "->") && t_[eq + 1].kind == Tok::ident)
                eq += 2;  // st.acc[c]
            eq = after_subscripts(eq);
            if (eq >= t_.size() || t_[eq].text != "=") return 0;
            return same(q, eq + 1, eq - q) ? eq - q : 0;
        };
        const std::size_t n = t_[f_.first].kind == Tok::ident ? self_update(f_.first) : 0;
        if (n == 0) return;
        const std::size_t operand = f_.first + n + 1, after = operand + n;
        if (after >= f_.last || (t_[after].text != "+" && t_[after].text != "-")) return;  // already scaled
        std::set<std::string> factors;
        for (std::size_t q = 1; q + 1 < t_.size(); ++q) {
            const std::string& before = t_[q - 1].text;
            if (t_[q].kind != Tok::ident || (before != ";" && before != "{" && before != "}" && before != ")"))
                continue;
            const std::size_t m = self_update(q);
            if (m == 0 || q == f_.first) continue;
            const std::size_t end = q + 2 * m + 1;  // after `target = target`
            if (end + 1 < t_.size() && t_[end].text == "*" && t_[end + 1].kind == Tok::ident &&
                (end + 2 >= t_.size() || (t_[end + 2].text != "(" && t_[end + 2].text != "[")))
                factors.insert(t_[end + 1].text);
        }
        const std::string x = text_.substr(t_[operand].begin, t_[after - 1].end - t_[operand].begin);
        for (const std::string& f : factors) add(operand, after, x + " * " + f, "a rescale put back");
    }

    // A factor the function never reads left out: `qi[c] = q_row[c] * a.scale` for `qi[c] = q_row[c]`,
    // where `a.scale` is a float member of the struct of an object the function uses (a kernel's
    // arguments) and the function reads it nowhere. The whole right side of an assignment, when it is
    // one operand, times it.
    void unused_member_put_back() {
        if (!f_.statement || f_.last < f_.first + 3) return;
        std::size_t eq = f_.first;
        while (eq < f_.last && t_[eq].text != "=") ++eq;
        if (eq + 1 >= f_.last || eq == f_.first) return;
        const std::size_t rhs = eq + 1, end = t_[f_.last - 1].text == ";" ? f_.last - 1 : f_.last;
        if (operand_end(rhs) != end) return;
        std::set<std::string> objects;
        for (std::size_t q = 0; q + 2 < t_.size(); ++q)
            if (t_[q].kind == Tok::ident && (t_[q + 1].text == "." || t_[q + 1].text == "->"))
                objects.insert(t_[q].text);
        for (const std::string& o : objects)
            for (const HeaderStruct* h : structs_of(o))
                for (const auto& [name, type] : h->members) {
                    if (type != "float" && type != "double") continue;
                    if (std::ranges::any_of(t_, [&, &name = name](const Token& t) { return t.text == name; })) continue;
                    const std::string x = text_.substr(t_[rhs].begin, t_[end - 1].end - t_[rhs].begin);
                    add(rhs, end, x + " * " + o + "." + name, "an unused member put back");
                }
    }

    // The whole right side of `element = rhs;` (a store through a subscript or a call), as token
    // indices [rhs, end), or {0, 0}: the place a forgotten factor or divisor of the value goes.
    std::pair<std::size_t, std::size_t> stored_value() const {
        if (!f_.statement || f_.last < f_.first + 4 || t_[f_.last - 1].text != ";") return {0, 0};
        std::size_t eq = f_.first;
        while (eq < f_.last && t_[eq].text != "=")
            eq = t_[eq].text == "(" || t_[eq].text == "[" ? close_in_region(eq) : eq + 1;
        if (eq + 2 >= f_.last || eq == f_.first || (t_[eq - 1].text != ")" && t_[eq - 1].text != "]")) return {0, 0};
        return {eq + 1, f_.last - 1};
    }

    // The right side as a factor's left operand: `a * b` as it is, `a + b` in parentheses.
    std::string as_factor(std::size_t first, std::size_t last) const {
        const std::string x = text_.substr(t_[first].begin, t_[last - 1].end - t_[first].begin);
        for (std::size_t q = first; q < last; ++q) {
            if (t_[q].text == "(" || t_[q].text == "[") {
                q = close_in_region(q) - 1;
                continue;
            }
            if (t_[q].text == "+" || t_[q].text == "-" || t_[q].text == "?") return "(" + x + ")";
        }
        return x;
    }

    // A mean taken in one place and forgotten in another: `dlogits(b, n, c) = float(p - y) /
    // double(counted)` for `... = float(p - y)`, where the function divides by `double(counted)`
    // elsewhere (its loss). A divisor is a name, or a name in a cast (`double(n)`, `static_cast<float>(n)`).
    void normaliser_put_back() {
        const auto [rhs, end] = stored_value();
        if (rhs == 0) return;
        for (const auto& [d, name] : file_divisors()) {
            if (std::ranges::any_of(t_.begin() + long(rhs), t_.begin() + long(end),
                                    [&](const Token& x) { return x.text == name; }))
                continue;
            add(rhs, end, as_factor(rhs, end) + " / " + d, "a divisor put back");
        }
    }

    // A mean over the wrong count: `loss / double(counted)` for `loss / double(B * N)`, where the
    // file divides by `double(counted)` elsewhere (its gradient): one divisor for another.
    void divisor_swapped() {
        const auto divisors = file_divisors();
        for (std::size_t q = f_.first; q + 1 < f_.last; ++q) {
            if (t_[q].text != "/" || q == f_.first || !primary_end(q - 1)) continue;
            const std::size_t end = operand_end(q + 1);
            if (end <= q + 1 || end > f_.last) continue;
            const std::string here = text_.substr(t_[q + 1].begin, t_[end - 1].end - t_[q + 1].begin);
            for (const auto& [d, name] : divisors)
                if (d != here && here.find(name) == std::string::npos) add(q + 1, end, d, "a divisor swapped");
        }
    }

    // The divisors the file uses outside this region -- a name, or a name in a cast (`double(n)`,
    // `static_cast<float>(n)`) -- whose name is a variable in scope here: each with that name.
    std::map<std::string, std::string> file_divisors() const {
        std::map<std::string, std::string> divisors;
        for (std::size_t q = 0; q + 2 < t_.size(); ++q) {
            if (t_[q].text != "/" || (q >= f_.first && q < f_.last)) continue;
            std::size_t d = q + 1, d_end = d;
            if (t_[d].text == "static_cast" && d + 4 < t_.size() && t_[d + 1].text == "<") d_end = d + 4;
            if (t_[d_end].kind == Tok::ident && d_end + 3 < t_.size() && t_[d_end + 1].text == "(" &&
                t_[d_end + 2].kind == Tok::ident && t_[d_end + 3].text == ")" &&
                (t_[d_end].text == "double" || t_[d_end].text == "float" || d_end > d))
                d_end += 4;
            else if (d_end == d && t_[d].kind == Tok::ident && d + 1 < t_.size() && t_[d + 1].text != "(" &&
                     t_[d + 1].text != "[" && t_[d + 1].text != "." && t_[d + 1].text != "::")
                d_end = d + 1;
            else
                continue;
            const std::string divisor = text_.substr(t_[d].begin, t_[d_end - 1].end - t_[d].begin);
            static const std::regex word(R"([A-Za-z_]\w*)");
            std::string name;
            for (auto it = std::sregex_iterator(divisor.begin(), divisor.end(), word); it != std::sregex_iterator();
                 ++it)
                name = it->str();  // the last name: the one divided by
            if (std::ranges::any_of(
                    vars_, [&](const Var& v) { return v.name == name && v.from <= f_.first && f_.first < v.to; }))
                divisors.emplace(divisor, name);
        }
        return divisors;
    }

    // A scale applied in one place and forgotten in another: `const float w = dS(j) * scale;` for
    // `dS(j)`, where the function multiplies by `scale` elsewhere (`P(j) = s * scale`: the
    // backward's 1/sqrt(d) left off the scores' gradient), or `params(i) -= o.lr * o.weight_decay *
    // params(i)` for `... -= o.weight_decay * params(i)`, where `o.lr` is a factor elsewhere (AdamW's
    // decay taken without the learning rate). A factor is a floating constant of the function (not
    // a loop's) or a member of one of its variables; put into a floating declaration's value, a
    // stored element's, or what a `+=` or `-=` adds.
    void factor_put_back() {
        const auto [first, last] = floating_value(true);
        if (first == 0) return;
        const auto text_is = [&](std::size_t q, std::string_view x) { return q < t_.size() && t_[q].text == x; };
        std::set<std::vector<std::string>> factors;  // a name, or a name, ".", a member
        for (const Var& u : vars_) {
            if (u.loop || f_.first < u.from || f_.first >= u.to) continue;
            const bool floating = u.constant && (u.type == "float" || u.type == "double");
            for (std::size_t q = std::max<std::size_t>(u.from, 1); q < u.to && q + 3 < t_.size(); ++q) {
                if (t_[q].kind != Tok::ident || t_[q].text != u.name || text_is(q - 1, ".") || text_is(q - 1, "->"))
                    continue;
                if (floating && !text_is(q + 1, ".") && (text_is(q - 1, "*") || text_is(q + 1, "*")))
                    factors.insert({u.name});
                if (text_is(q + 1, ".") && t_[q + 2].kind == Tok::ident && !text_is(q + 3, "(") &&
                    !text_is(q + 3, ".") && (text_is(q - 1, "*") || text_is(q + 3, "*")))
                    factors.insert({u.name, ".", t_[q + 2].text});
            }
        }
        bool variable = false;  // a value of no variable (`0.0f`, -infinity) is no scaled one
        for (std::size_t q = first; q < last; ++q)
            variable = variable || (t_[q].kind == Tok::ident &&
                                    std::ranges::any_of(vars_, [&](const Var& v) { return v.name == t_[q].text; }));
        if (!variable) return;
        for (const auto& factor : factors) {
            bool here = false;
            for (std::size_t q = first; q + factor.size() <= last && !here; ++q)
                here = std::ranges::equal(factor.begin(), factor.end(), t_.begin() + long(q),
                                          t_.begin() + long(q + factor.size()), {}, {}, &Token::text);
            std::string name;
            for (const auto& part : factor) name += part;
            if (!here) add(first, last, as_factor(first, last) + " * " + name, "a factor put back");
        }
    }

    // A softmax's sum left out: `double g = std::exp(x - top) / z;` for `std::exp(x - top)`, where
    // `z` sums the exponentials (`z += std::exp(...)`) and divides nothing (cross-entropy's gradient
    // from the probabilities left unnormalised). Into a floating declaration's value or a store.
    void exp_sum_put_back() {
        const auto [first, last] = floating_value(false);
        if (first == 0) return;
        const auto has = [&](std::size_t from, std::size_t to, std::string_view x) {
            for (std::size_t q = from; q < to && q < t_.size(); ++q)
                if (t_[q].text == x) return true;
            return false;
        };
        // The names stored from an exp (`w[j] = std::exp(w[j] - peak);`): a sum of them is one of exps.
        std::set<std::string> exps;
        for (std::size_t q = 0; q + 1 < t_.size(); ++q)
            if (t_[q].kind == Tok::ident && (q == 0 || t_[q - 1].text != ".")) {
                const std::size_t after = after_subscripts(q + 1);
                std::size_t semi = after;
                while (semi < t_.size() && t_[semi].text != ";") ++semi;
                if (after < t_.size() && t_[after].text == "=" && has(after, semi, "exp")) exps.insert(t_[q].text);
            }
        const bool exp_here = has(first, last, "exp");
        for (const Var& u : vars_) {
            if (u.constant || u.loop || (u.type != "float" && u.type != "double") || f_.first < u.from ||
                f_.first >= u.to || has(first, last, u.name))
                continue;
            bool summed = false, divides = false;
            std::size_t last_sum = 0;
            for (std::size_t q = std::max<std::size_t>(u.from, 1); q + 1 < u.to && q + 1 < t_.size(); ++q) {
                if (t_[q].kind != Tok::ident || t_[q].text != u.name) continue;
                divides = divides || t_[q - 1].text == "/";
                if (t_[q + 1].text == "+=") {
                    std::size_t semi = q + 1;
                    while (semi < t_.size() && t_[semi].text != ";") ++semi;
                    const bool of_exps =
                        has(q + 2, semi, "exp") || (t_[q + 2].kind == Tok::ident && exps.contains(t_[q + 2].text));
                    summed = summed || of_exps;
                    if (of_exps) last_sum = semi;
                }
            }
            // Into the exp's own value, or into a value stored after the sum (`out(...) = acc / denom`).
            const bool constant = last == first + 1 && t_[first].kind == Tok::number;
            if (summed && !divides && !constant && (exp_here || (f_.first > last_sum && !f_.loops.empty())))
                add(first, last, as_factor(first, last) + " / " + u.name, "a softmax's sum put back");
        }
    }

    // The value a statement stores (`x(i) = value;`), what a `+=` or `-=` adds (with `compound`), or
    // a floating declaration's value: where a factor or a divisor left out goes back; or {0, 0}.
    std::pair<std::size_t, std::size_t> floating_value(bool compound) const {
        auto value = stored_value();
        if (value.first == 0 && compound) value = compound_value();
        if (value.first == 0 && (f_.type == "float" || f_.type == "double") && f_.last > f_.first)
            value = {f_.first, f_.last};
        return value;
    }

    // What a `+=` or `-=` statement adds (its right side, `;` left out), or {0, 0}.
    std::pair<std::size_t, std::size_t> compound_value() const {
        if (!f_.statement || f_.last < f_.first + 4 || t_[f_.last - 1].text != ";") return {0, 0};
        std::size_t op = f_.first;
        while (op < f_.last && t_[op].text != "+=" && t_[op].text != "-=" && t_[op].text != "=")
            op = t_[op].text == "(" || t_[op].text == "[" ? close_in_region(op) : op + 1;
        if (op + 2 >= f_.last || op == f_.first || t_[op].text == "=") return {0, 0};
        return {op + 1, f_.last - 1};
    }

    // A unit the file names and never uses: `... * n * n * kBytesPerFloat` for `... * n * n`, where
    // `constexpr std::uint64_t kBytesPerFloat = 4;` stands at namespace scope and nothing reads it:
    // a factor of a returned value or of a stored one.
    void constant_put_back() {
        if (file_constants_.empty() || !f_.statement) return;
        auto [first, last] = stored_value();
        if (first == 0 && t_[f_.first].text == "return" && f_.last > f_.first + 2)
            first = f_.first + 1, last = f_.last - 1;
        if (first == 0) return;
        for (const std::string& c : file_constants_)
            add(first, last, as_factor(first, last) + " * " + c, "an unused constant put back");
    }

    // A sum left at 0: `row[j] = std::exp(s - top); sum += row[j];` for `row[j] = std::exp(s - top);`,
    // where `float sum = 0.0f;` is read later and written nowhere: the element each pass of a loop
    // stores, added in.
    void sum_put_back() {
        const auto [rhs, end] = stored_value();
        if (rhs == 0 || f_.loops.empty()) return;
        const std::size_t lhs_end = rhs - 1;  // the `=`
        const std::string stored = text_.substr(t_[f_.first].begin, t_[lhs_end - 1].end - t_[f_.first].begin);
        for (std::size_t q = 0; q + 3 < f_.first; ++q) {
            // `sum = 0.0f ;` in a declaration (a type's name before it)
            if (t_[q].kind != Tok::ident || t_[q + 1].text != "=" || t_[q + 2].kind != Tok::number ||
                t_[q + 3].text != ";" ||
                std::stod(t_[q + 2].text.substr(0, t_[q + 2].text.find_first_of("fFuUlL"))) != 0.0 || q == 0 ||
                t_[q - 1].kind != Tok::ident)
                continue;
            const std::string& name = t_[q].text;
            bool written = false, read = false;
            for (std::size_t r = q + 4; r < t_.size(); ++r)
                if (t_[r].text == name && (r == 0 || (t_[r - 1].text != "." && t_[r - 1].text != "->"))) {
                    if (written_at(r))
                        written = true;
                    else
                        read = true;
                }
            if (written || !read || !std::ranges::any_of(vars_, [&](const Var& x) {
                    return x.name == name && x.from <= f_.first && f_.first < x.to;
                }))
                continue;
            add(f_.first, f_.last,
                text_.substr(t_[f_.first].begin, t_[f_.last - 1].end - t_[f_.first].begin) + " " + name +
                    " += " + stored + ";",
                "a sum put back");
        }
    }

    // A loop that should take every other value: `h += 2` for `++h` (a loop's step region).
    void step_doubled() {
        if (f_.statement || f_.last != f_.first + 2) return;
        const std::size_t name = t_[f_.first].text == "++" ? f_.first + 1 : f_.first;
        if (t_[name].kind != Tok::ident || t_[name == f_.first ? f_.first + 1 : f_.first].text != "++") return;
        add(f_.first, f_.last, t_[name].text + " += 2", "a step doubled");
    }

    // Two neighbours of a list of names swapped: `{B, H, N, d_head}` for `{B, N, H, d_head}` (a shape
    // made in another order), in a brace list of three names or more.
    void list_neighbours_swapped() {
        for (std::size_t open = f_.first; open < f_.last; ++open) {
            if (t_[open].text != "{") continue;
            std::vector<std::size_t> names;
            std::size_t q = open + 1;
            for (; q + 1 < f_.last && t_[q].kind == Tok::ident && (t_[q + 1].text == "," || t_[q + 1].text == "}");
                 q += 2) {
                names.push_back(q);
                if (t_[q + 1].text == "}") break;
            }
            if (names.size() < 3 || q + 1 >= f_.last || t_[q + 1].text != "}") continue;
            for (std::size_t i = 0; i + 1 < names.size(); ++i) {
                const std::size_t a = names[i], b = names[i + 1];
                if (t_[a].text == t_[b].text) continue;
                out_.push_back({t_[a].begin, t_[b].end, t_[b].text + ", " + t_[a].text, "a pair swapped"});
            }
        }
    }

    // A log-sum-exp's shift not added back: `top + std::log(sum)` for `std::log(sum)`, where the
    // function's exp() subtracts `top` (`std::exp(x - top)`).
    void shift_put_back() {
        std::set<std::string> shifts;
        for (std::size_t q = 0; q + 1 < t_.size(); ++q) {
            const std::string& e = t_[q].text;
            if ((e != "exp" && e != "expf") || t_[q + 1].text != "(") continue;
            const std::size_t close = close_in_all(q + 1);
            for (std::size_t r = q + 2; r + 2 < close; ++r)  // `- top)`, at any depth
                if (t_[r].text == "-" && t_[r + 1].kind == Tok::ident && t_[r + 2].text == ")")
                    shifts.insert(t_[r + 1].text);
        }
        for (std::size_t k = f_.first; k + 1 < f_.last; ++k) {
            const std::string& l = t_[k].text;
            if ((l != "log" && l != "logf") || t_[k + 1].text != "(") continue;
            const std::size_t first = k >= 2 && t_[k - 1].text == "::" ? k - 2 : k;
            const std::size_t close = close_in_region(k + 1);
            if (close > f_.last) continue;
            const std::string call = text_.substr(t_[first].begin, t_[close - 1].end - t_[first].begin);
            for (const std::string& shift : shifts)
                if (std::ranges::any_of(vars_,
                                        [&](const Var& v) { return v.name == shift && v.from <= k && k < v.to; }) &&
                    std::none_of(t_.begin() + long(f_.first), t_.begin() + long(f_.last),
                                 [&](const Token& x) { return x.text == shift; }))
                    add(first, close, shift + " + " + call, "a shift added back");
        }
    }

    // The other increment where its value is read: `const int t = ++state.step;` for
    // `state.step++` (the step before the update: 0 on a fresh optimiser's first), and back.
    // The operand is a name or a chain of members (`state.step`).
    void increment_order(std::size_t k) {
        const auto member = [&](std::size_t q) { return t_[q].text == "." || t_[q].text == "->"; };
        const std::string& s = t_[k].text;
        if (k > f_.first && t_[k - 1].kind == Tok::ident) {  // postfix: [first, k) is the operand
            std::size_t first = k - 1;
            while (first >= f_.first + 2 && member(first - 1) && t_[first - 2].kind == Tok::ident) first -= 2;
            if (first > f_.first && (member(first - 1) || t_[first - 1].text == "::")) return;
            add(first, k + 1, s + text_.substr(t_[first].begin, t_[k - 1].end - t_[first].begin),
                "the other increment");
        } else if (k + 1 < f_.last && t_[k + 1].kind == Tok::ident) {  // prefix: [k + 1, last) is the operand
            std::size_t last = k + 2;
            while (last + 1 < f_.last && member(last) && t_[last + 1].kind == Tok::ident) last += 2;
            if (last < f_.last && (t_[last].text == "(" || t_[last].text == "[" || t_[last].text == "::")) return;
            add(k, last, text_.substr(t_[k + 1].begin, t_[last - 1].end - t_[k + 1].begin) + s, "the other increment");
        }
    }

    // A list's reset left out beside its twin's: `visible.clear(); logits.clear();` for
    // `visible.clear();`, where the function appends to `logits` (push_back, emplace_back) and never
    // clears, resizes, assigns or declares it in a loop -- the learner's two lists of a row, one of
    // them carried into the next row.
    void reset_put_back() {
        if (!f_.statement || f_.last != f_.first + 6 || t_[f_.first].kind != Tok::ident ||
            t_[f_.first + 1].text != "." || t_[f_.first + 2].text != "clear" || t_[f_.first + 3].text != "(" ||
            t_[f_.first + 4].text != ")")
            return;
        const std::string& cleared = t_[f_.first].text;
        std::set<std::string> appended, reset;
        for (std::size_t q = 0; q + 3 < t_.size(); ++q) {
            if (t_[q].kind != Tok::ident || t_[q + 1].text != "." || (q > 0 && t_[q - 1].text == ".")) continue;
            const std::string& what = t_[q + 2].text;
            if (what == "push_back" || what == "emplace_back") appended.insert(t_[q].text);
            if (what == "clear" || what == "resize" || what == "assign" || what == "erase") reset.insert(t_[q].text);
        }
        for (std::size_t q = 0; q + 1 < t_.size(); ++q)
            if (t_[q].kind == Tok::ident && t_[q + 1].text == "=" && (q == 0 || t_[q - 1].text != "."))
                reset.insert(t_[q].text);
        const std::string statement = text_.substr(t_[f_.first].begin, t_[f_.last - 1].end - t_[f_.first].begin);
        for (const std::string& list : appended)
            if (list != cleared && !reset.contains(list) && appended.contains(cleared) &&
                std::ranges::any_of(
                    vars_, [&](const Var& v) { return v.name == list && v.from <= f_.first && f_.first < v.to; }))
                add(f_.first, f_.last, fmt::format("{} {}.clear();", statement, list),
                    "a reset put back beside its twin");
    }

    // A flag never raised: `any_visible = true;` after a statement between `bool any_visible =
    // false;` and the first line that reads it, where nothing in the function ever sets it (a row
    // that sees a key taken, every time, for one that sees none).
    void flag_raised() {
        if (!f_.statement || !f_.droppable) return;
        for (const Var& v : vars_) {
            if (v.type != "bool" || v.from < 4 || v.from > f_.first || v.to > t_.size() || f_.last > v.to) continue;
            const std::size_t semi = v.from - 1;  // `bool name = false;`: its scope starts after the `;`
            if (t_[semi].text != ";" || t_[semi - 2].text != "=" || t_[semi - 3].text != v.name) continue;
            const std::string& start = t_[semi - 1].text;
            if (start != "false" && start != "true") continue;
            bool written = false;
            std::size_t first_read = v.to;
            for (std::size_t q = v.from; q < v.to; ++q) {
                if (t_[q].text != v.name || t_[q - 1].text == "." || t_[q - 1].text == "->") continue;
                const std::string& next = q + 1 < t_.size() ? t_[q + 1].text : t_[q].text;
                written = written || next == "=" || next == "|=" || next == "&=" || next == "^=";
                first_read = std::min(first_read, q);
            }
            if (written || f_.last > first_read) continue;
            const std::string statement = text_.substr(t_[f_.first].begin, t_[f_.last - 1].end - t_[f_.first].begin);
            add(f_.first, f_.last, fmt::format("{} {} = {};", statement, v.name, start == "false" ? "true" : "false"),
                "a flag raised");
        }
    }

    // A count never advanced: `cache.length = t + 1;` after a store at `t`, where the function reads
    // `const auto t = cache.length;` from an object it may change and never writes the count.
    // The store may be a call of the learner's helper too: `append_row(cache.k, pr.k, pos);`.
    void count_advanced() {
        std::size_t eq = stored_value().first - 1;  // the store's `=` (or the call's end)
        const bool call = f_.statement && f_.last >= f_.first + 5 && t_[f_.first].kind == Tok::ident &&
                          t_[f_.first + 1].text == "(" && t_[f_.last - 1].text == ";" && t_[f_.last - 2].text == ")" &&
                          close_in_region(f_.first + 1) == f_.last - 1;
        if (eq + 1 == 0 && call) eq = f_.last - 1;
        if (eq + 1 == 0) return;
        for (std::size_t q = 0; q + 6 < t_.size(); ++q) {
            // `t = obj . count ;` in a declaration
            if (t_[q].kind != Tok::ident || t_[q + 1].text != "=" || t_[q + 2].kind != Tok::ident ||
                t_[q + 3].text != "." || t_[q + 4].kind != Tok::ident || t_[q + 5].text != ";")
                continue;
            const std::string &name = t_[q].text, &object = t_[q + 2].text, &count = t_[q + 4].text;
            const bool declared = std::ranges::any_of(vars_, [&](const Var& v) { return v.name == name; });
            const bool param =
                std::ranges::any_of(vars_, [&](const Var& v) { return v.name == object && !v.constant; });
            if (!declared || !param || f_.first < q) continue;
            bool written = false, stored_at = false;
            for (std::size_t r = 0; r + 3 < t_.size(); ++r)
                if (t_[r].text == object && t_[r + 1].text == "." && t_[r + 2].text == count && r != q + 2)
                    written = written || written_at(r + 2);
            for (std::size_t r = f_.first; r + 1 < eq; ++r)
                stored_at = stored_at || (t_[r].text == object && t_[r + 1].text == ".");
            stored_at = stored_at && std::any_of(t_.begin() + long(f_.first), t_.begin() + long(eq),
                                                 [&](const Token& x) { return x.text == name; });
            if (written || !stored_at) continue;
            const std::string statement = text_.substr(t_[f_.first].begin, t_[f_.last - 1].end - t_[f_.first].begin);
            add(f_.first, f_.last, fmt::format("{} {}.{} = {} + 1;", statement, object, count, name),
                "a count advanced");
        }
    }

    // An offset left off an index: `cache.v(b, g, start + n, c)` for `cache.v(b, g, n, c)`, where the
    // function adds `start` to the same counter elsewhere (`start + n` for the keys' row).
    void offset_put_back() {
        std::set<std::pair<std::string, std::string>> offsets;  // (offset, counter)
        for (std::size_t q = 0; q + 2 < t_.size(); ++q)
            if (t_[q].kind == Tok::ident && t_[q + 1].text == "+" && t_[q + 2].kind == Tok::ident &&
                (q == 0 || (t_[q - 1].text != "." && t_[q - 1].text != "->" && t_[q - 1].text != "::")) &&
                (q + 3 >= t_.size() || (t_[q + 3].text != "(" && t_[q + 3].text != "[" && t_[q + 3].text != ".")))
                offsets.insert({t_[q].text, t_[q + 2].text});
        if (offsets.empty()) return;
        for (std::size_t k = f_.first + 1; k + 1 < f_.last; ++k) {
            const std::string& b = t_[k - 1].text;
            const std::string& a = t_[k + 1].text;
            if (t_[k].kind != Tok::ident || (b != "(" && b != "," && b != "[") || (a != ")" && a != "," && a != "]"))
                continue;
            const Var* counter = var_at(k);
            if (counter == nullptr || !counter->loop) continue;
            for (const auto& [offset, name] : offsets)
                if (name == t_[k].text && offset != name &&
                    std::ranges::any_of(vars_, [&, &offset = offset](const Var& v) {
                        // A number of rows, not a pointer or a value (`out + blk` indexes nothing).
                        return v.name == offset && !v.loop && v.from <= k && k < v.to &&
                               v.type.find('*') == std::string::npos && v.type != "float" && v.type != "double";
                    }))
                    add(k, offset + " + " + name, "an offset put back");
        }
    }

    // A tile taken whole where the last one is cut short: `imin(Bc, stop - s)` for `Bc`, in a loop
    // `for (s = 0; s < stop; s += Bc)` (the file's own min function when it has one).
    void tile_clipped() {
        // `imin(Bc, stop)`: the tile's end not taken from where it starts.
        if (!f_.statement && f_.last == f_.first + 6 && (t_[f_.first].text == "imin" || t_[f_.first].text == "min") &&
            t_[f_.first + 1].text == "(" && t_[f_.first + 3].text == "," && t_[f_.first + 5].text == ")")
            for (const std::string& counter : f_.loops)
                if (!counter.empty())
                    add(f_.first + 4, f_.first + 5, t_[f_.first + 4].text + " - " + counter, "a tile cut at the end");
        if (f_.statement || f_.last != f_.first + 1 || f_.loops.empty()) return;
        const std::string& step = t_[f_.first].text;
        for (std::size_t q = 0; q + 3 < f_.first; ++q) {
            if (t_[q].text != "for" || t_[q + 1].text != "(") continue;
            const std::size_t rp = close_in_all(q + 1);
            if (rp > f_.first) continue;  // its header ends before this region
            // `; s < stop ; s += step )`
            std::size_t s1 = q + 2;
            while (s1 < rp && t_[s1].text != ";") ++s1;
            std::size_t s2 = s1 + 1;
            while (s2 < rp && t_[s2].text != ";") ++s2;
            if (s2 + 5 != rp || t_[s2 + 2].text != "+=" || t_[s2 + 3].text != step || t_[s1 + 2].text != "<") continue;
            const std::string& counter = t_[s2 + 1].text;
            if (t_[s1 + 1].text != counter || std::ranges::find(f_.loops, counter) == f_.loops.end()) continue;
            const std::string stop = text_.substr(t_[s1 + 3].begin, t_[s2 - 1].end - t_[s1 + 3].begin);
            const bool own_min = std::ranges::any_of(t_, [](const Token& x) { return x.text == "imin"; });
            add(f_.first, f_.last, fmt::format("{}({}, {} - {})", own_min ? "imin" : "std::min", step, stop, counter),
                "a tile cut at the end");
        }
    }

    // The token after the bracket opened at q (over the whole function, not this region).
    std::size_t close_in_all(std::size_t q) const {
        int depth = 0;
        for (; q < t_.size(); ++q) {
            if (t_[q].text == "(" || t_[q].text == "[") ++depth;
            if ((t_[q].text == ")" || t_[q].text == "]") && --depth == 0) return q + 1;
        }
        return t_.size();
    }

    // A skip left out of one loop: `if (hidden(b, i, j)) continue;` that another loop of the function
    // over the same counter has, put before a statement of this one (the exp loop that gave masked
    // keys weight from stale scores).
    void guard_put_back() {
        if (!f_.statement || f_.loops.empty() || f_.loops.back().empty()) return;
        const std::string& counter = f_.loops.back();
        const std::string& first = t_[f_.first].text;
        if (first == "if" || first == "continue" || first == "break" || first == "return") return;
        std::set<std::string> guards;
        for (std::size_t q = 0; q + 2 < t_.size(); ++q) {
            if (t_[q].text != "if" || t_[q + 1].text != "(") continue;
            std::size_t close = q + 1;
            for (int depth = 0; close < t_.size(); ++close) {
                depth += t_[close].text == "(" ? 1 : t_[close].text == ")" ? -1 : 0;
                if (depth == 0) break;
            }
            if (close + 2 >= t_.size() || t_[close + 1].text != "continue" || t_[close + 2].text != ";") continue;
            const bool about_counter = std::any_of(t_.begin() + long(q), t_.begin() + long(close),
                                                   [&](const Token& x) { return x.text == counter; });
            if (about_counter && !(q >= f_.first && q < f_.last))
                guards.insert(text_.substr(t_[q].begin, t_[close + 2].end - t_[q].begin));
        }
        const std::string statement = text_.substr(t_[f_.first].begin, t_[f_.last - 1].end - t_[f_.first].begin);
        for (const std::string& g : guards) add(f_.first, f_.last, g + " " + statement, "a skip put back");
    }

    // Two things in the wrong order: `{2 * i, 2 * i + 1}` for `{2 * i + 1, 2 * i}` (a pair made
    // in braces), `weights(i, i - 1)` for `weights(i - 1, i)` (two adjacent arguments, each a
    // short expression of a loop's counter).
    void pairs_swapped() {
        // [a, b): `i`, `i - 1`, `2 * i + 1` -- of a loop's counter (or, in braces, of any integer).
        const auto counter_expression = [&](std::size_t a, std::size_t b, bool any_integer = false) {
            if (b <= a || b - a > 5) return false;
            return std::any_of(t_.begin() + long(a), t_.begin() + long(b), [&](const Token& x) {
                return std::ranges::any_of(vars_, [&](const Var& v) {
                    return v.name == x.text &&
                           (v.loop || (any_integer && (v.type == "std::size_t" || v.type == "int")));
                });
            });
        };
        for (std::size_t open = f_.first; open < f_.last; ++open) {
            const std::string& o = t_[open].text;
            if (o != "{" && o != "(") continue;
            const std::size_t close = close_in_region(open);
            if (o == "{") {  // close_in_region counts ( and [ only
                std::size_t c = open + 1;
                for (int depth = 1; c < f_.last && depth > 0; ++c)
                    depth += t_[c].text == "{" ? 1 : t_[c].text == "}" ? -1 : 0;
                const std::size_t comma = until_comma(open + 1, c - 1);
                if (c > f_.last || comma >= c - 1 || until_comma(comma + 1, c - 1) != c - 1) continue;
                if (!counter_expression(open + 1, comma, true) || !counter_expression(comma + 1, c - 1, true)) continue;
                const std::string a = text_.substr(t_[open + 1].begin, t_[comma - 1].end - t_[open + 1].begin);
                const std::string b = text_.substr(t_[comma + 1].begin, t_[c - 2].end - t_[comma + 1].begin);
                if (a != b) add(open + 1, c - 1, b + ", " + a, "a pair swapped");
                continue;
            }
            if (close > f_.last || open == 0 || t_[open - 1].kind != Tok::ident) continue;
            for (std::size_t a = open + 1; a < close - 1;) {
                const std::size_t comma = until_comma(a, close - 1);
                if (comma >= close - 1) break;
                const std::size_t next = until_comma(comma + 1, close - 1);
                if (counter_expression(a, comma) && counter_expression(comma + 1, next) &&
                    next - comma - 1 + comma - a > 2) {
                    const std::string x = text_.substr(t_[a].begin, t_[comma - 1].end - t_[a].begin);
                    const std::string y = text_.substr(t_[comma + 1].begin, t_[next - 1].end - t_[comma + 1].begin);
                    if (x != y) add(a, next, y + ", " + x, "arguments swapped");
                }
                a = comma + 1;
            }
        }
    }

    // A value saved before it is overwritten, read from where it was: `b * cs + a * sn` for
    // `pair[1] * cs + pair[0] * sn` after `const double a = pair[0], b = pair[1];` and `pair[0] = ...`.
    // Each later place that reads the saved element gets the saved name.
    void saved_value_read() {
        for (std::size_t q = 0; q + 4 < t_.size() && q < f_.first; ++q) {
            // `a = pair[0]`, or a member saved before it is counted on: `start = cache.length`.
            const bool member = t_[q + 3].text == "." && t_[q + 4].kind == Tok::ident;
            if (t_[q].kind != Tok::ident || t_[q + 1].text != "=" || t_[q + 2].kind != Tok::ident ||
                (t_[q + 3].text != "[" && !member))
                continue;
            if (q > 0 && t_[q - 1].text != "," && t_[q - 1].kind != Tok::ident) continue;  // a declarator
            std::size_t end = q + 3;
            for (int depth = 0; end < t_.size() && !member; ++end) {
                depth += t_[end].text == "[" ? 1 : t_[end].text == "]" ? -1 : 0;
                if (depth == 0) break;
            }
            end = member ? q + 5 : end + 1;  // after the `]`, or the member
            if (end >= t_.size() || (t_[end].text != "," && t_[end].text != ";")) continue;
            const std::size_t n = end - (q + 2);
            for (std::size_t k = std::max(f_.first, end); k + n <= f_.last; ++k) {
                bool same = t_[k - 1].text != ".";
                for (std::size_t i = 0; i < n && same; ++i) same = t_[k + i].text == t_[q + 2 + i].text;
                // Not where it is written: `pair[0] = ...`, `cache.length += n`.
                if (same && !(k + n < t_.size() && (t_[k + n].text == "=" || t_[k + n].text == "+=" ||
                                                    t_[k + n].text == "-=" || t_[k + n].text == "++")))
                    add(k, k + n, t_[q].text, "a saved value read");
            }
        }
    }

    // A count's optional term left out: `d * d + (bias ? d : 0)` for `d * d`, where another count
    // of the function has a `(bias ? ... : 0)` term (nn.MultiheadAttention's out_proj bias).
    void optional_term_put_back() {
        if (f_.type != "std::size_t" && f_.type != "auto" && f_.type != "std::uint64_t") return;
        if (f_.last < f_.first + 3 || t_[f_.last - 1].kind != Tok::ident || t_[f_.last - 2].text != "*") return;
        for (std::size_t q = f_.first; q < f_.last; ++q)
            if (t_[q].text == "?") return;
        std::set<std::string> conditions;
        for (std::size_t q = 2; q + 1 < t_.size(); ++q)
            if (t_[q].text == "?" && t_[q - 1].kind == Tok::ident && t_[q - 2].text == "(")
                conditions.insert(t_[q - 1].text);
        for (const std::string& c : conditions)
            out_.push_back({t_[f_.last - 1].end, t_[f_.last - 1].end,
                            fmt::format(" + ({} ? {} : 0)", c, t_[f_.last - 1].text), "a term put back"});
    }

    // A window one off: `xt::range(last, last + 1)` for `xt::range(last - 1, last)` (the `(` at p).
    void range_shifted(std::size_t p) {
        const std::size_t close = close_in_region(p);
        if (close > f_.last || close <= p + 2) return;
        const std::size_t comma = until_comma(p + 1, close - 1);
        if (comma >= close - 1) return;
        const std::string a = text_.substr(t_[p + 1].begin, t_[comma - 1].end - t_[p + 1].begin);
        const std::string b = text_.substr(t_[comma + 1].begin, t_[close - 2].end - t_[comma + 1].begin);
        if (b.find(',') != std::string::npos) return;            // a step too: left alone
        const auto shifted = [](const std::string& x, int by) {  // `last - 1` + 1 is `last`, `n - 2` + 1 is `n - 1`
            const std::string undo = by > 0 ? " - 1" : " + 1";
            if (x.ends_with(undo)) return x.substr(0, x.size() - undo.size());
            static const std::regex constant(R"((.*) ([+-]) ([0-9]+)$)");
            std::smatch m;
            if (std::regex_match(x, m, constant)) {
                const long n = (m[2] == "+" ? 1 : -1) * std::stol(m[3]) + by;
                return m[1].str() + (n > 0 ? " + " : " - ") + std::to_string(n > 0 ? n : -n);
            }
            return x + (by > 0 ? " + 1" : " - 1");
        };
        for (const int by : {1, -1})
            add(p + 1, close - 1, shifted(a, by) + ", " + shifted(b, by), "a range shifted by one");
        // A block's index taken for its first row: `range(part * d, (part + 1) * d)` for
        // `range(part, part + d)` (a block of length d, the part-th).
        const std::size_t plus = comma + 2;
        if (comma == p + 2 && t_[p + 1].kind == Tok::ident && close == comma + 5 && t_[comma + 1].text == a &&
            t_[plus].text == "+" && (t_[plus + 1].kind == Tok::ident || t_[plus + 1].kind == Tok::number)) {
            const std::string& length = t_[plus + 1].text;
            add(p + 1, close - 1, fmt::format("{0} * {1}, ({0} + 1) * {1}", a, length),
                "a block's start for its index");
        }
        // A count taken for the range's end: `range(from, from + count)` for `range(from, count)`
        // (two names; xt::range ends where its second argument says, it takes no length).
        if (own_ && comma == p + 2 && close == comma + 3 && t_[p + 1].kind == Tok::ident &&
            t_[comma + 1].kind == Tok::ident && a != b)
            add(comma + 1, comma + 2, a + " + " + b, "a count for the range's end");
        // The first block where the i-th belongs: `range(which * d, (which + 1) * d)` for
        // `range(0, d)`, each index in scope (a block's number: a parameter, a loop's counter) that
        // the line does not read yet (a learner's bias slice beside the weight's `range(which * d, ...)`).
        if (own_ && a == "0" && comma == p + 2 && close == comma + 3 && t_[comma + 1].kind == Tok::ident) {
            std::set<std::string> tried;
            for (const Var& v : vars_) {
                if (v.name == b || v.from > p || p >= v.to || (v.type != "std::size_t" && v.type != "int") ||
                    !tried.insert(v.name).second)
                    continue;
                if (std::any_of(t_.begin() + long(f_.first), t_.begin() + long(f_.last),
                                [&](const Token& x) { return x.text == v.name; }))
                    continue;
                add(p + 1, close - 1, fmt::format("{0} * {1}, ({0} + 1) * {1}", v.name, b), "the block of an index");
            }
        }
    }

    // The first `,` at depth 0 in [from, to), or `to`.
    std::size_t until_comma(std::size_t from, std::size_t to) const {
        int depth = 0;
        for (std::size_t q = from; q < to; ++q) {
            const std::string& x = t_[q].text;
            depth += (x == "(" || x == "[" || x == "{") ? 1 : (x == ")" || x == "]" || x == "}") ? -1 : 0;
            if (depth == 0 && x == ",") return q;
        }
        return to;
    }

    // A softmax's shift left out: `std::exp(row[j] - best)` for `std::exp(row[j])`, where the
    // function takes `best` as a maximum (`best = std::max(best, row[j])`, `= *std::max_element(...)`,
    // `= fmaxf(...)`) and the exp's argument subtracts nothing. The `(` of the exp at `open`.
    void maximum_subtracted(std::size_t open) {
        const std::size_t close = close_in_region(open);
        if (close > f_.last || close < open + 3 ||
            std::any_of(t_.begin() + long(open), t_.begin() + long(close),
                        [](const Token& x) { return x.text == "-"; }))
            return;
        std::set<std::string> maxima;
        for (std::size_t q = 0; q + 4 < t_.size(); ++q) {
            if (t_[q].kind != Tok::ident || t_[q + 1].text != "=") continue;
            std::size_t r = q + 2;
            if (t_[r].text == "*") ++r;
            if (t_[r].text == "std" && t_[r + 1].text == "::") r += 2;
            const std::string& call = t_[r].text;
            if (call == "max" || call == "max_element" || call == "fmaxf" || call == "fmax") maxima.insert(t_[q].text);
        }
        for (const std::string& m : maxima)
            if (std::ranges::any_of(vars_, [&](const Var& v) { return v.name == m && v.from <= open && open < v.to; }))
                add(open + 1, close - 1,
                    text_.substr(t_[open + 1].begin, t_[close - 2].end - t_[open + 1].begin) + " - " + m,
                    "a maximum subtracted");
    }

    // A loop that runs one step too far: `while (p * 2 <= heads) p *= 2;` for `while (p < heads) p *=
    // 2;` (the next power of two, where the largest not above was meant), `while (x + s <= n) x += s;`.
    // The condition `a < b` or `a <= b` of a while whose body is `a *= s;` or `a += s;`.
    void loop_one_step_shorter() {
        if (f_.statement || f_.first < 2 || t_[f_.first - 2].text != "while" || f_.last != f_.first + 3 ||
            t_[f_.first].kind != Tok::ident || (t_[f_.first + 1].text != "<" && t_[f_.first + 1].text != "<="))
            return;
        const std::size_t body = f_.last + 1;  // after the `)`
        if (body + 3 >= t_.size() || t_[body].text != t_[f_.first].text ||
            (t_[body + 1].text != "*=" && t_[body + 1].text != "+=") || t_[body + 3].text != ";")
            return;
        const std::string& a = t_[f_.first].text;
        const std::string& b = t_[f_.first + 2].text;
        const std::string step = t_[body + 1].text.substr(0, 1) + " " + t_[body + 2].text;
        add(f_.first, f_.last, fmt::format("{} {} <= {}", a, step, b), "a loop one step shorter");
        add(f_.first, f_.last, fmt::format("{} {} < {}", a, step, b), "a loop one step shorter");
    }

    // A count's every term short of its factor (one FLOP for a multiply-add's two): `return 2 *
    // (projections + scores);` for `return projections + scores;`, and half of it -- a returned sum
    // or product of names (not one value: a tensor or a list returned is no number to double).
    void result_doubled() {
        if (!f_.statement || t_[f_.first].text != "return" || f_.last < f_.first + 5) return;
        const std::size_t first = f_.first + 1, last = f_.last - 1;  // the value, `;` left out
        int depth = 0;
        bool arithmetic = false;
        for (std::size_t q = first; q < last; ++q) {
            const std::string& x = t_[q].text;
            depth += (x == "(" || x == "[") ? 1 : (x == ")" || x == "]") ? -1 : 0;
            arithmetic = arithmetic || (depth == 0 && (x == "+" || x == "*"));
            if (x == "?" || x == "{" || x == "<<") return;
        }
        if (!arithmetic) return;
        const std::string value = text_.substr(t_[first].begin, t_[last - 1].end - t_[first].begin);
        add(first, last, "2 * (" + value + ")", "the result doubled");
        add(first, last, "(" + value + ") / 2", "the result halved");
    }

    // A count taken once where it is had many times: `total = heads * one_head` for `total =
    // one_head` (a value alone on the right of an integer's `=`), times each other integer in scope
    // that is no loop's counter.
    void count_multiplied() {
        const bool alone = f_.last == f_.first + 1 && t_[f_.first].kind == Tok::ident && f_.first > 0 &&
                           t_[f_.first - 1].text == "=" && (f_.type == "std::uint64_t" || f_.type == "std::size_t");
        const Var* v = alone ? var_at(f_.first) : nullptr;
        // A value the function computed (`one_head`), not a parameter taken as it comes (`d = d_model`).
        const auto body = std::ranges::find(t_, "{", &Token::text) - t_.begin();
        if (v == nullptr || v->from <= std::size_t(body)) return;
        for (const Var& other : vars_)
            if (other.name != v->name && !other.loop &&
                (other.type == "std::size_t" || other.type == "std::uint64_t") && other.from <= f_.first &&
                f_.first < other.to)
                add(f_.first, f_.last, other.name + " * " + v->name, "a factor put back");
    }

    // The arguments of the call opened at `open`, each as its token range [first, last).
    std::vector<std::pair<std::size_t, std::size_t>> arguments(std::size_t open) const {
        std::vector<std::pair<std::size_t, std::size_t>> out;
        const std::size_t close = close_in_region(open);
        if (close > f_.last || close < open + 3) return out;
        for (std::size_t a = open + 1; a < close - 1;) {
            const std::size_t next = until_comma(a, close - 1);
            out.push_back({a, next});
            a = next + 1;
        }
        return out;
    }

    // An argument written like its neighbour's: `bias_block(p.in_proj_bias, 2 * dm, dm)` for
    // `bias_block(p.in_proj_bias, dm, dm)` beside `row_block(p.in_proj_weight, 2 * dm, dm)` in the
    // same statement (two calls of as many arguments, the one that differs a count of names and
    // numbers: the weight's block and its bias's, one of them taken at another offset).
    void argument_like_neighbour(std::size_t k) {
        const auto mine = arguments(k + 1);
        if (mine.size() < 2) return;
        const auto plain = [&](std::pair<std::size_t, std::size_t> a) {
            return std::all_of(t_.begin() + long(a.first), t_.begin() + long(a.second), [](const Token& x) {
                return x.kind == Tok::ident || x.kind == Tok::number || x.text == "*" || x.text == "+" ||
                       x.text == "-" || x.text == "/";
            });
        };
        const auto text = [&](std::pair<std::size_t, std::size_t> a) {
            return text_.substr(t_[a.first].begin, t_[a.second - 1].end - t_[a.first].begin);
        };
        for (std::size_t q = f_.first; q + 1 < f_.last; ++q) {
            if (q == k || t_[q].kind != Tok::ident || t_[q + 1].text != "(" || (q > 0 && t_[q - 1].text == "."))
                continue;
            const auto theirs = arguments(q + 1);
            if (theirs.size() != mine.size()) continue;
            for (std::size_t i = 0; i < mine.size(); ++i)
                if (plain(mine[i]) && plain(theirs[i]) && text(mine[i]) != text(theirs[i]) &&
                    mine[i].second - mine[i].first + theirs[i].second - theirs[i].first > 2)  // not two names: swaps
                    add(mine[i].first, mine[i].second, text(theirs[i]), "an argument like its neighbour's");
        }
    }

    // An argument left out: `linear(x, p.out_proj_weight, p.out_proj_bias)` for `linear(x,
    // p.out_proj_weight)`, where the file calls `linear` elsewhere with one more, a member
    // (`p.in_proj_bias`): each member of that type of the object's struct that the file never reads.
    void argument_put_back(std::size_t k) {
        const std::size_t open = k + 1, close = close_in_region(open);
        if (close > f_.last || close < open + 2) return;
        const auto count = [&](const std::vector<Token>& t, std::size_t o) {  // arguments of the call opened at o
            int depth = 0, n = t[o + 1].text == ")" ? 0 : 1;
            for (std::size_t q = o; q < t.size(); ++q) {
                const std::string& x = t[q].text;
                depth += (x == "(" || x == "[" || x == "{") ? 1 : (x == ")" || x == "]" || x == "}") ? -1 : 0;
                if (depth == 0) return std::pair{n, q};
                if (depth == 1 && x == ",") ++n;
            }
            return std::pair{n, t.size()};
        };
        const int mine = count(t_, open).first;
        const auto& f = file_tokens();
        std::optional<std::string> type;
        for (std::size_t q = 0; q + 1 < f.size() && !type; ++q) {
            if (f[q].text != t_[k].text || f[q + 1].text != "(" ||
                (q > 0 && (f[q - 1].text == "." || f[q - 1].text == "::")))
                continue;
            const auto [n, end] = count(f, q + 1);
            if (n != mine + 1 || end >= f.size()) continue;
            // The one more argument (after the call's last comma): `o.m`, or the first `o.m` it
            // reads (`bias_block(p.in_proj_bias, 2, d)`): m's type.
            std::size_t from = end;
            for (int depth = 0; from > q + 1; --from) {
                const std::string& x = f[from - 1].text;
                depth += (x == ")" || x == "]" || x == "}") ? 1 : (x == "(" || x == "[" || x == "{") ? -1 : 0;
                if (depth == 0 && x == ",") break;
            }
            for (std::size_t r = from; r + 2 < end && !type; ++r) {
                if (f[r].kind != Tok::ident || f[r + 1].text != "." || f[r + 2].kind != Tok::ident) continue;
                for (const HeaderStruct* h : structs_of(f[r].text))
                    for (const auto& [name, of] : h->members)
                        if (name == f[r + 2].text) type = of;
            }
        }
        // Else the type of that parameter where the file defines the function: `const Tensor1& b`.
        for (std::size_t q = 1; q + 1 < f.size() && !type; ++q) {
            if (f[q].text != t_[k].text || f[q + 1].text != "(" || f[q - 1].kind != Tok::ident) continue;
            const auto [n, end] = count(f, q + 1);
            if (n <= mine || end + 1 >= f.size() || f[end + 1].text != "{") continue;
            std::size_t at = q + 2;
            for (int arg = 0; arg < mine; ++at) {
                if (f[at].text == "(" || f[at].text == "<") {  // a nested bracket: skipped whole
                    int depth = 0;
                    for (; at < end; ++at) {
                        depth += (f[at].text == "(" || f[at].text == "<")   ? 1
                                 : (f[at].text == ")" || f[at].text == ">") ? -1
                                                                            : 0;
                        if (depth == 0) break;
                    }
                    continue;
                }
                if (f[at].text == ",") ++arg;
            }
            std::string t;
            for (; at < end && f[at].text != "," && f[at].text != "="; ++at)
                if (f[at].text != "const" && f[at].text != "&") t += f[at].text;
            // The last word is the parameter's name.
            if (const auto last = f[at - 1].text; t.size() > last.size()) type = t.substr(0, t.size() - last.size());
        }
        if (!type) return;
        std::set<std::string> objects;
        for (std::size_t q = open + 1; q + 2 < close; ++q)
            if (t_[q].kind == Tok::ident && t_[q + 1].text == ".") objects.insert(t_[q].text);
        for (const std::string& o : objects)
            for (const HeaderStruct* h : structs_of(o))
                for (const auto& [name, of] : h->members) {
                    if (of != *type) continue;
                    const bool read =
                        std::ranges::any_of(f, [&, &name = name](const Token& t) { return t.text == name; });
                    if (!read)
                        out_.push_back(
                            {t_[close - 2].end, t_[close - 2].end, ", " + o + "." + name, "an argument put back"});
                }
    }

    // Whether variable `u` is read anywhere in its scope (after its declaration).
    bool read(const Var& u) const {
        for (std::size_t q = u.from; q < u.to && q < t_.size(); ++q)
            if (t_[q].kind == Tok::ident && t_[q].text == u.name &&
                (q == 0 || (t_[q - 1].text != "." && t_[q - 1].text != "->" && t_[q - 1].text != "::")))
                return true;
        return false;
    }

    // A factor or a term forgotten: `dot` for `dot * scale`, `std::exp(w[j])` for `std::exp(w[j] - m)`.
    // A term goes only where nothing binds tighter after it (a - b * c keeps its b).
    void drop_operand(std::size_t k) {
        const std::size_t end = operand_end(k + 1);
        if (end == 0 || end > f_.last) return;
        const std::string& s = t_[k].text;
        const bool factor = s == "*" || s == "/";
        if (!factor && end < f_.last && (t_[end].text == "*" || t_[end].text == "/" || t_[end].text == "%")) return;
        out_.push_back({t_[k - 1].end, t_[end - 1].end, "", factor ? "a factor dropped" : "a term dropped"});
        // The factor before: `(dp(j) - d)` for `p(j) * (dp(j) - d)`.
        if (s != "*") return;
        const std::size_t begin = operand_begin(k - 1);
        if (begin == npos) return;
        const std::string& before = begin > f_.first ? t_[begin - 1].text : std::string();
        if (before == "/" || before == "-" || before == "." || before == "->" || before == "::") return;
        out_.push_back({t_[begin].begin, t_[k + 1].begin, "", "a factor dropped"});
    }

    static constexpr std::size_t npos = std::string::npos;

    // Where the operand ending at token `last` starts (operand_end's mirror); npos when it is none.
    std::size_t operand_begin(std::size_t last) const {
        std::size_t q = last;
        for (;;) {
            if (t_[q].text == ")" || t_[q].text == "]") {
                int depth = 0;
                for (;; --q) {
                    if (t_[q].text == ")" || t_[q].text == "]") ++depth;
                    if ((t_[q].text == "(" || t_[q].text == "[") && --depth == 0) break;
                    if (q == f_.first) return npos;
                }
                if (own_ && q > f_.first + 2 && t_[q - 1].text == ">") {  // static_cast<float>(d): back to its name
                    std::size_t open = q - 1;
                    while (open > f_.first && t_[open].text != "<") --open;
                    if (open > f_.first && template_arguments_end(open) == q) {
                        q = open - 1;
                        continue;
                    }
                }
                if (q == f_.first || (own_ && t_[q - 1].text == "return") ||
                    (t_[q - 1].kind != Tok::ident && t_[q - 1].text != ")" && t_[q - 1].text != "]"))
                    return q;  // a parenthesised expression
                --q;
                continue;
            }
            if (t_[q].kind != Tok::ident && t_[q].kind != Tok::number) return npos;
            if (q >= f_.first + 2 && t_[q].kind == Tok::ident &&
                (t_[q - 1].text == "::" || t_[q - 1].text == "." || t_[q - 1].text == "->")) {
                q -= 2;
                continue;
            }
            return q;
        }
    }

    // a - b -> b - a, where both are one operand (a name with its calls and subscripts, a number).
    void swap_operands(std::size_t k) {
        auto left = k;
        while (left > f_.first && (t_[left - 1].text == ")" || t_[left - 1].text == "]")) {
            int depth = 0;
            std::size_t q = left - 1;
            for (;; --q) {
                if (t_[q].text == ")" || t_[q].text == "]") ++depth;
                if ((t_[q].text == "(" || t_[q].text == "[") && --depth == 0) break;
                if (q == f_.first) return;
            }
            left = q;
            if (own_ && left > f_.first + 2 && t_[left - 1].text == ">") {  // static_cast<float>(n): back to its name
                std::size_t open = left - 1;
                while (open > f_.first && t_[open].text != "<") --open;
                if (open > f_.first && template_arguments_end(open) == left) left = open;
            }
        }
        if (left == f_.first || (t_[left - 1].kind != Tok::ident && t_[left - 1].kind != Tok::number)) return;
        --left;
        if (left > f_.first && (t_[left - 1].text == "." || t_[left - 1].text == "*" || t_[left - 1].text == "/" ||
                                t_[left - 1].text == "::" || t_[left - 1].text == "-"))
            return;
        std::size_t right = k + 1;
        if (right >= f_.last || (t_[right].kind != Tok::ident && t_[right].kind != Tok::number)) return;
        ++right;
        if (const std::size_t after = own_ ? template_arguments_end(right) : 0; after != 0)
            right = after;  // static_cast<float>(n)
        while (right < f_.last && (t_[right].text == "(" || t_[right].text == "[")) {
            int depth = 0;
            for (; right < f_.last; ++right) {
                if (t_[right].text == "(" || t_[right].text == "[") ++depth;
                if ((t_[right].text == ")" || t_[right].text == "]") && --depth == 0) break;
            }
            ++right;
        }
        if (right > f_.last || (right < f_.last && (t_[right].text == "*" || t_[right].text == "/" ||
                                                    t_[right].text == "." || t_[right].text == "::")))
            return;
        const std::string a = text_.substr(t_[left].begin, t_[k - 1].end - t_[left].begin);
        const std::string b = text_.substr(t_[k + 1].begin, t_[right - 1].end - t_[k + 1].begin);
        if (a == b) return;
        add(left, right, b + " " + t_[k].text + " " + a, "operands swapped");
    }

    // Whether every variable the twin's tokens [b, b_end) name, renamed by `names`, is in scope at
    // token `at` (`s += qh * kh` made like `ctx(...) += w * vh(...)` names `ctx` and `w` where they are
    // not: three edits the compiler refused, a second compile of the whole schemata).
    bool names_in_scope(std::size_t b, std::size_t b_end, const std::map<std::string, std::string>& names,
                        std::size_t at) const {
        for (std::size_t q = b; q < b_end; ++q) {
            if (t_[q].kind != Tok::ident ||
                (q > 0 && (t_[q - 1].text == "." || t_[q - 1].text == "->" || t_[q - 1].text == "::")))
                continue;
            const auto name = names.find(t_[q].text);
            const std::string& n = name != names.end() ? name->second : t_[q].text;
            const auto named = [&](const Var& v) { return v.name == n; };
            if (std::ranges::any_of(vars_, named) &&
                std::ranges::none_of(vars_, [&](const Var& v) { return named(v) && v.from <= at && at < v.to; }))
                return false;
        }
        return true;
    }

    // Whether the names that set this line apart from its twin (twin's -> this one's) can stand for
    // each other: not two variables of different types (`seen = tokens.shape()[1]` and `H =
    // proj.q.shape()[1]`: a Tensor3 has no q), nor a name the twin reaches a member through where
    // this line uses it bare (`tokens` for `proj.k`: a parameter, whose type the parser does not hold).
    bool names_alike(const std::map<std::string, std::string>& names, const Parser::Found& twin) const {
        const auto type_of = [&](const std::string& name) {
            const auto v = std::ranges::find(vars_, name, &Var::name);
            return v == vars_.end() ? std::string() : v->type;
        };
        const auto member_after = [&](std::size_t from, std::size_t to, const std::string& name) {
            for (std::size_t q = from; q + 1 < to; ++q)
                if (t_[q].text == name && (t_[q + 1].text == "." || t_[q + 1].text == "->")) return true;
            return false;
        };
        return std::ranges::all_of(names, [&](const auto& n) {
            const std::string a = type_of(n.first), b = type_of(n.second);
            return (a.empty() || b.empty() || a == b) &&
                   (!member_after(twin.first, twin.last, n.first) || member_after(f_.first, f_.last, n.second));
        });
    }

    // One of two parallel lines made like the other where they differ, beyond the names that set
    // them apart (`lo` and `hi`, `k` and `v`): `dst[j] = d * float(lo) + m` from
    // `dst[j + half] = d * float(hi) + m` for `dst[j] = d * float(lo)` (one difference at a time),
    // and the twin whole with its names made this line's: `cache.v(...) = proj.v(...)` from
    // `cache.k(...) = proj.k(...)` for `cache.v(...) = proj.k(...)`.
    void made_like_twin(const Parser::Found& twin) {
        const std::size_t a0 = f_.first, n = f_.last - f_.first, b0 = twin.first, m = twin.last - twin.first;
        if (n < 3 || m < 3 || n > 80 || m > 80) return;
        // The longest common subsequence of the two token texts, then the pieces between its matches.
        std::vector<std::vector<int>> lcs(n + 1, std::vector<int>(m + 1, 0));
        for (std::size_t i = n; i-- > 0;)
            for (std::size_t j = m; j-- > 0;)
                lcs[i][j] =
                    t_[a0 + i].text == t_[b0 + j].text ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
        struct Piece {
            std::size_t a, a_end, b, b_end;  // this line's tokens [a, a_end), the twin's [b, b_end)
        };
        std::vector<Piece> pieces;
        std::size_t i = 0, j = 0, ai = 0, bj = 0;
        const auto close_piece = [&] {
            if (ai < i || bj < j) pieces.push_back({a0 + ai, a0 + i, b0 + bj, b0 + j});
        };
        while (i < n && j < m) {
            if (t_[a0 + i].text == t_[b0 + j].text) {
                close_piece();
                ai = ++i, bj = ++j;
            } else if (lcs[i + 1][j] >= lcs[i][j + 1]) {
                ++i;
            } else {
                ++j;
            }
        }
        i = n, j = m;
        close_piece();
        // A piece of one name against one name is what sets the lines apart: the twin's name -> this one's.
        std::map<std::string, std::string> names;
        bool one_to_one = true;  // no twin's name stands for two of this line's (`v` for `k` and `k_rot`)
        std::vector<Piece> differences;
        // A function's name: one called that is no variable nor member (`accumulate`, not `cache.v(t, c)`).
        const auto function_at = [&](std::size_t q) {
            return t_[q].kind == Tok::ident && q + 1 < t_.size() && t_[q + 1].text == "(" && t_[q - 1].text != "." &&
                   t_[q - 1].text != "->" &&
                   std::ranges::none_of(vars_, [&](const Var& v) { return v.name == t_[q].text; });
        };
        for (const Piece& p : pieces) {
            // Lines that call different functions are no twins (`max_element` and `accumulate`).
            for (std::size_t q = p.a; q < p.a_end; ++q)
                if (function_at(q)) return;
            for (std::size_t q = p.b; q < p.b_end; ++q)
                if (function_at(q)) return;
            if (p.a_end == p.a + 1 && p.b_end == p.b + 1 && t_[p.a].kind == Tok::ident && t_[p.b].kind == Tok::ident) {
                const auto [was, added] = names.insert({t_[p.b].text, t_[p.a].text});
                one_to_one = one_to_one && (added || was->second == t_[p.a].text);
            } else
                differences.push_back(p);
        }
        // Alike: 60 % of the longer line's tokens match, a name that sets them apart counted as one
        // (`k_cache + g * d_head` and `v_cache + g * length * d_head`: 5 of 7).
        const auto alike = lcs[0][0] + static_cast<int>(names.size());
        if (differences.size() > 3 || 10 * alike < 6 * static_cast<int>(std::max(n, m))) return;
        // The twin's tokens [b, b_end) as text, its names made this line's, its own spacing kept.
        const auto renamed = [&](std::size_t b, std::size_t b_end) {
            std::string out;
            for (std::size_t q = b; q < b_end; ++q) {
                if (q > b) out += text_.substr(t_[q - 1].end, t_[q].begin - t_[q - 1].end);
                const auto name = t_[q].kind == Tok::ident ? names.find(t_[q].text) : names.end();
                out += name != names.end() ? name->second : t_[q].text;
            }
            return out;
        };
        const auto in_scope = [&](std::size_t b, std::size_t b_end) { return names_in_scope(b, b_end, names, a0); };
        const std::string line = text_.substr(t_[f_.first].begin, t_[f_.last - 1].end - t_[f_.first].begin);
        // The text between the matched tokens around a piece, spacing and all: [end of the one
        // before, start of the one after) -- or to the end of the last token, at the end.
        const auto span = [&](std::size_t x, std::size_t x_end, std::size_t last) {
            return std::pair{t_[x - 1].end, x_end < last ? t_[x_end].begin : t_[last - 1].end};
        };
        // The arguments' commas in tokens [x, x_end): a piece with more or fewer than the twin's
        // calls a function with another count of arguments (`slice(out, base, n)` from `slice(v,
        // base, n)` for `slice(out, base + n, d)`), which does not compile.
        const auto commas = [&](std::size_t x, std::size_t x_end) {
            return std::count_if(t_.begin() + static_cast<std::ptrdiff_t>(x),
                                 t_.begin() + static_cast<std::ptrdiff_t>(x_end),
                                 [](const Token& t) { return t.text == ","; });
        };
        for (const Piece& p : differences) {
            if (!in_scope(p.b, p.b_end) || commas(p.a, p.a_end) != commas(p.b, p.b_end)) continue;
            if (p.a == a0 || p.b == b0) {
                // At the start of both, no token before it: the twin's leading tokens put in front
                // of this line where it has none (a count's factor, `2 * n * d` beside `n * d`).
                if (p.a != a0 || p.b != b0 || p.a_end != p.a || p.b_end == p.b || p.b_end >= twin.last) continue;
                const std::string gap = text_.substr(t_[p.b_end - 1].end, t_[p.b_end].begin - t_[p.b_end - 1].end);
                const std::string edited =
                    renamed(p.b, p.b_end) + gap + line.substr(t_[p.a_end].begin - t_[f_.first].begin);
                if (edited != line) add(f_.first, f_.last, edited, "made like its twin");
                continue;
            }
            // Nor a member access put in (`tokens.q.shape()` from `proj.q.shape()`: a Tensor3 has no q).
            const auto member = [&](std::size_t q) { return t_[q].text == "." || t_[q].text == "->"; };
            if (p.a == p.a_end && (member(p.b) || member(p.b - 1))) continue;
            const auto [from, to] = span(p.a, p.a_end, f_.last);
            const auto [b_from, b_to] = span(p.b, p.b_end, twin.last);
            std::string with = text_.substr(b_from, b_to - b_from);
            if (p.b_end > p.b) {
                const std::size_t lead = t_[p.b].begin - b_from, tail = b_to - t_[p.b_end - 1].end;
                with = with.substr(0, lead) + renamed(p.b, p.b_end) + with.substr(with.size() - tail);
            }
            std::string edited = line;
            edited.replace(from - t_[f_.first].begin, to - from, with);
            // Nor a second assignment put in (`d += d_out(...) += p * v(...)`: the twin's `+=`).
            if (edited != line && assignments(edited) == assignments(line))
                add(f_.first, f_.last, edited, "made like its twin");
        }
        if (!one_to_one) return;  // the twin's whole line, renamed, would read `cache.k_rot(...)`
        if (!names.empty() && names_alike(names, twin) && in_scope(b0, twin.last)) {
            const std::string whole = renamed(b0, twin.last);
            if (whole != line) add(f_.first, f_.last, whole, "made like its twin");
        }
        if (names.size() >= 2) one_name_as_the_twins(names);
    }

    // Of the names that set this line apart from its twin, one taken as the twin has it, where both
    // are variables of one type and the twin's is in scope here: `v_cache + g * length * d_head`
    // beside `k_cache + g * length * d_head` for `v_cache + h * length * d_head` (the head index
    // is no name that sets keys from values apart).
    void one_name_as_the_twins(const std::map<std::string, std::string>& names) {
        const auto var_here = [&](const std::string& name) -> const Var* {
            for (const Var& v : vars_)
                if (v.name == name && v.from <= f_.first && f_.first < v.to) return &v;
            return nullptr;
        };
        const auto bare = [](std::string type) { return type.starts_with("const ") ? type.substr(6) : type; };
        const std::string line = text_.substr(t_[f_.first].begin, t_[f_.last - 1].end - t_[f_.first].begin);
        for (const auto& [theirs, ours] : names) {
            const Var* a = var_here(theirs);
            const Var* b = var_here(ours);
            if (a == nullptr || b == nullptr || bare(a->type) != bare(b->type) || a->type.empty()) continue;
            std::string edited;
            std::size_t at = t_[f_.first].begin;
            for (std::size_t q = f_.first; q < f_.last; ++q) {
                if (t_[q].text != ours || t_[q].kind != Tok::ident ||
                    (q > f_.first && (t_[q - 1].text == "." || t_[q - 1].text == "->" || t_[q - 1].text == "::")))
                    continue;
                edited += text_.substr(at, t_[q].begin - at) + theirs;
                at = t_[q].end;
            }
            edited += text_.substr(at, t_[f_.last - 1].end - at);
            if (edited != line) add(f_.first, f_.last, edited, "a name like its twin's");
        }
    }

    const std::string& text_;
    const std::vector<Token>& t_;
    const std::vector<Var>& vars_;
    const Parser::Found& f_;
    std::vector<const Parser::Found*> twins_;
    bool own_ = false;
    std::vector<Edit> out_;
    std::vector<Token> file_tokens_;  // the whole file's, for a learner's member swaps
    std::map<std::string, std::vector<const HeaderStruct*>> structs_of_;
    const std::vector<HeaderStruct>& structs_;
    std::vector<LambdaScope> lambdas_;
    const std::vector<std::string>& file_constants_;
};

std::size_t after_bracket(const std::vector<Token>& t, std::size_t p);

// The token after the statement of a block that starts at `p` (`x = y;`, `for (...) {...}`,
// `if (...) a; else {...}`, `{...}`), or 0 where the reader does not know its end.
std::size_t statement_end(const std::vector<Token>& t, std::size_t p) {
    if (p >= t.size()) return 0;
    const std::string& w = t[p].text;
    const auto after_parens = [&](std::size_t q) { return q < t.size() && t[q].text == "(" ? after_bracket(t, q) : 0; };
    if (w == "{") return after_bracket(t, p);
    if (w == "for" || w == "while" || w == "switch") {
        const std::size_t body = after_parens(p + 1);
        return body == 0 ? 0 : statement_end(t, body);
    }
    if (w == "if") {
        const std::size_t body = after_parens(p + 1 + (p + 1 < t.size() && t[p + 1].text == "constexpr"));
        std::size_t end = body == 0 ? 0 : statement_end(t, body);
        if (end != 0 && end < t.size() && t[end].text == "else") end = statement_end(t, end + 1);
        return end;
    }
    if (w == "do" || w == "}") return 0;
    int depth = 0;
    for (std::size_t q = p; q < t.size(); ++q) {
        const std::string& x = t[q].text;
        if (x == "(" || x == "[" || x == "{") ++depth;
        if ((x == ")" || x == "]" || x == "}") && --depth < 0) return 0;
        if (depth == 0 && x == ";") return q + 1;
    }
    return 0;
}

std::vector<Editor::Joint> Editor::moves(const std::vector<Parser::Found>& all, std::size_t at) const {
    if (f_.block_of != 0) return {};
    // The block this region stands in, and its statements.
    std::size_t open = f_.first;
    for (int depth = 0; open-- > 0;) {
        if (t_[open].text == "}") ++depth;
        if (t_[open].text == "{" && depth-- == 0) break;
    }
    if (open + 1 == 0) return {};
    std::vector<std::pair<std::size_t, std::size_t>> statements;
    for (std::size_t s = open + 1; s < t_.size() && t_[s].text != "}";) {
        const std::size_t e = statement_end(t_, s);
        if (e == 0) return {};
        statements.push_back({s, e});
        s = e;
    }
    // The run: the statement this region is the first region of and the ones after it, up to the
    // block's end or its return; each a statement the parser edits, or a loop, an if or a block of
    // them (emptied by emptying each statement in it).
    const auto mine = std::ranges::find_if(statements, [&](const auto& x) { return x.second > f_.first; });
    if (mine == statements.end() || (at > 0 && all[at - 1].first >= mine->first)) return {};
    const auto stop =
        std::ranges::find_if(mine, statements.end(), [&](const auto& x) { return t_[x.first].text == "return"; });
    if (stop == mine || stop - mine > 4) return {};
    const std::size_t first = mine->first, last = (stop - 1)->second;
    std::vector<std::size_t> emptied;
    // A declaration in the run is moved with it and stays where it was too (the moved statements in
    // a block of their own): `const std::size_t pos = cache.length;` before the loop that stores at
    // `pos` (a learner's append written after the attention that needs it).
    bool declares = false;
    for (auto x = mine; x != stop; ++x) {
        const std::size_t before = emptied.size();
        for (std::size_t r = at; r < all.size() && all[r].first < x->second; ++r)
            if (all[r].first >= x->first && all[r].statement && all[r].droppable) emptied.push_back(r);
        const bool region = emptied.size() > before && all[emptied[before]].first == x->first;
        const std::string& word = t_[x->first].text;
        // Only the run's first statement, a variable the rest of the run reads.
        const auto declared = std::ranges::find_if(vars_, [&](const Var& v) { return v.from == x->second; });
        const bool declaration =
            x == mine && declared != vars_.end() &&
            std::any_of(t_.begin() + long(x->second), t_.begin() + long((stop - 1)->second),
                        [&](const Token& y) { return y.kind == Tok::ident && y.text == declared->name; });
        declares = declares || declaration;
        if (declaration && emptied.size() == before) continue;
        if (!region && word != "for" && word != "while" && word != "if" && word != "{") return {};
        if (emptied.size() == before) return {};
    }
    // Nor a jump: a `continue` moved above its loop's first statement may land outside the loop.
    if (std::any_of(t_.begin() + long(first), t_.begin() + long(last),
                    [](const Token& x) { return x.text == "return" || x.text == "continue" || x.text == "break"; }))
        return {};
    const bool expressions = std::ranges::all_of(mine, stop, [&](const auto& x) {
        return std::ranges::any_of(emptied,
                                   [&](std::size_t r) { return all[r].first == x.first && all[r].last == x.second; });
    });
    // What the run writes (a variable not const, declared before it: assigned, or passed to a call),
    // and what it reads from before it. A variable is in scope from the token after its declaration:
    // one declared by the statement just before the run is in scope from the run's first token on
    // (`float total = 0.0f;` before the loop that adds to it: the run moved above it did not compile).
    std::set<const Var*> written, used;
    for (std::size_t k = first; k < last; ++k) {
        const Var* v = t_[k].kind == Tok::ident ? var_at(k) : nullptr;
        if (v == nullptr || v->from > first) continue;
        used.insert(v);
        std::size_t end = k;  // the end of `cache.length`
        while (end + 2 < last && (t_[end + 1].text == "." || t_[end + 1].text == "->") &&
               t_[end + 2].kind == Tok::ident)
            end += 2;
        const bool argument =
            (t_[k - 1].text == "(" || t_[k - 1].text == ",") && (t_[end + 1].text == "," || t_[end + 1].text == ")");
        if (!v->constant && (written_at(end) || argument)) written.insert(v);
    }
    if (written.empty()) return {};
    // The first statement before the run that reads what it writes, once all it reads is declared.
    for (auto x = statements.begin(); x != mine; ++x) {
        const auto [s, e] = *x;
        const bool declared = std::ranges::all_of(used, [&](const Var* v) { return v->from <= s; });
        bool reads = false;
        for (std::size_t k = s; k < e && declared && !reads; ++k)
            reads = t_[k].kind == Tok::ident && written.contains(var_at(k));
        if (!reads) continue;
        // Its first region, in front of which the run goes: run once, before the rest of it.
        const auto g = std::ranges::find_if(all, [&](const Parser::Found& f) { return f.first >= s && f.first < e; });
        if (g == all.end()) return {};
        int depth = 0;
        for (std::size_t k = s; k < g->first; ++k) depth += t_[k].text == "{" ? 1 : t_[k].text == "}" ? -1 : 0;
        const std::string& word = t_[s].text;
        const bool in_front = g->statement && g->first == s;
        const bool once =
            !g->statement && ((t_[g->first - 1].text == "=" && word != "while" &&
                               (word != "for" || std::none_of(t_.begin() + long(s), t_.begin() + long(g->first),
                                                              [](const Token& y) { return y.text == ";"; }))) ||
                              (word == "if" && g->first == s + 2));
        if (depth != 0 || (!in_front && !once) || g->statement != in_front) return {};
        const std::string original = text_.substr(t_[g->first].begin, t_[g->last - 1].end - t_[g->first].begin);
        const std::string moved = one_line(text_.substr(t_[first].begin, t_[last - 1].end - t_[first].begin));
        std::string with = (declares ? "{ " + moved + " }" : moved) + " " + original;  // in front of a statement
        if (!in_front && expressions) {
            // In front of a value: a comma expression (`(a(), b = c, (value))`), or a lambda run at once.
            with = "(";
            for (auto y = mine; y != stop; ++y)
                with += text_.substr(t_[y->first].begin, t_[y->second - 2].end - t_[y->first].begin) + ", ";
            with += "(" + original + "))";
        } else if (!in_front) {
            with = "([&] { " + moved + " }(), (" + original + "))";
        }
        Joint m;
        m.edit = {t_[g->first].begin, t_[g->last - 1].end, with, "statements moved earlier"};
        m.target = static_cast<std::size_t>(g - all.begin());
        for (const std::size_t r : emptied) m.others.push_back({r, ";"});
        m.before = s;
        m.moved = {t_[first].begin, t_[last - 1].end};
        return {m};
    }
    return {};
}

std::vector<Editor::Joint> Editor::swaps(const std::vector<Parser::Found>& all, std::size_t at) const {
    const auto value = [&](const Parser::Found& g) {
        return g.statement || g.type.empty() || g.first < 3 || t_[g.first - 1].text != "=" || g.last - g.first > 12
                   ? std::string()
                   : text_.substr(t_[g.first].begin, t_[g.last - 1].end - t_[g.first].begin);
    };
    const std::string mine = value(f_);
    if (mine.empty()) return {};
    std::vector<Joint> out;
    // A declarator of the same declaration, on its line; or the next line's declaration of the same
    // type, its value as many tokens long (`heads = x.shape()[2];` above `tokens = x.shape()[1];`).
    const int line = line_of(text_, t_[f_.first].begin);
    for (std::size_t j = at + 1; j < all.size(); ++j) {
        const Parser::Found& g = all[j];
        const auto semicolons = std::count_if(t_.begin() + long(f_.last), t_.begin() + long(g.first),
                                              [](const Token& x) { return x.text == ";"; });
        if (semicolons > 1 || std::any_of(t_.begin() + long(f_.last), t_.begin() + long(g.first),
                                          [](const Token& x) { return x.text == "{" || x.text == "}"; }))
            break;  // past the declaration, or the one after it
        const std::string theirs = value(g);
        const int g_line = line_of(text_, t_[g.first].begin);
        const bool declarator = semicolons == 0 && t_[g.first - 3].text == "," && g_line == line;
        const bool next_line = semicolons == 1 && g_line == line + 1 && g.last - g.first == f_.last - f_.first;
        if (theirs.empty() || theirs == mine || g.type != f_.type || (!declarator && !next_line)) continue;
        Joint m;
        m.edit = {t_[f_.first].begin, t_[f_.last - 1].end, theirs, "two values swapped"};
        m.target = at;
        m.others.push_back({j, mine});
        m.before = f_.first;
        out.push_back(std::move(m));
    }
    return out;
}

// The solution with comments blanked (same length, newlines kept): regions are copied from it.
std::string without_comments(const std::string& text) {
    std::string out = text;
    for (std::size_t p = 0; p < out.size(); ++p) {
        if (out[p] == '"') {
            for (++p; p < out.size() && out[p] != '"'; ++p)
                if (out[p] == '\\') ++p;
        } else if (out.compare(p, 2, "//") == 0) {
            for (; p < out.size() && out[p] != '\n'; ++p) out[p] = ' ';
        }
    }
    return out;
}

}  // namespace

namespace {

// The regions near `f` (four either side, in the order they were read) of its kind, in the same
// function and loops: a statement, or an initializer of the same type -- the lines a learner
// writes in pairs.
std::vector<const Parser::Found*> twin_regions(const Parser& parser, const Parser::Found& f) {
    std::vector<const Parser::Found*> twins;
    const auto& all = parser.found;
    const auto at = static_cast<std::size_t>(&f - all.data());
    if (f.loop_condition) return twins;
    // Four regions of its kind either side (a loop's own regions between them are not counted).
    const auto look = [&](std::size_t j) {
        const Parser::Found& g = all[j];
        if (g.statement != f.statement || g.loop_condition || g.block_of != 0) return false;
        if (g.loops == f.loops && g.type == f.type && g.function == f.function) twins.push_back(&g);
        return true;
    };
    for (std::size_t j = at, seen = 0; j-- > 0 && seen < 4;) seen += look(j) ? 1 : 0;
    for (std::size_t j = at + 1, seen = 0; j < all.size() && seen < 4; ++j) seen += look(j) ? 1 : 0;
    return twins;
}

// An edit of several regions (Editor::Joint) as a variant. A move is said as the statements' lines
// moved before the line of the statement they precede; a swap as its line edited.
void add_joint(Mutants& m, int& id, const std::string& text, const Editor::Joint& joint, const Parser& parser,
               std::size_t first_region) {
    const std::vector<Token>& t = parser.tokens();
    Variant v;
    v.id = ++id;
    v.region = first_region + joint.target;
    v.begin = joint.edit.begin;
    v.end = joint.edit.end;
    v.replacement = joint.edit.with;
    v.kind = joint.edit.kind;
    v.line = line_of(text, t[joint.before].begin);
    v.original_line = trimmed_line(text, t[joint.before].begin);
    std::string edited = text;
    for (const auto& [r, with] : joint.others) {
        const Parser::Found& g = parser.found[r];
        v.also.push_back({first_region + r, t[g.first].begin, t[g.last - 1].end, with});
    }
    // The edited text, the later spans first (the earlier keep their offsets).
    std::vector<Variant::Span> all = v.also;
    all.push_back({v.region, v.begin, v.end, v.replacement});
    std::ranges::sort(all, std::greater<>{}, &Variant::Span::begin);
    for (const Variant::Span& span : all) edited.replace(span.begin, span.end - span.begin, span.replacement);
    v.edited_line = trimmed_line(edited, t[joint.before].begin);
    if (const auto [from, to] = joint.moved; to > from) {
        // The statements moved, on one line; their first hundred characters or so, when they are long.
        v.edited_line = one_line(text.substr(from, to - from));
        if (v.edited_line.size() > 120) v.edited_line = v.edited_line.substr(0, v.edited_line.rfind(' ', 100)) + " ...";
        v.moved_first = line_of(text, from);
        v.moved_last = line_of(text, to - 1);
    }
    // Two declarations' values swapped across lines: both lines said, as they were and as edited.
    if (v.kind == "two values swapped")
        for (const Variant::Span& o : v.also)
            if (line_of(text, o.begin) != v.line) {
                std::string other = trimmed_line(text, o.begin);
                const std::string value = text.substr(o.begin, o.end - o.begin);
                v.original_line += " " + other;
                if (const auto at = other.find(value); at != std::string::npos)
                    other.replace(at, value.size(), o.replacement);
                v.edited_line += " " + other;
                v.lines_last = line_of(text, o.begin);
            }
    v.context = "in " + parser.found[joint.target].function;
    m.variants.push_back(std::move(v));
}

// The regions and variants of one parsed block, appended to `m` (ids go on from `id`).
void add_variants(Mutants& m, int& id, const std::string& text, const std::string& code, const Parser& parser) {
    const std::size_t first_region = m.regions.size();
    for (std::size_t at = 0; at < parser.found.size(); ++at) {
        const Parser::Found& f = parser.found[at];
        // The loops around the region, innermost first: "the loop over c".
        std::string context = "in " + f.function;
        for (auto l = f.loops.rbegin(); l != f.loops.rend(); ++l)
            if (!l->empty()) {
                context += ", the loop over " + *l;
                break;
            }
        Editor editor(code, parser, f);
        if (parser.own()) editor.set_twins(twin_regions(parser, f));
        const std::size_t r = m.regions.size();
        const std::vector<Token>& tokens = parser.tokens();
        if (f.block_of != 0)  // a place for a statement: empty
            m.regions.push_back({tokens[f.first].begin, tokens[f.first].begin, true});
        else {
            // An initializer of a class: each alternative made that class in the schemata (`Tensor3(x - a)`),
            // since two expression templates' types have no common type for `?:`.
            m.regions.push_back({tokens[f.first].begin, tokens[f.last - 1].end, f.statement,
                                 f.statement || !parser.own() ? "" : f.value_type});
        }
        std::set<std::pair<std::size_t, std::string>> seen;
        for (const Edit& e : editor.edits()) {
            if (!seen.insert({e.begin, e.with + "@" + std::to_string(e.end)}).second) continue;
            // A learner's region whose edit leaves a bracket unclosed does not parse (a twin's
            // `2 * (2 * n * d)` taken token by token: `4 * (2 * d * d`): every such edit cost the
            // schemata a compile of its own to be refused.
            if (parser.own()) {
                const Region& whole = m.regions[r];
                std::string edited = code.substr(whole.begin, whole.end - whole.begin);
                if (e.begin >= whole.begin && e.end <= whole.end)
                    edited.replace(e.begin - whole.begin, e.end - e.begin, e.with);
                if (!brackets_balanced(edited)) continue;
            }
            Variant v;
            v.id = ++id;
            v.region = r;
            v.begin = e.begin;
            v.end = e.end;
            v.replacement = e.with;
            v.kind = e.kind;
            v.line = line_of(text, e.begin);
            v.original_line = trimmed_line(text, e.begin);
            std::string edited = text;
            edited.replace(e.begin, e.end - e.begin, e.with);
            v.edited_line = trimmed_line(edited, e.begin);
            // A learner's statement over several lines is shown whole, on one line (its line with
            // the edit alone may be `float(D - 1);`).
            const Region& whole = m.regions[r];
            if (parser.own() && line_of(text, whole.begin) != line_of(text, whole.end)) {
                const std::size_t edited_end = whole.end + e.with.size() - (e.end - e.begin);
                v.original_line = one_line(text.substr(whole.begin, whole.end - whole.begin));
                v.edited_line = one_line(edited.substr(whole.begin, edited_end - whole.begin));
                v.line = line_of(text, whole.begin);
            }
            if (e.with == ";") v.edited_line = "(nothing: the statement is gone)";
            if (f.block_of != 0) {  // said at the if whose block it ends
                v.line = line_of(text, tokens[f.block_of].begin);
                v.original_line = trimmed_line(text, tokens[f.block_of].begin);
                v.edited_line = e.with;
            }
            v.context = context;
            m.variants.push_back(std::move(v));
        }
        if (parser.own()) {
            for (const Editor::Joint& j : editor.moves(parser.found, at))
                add_joint(m, id, text, j, parser, first_region);
            for (const Editor::Joint& j : editor.swaps(parser.found, at))
                add_joint(m, id, text, j, parser, first_region);
        }
    }
}

// The token after the bracket that `p` opens.
std::size_t after_bracket(const std::vector<Token>& t, std::size_t p) {
    int depth = 0;
    for (; p < t.size(); ++p) {
        if (t[p].text == "(" || t[p].text == "[" || t[p].text == "{") ++depth;
        if ((t[p].text == ")" || t[p].text == "]" || t[p].text == "}") && --depth == 0) return p + 1;
    }
    return t.size();
}

}  // namespace

Mutants generate_mutants(const std::string& solution) {
    Mutants m;
    const std::string code = without_comments(solution);
    std::size_t at = 0;
    int id = 0;
    while ((at = solution.find("// BEGIN SOLUTION", at)) != std::string::npos) {
        const std::size_t from = solution.find('\n', at) + 1;
        const std::size_t stub = solution.find("// STUB", from);
        if (stub == std::string::npos) break;
        auto [function, params] = signature_before(solution, at);
        Parser parser(code, tokenize(code, from, stub), function, params);
        parser.run();
        add_variants(m, id, solution, code, parser);
        at = stub;
    }
    return m;
}

namespace {

// One data member declaration of a struct, tokens [first, last) before its `;`: `Tensor2 w_q, w_k,
// w_v`, `std::size_t heads = 1`, `std::uint8_t qs[block / 2]` -- each name with its type.
void add_members(const std::vector<Token>& t, std::size_t first, std::size_t last, HeaderStruct& h) {
    for (std::size_t r = first; r < last; ++r) {
        const std::string& x = t[r].text;
        if (x == "(" || x == "using" || x == "static" || x == "friend" || x == "struct" || x == "enum" ||
            x == "template" || x == "operator")
            return;
    }
    // The declarators start after the type: the first name followed by `,`, `=`, `[`, `{` or the end.
    std::size_t name = first;
    int angle = 0;
    for (; name < last; ++name) {
        angle += t[name].text == "<" ? 1 : t[name].text == ">" ? -1 : 0;
        const std::string next = name + 1 < last ? t[name + 1].text : ";";
        if (angle == 0 && name > first && t[name].kind == Tok::ident &&
            (next == "," || next == "=" || next == "[" || next == "{" || next == ";"))
            break;
    }
    if (name >= last) return;
    const auto joined = [&](std::size_t a, std::size_t b) {  // `std::uint8_t`, `unsigned int`, `[16]`
        std::string out;
        for (std::size_t r = a; r < b; ++r) {
            if (t[r].text == "const" || t[r].text == "mutable") continue;
            if (!out.empty() && t[r].kind == Tok::ident && r > a && t[r - 1].kind == Tok::ident) out += ' ';
            out += t[r].text;
        }
        return out;
    };
    const std::string type = joined(first, name);
    for (std::size_t r = name; r < last;) {
        std::size_t q = r + 1;
        while (q < last && t[q].text == "[") q = after_bracket(t, q);  // an array's extents
        const std::string extent = joined(r + 1, q);
        for (int depth = 0; q < last; ++q) {  // an initializer, up to the next declarator
            const std::string& x = t[q].text;
            if (depth == 0 && x == ",") break;
            depth += (x == "(" || x == "[" || x == "{") ? 1 : (x == ")" || x == "]" || x == "}") ? -1 : 0;
        }
        h.members.emplace_back(t[r].text, type + extent);
        r = q + 1;
        if (r < last && t[r].kind != Tok::ident) return;
    }
}

}  // namespace

std::vector<HeaderStruct> header_structs(const std::string& header) {
    const std::string code = without_comments(header);
    const std::vector<Token> t = tokenize(code, 0, code.size());
    std::vector<HeaderStruct> structs;
    for (std::size_t p = 0; p + 2 < t.size(); ++p) {
        if (t[p].text != "struct" || t[p + 1].kind != Tok::ident || t[p + 2].text != "{") continue;
        HeaderStruct h{t[p + 1].text, {}};
        const std::size_t close = after_bracket(t, p + 2) - 1;
        std::size_t first = p + 3;
        for (std::size_t q = first; q < close; ++q) {
            if (t[q].text == "{" && (q == first || t[q - 1].text == ")" || t[q - 1].text == "const")) {
                q = after_bracket(t, q) - 1;  // a member function's body
                first = q + 1;
                continue;
            }
            if (t[q].text == "(" || t[q].text == "[" || t[q].text == "{") {
                q = after_bracket(t, q) - 1;
                continue;
            }
            if (t[q].text != ";") continue;
            add_members(t, first, q, h);
            first = q + 1;
        }
        if (!h.members.empty()) structs.push_back(std::move(h));
    }
    return structs;
}

Mutants generate_own_mutants(const std::string& file, const std::vector<HeaderStruct>& structs) {
    Mutants m;
    const std::string code = without_comments(file);
    const std::vector<Token> t = tokenize(code, 0, code.size());
    std::vector<std::string> constants;  // those before a function, unread (constant_put_back)
    const auto aliases = type_aliases(t);
    int id = 0;
    std::size_t p = 0;
    while (p < t.size()) {
        // namespace a::b { ... }: its declarations are read as the file's; a closing brace ends it.
        if (t[p].text == "namespace") {
            while (p < t.size() && t[p].text != "{" && t[p].text != ";") ++p;
            ++p;
            continue;
        }
        if (t[p].text == "}" || t[p].text == ";") {
            ++p;
            continue;
        }
        // One declaration: up to its `;`, or a body. A body after `)` is a function's.
        std::size_t q = p;
        while (q < t.size() && t[q].text != ";" && t[q].text != "{") {
            q = t[q].text == "(" || t[q].text == "[" ? after_bracket(t, q) : q + 1;
        }
        if (q >= t.size()) break;
        // struct RowState { ... }: its member functions are the file's functions too (exercise 6's
        // online-softmax state, folded in by both kernels); a closing brace ends it, as a namespace's.
        const auto holds = [&](const char* word) {
            return std::any_of(t.begin() + long(p), t.begin() + long(q),
                               [&](const Token& x) { return x.text == word; });
        };
        if (t[q].text == "{" && (holds("struct") || holds("class")) && !holds("enum") && !holds("=") && !holds("(")) {
            p = q + 1;
            continue;
        }
        if (t[q].text == ";") {
            // `constexpr std::uint64_t kBytesPerFloat = 4;` that nothing else in the file reads.
            const bool numeric = std::any_of(t.begin() + long(p), t.begin() + long(q), [](const Token& x) {
                return x.text == "int" || x.text == "float" || x.text == "double" || x.text.ends_with("_t") ||
                       x.text == "long" || x.text == "unsigned";
            });
            const bool constant = t[p].text == "constexpr" || t[p].text == "const" ||
                                  (t[p].text == "static" && p + 1 < q && t[p + 1].text.starts_with("const"));
            std::size_t eq = p;
            while (eq < q && t[eq].text != "=") ++eq;
            if (numeric && constant && eq < q && eq > p + 1 && t[eq - 1].kind == Tok::ident &&
                std::ranges::count(t, t[eq - 1].text, &Token::text) == 1)
                constants.push_back(t[eq - 1].text);
            p = q + 1;
            continue;
        }
        const std::size_t end = after_bracket(t, q);
        // A body after `)` is a function's, or after `) const`, `) noexcept`, `) -> float`.
        std::size_t params = p;
        while (params < q && t[params].text != "(")
            params = t[params].text == "[" ? after_bracket(t, params) : params + 1;
        if (q > p &&
            (t[q - 1].text == ")" || (params < q && after_function_qualifiers(t, after_bracket(t, params)) == q))) {
            Parser parser(code, {t.begin() + long(p), t.begin() + long(end)}, "", {}, true);
            parser.set_header_structs(structs);
            parser.set_file_constants(constants);
            parser.set_aliases(aliases);
            parser.run();
            add_variants(m, id, file, code, parser);
        }
        p = end;
    }
    return m;
}

std::optional<std::string> with_shared_kept(const std::string& text) {
    static const std::string word = "__shared__";
    const std::string code = without_comments(text);
    const auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; };
    std::string out;
    std::size_t copied = 0;
    for (std::size_t at = code.find(word); at != std::string::npos; at = code.find(word, at + word.size())) {
        if ((at > 0 && ident(code[at - 1])) || ident(code[at + word.size()])) continue;  // part of a longer name
        const std::size_t semi = code.find(';', at);
        if (semi == std::string::npos) return std::nullopt;
        const std::string declaration = code.substr(at + word.size(), semi - at - word.size());
        if (declaration.find_first_of("(){}=#") != std::string::npos || declaration.find('\n') != std::string::npos)
            return std::nullopt;
        std::size_t before = at;
        while (before > 0 && std::isspace(static_cast<unsigned char>(code[before - 1])) != 0) --before;
        if (before >= 6 && code.compare(before - 6, 6, "extern") == 0) return std::nullopt;
        // The declarators, split at the commas outside <> and []: the first one's name is the last
        // word before its [] (`shared_tile<float, 16, 64> k_tile`), a later one's its first word.
        std::vector<std::string> names;
        int depth = 0;
        std::size_t piece = 0;
        for (std::size_t q = 0; q <= declaration.size(); ++q) {
            const char c = q < declaration.size() ? declaration[q] : ',';
            depth += (c == '<' || c == '[') ? 1 : (c == '>' || c == ']') ? -1 : 0;
            if (c != ',' || depth != 0) continue;
            std::string d = declaration.substr(piece, q - piece);
            d = d.substr(0, std::min(d.find('['), d.size()));
            std::size_t end = d.size();
            while (end > 0 && !ident(d[end - 1])) --end;
            std::size_t begin = end;
            while (begin > 0 && ident(d[begin - 1])) --begin;
            if (begin == end || std::isdigit(static_cast<unsigned char>(d[begin])) != 0) return std::nullopt;
            if (!names.empty() && d.substr(0, begin).find_first_not_of(" \t*&") != std::string::npos)
                return std::nullopt;  // a later declarator's name is its first word
            names.push_back(d.substr(begin, end - begin));
            piece = q + 1;
        }
        out += text.substr(copied, semi + 1 - copied);
        for (const std::string& n : names)
            out += fmt::format(" hw_keep_shared(__builtin_addressof({0}), sizeof({0}));", n);
        copied = semi + 1;
    }
    return out + text.substr(copied);
}

Schemata make_schemata(const std::string& solution, const Mutants& m, const std::vector<int>& keep, bool guarded) {
    const std::string code = without_comments(solution);
    const std::set<int> kept(keep.begin(), keep.end());
    // Each region's alternatives: (variant, the span it replaces there).
    std::map<std::size_t, std::vector<std::pair<const Variant*, Variant::Span>>> by_region;
    for (const Variant& v : m.variants) {
        if (!kept.count(v.id)) continue;
        by_region[v.region].push_back({&v, {v.region, v.begin, v.end, v.replacement}});
        for (const Variant::Span& also : v.also) by_region[also.region].push_back({&v, also});
    }
    Schemata s;
    std::size_t copied = 0;
    int line = 1;
    // The solution's line at an offset of its text.
    const auto line_at = [&](std::size_t offset) {
        return 1 + static_cast<int>(std::count(solution.begin(), solution.begin() + std::ptrdiff_t(offset), '\n'));
    };
    // `text` on the schemata's lines from `line` on; its first line comes from the solution's line
    // `source`, each later one from the next (a line shared with the next text is the next's).
    auto emit = [&](const std::string& text, int variant, int source) {
        if (variant > 0) s.line_to_variant[line] = variant;
        const int newlines = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
        for (int i = 0; i <= newlines; ++i) s.line_to_source[line + i] = source + i;
        s.text += text;
        line += newlines;
    };
    for (const auto& [r, variants] : by_region) {
        const Region& region = m.regions[r];
        const int region_line = line_at(region.begin);
        emit(solution.substr(copied, region.begin - copied), 0, line_at(copied));
        const std::string original = code.substr(region.begin, region.end - region.begin);
        const std::string open = region.convert_to + "(";
        // Guarded: the learner's own text first, where its lines were, taken while no edit of the
        // region is on -- one flat chain, so that a compiler error stays at the alternative that
        // makes it (a nested ?: took them to the region's first line); on one line at the end.
        std::string squashed = original;
        std::replace(squashed.begin(), squashed.end(), '\n', ' ');
        if (guarded) {
            if (!variants.empty()) s.guard_to_variant[line] = variants.front().first->id;
            emit(region.statement ? fmt::format("if (!HW_R({})) {{ {} }} else\n", r, original)
                                  : fmt::format("(!HW_R({}) ? {}{}) :\n", r, open, original),
                 0, region_line);
        } else
            emit(region.statement ? "\n" : "(\n", 0, region_line);
        for (const auto& [v, span] : variants) {
            std::string edited = original;
            edited.replace(span.begin - region.begin, span.end - span.begin, span.replacement);
            std::replace(edited.begin(), edited.end(), '\n', ' ');
            emit(region.statement ? fmt::format("if (HW_M({})) {{ {} }} else\n", v->id, edited)
                                  : fmt::format("HW_M({}) ? {}{}) :\n", v->id, open, edited),
                 v->id, region_line);
        }
        if (guarded)
            emit(region.statement ? "{ " + squashed + " }" : open + squashed + "))", 0, region_line);
        else
            emit(region.statement ? "{ " + original + " }" : open + original + "))", 0, region_line);
        copied = region.end;
    }
    emit(solution.substr(copied), 0, line_at(copied));
    return s;
}

std::string fnv_hex(const std::string& text) {
    std::uint64_t h = 1469598103934665603ull;
    for (const unsigned char c : text) h = (h ^ c) * 1099511628211ull;
    return fmt::format("{:016x}", h);
}

namespace {
std::vector<std::string> fields_of(const std::string& line) {
    std::vector<std::string> f;
    std::size_t p = 0;
    for (;;) {
        const std::size_t tab = line.find('\t', p);
        f.push_back(line.substr(p, tab == std::string::npos ? std::string::npos : tab - p));
        if (tab == std::string::npos) return f;
        p = tab + 1;
    }
}
}  // namespace

MutantData read_mutant_data(const std::string& text) {
    MutantData d;
    std::istringstream in(text);
    int n = 0;
    for (std::string line; std::getline(in, line);) {
        ++n;
        if (line.empty() || line[0] == '#') continue;
        const auto f = fields_of(line);
        if (f[0] == "solution" && f.size() == 2) {
            d.solution_hash = f[1];
        } else if (f[0] == "cases" && f.size() == 2) {
            d.cases_hash = f[1];
        } else if (f[0] == "check" && f.size() == 3) {
            d.checks.push_back(f[2]);
        } else if (f[0] == "variant" && f.size() == 10) {
            d.variants.push_back(
                {std::stoi(f[1]), f[2], f[3], std::stoi(f[4]), std::stoi(f[5]), f[6], f[7], f[8], f[9]});
        } else {
            throw std::runtime_error(fmt::format("line {}: not a record of a mutant data file", n));
        }
    }
    return d;
}

std::string write_mutant_data(const MutantData& d) {
    std::string out =
        "# The single-edit variants of a solution and their behaviour on its grader's checks (gradekit/mutants.hpp).\n"
        "# Generated: scripts/regenerate-mutants <id> (after any change to the solution or the grader's cases).\n";
    out += "solution\t" + d.solution_hash + "\ncases\t" + d.cases_hash + "\n";
    for (std::size_t k = 0; k < d.checks.size(); ++k) out += fmt::format("check\t{}\t{}\n", k, d.checks[k]);
    for (const auto& v : d.variants)
        out += fmt::format("variant\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n", v.id, v.status, v.fingerprint, v.group,
                           v.line, v.kind, v.original_line, v.edited_line, v.context);
    return out;
}

std::string describe_edit(const VariantRecord& v) {
    if (v.kind == "statement dropped")
        return fmt::format("your code behaves exactly like the solution without `{}` (line {}, {})", v.original_line,
                           v.line, v.context);
    return fmt::format("your code behaves exactly like the solution with `{}` in place of `{}` (line {}, {})",
                       v.edited_line, v.original_line, v.line, v.context);
}

}  // namespace headwise::gradekit
