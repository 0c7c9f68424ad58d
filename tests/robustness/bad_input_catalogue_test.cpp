// The bad-input catalogue: one table of wrong things a learner or an engineer can type or hand
// over, each run against the REAL binaries (every lesson of course.json and the `headwise` runner with all of
// its commands, `attend` included). Every row must end the same way:
//   - exit code 2 (not a crash, not 1, not a hang: a row that runs over 60 s is killed and fails)
//   - exactly one line on stderr, matching the row's pattern: it names the input that was wrong
//     and what was expected instead
//   - no file left behind: the working directory and attend's output directory stay empty.
// Run in the debug-asan build (scripts/ci-extras), the same table also proves no row trips
// AddressSanitizer or UBSan: their reports are more lines on stderr and another exit code.
//
// The .npy inputs are written byte by byte here from numpy's format description (NEP 1), not by
// the reader under test. Adding a case = adding a row.
#include "../runner_test.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <regex>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include <sys/stat.h>

using namespace headwise::test;

namespace {

struct Case {
    std::string program;            // a lesson ("01_single_head") or "headwise"
    std::vector<std::string> args;  // "{w}" is replaced by the workspace directory
    std::string expect;             // ECMAScript regex the single stderr line must contain
};

// A row as the tables below write it: plain text, so that each table is data. (Tables of Case,
// whose every field is a std::string, compiled into start-up code that took this file most of the
// twelve seconds it took to compile.)
struct Row {
    const char* program;
    std::initializer_list<const char*> args;
    const char* expect;
};

template <std::size_t N>
std::vector<Case> cases_of(const Row (&rows)[N]) {
    std::vector<Case> cases;
    for (const Row& r : rows) cases.push_back({r.program, {r.args.begin(), r.args.end()}, r.expect});
    return cases;
}

// The lessons are those of course.json, and each lesson's numeric flags are read from its own
// --help (CLI11 prints "--seq UINT:INT in [1 - 4096]=5"), so a new lesson or a new flag is tried
// without a line added here. Every numeric flag gets a non-number, a negative, a value past 32 and
// past 64 bits and a missing value; a flag whose range starts at 1 (or that takes a set of values)
// also gets zero. The message must name the flag, the value and, for a range, what is allowed.
std::vector<std::string> course_lessons() {
    std::ifstream in(fs::path(HEADWISE_TEST_SOURCE_DIR) / "course.json");
    const auto course = nlohmann::json::parse(in);
    std::vector<std::string> names;
    for (const auto& l : course.at("lessons")) names.push_back(l.at("name").get<std::string>());
    return names;
}

struct NumericFlag {
    std::string flag;
    bool zero_is_bad;
    std::string range;  // what the message must say is allowed, e.g. "1 to 4096" ("" if not checked)
};

std::vector<NumericFlag> numeric_flags_of(const std::string& lesson) {
    TempDir io;
    Process p({"--help"}, {}, io.path, std::nullopt, std::string(HEADWISE_LESSON_DIR "/") + lesson);
    const Result help = p.wait(std::chrono::seconds(30));
    if (help.code != 0) throw std::runtime_error(lesson + " --help failed with exit code " + std::to_string(help.code));
    static const std::regex option(
        R"(^\s+(--[a-z][a-z-]*) U?INT:(?:INT in \[(\d+) - (\d+)\]|(0\.\.2\^64-1)|\{[^}]*\}))");
    std::vector<NumericFlag> flags;
    std::istringstream lines(help.out);
    for (std::string line; std::getline(lines, line);) {
        std::smatch m;
        if (!std::regex_search(line, m, option)) continue;
        if (m[2].matched)
            flags.push_back({m[1], std::stoull(m[2]) >= 1, std::string(m[2]) + " to " + std::string(m[3])});
        else if (m[4].matched)
            flags.push_back({m[1], false, "whole number from 0 to 18446744073709551615"});
        else
            flags.push_back({m[1], true, ""});  // a set of values: zero is not one of them
    }
    return flags;
}

std::vector<Case> lesson_flag_cases() {
    std::vector<Case> cases;
    for (const std::string& lesson : course_lessons()) {
        const std::vector<NumericFlag> flags = numeric_flags_of(lesson);
        INFO(lesson << " --help");
        CHECK(flags.size() >= 2);  // at least --seed and one size: the regex still reads CLI11's help
        for (const auto& f : flags) {
            auto expect = [&](const std::string& value) {
                return f.flag + ".*" + value + (f.range.empty() ? "" : ".*" + f.range);
            };
            cases.push_back({lesson, {f.flag, "abc"}, expect("abc")});
            cases.push_back({lesson, {f.flag, "-3"}, expect("-3")});
            cases.push_back({lesson, {f.flag, "99999999999999999999999"}, expect("99999999999999999999999")});
            if (f.flag != "--seed") cases.push_back({lesson, {f.flag, "4000000000"}, expect("4000000000")});
            if (f.zero_is_bad) cases.push_back({lesson, {f.flag, "0"}, expect("\\b0\\b")});
            cases.push_back({lesson, {f.flag}, f.flag});  // the value missing
        }
        cases.push_back({lesson, {"--no-such-flag"}, "--no-such-flag"});
        cases.push_back({lesson, {"stray-argument"}, "stray-argument"});
    }
    return cases;
}

// "the lessons are 1, 2, 3, ..." as the runner says it, from course.json.
std::string lesson_numbers() {
    std::string list;
    for (const std::string& name : course_lessons())
        list += (list.empty() ? "" : ", ") + std::to_string(std::stoi(name.substr(0, 2)));
    return list;
}

// Rows that are about meaning, not syntax: sizes that do not fit together or do not fit in memory.
const Row lesson_size_rows[] = {
    // d_model must split into whole heads: the message gives the would-be d_head.
    {"02_split_merge",
     {"--heads", "7", "--d-model", "64"},
     "--d-model 64 is not divisible by --heads 7: d_head would be 64/7 = 9.143"},
    {"03_multi_head", {"--heads", "7", "--d-model", "64"}, "--d-model 64 is not divisible by --heads 7"},
    {"04_causal_mask", {"--heads", "7", "--d-model", "64"}, "--d-model 64 is not divisible by --heads 7"},
    {"05_parameter_count", {"--heads", "7", "--d-model", "64"}, "--d-model 64 is not divisible by --heads 7"},
    {"02_split_merge", {"--heads", "256", "--d-model", "8"}, "--d-model 8 is not divisible by --heads 256"},
    // Sizes past a lesson's limits (lesson.hpp): memory, charged per allocation before it is made,
    // and work, charged by each library step before it computes. Refused with what it would take.
    {"01_single_head",
     {"--batch", "64", "--seq", "4096", "--d-model", "8192"},
     "this would (need [0-9]+ bytes|take more than)"},
    {"02_split_merge",
     {"--batch", "64", "--seq", "4096", "--d-model", "8192"},
     "this would (need [0-9]+ bytes|take more than)"},
    {"03_multi_head",
     {"--batch", "64", "--seq", "4096", "--d-model", "8192", "--heads", "256"},
     "this would (need [0-9]+ bytes|take more than)"},
    {"04_causal_mask",
     {"--batch", "64", "--seq", "4096", "--d-model", "8192", "--heads", "256"},
     "this would (need [0-9]+ bytes|take more than)"},
    {"06_cuda_kernel",
     {"--batch", "64", "--seq", "4096", "--heads", "256", "--d-head", "128"},
     "would (need [0-9]+ bytes|make about [0-9.e+]+ emulated)"},
    {"01_single_head",
     {"--batch", "64", "--seq", "4096", "--d-model", "2048"},
     "would take more than .*use smaller sizes"},
    {"02_split_merge",
     {"--batch", "64", "--seq", "4096", "--d-model", "2048"},
     "would take more than .*use smaller sizes"},
    {"03_multi_head",
     {"--batch", "64", "--seq", "4096", "--d-model", "2048"},
     "would take more than .*use smaller sizes"},
    {"04_causal_mask",
     {"--batch", "64", "--seq", "4096", "--heads", "64"},
     "this would need [0-9]+ bytes .*use smaller sizes"},
    {"06_cuda_kernel", {"--seq", "4096", "--heads", "8"}, "--seq|--heads|sizes"},
    // Values out of a list, and values that must lie inside another size.
    {"06_cuda_kernel", {"--d-head", "12"}, "--d-head.*12"},
    {"06_cuda_kernel", {"--d-head", "256"}, "--d-head.*256"},
    {"06_cuda_kernel", {"--schedule", "warps"}, "--schedule.*warps"},
    {"06_cuda_kernel", {"--schedule", ""}, "--schedule"},
    {"04_causal_mask", {"--changed-token", "5", "--seq", "5"}, "--changed-token"},
    {"04_causal_mask", {"--changed-token", "7"}, "--changed-token"},
    {"03_multi_head", {"--cross-seq", "99999"}, "--cross-seq"},
    // The head view page and its .npy: a path that cannot be written.
    {"03_multi_head", {"--html", "{w}/no/such/dir/h.html"}, "h\\.html: cannot write: the directory .* does not exist"},
    {"03_multi_head", {"--weights", "{w}/no/such/dir/w.npy"}, "w\\.npy: cannot write: the directory .* does not exist"},
    {"03_multi_head", {"--html", "{w}"}, "is a directory"},
    {"05_parameter_count", {"--context", "99999999999"}, "--context"},
    {"05_parameter_count", {"--batch", "2"}, "--batch"},
    {"10_backward", {"--heads", "7", "--d-model", "64"}, "--d-model 64 is not divisible by --heads 7"},
    {"10_backward", {"--kv-heads", "3"}, "--kv-heads 3 does not divide --heads 4"},
    {"10_backward", {"--heads", "8", "--d-model", "8"}, "RoPE .*d_head = 8 / 8 = 1 must be even"},
    {"10_backward", {"--seq", "100"}, "finite differences run the layer twice .*use smaller sizes"},
    {"10_backward", {"--measure-seq", "65536", "--measure-d-head", "256"}, "would take more than .*use smaller sizes"},
    {"01_single_head", {"--seq", "nan"}, "--seq.*nan"},
    {"01_single_head", {"--seq", "1e3"}, "--seq.*1e3"},
    {"01_single_head", {"--seq", "8.5"}, "--seq.*8.5"},
};
const std::vector<Case> lesson_size_cases = cases_of(lesson_size_rows);

// The runner's commands. Unknown lesson/exercise numbers are those of the real course.json.
const Row runner_rows[] = {
    {"headwise", {}, "subcommand"},
    {"headwise", {"no-such-command"}, "no command .no-such-command. \\(the commands are run, test"},
    {"headwise", {"run"}, "lesson"},
    {"headwise", {"run", "0"}, "no lesson '0'"},
    {"headwise", {"run", "abc"}, "no lesson 'abc'"},
    {"headwise", {"run", "4000000000"}, "no lesson '4000000000'"},
    {"headwise", {"run", "--", "-3"}, "-3"},
    {"headwise", {"run", "1", "--", "--seq", "0"}, "--seq.*0"},
    {"headwise", {"run", "1", "--", "--seq", "abc"}, "--seq.*abc"},
    {"headwise", {"run", "all", "--", "--seq", "-1"}, "--seq.*-1"},
    // Lesson flags given to the runner: the one line shows the `--` form.
    {"headwise", {"run", "1", "--seq", "8"}, "put lesson flags after --, as in ./headwise run 1 -- --seq 8"},
    {"headwise", {"run", "all", "--batch", "2", "--seq", "3"}, "./headwise run all -- --batch 2 --seq 3"},
    {"headwise", {"list", "extra"}, "extra"},
    {"headwise", {"list", "--no-such-flag"}, "--no-such-flag"},
    {"headwise", {"hint"}, "exercise"},
    {"headwise", {"hint", "99"}, "no lesson '99'"},
    {"headwise", {"hint", "0"}, "no lesson '0'"},
    {"headwise", {"hint", "abc"}, "no lesson 'abc'"},
    {"headwise", {"hint", "99999999999999999999"}, "no lesson '99999999999999999999'"},
    {"headwise", {"hint", "1", "2"}, "2"},
    {"headwise", {"reset"}, "exercise"},
    {"headwise", {"reset", "99", "--yes"}, "no lesson '99'"},
    {"headwise", {"reset", "abc", "--yes"}, "no lesson 'abc'"},
    {"headwise", {"reset", "--yes", "--", "-1"}, "no lesson '-1'"},
    {"headwise", {"solution"}, "exercise"},
    {"headwise", {"solution", "99"}, "no lesson '99'"},
    {"headwise", {"solution", "abc", "--force"}, "no lesson 'abc'"},
    {"headwise", {"watch", "99"}, "no lesson '99'"},
    {"headwise", {"watch", "abc"}, "no lesson 'abc'"},
    {"headwise", {"watch", "1", "--interval", "0"}, "--interval.*0"},
    {"headwise", {"watch", "1", "--interval", "-5"}, "--interval.*-5"},
    {"headwise", {"watch", "1", "--interval", "abc"}, "--interval.*abc"},
    {"headwise", {"watch", "1", "--interval", "99999999999999999999"}, "--interval.*99999999999999999999"},
    {"headwise", {"grade", "99"}, "no lesson '99'"},
    {"headwise", {"grade", "0"}, "no lesson '0'"},
    {"headwise", {"grade", "abc"}, "no lesson 'abc'"},
    {"headwise", {"grade", "1", "2"}, "2"},
    {"headwise", {"grade", "--junit"}, "--junit"},
    {"headwise", {"test", "--no-such-flag"}, "--no-such-flag"},
    {"headwise", {"bench", "--no-such-flag"}, "--no-such-flag"},
};
// ... and one row whose message lists the course's own lessons.
const std::vector<Case> runner_cases = [] {
    std::vector<Case> cases = cases_of(runner_rows);
    cases.push_back({"headwise", {"run", "99"}, "no lesson '99' \\(the lessons are " + lesson_numbers() + "\\)"});
    return cases;
}();

// Lesson 08 and `attend --kv-heads`: the KV cache and grouped-query attention.
// Lesson 08's numeric flags come from its --help like every lesson's; these rows are about
// meaning. attend rows use the defaults below (H = 2, d_model = 4, so d_head = 2).
const Row kv_cache_rows[] = {
    {"08_kv_cache", {"--kv-heads", "3"}, "--kv-heads 3 does not divide --heads 8"},
    {"08_kv_cache", {"--kv-heads", "16"}, "--kv-heads 16 does not divide --heads 8"},
    {"08_kv_cache", {"--heads", "7"}, "--d-model 64 is not divisible by --heads 7"},
    {"08_kv_cache",
     {"--seq", "4096", "--generate", "4096", "--timed-tokens", "4096", "--d-model", "4096"},
     "this would (need [0-9]+ bytes|take more than)"},
    {"attend", {"--kv-heads", "abc"}, "--kv-heads.*abc"},
    {"attend", {"--kv-heads", "0"}, "--kv-heads.*0"},
    {"attend", {"--kv-heads", "-1"}, "--kv-heads.*-1"},
    {"attend", {"--kv-heads", "3"}, "--kv-heads 3 does not divide --heads 2"},
    // The MHA layout (12, 4) handed over with one K/V head, which needs (4 + 2 * 1 * 2, 4) = (8, 4).
    {"attend",
     {"--kv-heads", "1"},
     "--in-proj-weight has shape \\(12, 4\\) but must be \\(H\\*d_head \\+ 2\\*H_kv\\*d_head, d_model\\) = \\(8, 4\\)"},
    {"attend",
     {"--kv-heads", "1", "--in-proj-weight", "{w}/w_in_mqa.npy", "--in-proj-bias", "{w}/bias12.npy"},
     "--in-proj-bias has shape \\(12,\\) but must be \\(H\\*d_head \\+ 2\\*H_kv\\*d_head\\) = \\(8\\)"},
    {"attend",
     {"--kv-heads", "1", "--in-proj-weight", "{w}/w_in_mqa.npy", "--out-proj-weight", "{w}/w_in.npy"},
     "--out-proj-weight has shape \\(12, 4\\)"},
};
const std::vector<Case> kv_cache_cases = cases_of(kv_cache_rows);

// Lesson 07 and `heads`. HEADWISE_MODEL_DIR points them at {w}/model: a real
// config.json, a three-word vocabulary and a model.safetensors cut short inside its header.
const std::string long_text = [] {
    std::string t;
    for (int i = 0; i < 600; ++i) t += "word ";
    return t;
}();
const Row model_rows[] = {
    {"07_real_model", {}, "model\\.safetensors: the header claims .* bytes but the file has only"},
    {"07_real_model", {"--sentence"}, "--sentence"},
    {"headwise", {"heads"}, "--sentence"},
    {"headwise", {"heads", "--sentence", ""}, "--sentence is empty"},
    {"headwise", {"heads", "--sentence", " \t "}, "--sentence is empty"},
    {"headwise", {"heads", "--sentence", "ab\xff", "--tokens"}, "not valid UTF-8"},
    {"headwise", {"heads", "--sentence", "\xc3", "--tokens"}, "not valid UTF-8"},
    {"headwise", {"heads", "--sentence", "x", "--layer", "abc"}, "--layer.*abc"},
    {"headwise", {"heads", "--sentence", "x", "--head", "1.5"}, "--head.*1.5"},
    {"headwise", {"heads", "--sentence", "x"}, "model\\.safetensors: the header claims"},
    {"headwise",
     {"heads", "--sentence", "x", "--attention", "{w}/out/a.npy"},
     "model\\.safetensors: the header claims"},
    {"headwise",
     {"heads", "--sentence", "x", "--embedding", "{w}/out/e.npy"},
     "model\\.safetensors: the header claims"},
    {"headwise", {"heads", "--sentence", "x", "--no-such-flag"}, "--no-such-flag"},
    {"headwise", {"heads", "--sentence", "", "--html", "{w}/out/h.html"}, "--sentence is empty"},
    {"headwise",
     {"heads", "--sentence", "x", "--sentence-b", " ", "--html", "{w}/out/h.html"},
     "--sentence-b is empty"},
    {"headwise", {"heads", "--sentence", "x", "--sentence-b"}, "--sentence-b"},
    {"headwise", {"heads", "--sentence", "x", "--html", "{w}/out/h.html"}, "model\\.safetensors: the header claims"},
};
const std::vector<Case> model_cases = [] {
    std::vector<Case> cases = cases_of(model_rows);
    cases.push_back({"headwise", {"heads", "--sentence", long_text, "--tokens"}, "602 tokens long .* at most 512"});
    return cases;
}();

// attend: the good files are q.npy (1, 2, 4) float32, w_in.npy (12, 4), w_o.npy (4, 4); the
// outputs go to {w}/out/. A row's flag/value pairs replace or add to these; value "-" drops it.
const std::vector<std::pair<std::string, std::string>> attend_defaults{{"--heads", "2"},
                                                                       {"--query", "{w}/q.npy"},
                                                                       {"--in-proj-weight", "{w}/w_in.npy"},
                                                                       {"--out-proj-weight", "{w}/w_o.npy"},
                                                                       {"--output", "{w}/out/y.npy"},
                                                                       {"--weights", "{w}/out/a.npy"}};

const Row attend_rows[] = {
    {"attend", {"--heads", "abc"}, "--heads.*abc"},
    {"attend", {"--heads", "0"}, "--heads.*0"},
    {"attend", {"--heads", "-2"}, "--heads.*-2"},
    {"attend", {"--heads", "4000000000"}, "--heads.*4000000000"},
    {"attend", {"--heads", "99999999999999999999999"}, "--heads.*99999999999999999999999"},
    {"attend",
     {"--heads", "3"},
     "d_model = 4 \\(dimension 2 of --query\\) is not divisible by --heads 3: d_head would be 1.33"},
    {"attend", {"--heads", "-"}, "--heads"},
    {"attend", {"--query", "-"}, "--query"},
    {"attend", {"--output", "-"}, "--output"},
    {"attend", {"--query", "{w}/missing.npy"}, "missing.npy: no such file"},
    {"attend", {"--query", "{w}"}, "--query|is a directory|not a .npy"},
    {"attend", {"--query", "{w}/unreadable.npy"}, "unreadable.npy"},  // only when not root (root reads anything)
    {"attend", {"--query", "{w}/empty.npy"}, "empty.npy.*is empty"},
    {"attend", {"--query", "{w}/garbage.npy"}, "garbage.npy.*not a .npy file"},
    {"attend", {"--query", "{w}/magic_only.npy"}, "magic_only.npy"},
    {"attend", {"--query", "{w}/truncated.npy"}, "truncated.npy.*truncated"},
    {"attend", {"--query", "{w}/too_long.npy"}, "too_long.npy"},
    {"attend", {"--query", "{w}/header_past_end.npy"}, "header_past_end.npy"},
    {"attend", {"--query", "{w}/huge_shape.npy"}, "huge_shape.npy"},
    {"attend", {"--query", "{w}/overflowing_shape.npy"}, "overflowing_shape.npy"},
    {"attend", {"--query", "{w}/negative_shape.npy"}, "negative_shape.npy"},
    {"attend", {"--query", "{w}/zero_length.npy"}, "zero_length.npy"},
    {"attend", {"--query", "{w}/bad_version.npy"}, "bad_version.npy"},
    {"attend", {"--query", "{w}/bad_dict.npy"}, "bad_dict.npy"},
    {"attend", {"--query", "{w}/int64.npy"}, "int64.npy.*(int64|<i8|dtype)"},
    {"attend", {"--query", "{w}/float16.npy"}, "float16.npy.*(<f2|dtype|float16)"},
    {"attend", {"--query", "{w}/object.npy"}, "object.npy"},
    {"attend", {"--query", "{w}/bool_query.npy"}, "bool_query.npy.*bool"},
    {"attend", {"--query", "{w}/rank2.npy"}, "rank2.npy.*must have 3 dimensions"},
    {"attend", {"--query", "{w}/rank4.npy"}, "rank4.npy.*must have 3 dimensions"},
    {"attend", {"--query", "{w}/scalar.npy"}, "scalar.npy.*must have 3 dimensions"},
    {"attend", {"--query", "{w}/nan_query.npy"}, "nan_query.npy.*nan at \\(0, 1, 2\\)"},
    {"attend", {"--query", "{w}/inf_query.npy"}, "inf_query.npy.*inf at \\(0, 0, 3\\)"},
    {"attend", {"--in-proj-weight", "{w}/neg_inf_w_in.npy"}, "neg_inf_w_in.npy.*inf at \\(11, 3\\)"},
    {"attend",
     {"--in-proj-weight", "{w}/w_o.npy"},
     "--in-proj-weight has shape \\(4, 4\\) but must be \\(3 \\* d_model, d_model\\) = \\(12, 4\\)"},
    {"attend",
     {"--out-proj-weight", "{w}/w_in.npy"},
     "--out-proj-weight has shape \\(12, 4\\) but must be \\(d_model, d_model\\) = \\(4, 4\\)"},
    {"attend",
     {"--in-proj-bias", "{w}/bias4.npy"},
     "--in-proj-bias has shape \\(4,\\) but must be \\(3 \\* d_model\\) = \\(12\\)"},
    {"attend",
     {"--out-proj-bias", "{w}/bias12.npy"},
     "--out-proj-bias has shape \\(12,\\) but must be \\(d_model\\) = \\(4\\)"},
    {"attend",
     {"--key", "{w}/k_b2.npy", "--value", "{w}/k_b2.npy"},
     "--key has shape \\(2, 3, 4\\).*dimension 0 \\(B\\) is 2, not 1"},
    {"attend",
     {"--key", "{w}/k.npy", "--value", "{w}/q.npy"},
     "--value has shape \\(1, 2, 4\\).*dimension 1 \\(N_k\\) is 2, not 3"},
    {"attend", {"--key", "{w}/k.npy"}, "--value"},
    {"attend",
     {"--key-padding-mask", "{w}/mask_wrong.npy"},
     "--key-padding-mask has shape \\(1, 3\\).*dimension 1 \\(N_k\\) is 3, not 2"},
    {"attend", {"--key-padding-mask", "{w}/bias4.npy"}, "bias4.npy.*bool"},
    {"attend", {"--query", "{w}/huge_values.npy"}, "too large for float32"},
    // Valid files whose (B, H, N_q, N_k) weights would not fit in memory: refused before computing.
    {"attend",
     {"--query", "{w}/long_query.npy", "--in-proj-weight", "{w}/w_in2.npy", "--out-proj-weight", "{w}/w_o2.npy"},
     "attention weights \\(B, H, N_q, N_k\\) = \\(1, 2, 100000, 100000\\) would need [0-9]+ bytes"},
    {"attend", {"--output", "{w}/no/such/dir/y.npy"}, "--output.*does not exist"},
    {"attend", {"--output", "{w}/out"}, "--output.*is a directory"},
    {"attend", {"--output", "{w}/q.npy"}, "--output .*q.npy is also the --query input"},
    {"attend", {"--weights", "{w}/out/y.npy"}, "--output and --weights are the same file"},
    {"attend", {"--average-weights", "", "--weights", "-"}, "--weights"},
    {"attend", {"--no-such-flag", ""}, "--no-such-flag"},
    // --grad-output dY --grads DIR: the backward (dY must be the output's (1, 2, 4)).
    {"attend", {"--grads", "{w}/out"}, "--grads requires --grad-output"},
    {"attend", {"--grad-output", "{w}/q.npy"}, "--grad-output requires --grads"},
    {"attend",
     {"--grad-output", "{w}/k.npy", "--grads", "{w}/out"},
     "--grad-output has shape \\(1, 3, 4\\) but must be \\(B, N_q, d_model\\) = \\(1, 2, 4\\)"},
    {"attend", {"--grad-output", "{w}/nan_query.npy", "--grads", "{w}/out"}, "nan_query.npy.*nan at \\(0, 1, 2\\)"},
    {"attend", {"--grad-output", "{w}/q.npy", "--grads", "{w}/no/such/dir"}, "--grads .*does not exist"},
    {"attend", {"--grad-output", "{w}/q.npy", "--grads", "{w}/q.npy"}, "--grads .*is not a directory"},
};
const std::vector<Case> attend_cases = cases_of(attend_rows);

// ---- .npy bytes, written by hand -------------------------------------------------------------

std::string le16(std::uint16_t v) { return {char(v & 0xff), char(v >> 8)}; }

// A version 1.0 file: magic, version, header length, the dict padded with spaces to a multiple
// of 64 bytes and ended by '\n', then `data`.
std::string npy_file(const std::string& descr, const std::string& shape, const std::string& data) {
    std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
    const std::size_t unpadded = 10 + dict.size() + 1;
    dict.append((64 - unpadded % 64) % 64, ' ');
    dict += '\n';
    return std::string("\x93NUMPY\x01\x00", 8) + le16(static_cast<std::uint16_t>(dict.size())) + dict + data;
}

std::string floats(const std::vector<float>& v) {
    std::string out(v.size() * sizeof(float), '\0');
    std::memcpy(out.data(), v.data(), out.size());
    return out;
}
std::string f32(const std::string& shape, std::size_t count, float value = 0.1f) {
    return npy_file("<f4", shape, floats(std::vector<float>(count, value)));
}
std::string f32_with(const std::string& shape, std::size_t count, std::size_t at, float value) {
    std::vector<float> v(count, 0.1f);
    v[at] = value;
    return npy_file("<f4", shape, floats(v));
}

void write_workspace(const fs::path& w) {
    constexpr float inf = std::numeric_limits<float>::infinity();
    const std::map<std::string, std::string> files{
        {"q.npy", f32("(1, 2, 4)", 8)},
        {"w_in.npy", f32("(12, 4)", 48)},
        {"w_o.npy", f32("(4, 4)", 16)},
        {"k.npy", f32("(1, 3, 4)", 12)},
        {"k_b2.npy", f32("(2, 3, 4)", 24)},
        {"bias4.npy", f32("(4,)", 4)},
        {"bias12.npy", f32("(12,)", 12)},
        {"mask_wrong.npy", npy_file("|b1", "(1, 3)", std::string(3, '\0'))},
        {"unreadable.npy", f32("(1, 2, 4)", 8)},
        {"empty.npy", ""},
        {"garbage.npy", "PK\x03\x04 this is a zip file, not an array\n"},
        {"magic_only.npy", std::string("\x93NUMPY", 6)},
        {"truncated.npy", f32("(1, 2, 4)", 8).substr(0, 64 + 8 * 4 - 5)},
        {"too_long.npy", f32("(1, 2, 4)", 8) + "extra"},
        {"header_past_end.npy", std::string("\x93NUMPY\x01\x00", 8) + le16(60000) + "{'descr': '<f4'"},
        {"huge_shape.npy", npy_file("<f4", "(100000, 100000, 100000)", floats({0.1f}))},
        {"overflowing_shape.npy", npy_file("<f4", "(4294967296, 4294967296, 4294967296)", floats({0.1f}))},
        {"negative_shape.npy", npy_file("<f4", "(-1, 2, 4)", floats(std::vector<float>(8, 0.1f)))},
        {"zero_length.npy", npy_file("<f4", "(1, 0, 4)", "")},
        {"bad_version.npy", std::string("\x93NUMPY\x07\x00", 8) + f32("(1, 2, 4)", 8).substr(8)},
        {"bad_dict.npy", npy_file("<f4", "__import__('os')", floats(std::vector<float>(8, 0.1f)))},
        {"int64.npy", npy_file("<i8", "(1, 2, 4)", std::string(64, '\0'))},
        {"float16.npy", npy_file("<f2", "(1, 2, 4)", std::string(16, '\0'))},
        {"object.npy", npy_file("|O", "(1, 2, 4)", std::string(64, '\0'))},
        {"bool_query.npy", npy_file("|b1", "(1, 2, 4)", std::string(8, '\0'))},
        {"rank2.npy", f32("(2, 4)", 8)},
        {"rank4.npy", f32("(1, 1, 2, 4)", 8)},
        {"scalar.npy", f32("()", 1)},
        {"nan_query.npy", f32_with("(1, 2, 4)", 8, 6, std::numeric_limits<float>::quiet_NaN())},
        {"inf_query.npy", f32_with("(1, 2, 4)", 8, 3, inf)},
        {"neg_inf_w_in.npy", f32_with("(12, 4)", 48, 47, -inf)},
        {"huge_values.npy", f32("(1, 2, 4)", 8, 1e30f)},
        {"long_query.npy", f32("(1, 100000, 2)", 200000)},
        {"w_in2.npy", f32("(6, 2)", 12)},
        {"w_o2.npy", f32("(2, 2)", 4)},
        {"w_in_mqa.npy", f32("(8, 4)", 32)},  // H = 2, H_kv = 1, d_head = 2: 2*2 + 2*1*2 rows
    };
    for (const auto& [name, bytes] : files) write_text(w / name, bytes);
    fs::create_directory(w / "model");
    write_text(w / "model" / "config.json",
               R"({"vocab_size": 5, "hidden_size": 4, "num_hidden_layers": 1, "num_attention_heads": 2,)"
               R"( "intermediate_size": 8, "max_position_embeddings": 512, "type_vocab_size": 2})");
    write_text(w / "model" / "vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nword\n");
    write_text(w / "model" / "model.safetensors", std::string("\x40\0\0\0\0\0\0\0{\"a\":", 13));
    fs::permissions(w / "unreadable.npy", fs::perms::none);
    fs::create_directory(w / "out");
}

std::string substitute(std::string s, const fs::path& w) {
    for (std::size_t at; (at = s.find("{w}")) != std::string::npos;) s.replace(at, 3, w.string());
    return s;
}

// The full attend command line for a row: the defaults with the row's pairs applied.
std::vector<std::string> attend_command(const std::vector<std::string>& overrides) {
    auto flags = attend_defaults;
    for (std::size_t i = 0; i < overrides.size(); i += 2) {
        const std::string& flag = overrides[i];
        const std::string value = i + 1 < overrides.size() ? overrides[i + 1] : "";
        auto it = std::find_if(flags.begin(), flags.end(), [&](const auto& f) { return f.first == flag; });
        if (value == "-") {
            if (it != flags.end()) flags.erase(it);
        } else if (it != flags.end()) {
            it->second = value;
        } else {
            flags.emplace_back(flag, value);
        }
    }
    std::vector<std::string> args{"attend"};
    for (const auto& [flag, value] : flags) {
        args.push_back(flag);
        if (!value.empty()) args.push_back(value);
    }
    return args;
}

std::size_t entries(const fs::path& dir) {
    return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

}  // namespace

// `headwise train`: sizes the model cannot have, a run of no steps, outputs that cannot be written
// (refused before training starts, so nothing is left behind).
const Row train_rows[] = {
    {"headwise", {"train", "--heads", "5", "--steps", "1"}, "--heads 5 does not divide --d-model 64"},
    {"headwise", {"train", "--context", "7", "--steps", "1"}, "--context 7: a sequence needs at least 8 tokens"},
    {"headwise", {"train", "--vocab", "1", "--steps", "1"}, "--vocab 1: the vocabulary needs at least 2 tokens"},
    {"headwise", {"train", "--steps", "0"}, "--steps 0: expected a whole number from 1"},
    {"headwise", {"train", "--d-model", "0", "--steps", "1"}, "--d-model 0: expected a whole number from 1"},
    {"headwise", {"train", "--batch", "abc"}, "--batch.*abc"},
    {"headwise", {"train", "--lr", "0", "--steps", "1"}, "--lr 0: expected a number in \\(0, 1\\)"},
    {"headwise", {"train", "--lr", "nan", "--steps", "1"}, "--lr nan"},
    {"headwise", {"train", "--weight-decay", "-1", "--steps", "1"}, "--weight-decay -1"},
    {"headwise", {"train", "--threads", "-1", "--steps", "1"}, "--threads -1: expected a whole number from 1"},
    {"headwise",
     {"train", "--data", "periodic", "--steps", "1"},
     "--data periodic: expected random-repeat or fixed-period"},
    {"headwise",
     {"train", "--steps", "1", "--save", "{w}/out/no-such-dir/m.safetensors"},
     "m\\.safetensors.*cannot write"},
    {"headwise", {"train", "--steps", "1", "--save", "{w}/out"}, "is a directory"},
    {"headwise", {"train", "--steps", "1", "--log", "{w}/out/no-such-dir/loss.csv"}, "loss\\.csv.*cannot write"},
    {"headwise", {"train", "--no-such-flag"}, "--no-such-flag"},
};
const std::vector<Case> train_cases = cases_of(train_rows);

TEST_CASE("every bad input to every binary gets exit code 2, one line naming it, and no file",
          "[bad input][catalogue]") {
    TempDir tmp;
    const fs::path w = tmp / "w", cwd = tmp / "cwd", course = tmp / "course", build = tmp / "build";
    fs::create_directories(w);
    fs::create_directories(cwd);
    fs::create_directories(build);
    write_workspace(w);
    // The runner reads the real catalogue from a copy: a row that wrongly got through could not
    // touch the real exercises/ (the copy has none) or the real build tree.
    fs::create_directories(course);
    fs::copy_file(fs::path(HEADWISE_TEST_SOURCE_DIR) / "course.json", course / "course.json");
    fs::create_directory_symlink(HEADWISE_LESSON_DIR, build / "lessons");  // `run N -- <bad flags>` reaches the lesson
    const Env env{{"HEADWISE_SOURCE_DIR", course.string()},
                  {"HEADWISE_BINARY_DIR", build.string()},
                  {"XDG_DATA_HOME", (tmp / "data").string()},
                  {"HOME", (tmp / "home").string()},
                  {"HEADWISE_MODEL_DIR", (w / "model").string()}};
    const bool root = geteuid() == 0;

    std::vector<Case> cases = lesson_flag_cases();
    cases.insert(cases.end(), lesson_size_cases.begin(), lesson_size_cases.end());
    cases.insert(cases.end(), runner_cases.begin(), runner_cases.end());
    cases.insert(cases.end(), attend_cases.begin(), attend_cases.end());
    cases.insert(cases.end(), kv_cache_cases.begin(), kv_cache_cases.end());
    cases.insert(cases.end(), model_cases.begin(), model_cases.end());
    cases.insert(cases.end(), train_cases.begin(), train_cases.end());

    const fs::path saved_cwd = fs::current_path();
    fs::current_path(cwd);  // children inherit it: whatever a program writes relative lands here
    std::size_t tried = 0;
    for (const Case& c : cases) {
        if (root && c.args.size() > 1 && c.args[1].find("unreadable") != std::string::npos) continue;
        std::vector<std::string> args;
        std::string program;
        if (c.program == "attend") {
            program = HEADWISE_RUNNER_EXE;
            for (const auto& a : attend_command(c.args)) args.push_back(substitute(a, w));
        } else {
            program = c.program == "headwise" ? std::string(HEADWISE_RUNNER_EXE)
                                              : std::string(HEADWISE_LESSON_DIR "/") + c.program;
            for (const auto& a : c.args) args.push_back(substitute(a, w));
        }
        std::string shown = c.program == "attend" ? "headwise" : c.program;
        for (const auto& a : args) shown += " " + a;
        INFO(shown);

        TempDir io;
        Process p(args, env, io.path, std::nullopt, program);
        const Result r = p.wait(std::chrono::seconds(60));
        ++tried;
        INFO("exit " << r.code << ", stderr:\n" << r.err);
        CHECK(r.code == 2);
        CHECK(r.err_lines() == 1);
        CHECK(std::regex_search(r.err, std::regex(c.expect)));
        CHECK(entries(cwd) == 0);
        CHECK(entries(w / "out") == 0);
    }
    fs::current_path(saved_cwd);
    // The note in the issue quotes this figure.
    std::printf("bad-input catalogue: %zu inputs tried%s\n", tried,
                root ? " (running as root: the unreadable-file row is skipped)" : "");
    CHECK(tried >= 200);
}
