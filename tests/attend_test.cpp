// tests for `headwise attend`, run as the real binary: it matches torch.nn.MultiheadAttention on
// every committed fixture (tests/fixtures/attend, written by scripts/make-fixtures), and each
// kind of bad input gets one line on stderr, exit code 2 and no output file.
#include "runner_test.hpp"

#include "headwise/reference/attention.hpp"
#include "headwise/inference/kv_cache.hpp"
#include "headwise/io/npy.hpp"

#include <catch2/catch.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <limits>
#include <set>

using namespace headwise;
using namespace headwise::test;
using Catch::Matchers::Contains;

namespace {

const fs::path fixtures = fs::path(HEADWISE_FIXTURES_DIR) / "attend";
// --kv-heads: tests/fixtures/gqa, written by scripts/make-fixtures-gqa.
const fs::path gqa_fixtures = fs::path(HEADWISE_FIXTURES_DIR) / "gqa";
// --rope and --alibi (lesson 09): tests/fixtures/positions, written by scripts/make-fixtures-positions.
const fs::path positions_fixtures = fs::path(HEADWISE_FIXTURES_DIR) / "positions";
constexpr double tolerance = 1e-5;

// The manifest.json of one fixture folder: its cases and what each one was made with.
nlohmann::json manifest(const fs::path& root = fixtures) {
    std::ifstream in(root / "manifest.json");
    return nlohmann::json::parse(in);
}

// The attend command line for one manifest case, writing into `out`.
std::vector<std::string> attend_args(const nlohmann::json& c, const fs::path& out, bool weights,
                                     const fs::path& root = fixtures) {
    const fs::path dir = root / c.at("name").get<std::string>();
    std::vector<std::string> args{"attend", "--heads", std::to_string(c.at("heads").get<int>()), "--output",
                                  (out / "y.npy").string()};
    const std::pair<const char*, const char*> flags[] = {{"query", "--query"},
                                                         {"key", "--key"},
                                                         {"value", "--value"},
                                                         {"in_proj_weight", "--in-proj-weight"},
                                                         {"in_proj_bias", "--in-proj-bias"},
                                                         {"out_proj_weight", "--out-proj-weight"},
                                                         {"out_proj_bias", "--out-proj-bias"},
                                                         {"key_padding_mask", "--key-padding-mask"}};
    for (const auto& [name, flag] : flags) {
        if (c.at("inputs").contains(name)) {
            args.push_back(flag);
            args.push_back((dir / c.at("inputs").at(name).get<std::string>()).string());
        }
    }
    if (c.at("causal").get<bool>()) args.push_back("--causal");
    if (weights) {
        args.push_back("--weights");
        args.push_back((out / "a.npy").string());
        if (c.at("average_weights").get<bool>()) args.push_back("--average-weights");
    }
    return args;
}

template <std::size_t R>
Tensor<R> load(const fs::path& file) {
    return npy::to_tensor<R>(npy::read(file), file.filename().string());
}

// The largest difference between our tensor file and PyTorch's, which must have the same shape.
template <std::size_t R>
double difference(const fs::path& ours, const fs::path& torch) {
    const Tensor<R> a = load<R>(ours), b = load<R>(torch);
    REQUIRE(std::equal(a.shape().begin(), a.shape().end(), b.shape().begin(), b.shape().end()));
    return max_abs_diff(a, b);
}

// Runs `headwise attend` on fixture case `c` of `root` (with `more` flags after the case's own) and
// checks the output y and the weights against PyTorch's within `tolerance`. Returns the larger
// difference and the run's stdout.
std::pair<double, std::string> attend_matches_torch(const nlohmann::json& c, const fs::path& root,
                                                    const std::vector<std::string>& more = {}) {
    const fs::path expected = root / c.at("name").get<std::string>();
    TempDir out;
    std::vector<std::string> args = attend_args(c, out.path, true, root);
    args.insert(args.end(), more.begin(), more.end());
    const Result r = run_headwise(args);
    INFO("stderr: " << r.err);
    REQUIRE(r.code == 0);
    const double dy = difference<3>(out / "y.npy", expected / "output.npy");
    const double dw = c.at("average_weights").get<bool>()
                          ? difference<3>(out / "a.npy", expected / "weights.npy")   // (B, N_q, N_k)
                          : difference<4>(out / "a.npy", expected / "weights.npy");  // (B, H, N_q, N_k)
    CHECK(dy <= tolerance);
    CHECK(dw <= tolerance);
    return {std::max(dy, dw), r.out};
}

std::size_t files_in(const fs::path& dir) {
    return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

// A valid self-attention problem (d_model 32, 4 heads) whose files a test may replace one by one.
struct Problem {
    TempDir dir;
    std::map<std::string, std::string> files;  // flag -> path
    std::vector<std::string> extra{"--heads", "4"};

    Problem() {
        const fs::path src = fixtures / "self_d32_h4_bias";
        for (const auto& [flag, name] :
             std::vector<std::pair<std::string, std::string>>{{"--query", "query.npy"},
                                                              {"--in-proj-weight", "in_proj_weight.npy"},
                                                              {"--in-proj-bias", "in_proj_bias.npy"},
                                                              {"--out-proj-weight", "out_proj_weight.npy"},
                                                              {"--out-proj-bias", "out_proj_bias.npy"}}) {
            fs::copy_file(src / name, dir / name);
            files[flag] = (dir / name).string();
        }
        fs::create_directory(dir / "out");
    }
    fs::path out() const { return dir / "out"; }
    // Writes `bytes` as a new input file for `flag`.
    void replace(const std::string& flag, const std::string& bytes) {
        const fs::path p = dir / ("replaced" + flag + ".npy");
        write_text(p, bytes);
        files[flag] = p.string();
    }
    template <std::size_t R>
    void replace(const std::string& flag, const Tensor<R>& t) {
        replace(flag, npy::encode(t));
    }
    // Only the required inputs (no biases, no --weights) plus `more`.
    Result run_bare(const std::vector<std::string>& more) const {
        std::vector<std::string> args{"attend", "--heads", "4"};
        for (const char* flag : {"--query", "--in-proj-weight", "--out-proj-weight"}) {
            args.push_back(flag);
            args.push_back(files.at(flag));
        }
        args.insert(args.end(), more.begin(), more.end());
        return run_headwise(args);
    }
    Result run(std::vector<std::string> more = {}) const {
        std::vector<std::string> args{"attend", "--output", (out() / "y.npy").string(), "--weights",
                                      (out() / "a.npy").string()};
        for (const auto& [flag, file] : files) {
            args.push_back(flag);
            args.push_back(file);
        }
        args.insert(args.end(), extra.begin(), extra.end());
        args.insert(args.end(), more.begin(), more.end());
        return run_headwise(args);
    }
};

// Bad input: exit 2, exactly one line on stderr containing `expect`, nothing in the output dir.
void require_refused(const Problem& p, const Result& r, const std::string& expect) {
    INFO("stderr: " << r.err);
    CHECK(r.code == 2);
    CHECK(r.err_lines() == 1);
    CHECK_THAT(r.err, Contains(expect));
    CHECK(files_in(p.out()) == 0);
}

}  // namespace

TEST_CASE("attend matches torch.nn.MultiheadAttention on every fixture", "[attend]") {
    const auto cases = manifest().at("cases");
    REQUIRE(cases.size() >= 10);
    double worst = 0.0;
    for (const auto& c : cases) {
        INFO("case " << c.at("name").get<std::string>());
        worst = std::max(worst, attend_matches_torch(c, fixtures).first);
    }
    INFO("largest difference from PyTorch over all fixtures: " << worst);
    CHECK(worst <= tolerance);
}

TEST_CASE("attend writes float32 output only, and no weights file unless asked", "[attend]") {
    const auto c = manifest().at("cases").at(0);
    TempDir out;
    const Result r = run_headwise(attend_args(c, out.path, false));
    REQUIRE(r.code == 0);
    CHECK(files_in(out.path) == 1);
    CHECK(npy::read(out / "y.npy").dtype == npy::DType::float32);
    CHECK_THAT(r.out, Contains("(2, 5, 32)"));
}

TEST_CASE("attend refuses unreadable and malformed npy files", "[attend][bad input]") {
    SECTION("missing file") {
        Problem p;
        p.files["--query"] = (p.dir / "nope.npy").string();
        require_refused(p, p.run(), "nope.npy: no such file");
    }
    SECTION("not a npy file") {
        Problem p;
        p.replace("--query", "just some text\n");
        require_refused(p, p.run(), "not a .npy file");
    }
    SECTION("empty file") {
        Problem p;
        p.replace("--in-proj-weight", "");
        require_refused(p, p.run(), "is empty");
    }
    SECTION("truncated data") {
        Problem p;
        const std::string good = read_text(p.files["--query"]);
        p.replace("--query", good.substr(0, good.size() - 10));
        require_refused(p, p.run(), "truncated");
    }
    SECTION("wrong dtype") {
        Problem p;
        p.files["--query"] = (fs::path(HEADWISE_FIXTURES_DIR) / "npy" / "arange_2x3_int64.npy").string();
        require_refused(p, p.run(), "int64");
    }
    SECTION("wrong rank") {
        Problem p;
        p.replace("--query", Tensor2(xt::zeros<float>({5, 32})));
        require_refused(p, p.run(), "must have 3 dimensions");
    }
}

TEST_CASE("attend refuses NaN and Inf inputs naming file and position", "[attend][bad input]") {
    Problem p;
    Tensor3 q = load<3>(p.files["--query"]);
    SECTION("NaN in the query") {
        q(1, 2, 3) = std::numeric_limits<float>::quiet_NaN();
        p.replace("--query", q);
        require_refused(p, p.run(), "nan at (1, 2, 3)");
    }
    SECTION("Inf in a weight") {
        Tensor2 w = load<2>(p.files["--out-proj-weight"]);
        w(0, 5) = std::numeric_limits<float>::infinity();
        p.replace("--out-proj-weight", w);
        require_refused(p, p.run(), "inf at (0, 5)");
    }
    SECTION("finite inputs whose scores overflow float32") {
        q.fill(1e30f);
        p.replace("--query", q);
        require_refused(p, p.run(), "too large for float32");
    }
}

TEST_CASE("attend refuses shapes that do not fit, naming both shapes and the dimension", "[attend][bad input]") {
    Problem p;
    SECTION("d_model not divisible by heads") {
        p.extra = {"--heads", "5"};
        require_refused(p, p.run(),
                        "d_model = 32 (dimension 2 of --query) is not divisible by --heads 5: d_head would be 6.4");
    }
    SECTION("in_proj_weight transposed") {
        p.replace("--in-proj-weight", Tensor2(xt::zeros<float>({32, 96})));
        const Result r = p.run();
        require_refused(p, r, "--in-proj-weight has shape (32, 96) but must be (3 * d_model, d_model) = (96, 32)");
        CHECK_THAT(r.err, Contains("--query (2, 5, 32)") && Contains("dimension 0 (3 * d_model) is 32, not 96"));
    }
    SECTION("key batch differs from the query's") {
        p.replace("--key", Tensor3(xt::zeros<float>({3, 7, 32})));
        p.replace("--value", Tensor3(xt::zeros<float>({3, 7, 32})));
        require_refused(p, p.run(),
                        "--key has shape (3, 7, 32) but must be (B, N_k, d_model) = (2, N_k, 32) to fit --query (2, 5, "
                        "32): dimension 0 (B) is 3, not 2");
    }
    SECTION("value length differs from the key's") {
        Tensor3 k = Tensor3::from_shape({2, 7, 32});
        k.fill(0.5f);
        Tensor3 v = Tensor3::from_shape({2, 6, 32});
        v.fill(0.5f);
        p.replace("--key", k);
        p.replace("--value", v);
        require_refused(p, p.run(), "dimension 1 (N_k) is 6, not 7");
    }
    SECTION("bias of the wrong length") {
        p.replace("--out-proj-bias", Tensor1(xt::zeros<float>({33})));
        require_refused(p, p.run(), "--out-proj-bias has shape (33,) but must be (d_model) = (32)");
    }
    SECTION("key padding mask of the wrong shape") {
        p.files["--key-padding-mask"] = (fs::path(HEADWISE_FIXTURES_DIR) / "npy" / "mask_2x3_bool.npy").string();
        require_refused(p, p.run(), "dimension 1 (N_k) is 3, not 5");
    }
    SECTION("float key padding mask") {
        p.replace("--key-padding-mask", Tensor2(xt::zeros<float>({2, 5})));
        require_refused(p, p.run(), "must be a bool array");
    }
}

TEST_CASE("attend refuses bad flags and output paths without writing anything", "[attend][bad input]") {
    Problem p;
    SECTION("heads zero") {
        p.extra = {"--heads", "0"};
        require_refused(p, p.run(), "--heads");
    }
    SECTION("heads negative") {
        p.extra = {"--heads", "-4"};
        require_refused(p, p.run(), "--heads");
    }
    SECTION("heads not a number") {
        p.extra = {"--heads", "four"};
        require_refused(p, p.run(), "--heads");
    }
    SECTION("key without value") {
        p.files["--key"] = p.files["--query"];
        require_refused(p, p.run(), "--value");
    }
    SECTION("average weights without weights") {
        const Result r = p.run_bare({"--output", (p.out() / "y.npy").string(), "--average-weights"});
        require_refused(p, r, "--weights");
    }
    SECTION("unknown flag") { require_refused(p, p.run({"--bias-kv"}), "--bias-kv"); }
    SECTION("output directory missing") {
        const Result r = p.run_bare({"--output", (p.out() / "no" / "y.npy").string()});
        require_refused(p, r, "does not exist");
    }
    SECTION("output over an input") {
        const std::string before = read_text(p.files["--query"]);
        const Result r = p.run_bare({"--output", p.files["--query"]});
        require_refused(p, r, "is also the --query input");
        CHECK(read_text(p.files["--query"]) == before);
    }
    SECTION("output and weights the same file") {
        const Result r =
            p.run_bare({"--output", (p.out() / "y.npy").string(), "--weights", (p.out() / "y.npy").string()});
        require_refused(p, r, "the same file");
    }
}

TEST_CASE("attend leaves an existing output untouched when it fails", "[attend][bad input]") {
    Problem p;
    write_text(p.out() / "y.npy", "previous result");
    p.extra = {"--heads", "3"};
    const Result r = p.run();
    CHECK(r.code == 2);
    CHECK(read_text(p.out() / "y.npy") == "previous result");
    CHECK(files_in(p.out()) == 1);  // and no temporary file beside it
}

// ---------------------------------------------------------------------------------------------
// --kv-heads: grouped-query attention against PyTorch, which repeats K/V heads with
// repeat_interleave and then attends (tests/fixtures/gqa, scripts/make-fixtures-gqa).

TEST_CASE("attend --kv-heads matches grouped-query attention computed in PyTorch", "[attend][gqa]") {
    const auto cases = manifest(gqa_fixtures).at("cases");
    REQUIRE(cases.size() >= 6);
    double worst = 0.0;
    std::set<std::string> kinds;
    for (const auto& c : cases) {
        INFO("case " << c.at("name").get<std::string>());
        const int h = c.at("heads").get<int>(), kvh = c.at("kv_heads").get<int>();
        kinds.insert(kvh == h ? "MHA" : kvh == 1 ? "MQA" : "GQA");
        const auto [difference, out] = attend_matches_torch(c, gqa_fixtures, {"--kv-heads", std::to_string(kvh)});
        CHECK_THAT(out, Contains(fmt::format("H_kv = {} key/value heads", kvh)));
        worst = std::max(worst, difference);
    }
    CHECK(kinds == std::set<std::string>{"GQA", "MHA", "MQA"});  // H_kv = H, 1, and in between
    INFO("largest difference from PyTorch over the GQA fixtures: " << worst);
    CHECK(worst <= tolerance);
}

TEST_CASE("attend --kv-heads H gives the multi-head result on the same weights", "[attend][gqa]") {
    const auto c = manifest().at("cases").at(0);  // an nn.MultiheadAttention fixture, H = 4
    TempDir out;
    std::vector<std::string> args = attend_args(c, out.path, true);
    args.insert(args.end(), {"--kv-heads", std::to_string(c.at("heads").get<int>())});
    const Result r = run_headwise(args);
    INFO("stderr: " << r.err);
    REQUIRE(r.code == 0);
    const std::string name = c.at("name").get<std::string>();
    CHECK(max_abs_diff(load<3>(out / "y.npy"), load<3>(fixtures / name / "output.npy")) <= tolerance);
}

TEST_CASE("attend refuses --kv-heads that do not divide --heads, and the MHA layout with fewer K/V heads",
          "[attend][gqa][bad input]") {
    SECTION("H_kv does not divide H") {
        Problem p;
        require_refused(p, p.run({"--kv-heads", "3"}), "--kv-heads 3 does not divide --heads 4");
    }
    SECTION("in_proj_weight still (3 * d_model, d_model)") {
        Problem p;  // d_model 32, H 4, d_head 8: H_kv = 2 needs 32 + 2 * 2 * 8 = 64 rows, not 96
        require_refused(
            p, p.run({"--kv-heads", "2"}),
            "--in-proj-weight has shape (96, 32) but must be (H*d_head + 2*H_kv*d_head, d_model) = (64, 32)");
    }
}

TEST_CASE("the library's prefill + decode steps match PyTorch's KV-cache decode and its full forward",
          "[attend][gqa][kv_cache]") {
    const auto cases = manifest(gqa_fixtures).at("decode_cases");
    REQUIRE(cases.size() >= 3);
    for (const auto& c : cases) {
        const std::string name = c.at("name").get<std::string>();
        INFO("case " << name);
        const fs::path dir = gqa_fixtures / name;
        const GroupedQueryAttention m{c.at("heads").get<std::size_t>(),     c.at("kv_heads").get<std::size_t>(),
                                      load<2>(dir / "in_proj_weight.npy"),  load<1>(dir / "in_proj_bias.npy"),
                                      load<2>(dir / "out_proj_weight.npy"), load<1>(dir / "out_proj_bias.npy")};
        const Tensor3 x = load<3>(dir / "x.npy");  // (B, N, d_model)
        const std::size_t batch = x.shape()[0], n = x.shape()[1], prompt = c.at("prompt").get<std::size_t>();
        KVCache cache(batch, m.kv_heads, m.d_head(), n);
        Tensor3 y = Tensor3::from_shape(x.shape());
        xt::view(y, xt::all(), xt::range(0, prompt), xt::all()) =
            prefill(m, cache, xt::view(x, xt::all(), xt::range(0, prompt), xt::all()));
        for (std::size_t t = prompt; t < n; ++t)
            xt::view(y, xt::all(), xt::range(t, t + 1), xt::all()) =
                decode_step(m, cache, xt::view(x, xt::all(), xt::range(t, t + 1), xt::all()));
        CHECK(max_abs_diff(y, load<3>(dir / "decoded.npy")) <= tolerance);
        CHECK(max_abs_diff(y, load<3>(dir / "full.npy")) <= tolerance);
    }
}

// ---------------------------------------------------------------------------------------------
// --rope and --alibi (lesson 09): tests/fixtures/positions/attend_*, written by
// scripts/make-fixtures-positions (RoPE through transformers' Llama apply_rotary_pos_emb or a
// complex-product interleaved reference, the ALiBi bias from the paper's slopes, attention in torch).

TEST_CASE("attend --rope and --alibi match RoPE and ALiBi attention computed in PyTorch", "[attend][positions]") {
    const auto cases = manifest(positions_fixtures).at("attend_cases");
    REQUIRE(cases.size() >= 6);
    double worst = 0.0;
    std::set<std::string> kinds;
    for (const auto& c : cases) {
        INFO("case " << c.at("name").get<std::string>());
        nlohmann::json as_attend = c;  // attend_args reads the gqa/attend manifests' fields
        as_attend["average_weights"] = false;
        std::vector<std::string> more;
        if (!c.at("kv_heads").is_null()) {
            more.insert(more.end(), {"--kv-heads", std::to_string(c.at("kv_heads").get<int>())});
            kinds.insert("kv-heads");
        }
        if (!c.at("rope").is_null()) {
            const auto& rope = c.at("rope");
            more.insert(more.end(), {"--rope", "--rope-layout", rope.at("layout").get<std::string>(), "--rope-base",
                                     fmt::format("{}", rope.at("base").get<double>()), "--positions-from",
                                     std::to_string(rope.at("positions_from").get<int>())});
            kinds.insert("rope " + rope.at("layout").get<std::string>());
        }
        if (c.at("alibi").get<bool>()) {
            more.push_back("--alibi");
            kinds.insert(c.at("causal").get<bool>() ? "alibi causal" : "alibi bidirectional");
        }
        worst = std::max(worst, attend_matches_torch(as_attend, positions_fixtures, more).first);
    }
    CHECK(kinds ==
          std::set<std::string>{"kv-heads", "rope half", "rope interleaved", "alibi causal", "alibi bidirectional"});
    WARN("largest difference from PyTorch over the RoPE/ALiBi attend fixtures: " << worst);
}

TEST_CASE("attend --rope: the layout and the first position change the result", "[attend][positions]") {
    Problem p;  // d_model 32, H 4: d_head 8
    const auto output = [&](const std::vector<std::string>& more) {
        const Result r = p.run(more);
        INFO("stderr: " << r.err);
        REQUIRE(r.code == 0);
        return load<3>(p.out() / "y.npy");
    };
    const Tensor3 plain = output({"--causal"}), half = output({"--causal", "--rope"});
    const Tensor3 inter = output({"--causal", "--rope", "--rope-layout", "interleaved"});
    const Tensor3 later = output({"--causal", "--rope", "--positions-from", "50"});
    CHECK(max_abs_diff(half, plain) > 1e-3);
    CHECK(max_abs_diff(inter, half) > 1e-3);
    // Shifting every position by 50 keeps every distance: the same scores, to float rounding.
    CHECK(max_abs_diff(later, half) < 1e-4);
}

TEST_CASE("attend refuses bad --rope and --alibi combinations with one line", "[attend][positions][bad input]") {
    SECTION("an odd d_head with --rope") {
        Problem p;  // d_model 32 over 32 heads: d_head 1
        p.extra = {"--heads", "32"};
        require_refused(p, p.run({"--rope"}),
                        "--rope rotates pairs of dimensions: d_head = d_model 32 / --heads 32 = 1");
    }
    SECTION("a negative base") {
        Problem p;
        require_refused(p, p.run({"--rope", "--rope-base", "-5"}), "RoPE base must be a finite number > 1");
    }
    SECTION("a zero base") {
        Problem p;
        require_refused(p, p.run({"--rope", "--rope-base", "0"}), "RoPE base must be a finite number > 1");
    }
    SECTION("--rope-layout without --rope") {
        Problem p;
        require_refused(p, p.run({"--rope-layout", "interleaved"}), "--rope-layout requires --rope");
    }
    SECTION("--rope-base without --rope") {
        Problem p;
        require_refused(p, p.run({"--rope-base", "500000"}), "--rope-base requires --rope");
    }
    SECTION("--positions-from without --rope") {
        Problem p;
        require_refused(p, p.run({"--alibi", "--positions-from", "3"}), "--positions-from requires --rope");
    }
    SECTION("an unknown layout") {
        Problem p;
        require_refused(p, p.run({"--rope", "--rope-layout", "diagonal"}), "--rope-layout");
    }
}

TEST_CASE("attend prints the thread count it uses, and refuses a bad HEADWISE_THREADS in one line", "[attend]") {
    const auto c = manifest().at("cases").at(0);
    {
        TempDir out;
        const Result r = run_headwise(attend_args(c, out.path, false), {{"HEADWISE_THREADS", "3"}});
        INFO("stderr: " << r.err);
        REQUIRE(r.code == 0);
        CHECK_THAT(r.out, Contains("threads  3"));
    }
    for (const std::string bad : {"0", "many", "-1"}) {
        TempDir out;
        const Result r = run_headwise(attend_args(c, out.path, false), {{"HEADWISE_THREADS", bad}});
        INFO("HEADWISE_THREADS=" << bad << ", stderr: " << r.err);
        CHECK(r.code == 2);
        CHECK(r.err_lines() == 1);
        CHECK_THAT(r.err, Contains("HEADWISE_THREADS") && Contains("'" + bad + "'"));
        CHECK(files_in(out.path) == 0);
    }
}

TEST_CASE("attend runs on the kernels HEADWISE_ISA names, and refuses an unknown one in one line", "[attend]") {
    const auto c = manifest().at("cases").at(0);
    {
        TempDir out;
        const Result r = run_headwise(attend_args(c, out.path, false), {{"HEADWISE_ISA", "scalar"}});
        INFO("stderr: " << r.err);
        CHECK(r.code == 0);  // BLAS tiles and plain exponentials: every CPU has them
    }
    TempDir out;
    const Result r = run_headwise(attend_args(c, out.path, false), {{"HEADWISE_ISA", "avx1024"}});
    INFO("stderr: " << r.err);
    CHECK(r.code == 2);
    CHECK(r.err_lines() == 1);
    CHECK_THAT(r.err, Contains("HEADWISE_ISA=avx1024") && Contains("scalar, avx2, avx512"));
}
