// `headwise attend --grad-output dY.npy --grads DIR`, run as the real binary: every gradient it
// writes matches PyTorch's float64 autograd (tests/fixtures/backward/attend_*, written by
// scripts/make-fixtures-backward) within 1e-4 relative, and bad --grads input gets one line on
// stderr, exit code 2 and no .npy in DIR.
#include "runner_test.hpp"

#include "headwise/io/npy.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <set>

using namespace headwise;
using namespace headwise::test;
using Catch::Matchers::Contains;

namespace {

const fs::path fixtures = fs::path(HEADWISE_FIXTURES_DIR) / "backward";

nlohmann::json attend_cases() {
    std::ifstream in(fixtures / "manifest.json");
    return nlohmann::json::parse(in).at("attend_cases");
}

// The attend command line for one fixture case: its inputs, flags and dY; outputs into `out`.
std::vector<std::string> attend_args(const nlohmann::json& c, const fs::path& out, const fs::path& grads) {
    const fs::path dir = fixtures / c.at("name").get<std::string>();
    std::vector<std::string> args{"attend",
                                  "--heads",
                                  std::to_string(c.at("heads").get<int>()),
                                  "--output",
                                  (out / "y.npy").string(),
                                  "--grad-output",
                                  (dir / "grad_output.npy").string(),
                                  "--grads",
                                  grads.string()};
    for (const char* name : {"query", "key", "value", "in_proj_weight", "in_proj_bias", "out_proj_weight",
                             "out_proj_bias", "key_padding_mask"}) {
        if (!fs::exists(dir / (std::string(name) + ".npy"))) continue;
        std::string flag = "--" + std::string(name);
        std::replace(flag.begin(), flag.end(), '_', '-');
        args.insert(args.end(), {flag, (dir / (std::string(name) + ".npy")).string()});
    }
    if (c.at("causal").get<bool>()) args.push_back("--causal");
    if (!c.at("kv_heads").is_null())
        args.insert(args.end(), {"--kv-heads", std::to_string(c.at("kv_heads").get<int>())});
    if (!c.at("rope").is_null()) {
        const auto& rope = c.at("rope");
        args.insert(args.end(), {"--rope", "--rope-layout", rope.at("layout").get<std::string>(), "--rope-base",
                                 fmt::format("{}", rope.at("base").get<double>()), "--positions-from",
                                 std::to_string(rope.at("positions_from").get<int>())});
    }
    if (c.at("alibi").get<bool>()) args.push_back("--alibi");
    return args;
}

// Largest |got - want| over the largest |want|, both read from .npy files.
double relative_error(const fs::path& got_file, const fs::path& want_file) {
    const npy::Array got = npy::read(got_file), want = npy::read(want_file);
    REQUIRE(got.dtype == npy::DType::float32);
    REQUIRE(got.shape == want.shape);
    double diff = 0.0, scale = 0.0;
    for (std::size_t i = 0; i < want.values.size(); ++i) {
        diff = std::max(diff, std::abs(got.values[i] - want.values[i]));
        scale = std::max(scale, std::abs(want.values[i]));
    }
    return diff / std::max(scale, 1e-30);
}

std::set<std::string> npy_files_in(const fs::path& dir) {
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
    return names;
}

// The first fixture (self-attention with biases) with its flags as a list a test can change.
struct Run {
    TempDir out, grads;
    std::vector<std::string> args = attend_args(attend_cases().at(0), out.path, grads.path);
    void set(const std::string& flag, const std::string& value) {
        const auto it = std::find(args.begin(), args.end(), flag);
        REQUIRE(it != args.end());
        *(it + 1) = value;
    }
    void drop(const std::string& flag) {
        const auto it = std::find(args.begin(), args.end(), flag);
        REQUIRE(it != args.end());
        args.erase(it, it + 2);
    }
};

void require_refused(const Result& r, const std::string& expect, const fs::path& grads) {
    INFO("stderr: " << r.err);
    CHECK(r.code == 2);
    CHECK(r.err_lines() == 1);
    CHECK_THAT(r.err, Contains(expect));
    for (const auto& e : fs::directory_iterator(grads))  // no file (temporary or not) left behind
        CHECK_FALSE(e.is_regular_file());
}

}  // namespace

TEST_CASE("attend --grads: every gradient matches PyTorch's float64 autograd within 1e-4 relative",
          "[attend][backward]") {
    const auto cases = attend_cases();
    REQUIRE(cases.size() >= 12);
    std::set<std::string> kinds;
    double worst = 0.0;
    for (const auto& c : cases) {
        const std::string name = c.at("name");
        INFO("case " << name);
        TempDir out, grads;
        const Result r = run_headwise(attend_args(c, out.path, grads.path));
        INFO("stderr: " << r.err);
        REQUIRE(r.code == 0);
        CHECK(relative_error(out / "y.npy", fixtures / name / "grads" / "output.npy") < 1e-5);
        std::set<std::string> want;
        for (const auto& g : c.at("grads")) want.insert(g.get<std::string>() + ".npy");
        CHECK(npy_files_in(grads.path) == want);  // one per input that has a gradient, nothing else
        for (const auto& file : want) {
            INFO(file);
            const double e = relative_error(grads / file, fixtures / name / "grads" / file);
            CHECK(e < 1e-4);
            worst = std::max(worst, e);
        }
        if (!c.at("self_attention").get<bool>()) kinds.insert("cross");
        if (c.at("query_len") != c.at("key_len")) kinds.insert("N_q != N_k");
        if (c.at("key_padding").get<bool>()) kinds.insert("key padding");
        if (c.at("causal").get<bool>()) kinds.insert("causal");
        if (c.at("bias").get<bool>()) kinds.insert("biases");
        if (!c.at("kv_heads").is_null()) kinds.insert(c.at("kv_heads").get<int>() == 1 ? "MQA" : "GQA");
        if (!c.at("rope").is_null()) kinds.insert("rope " + c.at("rope").at("layout").get<std::string>());
        if (c.at("alibi").get<bool>()) kinds.insert("alibi");
        if (c.at("query_len").get<int>() == 1) kinds.insert("N = 1");
    }
    CHECK(kinds == std::set<std::string>{"cross", "N_q != N_k", "key padding", "causal", "biases", "MQA", "GQA",
                                         "rope half", "rope interleaved", "alibi", "N = 1"});
    WARN("largest relative difference from PyTorch's gradients: " << worst);
}

TEST_CASE("attend --grads refuses bad input with one line and leaves no .npy in DIR", "[attend][backward][bad input]") {
    Run run;
    SECTION("--grads without --grad-output") {
        run.drop("--grad-output");
        require_refused(run_headwise(run.args), "--grad-output", run.grads.path);
    }
    SECTION("--grad-output without --grads") {
        run.drop("--grads");
        require_refused(run_headwise(run.args), "--grads", run.grads.path);
    }
    SECTION("a dY whose shape is not the output's") {
        run.set("--grad-output", (fixtures / "attend_cross_nq3_nk6_d24_h3_bias" / "grad_output.npy").string());
        require_refused(run_headwise(run.args),
                        "--grad-output has shape (2, 3, 24) but must be (B, N_q, d_model) = (2, 5, 32)",
                        run.grads.path);
    }
    SECTION("a DIR that does not exist") {
        run.set("--grads", (run.grads / "no" / "such").string());
        require_refused(run_headwise(run.args), "does not exist", run.grads.path);
    }
    SECTION("a DIR that is a file") {
        write_text(run.out / "file", "x");
        run.set("--grads", (run.out / "file").string());
        require_refused(run_headwise(run.args), "is not a directory", run.grads.path);
    }
    SECTION("a DIR whose query.npy is the --query input") {
        run.set("--grads", (fixtures / "attend_self_d32_h4_bias").string());
        const std::string before = read_text(fixtures / "attend_self_d32_h4_bias" / "query.npy");
        require_refused(run_headwise(run.args), "would overwrite the input", run.grads.path);
        CHECK(read_text(fixtures / "attend_self_d32_h4_bias" / "query.npy") == before);
    }
    SECTION("a DIR where one gradient cannot be written: none is, nor the output") {
        fs::create_directory(run.grads / "out_proj_weight.npy");
        const Result r = run_headwise(run.args);
        require_refused(r, "out_proj_weight.npy is a directory", run.grads.path);
        CHECK(npy_files_in(run.grads.path) == std::set<std::string>{"out_proj_weight.npy"});
        CHECK(npy_files_in(run.out.path).empty());
    }
}
