// gradekit/sanitizer.cpp -- see sanitizer.hpp.
#include "gradekit/sanitizer.hpp"

#include "gradekit/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

namespace headwise::gradekit {

namespace {

// The names a source declares as a std::vector ("std::vector<float> w(len);", "const
// std::vector<float>& row"): a name's [0] reads an empty vector's null data() only if it is one.
std::vector<std::string> vector_names_in(const fs::path& file) {
    static const std::regex declaration(R"(vector\s*<[^;(){}=]*>\s*&{0,2}\s*([A-Za-z_]\w*))");
    std::string source;
    try {
        source = read_text(file);
    } catch (const std::invalid_argument&) {
        return {};  // unreadable: no names, so no "empty range" from a [0]
    }
    std::vector<std::string> names;
    for (std::sregex_iterator it(source.begin(), source.end(), declaration), end; it != end; ++it)
        names.push_back((*it)[1].str());
    return names;
}

}  // namespace

CrashFacts read_crash(const std::vector<std::string>& lines, const Subject& s) {
    static const std::regex asan_error(R"(==[0-9]+==ERROR: AddressSanitizer: ([A-Za-z-]+))");
    static const std::regex segv_address(R"(SEGV on unknown address (0x[0-9a-f]+))");
    static const std::regex access(R"(^(READ|WRITE) of size ([0-9]+) at)");
    static const std::regex region(
        R"(is located ([0-9]+) bytes (to the right of|to the left of|inside of) ([0-9]+)-byte region)");
    static const std::regex frame(R"(^ *#[0-9]+ 0x[0-9a-f]+ in (.*) (\S+?):([0-9]+)(?::([0-9]+))?$)");
    static const std::regex top_frame(R"(^ *#0 0x[0-9a-f]+ in (.+) \S+$)");  // the function, its file
    static const std::regex ubsan(R"(^(\S+?):([0-9]+):([0-9]+): runtime error: (.*)$)");
    static const std::regex segv_access(R"(The signal is caused by a (READ|WRITE) memory access)");
    static const std::regex check_marker(R"(^\[headwise-check\] ([^\t]*)\t(.*)$)");
    CrashFacts c;
    std::string first_frame;
    int subject_frames = 0;
    bool report_started = false;
    for (const std::string& line : lines) {
        std::smatch m;
        // A frame of the emulator's under the report: the error is inside a kernel (exercise 06).
        if (report_started && line.find("headwise::emulator::") != std::string::npos) c.in_kernel = true;
        if (!report_started && std::regex_match(line, m, check_marker)) {
            c.test = m[1].str();
            c.check = m[2].str();
            continue;
        }
        if (report_started && c.top_function.empty() && std::regex_search(line, m, top_frame))
            c.top_function = m[1].str();
        if (c.kind.empty() && std::regex_search(line, m, asan_error)) {
            c.kind = m[1].str();
            report_started = true;
            if (std::regex_search(line, m, segv_address)) c.address = std::strtoull(m[1].str().c_str(), nullptr, 16);
        } else if (c.ub.empty() && c.kind.empty() && std::regex_match(line, m, ubsan)) {
            c.ub = m[4].str();
            report_started = true;
            if (is_subject_file(m[1].str(), s)) {
                c.where_file = subject_relative(m[1].str(), s);
                c.where_line = std::stoi(m[2].str());
                c.where_col = std::stoi(m[3].str());
            }
        } else if (c.access == Access::unknown && std::regex_search(line, m, access)) {
            c.access = m[1] == "WRITE" ? Access::write : Access::read;
            c.size = std::atol(m[2].str().c_str());
        } else if (c.access == Access::unknown && std::regex_search(line, m, segv_access)) {
            c.access = m[1] == "WRITE" ? Access::write : Access::read;
        } else if (c.kind == "SEGV" && line.find("Hint: address points to the zero page") != std::string::npos) {
            c.zero_page = true;
        } else if (c.kind == "SEGV" && line.find("dereference of a high value address") != std::string::npos) {
            c.high_address = true;
        } else if (c.side == Side::none && std::regex_search(line, m, region)) {
            c.offset = std::atol(m[1].str().c_str());
            c.side = m[2] == "to the right of" ? Side::right : m[2] == "to the left of" ? Side::left : Side::inside;
            c.region = std::atol(m[3].str().c_str());
        } else if (report_started && std::regex_match(line, m, frame) && is_subject_file(m[2].str(), s) &&
                   (c.ub.empty() || c.where_file.empty())) {
            // The first frame in the subject's file (UBSan's own file:line:column wins where it is
            // the subject's); for a stack overflow the second one that differs from it (the first
            // is the function's entry, the next the call that recursed).
            const std::string here = m[2].str() + ":" + m[3].str();
            const bool take =
                subject_frames == 0 || (c.kind == "stack-overflow" && subject_frames == 1 && here != first_frame);
            if (take) {
                if (subject_frames++ == 0) first_frame = here;
                c.where_file = subject_relative(m[2].str(), s);
                c.where_line = std::stoi(m[3].str());
                c.where_col = m[4].matched ? std::stoi(m[4].str()) : 0;
            }
        } else if (line.rfind("  what():  ", 0) == 0) {
            c.terminate_what = line.substr(11);
        }
    }
    if (!c.where_file.empty()) {
        c.where_source = source_line(s.source_dir / c.where_file, c.where_line);
        c.vector_names = vector_names_in(s.source_dir / c.where_file);
        std::ifstream in(s.source_dir / c.where_file);
        for (std::string line; static_cast<int>(c.lines_before.size()) + 1 < c.where_line && std::getline(in, line);)
            c.lines_before.push_back(line);
    }
    return c;
}

namespace {

const std::string bounds_doc = "docs/xtensor-for-pytorch-users.md, \"Indices, shapes and loop bounds\"";
const std::string views_doc = "docs/xtensor-for-pytorch-users.md, \"Views, references and lazy expressions\"";

std::string verb_of(const CrashFacts& c) { return c.access == Access::write ? "wrote" : "read"; }

// " (400 floats)" for a count of bytes that is a whole number of floats, else nothing.
std::string in_floats(long bytes) {
    if (bytes <= 0 || bytes % 4 != 0) return {};
    return fmt::format(" ({} float{})", bytes / 4, bytes == 4 ? "" : "s");
}

// "a" or "an" before a number said aloud: an 8-, an 11-, an 18-, an 80-byte buffer.
std::string article_for(long number) {
    const std::string digits = std::to_string(number);
    const bool eleven_or_eighteen =
        digits.size() % 3 == 2 && (digits.rfind("11", 0) == 0 || digits.rfind("18", 0) == 0);
    return digits.front() == '8' || eleven_or_eighteen ? "an" : "a";
}

// The library's copy or fill the report's top frame is in ("__interceptor_memcpy",
// "__asan_memmove", "memset"): "copy", "fill", or empty for any other function.
std::string bulk_operation(const std::string& function) {
    std::string name = function;
    for (const char* prefix : {"___interceptor_", "__interceptor_", "__asan_", "__"})
        if (name.rfind(prefix, 0) == 0) {
            name = name.substr(std::strlen(prefix));
            break;
        }
    if (name == "memcpy" || name == "memmove" || name == "memcpy_chk" || name == "memmove_chk") return "copy";
    if (name == "memset" || name == "memset_chk") return "fill";
    return {};
}

// One copy or fill (memcpy, std::copy, std::fill_n through memset...) that ran outside a buffer:
// ASan names its whole size and the first byte outside. Where it began is not in the report: an
// overflow is "at least" size - buffer when the size is larger than the buffer.
std::string outside_in_one_go(const CrashFacts& c, const std::string& operation) {
    const std::string into = c.access == Access::write ? "into" : "out of";
    const std::string what = fmt::format("a {} of {} bytes{} {} {} {}-byte buffer{}", operation, c.size,
                                         in_floats(c.size), into, article_for(c.region), c.region, in_floats(c.region));
    if (c.side == Side::right && c.offset == 0 && c.size > c.region)
        return fmt::format("{}: at least {} bytes{} more than it holds", what, c.size - c.region,
                           in_floats(c.size - c.region));
    if (c.side == Side::right && c.offset == 0)
        return fmt::format(
            "{} that ran past its end: it began fewer than {} bytes before the end, after its first {} bytes", what,
            c.size, c.region - c.size);
    if (c.side == Side::right) return fmt::format("{}, starting {} bytes past its end", what, c.offset);
    return fmt::format("{}, starting {} bytes before its start", what, c.offset);
}

// An access outside a buffer, said as what the numbers show and nothing more: which side, how
// far, how large the buffer (a guess at the cause -- a loop bound, a size -- is wrong as often as
// right; the line the report names shows which).
std::string outside_a_buffer(const CrashFacts& c) {
    const std::string verb = verb_of(c);
    const long bytes = c.region;
    const std::string floats = in_floats(bytes), a = article_for(bytes);
    if (c.side == Side::right && bytes == 0)
        return fmt::format("{} {} bytes of a buffer that holds nothing (0 bytes)", verb, c.size);
    // More than one float at once, by the library's memcpy/memmove/memset: a copy or a fill.
    if (const std::string op = bulk_operation(c.top_function);
        !op.empty() && c.size > 4 && (c.side == Side::right || c.side == Side::left))
        return outside_in_one_go(c, op);
    if (c.side == Side::right && c.offset == 0)
        return fmt::format("{} {} bytes just past the end of {} {}-byte buffer{}: one element past the last", verb,
                           c.size, a, bytes, floats);
    if (c.side == Side::right)
        return fmt::format("{} {} bytes {} bytes past the end of {} {}-byte buffer{}", verb, c.size, c.offset, a, bytes,
                           floats);
    if (c.side == Side::left)
        return fmt::format("{} {} bytes {} bytes before the start of {} {}-byte buffer{}", verb, c.size, c.offset, a,
                           bytes, floats);
    return fmt::format("{} {} bytes outside a buffer ({})", verb, c.size, c.kind);
}

// The call `text` opens at `open` (its '('), through its matching ')'; empty when unbalanced.
std::string through_matching_paren(const std::string& text, std::size_t open) {
    int depth = 0;
    for (std::size_t i = open; i < text.size(); ++i) {
        if (text[i] == '(') ++depth;
        if (text[i] == ')' && --depth == 0) return text.substr(0, i + 1);
    }
    return {};
}

constexpr const char* empty_vector = "an empty std::vector holds no memory (its data() is null)";
constexpr const char* no_elements = "the range had no elements";

// UBSan's runtime error, with what its words show (a 32-bit overflow, a shift).
CrashSentence undefined_behaviour_sentence(const CrashFacts& c) {
    CrashSentence said{"undefined behaviour: " + c.ub, {}};
    // The 32-bit hint only where UBSan names a 32-bit type ("... cannot be represented in type
    // 'int'"): an overflow of a 64-bit long is another story.
    if (c.ub.find("overflow") != std::string::npos && c.ub.find("type 'int'") != std::string::npos) {
        said.what +=
            " -- the count overflowed 32 bits (an int holds up to 2^31 - 1): count in std::size_t or std::uint64_t";
        said.lesson = "lesson 05 (docs/05_parameter_count.md): counts that pass 2^31";
    } else if (c.ub.find("shift") != std::string::npos) {
        said.what += " -- a shift by a negative amount or by the type's width or more";
    } else if (c.ub.find("out of bounds") != std::string::npos) {
        said.lesson = bounds_doc;
    }
    return said;
}

// What the sanitizer's report says, in the learner's terms (and the lesson to reread); empty when
// it is none of these.
CrashSentence sanitizer_sentence(const CrashFacts& c) {
    const std::string verb = verb_of(c);
    if (c.kind == "heap-buffer-overflow" || c.kind == "stack-buffer-overflow" || c.kind == "global-buffer-overflow")
        return {outside_a_buffer(c), bounds_doc};
    if (c.kind == "heap-use-after-free")
        // Freed memory is also where an index that runs past the end of a live buffer may land
        // (a batch stride of the queries' length used for the keys): the report cannot tell them apart.
        return {fmt::format("{} {} bytes of memory that was already freed: a view, pointer or reference used after "
                            "the tensor it points into was destroyed or reassigned, or an index past the end of "
                            "a live one that landed in freed memory",
                            verb, c.size),
                views_doc};
    if (c.kind == "stack-use-after-return" || c.kind == "stack-use-after-scope")
        return {fmt::format("{} {} bytes of a local variable whose {} already ended: a dangling reference or view",
                            verb, c.size, c.kind == "stack-use-after-return" ? "function had" : "scope had"),
                views_doc};
    if (c.kind == "attempting")
        return {"freed the same memory twice (double free) or freed memory that was never allocated", views_doc};
    if (auto empty = empty_range_read(c)) return {empty->sentence, bounds_doc};
    if (c.kind == "SEGV" && c.zero_page)
        return {fmt::format("crashed with a segmentation fault (SIGSEGV) on a {} through a null pointer or reference "
                            "(an address just above 0): a pointer never set, or a reference or pointer to a local "
                            "variable returned from its function (GCC returns null for it)",
                            verb),
                views_doc};
    if (c.kind == "SEGV")
        return {fmt::format("crashed with a segmentation fault (SIGSEGV) on a {}: an index far outside any tensor, or "
                            "a null or dangling pointer",
                            verb == "read" ? "read" : "write"),
                bounds_doc};
    if (c.kind == "stack-overflow")
        return {"ran out of stack (stack overflow): a function that calls itself without end?", {}};
    return {};
}

}  // namespace

std::string empty_range_origin(const std::vector<std::string>& lines_before, const std::string& name) {
    if (name.empty() || name.find_first_of(".>") != std::string::npos) return {};  // a member: not traced
    const auto trimmed = [](std::string line) {  // without indentation and a // comment
        if (const auto comment = line.find("//"); comment != std::string::npos) line.erase(comment);
        const auto first = line.find_first_not_of(" \t");
        const auto last = line.find_last_not_of(" \t");
        return first == std::string::npos ? std::string() : line.substr(first, last - first + 1);
    };
    const std::regex made(R"(vector\s*<[^;]*>\s+)" + name + R"(\s*(?:\(([^;]*)\)|\{\s*\}|)\s*;)");
    const std::regex grown("\\b" + name + R"(\s*\.\s*(?:push_back|emplace_back)\s*\()");
    const std::regex changed("\\b" + name + R"(\s*(?:\.\s*(?:clear|resize|assign|insert|erase|swap)\s*\(|=[^=]))");
    int pushed_at = 0;
    for (int i = static_cast<int>(lines_before.size()); i-- > 0;) {
        const std::string& line = lines_before[static_cast<std::size_t>(i)];
        std::smatch m;
        if (std::regex_search(line, m, made)) {
            if (pushed_at != 0)
                return fmt::format("`{}` is filled only by your line {} (`{}`), which had not run before this line",
                                   name, pushed_at, trimmed(lines_before[static_cast<std::size_t>(pushed_at - 1)]));
            const std::string size = m[1].matched ? trimmed(m[1].str()) : std::string();
            static const std::regex one_name(R"([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)");
            if (size.empty() || !std::regex_match(size, one_name)) return {};
            std::string said =
                fmt::format("`{}` is made with `{}` elements on your line {} (`{}`), so `{}` was 0 there", name, size,
                            i + 1, trimmed(line), size);
            const std::regex set("\\b" + size + R"(\s*=\s*([^;=][^;]*);)");
            for (int j = i; j-- > 0;) {
                std::smatch s;
                const std::string& earlier = lines_before[static_cast<std::size_t>(j)];
                if (std::regex_search(earlier, s, set)) {
                    said += fmt::format(" -- your line {} (`{}`) sets it", j + 1, trimmed(earlier));
                    break;
                }
            }
            return said;
        }
        if (std::regex_search(line, grown)) {
            if (pushed_at == 0) pushed_at = i + 1;
            continue;
        }
        if (std::regex_search(line, changed)) return {};
    }
    return {};
}

namespace {

// The empty range's read without where it came from (empty_range_read adds it).
std::optional<EmptyRangeRead> empty_range_read_alone(const CrashFacts& c) {
    // An empty std::vector's begin() and end() are its data(), null: *begin(), front() and [0]
    // fault at address 0 (a member a few bytes in: still the zero page), back() -- *(end() - 1) --
    // at the top of the address space, just below 0.
    if (c.kind != "SEGV" || c.where_source.empty()) return std::nullopt;
    const bool at_null = c.zero_page && (!c.address || *c.address < 4096);
    const std::string& line = c.where_source;
    const std::string verb = verb_of(c);
    std::smatch m;
    static const std::regex extreme(R"(\*\s*((?:std::)?(?:ranges::)?(max_element|min_element))\s*\()");
    static const std::regex member(R"(([A-Za-z_][\w.]*(?:->[\w.]+)*)\s*\.\s*(front|back)\s*\(\s*\))");
    static const std::regex begin(R"(\*\s*([A-Za-z_][\w.]*(?:->[\w.]+)*)\s*\.\s*c?begin\s*\(\s*\))");
    static const std::regex first(R"(\b([A-Za-z_]\w*)\s*\[\s*0\s*\])");
    if (at_null && std::regex_search(line, m, extreme)) {
        const std::string call = through_matching_paren(line.substr(static_cast<std::size_t>(m.position(0))),
                                                        static_cast<std::size_t>(m.length(0) - 1));
        if (!call.empty())
            return EmptyRangeRead{
                call, fmt::format("{} through the end of an empty range (`{}`): {} of an empty range returns end(), "
                                  "and {} -- {}",
                                  verb, call, m[2].str(), empty_vector, no_elements)};
    }
    if (std::regex_search(line, m, member)) {
        const std::string call = m[0].str();
        if (m[2] == "front" && at_null)
            return EmptyRangeRead{call, fmt::format("{} the first element of an empty range (`{}`): front() is "
                                                    "*begin(), and {} -- {}",
                                                    verb, call, empty_vector, no_elements)};
        if (m[2] == "back" && c.high_address)
            return EmptyRangeRead{call, fmt::format("{} the last element of an empty range (`{}`): back() is "
                                                    "*(end() - 1), one element before the null data() of an empty "
                                                    "std::vector (it holds no memory) -- {}",
                                                    verb, call, no_elements)};
    }
    if (at_null && std::regex_search(line, m, begin))
        return EmptyRangeRead{m[0].str(), fmt::format("{} through begin() of an empty range (`{}`): begin() is end() "
                                                      "there, and {} -- {}",
                                                      verb, m[0].str(), empty_vector, no_elements)};
    if (at_null && std::regex_search(line, m, first) &&
        std::find(c.vector_names.begin(), c.vector_names.end(), m[1].str()) != c.vector_names.end())
        return EmptyRangeRead{m[0].str(), fmt::format("{} element 0 of an empty range (`{}`): {} -- {}", verb,
                                                      m[0].str(), empty_vector, no_elements)};
    return std::nullopt;
}

// The container an empty-range expression reads: `p` of `*std::max_element(p.begin(), p.end())`,
// of `p.front()`, of `*p.begin()`, of `p[0]`.
std::string container_of(const std::string& expression) {
    static const std::regex named(R"(([A-Za-z_][\w.]*)\s*(?:\.\s*(?:c?begin|front|back)\s*\(|\[))");
    std::smatch m;
    return std::regex_search(expression, m, named) ? m[1].str() : std::string();
}

}  // namespace

std::optional<EmptyRangeRead> empty_range_read(const CrashFacts& c) {
    auto read = empty_range_read_alone(c);
    if (!read) return read;
    if (const std::string origin = empty_range_origin(c.lines_before, container_of(read->expression)); !origin.empty())
        read->sentence += ": " + origin;
    return read;
}

CrashSentence crash_sentence(const CrashFacts& c, int exit_code, bool timed_out) {
    if (CrashSentence said = sanitizer_sentence(c); !said.what.empty()) return said;
    if (timed_out)
        return {
            "did not finish in time: an endless loop? (a loop whose condition never becomes false, e.g. an "
            "unsigned j >= 0, or a bound that grows); it was at this line when stopped",
            {}};
    if (c.kind == "ABRT" || exit_code == 128 + 6)
        return {c.terminate_what.empty() ? "aborted (SIGABRT): an assert failed or std::terminate was called"
                                         : "an exception escaped and aborted the grader: " + c.terminate_what,
                {}};
    if (!c.kind.empty()) return {"AddressSanitizer: " + c.kind, {}};
    if (!c.ub.empty()) return undefined_behaviour_sentence(c);
    if (exit_code > 128)
        return {fmt::format("the grader was killed by signal {} ({})", exit_code - 128, strsignal(exit_code - 128)),
                {}};
    return {fmt::format("the grader stopped before its last test (exit code {}) without a sanitizer report", exit_code),
            {}};
}

}  // namespace headwise::gradekit
