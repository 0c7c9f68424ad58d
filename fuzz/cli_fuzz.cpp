// Fuzz target: the lessons' command-line path. The input is split on spaces/newlines into argv
// and parsed exactly as a lesson does (cli::add_lesson_options + cli::parse), then the size
// checks every lesson runs before allocating. Any outcome but a crash is fine: exit code 2
// with one line is what the catalogue test checks on the real binaries. The error lines go to
// stderr like the real ones; run with -close_fd_mask=1 to drop --help's stdout.
#include "headwise/base/cli.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::vector<std::string> words{"fuzz_lesson"};
    std::string cur;
    for (std::size_t i = 0; i < size && i < 4096; ++i) {
        const char c = static_cast<char>(data[i]);
        if (c == ' ' || c == '\n' || c == '\0') {
            if (!cur.empty()) words.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    if (!cur.empty()) words.push_back(cur);
    std::vector<char*> argv;
    for (auto& w : words) argv.push_back(w.data());

    CLI::App app{"fuzz", "fuzz_lesson"};
    headwise::cli::LessonOptions o;
    headwise::cli::add_lesson_options(app, o, "batch,seq,d-model,heads,seed");
    if (headwise::cli::parse(app, static_cast<int>(argv.size()), argv.data()) >= 0) return 0;
    (void)headwise::cli::guard("fuzz_lesson", [&] {
        const auto& d = o.dims;
        headwise::cli::require_divisible(d.d_model, d.heads);
        const std::size_t n = headwise::cli::checked_product({d.batch, d.heads, d.seq, d.seq}, "weights");
        headwise::cli::require_memory(4 * n, "weights");
        return 0;
    });
    return 0;
}
