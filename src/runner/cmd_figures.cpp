// `headwise figures [--out DIR] [--lesson N ...]` -- regenerate the pictures in docs/figures/ by
// running every lesson that draws some (or lesson N's alone) with --save-figures DIR.
//
// Which lessons draw, and with which flags, is data: a lesson's course.json entry lists
// "figures": [flags...]. A new lesson with pictures adds that field, not a line here.
#include "common.hpp"
#include "headwise/io/figure.hpp"

#include <CLI/CLI.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <memory>

namespace headwise::runner {

namespace {

struct FigureRun {
    std::string lesson;              // "03_multi_head"
    std::vector<std::string> flags;  // passed before --save-figures
    bool needs_model = false;        // "needs_model": exit 2 without the cached model is a skip
};

std::vector<FigureRun> figure_runs() {
    std::ifstream in(source_dir() / "course.json");
    const auto j = nlohmann::json::parse(in);
    std::vector<FigureRun> out;
    for (const auto& l : j.at("lessons"))
        if (l.contains("figures")) {
            out.push_back({l.at("name").get<std::string>(), l.at("figures").get<std::vector<std::string>>(),
                           l.value("needs_model", false)});
        }
    return out;
}

// The runs `only` asks for (lesson numbers, as `run` takes them), or every run when it is empty.
std::vector<FigureRun> selected(std::vector<FigureRun> runs, const std::vector<int>& only) {
    if (only.empty()) return runs;
    for (const int n : only) {
        const auto draws = std::ranges::any_of(runs, [&](const FigureRun& r) { return std::stoi(r.lesson) == n; });
        if (!draws) throw usage_error(fmt::format("--lesson {}: no lesson {:02} draws figures (course.json)", n, n));
    }
    std::erase_if(runs, [&](const FigureRun& r) { return std::ranges::find(only, std::stoi(r.lesson)) == only.end(); });
    return runs;
}

int figures(const fs::path& out_dir, const std::vector<int>& only) {
    const fs::path dir = out_dir.empty() ? source_dir() / "docs" / "figures" : fs::absolute(out_dir);
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir))
        throw usage_error(fmt::format("--out {}: cannot create that directory", dir.string()));
    const auto runs = selected(figure_runs(), only);
    for (const auto& r : runs) {
        std::vector<std::string> args{(binary_dir() / "lessons" / r.lesson).string()};
        args.insert(args.end(), r.flags.begin(), r.flags.end());
        args.insert(args.end(), {"--quiet", "--save-figures", dir.string()});
        fmt::print("headwise: lesson {} draws its figures\n", r.lesson);
        const int rc = run_program(args);
        if (rc == 2 && r.needs_model) {  // lesson 07 without the model has said how to get it
            fmt::print("headwise: lesson {} skipped: it needs the model (scripts/fetch-model)\n", r.lesson);
            continue;
        }
        if (rc != 0) {
            fmt::print(stderr, "headwise: lesson {} exited with code {} while drawing its figures\n", r.lesson, rc);
            return rc;
        }
    }
    std::size_t count = 0;
    for (const auto& e : fs::directory_iterator(dir)) {
        if (e.path().extension() != ".png") continue;
        const auto size = figure::png_size(e.path());
        if (!size) {
            fmt::print(stderr, "headwise: {} is not a valid PNG\n", e.path().string());
            return 1;
        }
        ++count;
    }
    fmt::print("headwise: {} figures in {} from {} lessons\n", count, dir.string(), runs.size());
    return 0;
}

}  // namespace

void add_figures_command(CLI::App& app, Action& action) {
    auto out = std::make_shared<std::string>();
    auto only = std::make_shared<std::vector<int>>();
    auto* cmd = app.add_subcommand(
        "figures", "regenerate the pictures in docs/figures/ (PNG) by running the lessons that draw them");
    cmd->add_option("--out", *out, "write them here instead of docs/figures/");
    cmd->add_option("--lesson", *only, "only this lesson's figures (a number; may be given again)")
        ->check(CLI::Range(1, 99));
    cmd->callback([&action, out, only] { action = [out, only] { return figures(*out, *only); }; });
}

}  // namespace headwise::runner
