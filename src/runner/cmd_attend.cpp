// `headwise attend` -- the course's multi-head attention on your own .npy arrays, with
// torch.nn.MultiheadAttention(batch_first=True)'s conventions, so the numbers can be compared
// with a PyTorch model:
//
//   query (B, N_q, d_model)   key, value (B, N_k, d_model)   (omitted: self-attention)
//   in_proj_weight (3 * d_model, d_model) = [W_q; W_k; W_v]   in_proj_bias (3 * d_model)
//   out_proj_weight (d_model, d_model) = W_o                  out_proj_bias (d_model)
//   key_padding_mask (B, N_k) bool, True = ignore that key     --causal: query i sees keys 0..i
//   -> output (B, N_q, d_model); weights (B, H, N_q, N_k), or (B, N_q, N_k) averaged over heads
//   --kv-heads H_kv: grouped-query attention (headwise/reference/layer.hpp), in_proj_weight
//   (H * d_head + 2 * H_kv * d_head, d_model) = [W_q; W_k; W_v]; query head h reads K/V head h / (H / H_kv)
//   --rope [--rope-base B] [--rope-layout half|interleaved] [--positions-from P]: q and k rotated
//   after the projections, token n at position P + n (headwise/reference/positions.hpp);
//   --alibi: -slope_h |i - j| added to head h's scores. Both compose with --causal and --kv-heads.
//
// Every input is validated before anything is computed (headwise/io/npy.hpp reads the files);
// outputs are float32 and appear only when everything succeeded (temporary file + rename).
// This is the one runner command that computes, so it alone links headwise::core (xtensor).
#include "cmd_attend.hpp"
#include "common.hpp"

#include "headwise/reference/attention.hpp"
#include "headwise/base/cli.hpp"
#include "headwise/fast/parallel.hpp"
#include "headwise/inference/kv_cache.hpp"
#include "headwise/reference/layer_backward.hpp"
#include "headwise/io/npy.hpp"
#include "headwise/reference/positions.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <variant>

namespace headwise::runner {

namespace {

using Shape = std::vector<std::size_t>;
constexpr std::size_t any = 0;  // in an expected shape: this dimension may be anything

template <class T>
Shape shape_of(const T& t) {
    return Shape(t.shape().begin(), t.shape().end());
}

// Throws unless `got` fits `want` (same rank; each dimension equal unless `any`), naming both
// shapes and the first dimension that disagrees, e.g.
//   --key has shape (3, 7, 32) but must be (B, N_k, d_model) = (2, N_k, 32) to fit --query (2, 5, 32):
//   dimension 0 (B) is 3, not 2
void require_shape(const std::string& flag, const Shape& got, const Shape& want, const std::vector<std::string>& names,
                   const std::string& reason) {
    std::size_t bad = want.size();
    for (std::size_t k = 0; k < want.size() && bad == want.size(); ++k)
        if (want[k] != any && got[k] != want[k]) bad = k;
    if (bad == want.size()) return;
    std::vector<std::string> wanted;
    for (std::size_t k = 0; k < want.size(); ++k) wanted.push_back(want[k] == any ? names[k] : std::to_string(want[k]));
    throw usage_error(fmt::format("{} has shape {} but must be ({}) = ({}) {}: dimension {} ({}) is {}, not {}", flag,
                                  npy::shape_string(got), fmt::join(names, ", "), fmt::join(wanted, ", "), reason, bad,
                                  names[bad], got[bad], want[bad]));
}

// in_proj's rows, by name: 3 * d_model, or with --kv-heads fewer K/V rows (grouped-query attention).
std::string in_rows_name(bool grouped) { return grouped ? "H*d_head + 2*H_kv*d_head" : "3 * d_model"; }

// Runs every job, two or more at a time (one per core), and then throws the error of the first
// job in the list that failed, if any: the same error whichever thread finished first.
void run_all_in_order(const std::vector<std::function<void()>>& jobs) {
    std::vector<std::exception_ptr> failed(jobs.size());
    fast::parallel_for(jobs.size(), [&](std::size_t i, std::size_t) {
        try {
            jobs[i]();
        } catch (...) {
            failed[i] = std::current_exception();
        }
    });
    for (const auto& f : failed)
        if (f) std::rethrow_exception(f);
}

// Every input tensor file, read at once before anything else: a file read from the page cache is
// a copy and page faults (~0.3 ms a MiB on one core), so two cores halve the wait. A file's error
// is kept and thrown when take() comes to it: the checks run in their usual order, and the first
// problem named is the one a reading in that order would name.
class InputFiles {
public:
    explicit InputFiles(const AttendArgs& a) {
        const std::string in_rows = in_rows_name(a.kv_heads > 0);
        add<3>("--query", a.query, "--query (B, N_q, d_model)");
        add<3>("--key", a.key, "--key (B, N_k, d_model)");
        add<3>("--value", a.value, "--value (B, N_k, d_model)");
        add<3>("--grad-output", a.grad_output, "--grad-output (B, N_q, d_model)");
        add<2>("--in-proj-weight", a.in_proj_weight, "--in-proj-weight (" + in_rows + ", d_model)");
        add<2>("--out-proj-weight", a.out_proj_weight, "--out-proj-weight (d_model, d_model)");
        add<1>("--in-proj-bias", a.in_proj_bias, "--in-proj-bias (" + in_rows + ")");
        add<1>("--out-proj-bias", a.out_proj_bias, "--out-proj-bias (d_model)");
        fast::parallel_for(files_.size(), [&](std::size_t i, std::size_t) {
            try {
                files_[i].read();
            } catch (...) {
                files_[i].error = std::current_exception();
            }
        });
    }

    template <std::size_t R>
    Tensor<R> take(std::string_view flag) {
        for (File& f : files_) {
            if (f.flag != flag) continue;
            if (f.error) std::rethrow_exception(f.error);
            return std::move(std::get<Tensor<R>>(f.tensor));
        }
        throw std::logic_error(fmt::format("attend: {} was not given", flag));
    }

private:
    struct File {
        std::string flag;
        std::function<void()> read;
        std::variant<std::monostate, Tensor<1>, Tensor<2>, Tensor<3>> tensor;
        std::exception_ptr error;
    };
    template <std::size_t R>
    void add(const char* flag, const std::string& file, const std::string& what) {
        if (file.empty()) return;
        File& f = files_.emplace_back();
        f.flag = flag;
        f.read = [&f, file, what] { f.tensor = npy::read_tensor<R>(file, what); };
    }
    std::deque<File> files_;  // a deque: each read holds a reference to its element
};

double max_abs(const float* p, std::size_t n) {
    // Sixteen running maxima, so the compiler can keep them in one vector register (the inputs
    // are finite: npy::to_tensor refused NaN and Inf).
    float lanes[16] = {};
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (std::size_t l = 0; l < 16; ++l) {
            const float a = std::abs(p[i + l]);
            lanes[l] = a > lanes[l] ? a : lanes[l];
        }
    float m = 0.0f;
    for (; i < n; ++i) m = std::max(m, std::abs(p[i]));
    for (float l : lanes) m = std::max(m, l);
    return m;
}

// Bound on |y| for y = x . W[rows]^T + b[rows], from max|x| and W's largest row sum of |w|.
double linear_bound(double x_max, const Tensor2& w, std::size_t row0, std::size_t rows, const Tensor1& b) {
    double l1 = 0.0;
    for (std::size_t r = row0; r < row0 + rows; ++r) {
        double row_sum = 0.0;
        for (std::size_t c = 0; c < w.shape()[1]; ++c) row_sum += std::abs(double(w(r, c)));
        l1 = std::max(l1, row_sum);
    }
    const double b_max = b.size() != 0 ? max_abs(b.data() + row0, rows) : 0.0;
    return x_max * l1 + b_max;
}

// Finite inputs can still overflow float32 inside the forward (scores of 1e30 * 1e30), and a
// NaN made there must never reach the output. A bound computed in double before any float work
// refuses such inputs up front: every |q|, |k|, |v|, |score| and |output| stays below it.
void require_no_overflow(const Tensor3& query, const Tensor3& key, const Tensor3& value, const MultiHeadAttention& m) {
    const std::size_t d = m.d_model(), d_head = d / m.heads;
    const double q_max = max_abs(query.data(), query.size());  // self-attention: one tensor, read once
    const double k_max = &key == &query ? q_max : max_abs(key.data(), key.size());
    const double v_max = &value == &query ? q_max : &value == &key ? k_max : max_abs(value.data(), value.size());
    const double q = linear_bound(q_max, m.in_proj_weight, 0, d, m.in_proj_bias);
    const double k = linear_bound(k_max, m.in_proj_weight, d, d, m.in_proj_bias);
    const double v = linear_bound(v_max, m.in_proj_weight, 2 * d, d, m.in_proj_bias);
    const double score = double(d_head) * q * k / std::sqrt(double(d_head));
    const double out = linear_bound(v, m.out_proj_weight, 0, d, m.out_proj_bias);
    constexpr double limit = 1e37;  // float32 ends at 3.4e38: keep a margin for the sums' rounding
    const double worst = std::max({q, k, v, score, out});
    if (!(worst < limit)) {
        throw usage_error(
            fmt::format("the inputs are too large for float32: attention scores or outputs could reach "
                        "{:.2g} (float32 ends at 3.4e+38); scale them down. Nothing was written",
                        worst));
    }
}

// Outputs must not clobber an input or each other, and their directory must exist: checked
// before any work, so a typo costs nothing.
void check_output_paths(const AttendArgs& a) {
    namespace fs = std::filesystem;
    std::error_code ec;
    auto same = [&](const std::string& x, const std::string& y) {
        return !x.empty() && !y.empty() && fs::weakly_canonical(x, ec) == fs::weakly_canonical(y, ec);
    };
    for (const auto* out : {&a.output, &a.weights}) {
        if (out->empty()) continue;
        const std::string flag = out == &a.output ? "--output" : "--weights";
        const fs::path dir = fs::path(*out).has_parent_path() ? fs::path(*out).parent_path() : fs::path(".");
        if (!fs::is_directory(dir, ec))
            throw usage_error(fmt::format("{} {}: the directory {} does not exist", flag, *out, dir.string()));
        if (fs::is_directory(*out, ec)) throw usage_error(fmt::format("{} {}: is a directory", flag, *out));
        const std::pair<const char*, const std::string*> inputs[] = {{"--query", &a.query},
                                                                     {"--key", &a.key},
                                                                     {"--value", &a.value},
                                                                     {"--in-proj-weight", &a.in_proj_weight},
                                                                     {"--in-proj-bias", &a.in_proj_bias},
                                                                     {"--out-proj-weight", &a.out_proj_weight},
                                                                     {"--out-proj-bias", &a.out_proj_bias},
                                                                     {"--key-padding-mask", &a.key_padding_mask}};
        for (const auto& [in_flag, in_file] : inputs)
            if (same(*out, *in_file))
                throw usage_error(
                    fmt::format("{} {} is also the {} input: write the result to another file", flag, *out, in_flag));
    }
    if (same(a.output, a.weights))
        throw usage_error(fmt::format("--output and --weights are the same file ({})", a.output));
}

// A one-shot process pays for every fresh byte it touches: a page fault and the kernel zeroing
// the page. The forward's workspace is the largest of them: 48 MiB at (8, 512, 512, 8) under the
// library's 64 MiB budget, which a program calling forward in a loop touches once and reuses, but
// `attend` touches once and exits. With 16 MiB the forward goes two batch elements at a time
// (10 MiB): less CPU for the whole process, a warm forward a few percent slower
// (docs/performance.md, "`headwise attend` as a whole process").
constexpr std::size_t attend_workspace_budget = std::size_t{16} << 20;

// Everything the files say, read and checked. Not copyable: options point at padding.
struct Problem {
    Tensor3 query;                                // (B, N_q, d_model)
    std::optional<Tensor3> key_file, value_file;  // (B, N_k, d_model), cross-attention only
    bool self_attention = true;
    std::size_t batch = 0, n_q = 0, n_k = 0, d_model = 0, heads = 0, kv_heads = 0;
    bool grouped = false;  // --kv-heads given
    MultiHeadAttention mha;
    PositionEncoding positions;  // --rope, --alibi
    Mask2 padding;
    AttentionOptions options;
    std::optional<Tensor3> grad_output;  // (B, N_q, d_model), --grad-output

    Problem() = default;
    Problem(const Problem&) = delete;
    Problem& operator=(const Problem&) = delete;
    const Tensor3& key() const { return self_attention ? query : *key_file; }
    const Tensor3& value() const { return self_attention ? query : *value_file; }
    bool with_positions() const { return positions.rope || positions.alibi; }
};

// query, key, value, --heads and --kv-heads, each checked for rank, shape, NaN/Inf as it is read.
void load_inputs(const AttendArgs& a, InputFiles& files, Problem& p) {
    p.heads = static_cast<std::size_t>(a.heads);
    p.query = files.take<3>("--query");  // (B, N_q, d_model)
    p.batch = p.query.shape()[0], p.n_q = p.query.shape()[1], p.d_model = p.query.shape()[2];
    p.self_attention = a.key.empty();
    if (!p.self_attention) {
        p.key_file = files.take<3>("--key");      // (B, N_k, d_model)
        p.value_file = files.take<3>("--value");  // (B, N_k, d_model)
    }
    p.n_k = p.key().shape()[1];
    const std::string fit_query = fmt::format("to fit --query {}", npy::shape_string(shape_of(p.query)));
    if (!p.self_attention) {
        require_shape("--key", shape_of(p.key()), {p.batch, any, p.d_model}, {"B", "N_k", "d_model"}, fit_query);
        require_shape("--value", shape_of(p.value()), {p.batch, p.n_k, p.d_model}, {"B", "N_k", "d_model"},
                      fmt::format("to fit --key {}", npy::shape_string(shape_of(p.key()))));
    }
    if (p.d_model % p.heads != 0) {
        throw usage_error(
            fmt::format("d_model = {} (dimension 2 of --query) is not divisible by --heads {}: d_head would be {:g}",
                        p.d_model, p.heads, double(p.d_model) / double(p.heads)));
    }
    // --kv-heads: fewer K/V rows in in_proj (grouped-query attention); without it H_kv = H.
    p.grouped = a.kv_heads > 0;
    p.kv_heads = p.grouped ? static_cast<std::size_t>(a.kv_heads) : p.heads;
    if (p.heads % p.kv_heads != 0) {
        throw usage_error(
            fmt::format("--kv-heads {} does not divide --heads {}: query heads share key/value heads in "
                        "equal groups (H / H_kv would be {:g})",
                        p.kv_heads, p.heads, double(p.heads) / double(p.kv_heads)));
    }
    if (!a.grad_output.empty()) {
        p.grad_output = files.take<3>("--grad-output");  // (B, N_q, d_model)
        require_shape("--grad-output", shape_of(*p.grad_output), {p.batch, p.n_q, p.d_model}, {"B", "N_q", "d_model"},
                      fmt::format("the output's shape, to fit --query {}", npy::shape_string(shape_of(p.query))));
    }
}

// --rope, --alibi, the weights and biases, the key padding mask and --causal.
void load_parameters(const AttendArgs& a, InputFiles& files, Problem& p) {
    const std::size_t d_head = p.d_model / p.heads;
    if (a.rope) {
        if (d_head % 2 != 0) {
            throw usage_error(
                fmt::format("--rope rotates pairs of dimensions: d_head = d_model {} / --heads {} = {} "
                            "must be even",
                            p.d_model, p.heads, d_head));
        }
        p.positions.rope =
            Rope{a.rope_base, a.rope_layout == "interleaved" ? RopeLayout::interleaved : RopeLayout::half, 1.0};
        validate(*p.positions.rope, d_head);  // the base: "RoPE base must be ..." in the library's words
        p.positions.first_position = static_cast<std::size_t>(a.positions_from);
    }
    p.positions.alibi = a.alibi;
    const std::size_t in_rows = p.d_model + 2 * p.kv_heads * d_head;  // 3 * d_model when H_kv = H
    const std::string in_rows_name = runner::in_rows_name(p.grouped);
    const std::string fit_query = fmt::format("to fit --query {}", npy::shape_string(shape_of(p.query)));
    MultiHeadAttention& mha = p.mha;
    mha.heads = p.heads;
    mha.in_proj_weight = files.take<2>("--in-proj-weight");
    require_shape("--in-proj-weight", shape_of(mha.in_proj_weight), {in_rows, p.d_model}, {in_rows_name, "d_model"},
                  fit_query);
    mha.out_proj_weight = files.take<2>("--out-proj-weight");
    require_shape("--out-proj-weight", shape_of(mha.out_proj_weight), {p.d_model, p.d_model}, {"d_model", "d_model"},
                  fit_query);
    if (!a.in_proj_bias.empty()) {
        mha.in_proj_bias = files.take<1>("--in-proj-bias");
        require_shape("--in-proj-bias", shape_of(mha.in_proj_bias), {in_rows}, {in_rows_name}, fit_query);
    }
    if (!a.out_proj_bias.empty()) {
        mha.out_proj_bias = files.take<1>("--out-proj-bias");
        require_shape("--out-proj-bias", shape_of(mha.out_proj_bias), {p.d_model}, {"d_model"}, fit_query);
    }
    p.options.causal = a.causal;
    if (!a.key_padding_mask.empty()) {
        p.padding = npy::to_mask(npy::read(a.key_padding_mask), "--key-padding-mask (B, N_k)");
        require_shape(
            "--key-padding-mask", shape_of(p.padding), {p.batch, p.n_k}, {"B", "N_k"},
            fmt::format("to fit --{} {}", p.self_attention ? "query" : "key", npy::shape_string(shape_of(p.key()))));
        p.options.key_padding_mask = &p.padding;
    }
}

// The weights as the grouped module, moved out of p.mha: p.mha is empty from here on. (A copy would
// cost 4 MiB of fresh pages at d_model = 512, and a one-shot process pays for every page it touches.)
GroupedQueryAttention take_grouped(Problem& p) {
    MultiHeadAttention& m = p.mha;
    return {p.heads,
            p.kv_heads,
            std::move(m.in_proj_weight),
            std::move(m.in_proj_bias),
            std::move(m.out_proj_weight),
            std::move(m.out_proj_bias)};
}

// The output (B, N_q, d_model), in bytes.
std::size_t output_bytes(const Problem& p) {
    return cli::checked_product({p.batch, p.n_q, p.d_model, sizeof(float)}, "output");
}

// Memory for what is really allocated: the forward's scratch (with --weights, the
// (B, H, N_q, N_k) weights; without, a bounded workspace and nothing of size N_q x N_k) and the
// output (with --grads, check_backward_memory adds the backward's). Files are written straight
// from the tensors (npy::stage): no second copy.
void check_memory(const AttendArgs& a, const Problem& p) {
    const std::size_t output = output_bytes(p);
    if (!a.weights.empty()) {
        const std::size_t weight_count =
            cli::checked_product({p.batch, p.heads, p.n_q, p.n_k}, "attention weights (B, H, N_q, N_k)");
        cli::require_memory(
            cli::checked_product({weight_count, sizeof(float)}, "attention weights") +
                p.mha.forward_scratch_bytes(p.batch, p.n_q, p.n_k, true) + output,
            fmt::format("attention weights (B, H, N_q, N_k) = ({}, {}, {}, {})", p.batch, p.heads, p.n_q, p.n_k));
    } else {
        cli::require_memory(
            p.mha.forward_scratch_bytes(p.batch, p.n_q, p.n_k, false) + output,
            fmt::format("attention (B, N_q, N_k, d_model) = ({}, {}, {}, {})", p.batch, p.n_q, p.n_k, p.d_model));
    }
    if (a.alibi) {  // the (H, N_q, N_k) bias
        cli::require_memory(cli::checked_product({p.heads, p.n_q, p.n_k, sizeof(float)}, "ALiBi bias") + output,
                            fmt::format("the ALiBi bias (H, N_q, N_k) = ({}, {}, {})", p.heads, p.n_q, p.n_k));
    }
}

// With --grads: the backward's tape, gradients and temporaries.
void check_backward_memory(const Problem& p, const GroupedQueryAttention& gqa) {
    cli::require_memory(
        layer_backward_bytes(gqa, p.batch, p.n_q, p.n_k, p.self_attention, p.positions.alibi) + output_bytes(p),
        fmt::format("the backward (B, N_q, N_k, d_model) = ({}, {}, {}, {})", p.batch, p.n_q, p.n_k, p.d_model));
}

// --grads DIR must be a directory, and none of its gradient files may be one of the inputs.
void check_grads_dir(const AttendArgs& a) {
    if (a.grads.empty()) return;
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::exists(a.grads, ec)) throw usage_error(fmt::format("--grads {}: the directory does not exist", a.grads));
    if (!fs::is_directory(a.grads, ec)) throw usage_error(fmt::format("--grads {}: is not a directory", a.grads));
    for (const char* name :
         {"query", "key", "value", "in_proj_weight", "in_proj_bias", "out_proj_weight", "out_proj_bias"}) {
        const fs::path target = fs::weakly_canonical(fs::path(a.grads) / (std::string(name) + ".npy"), ec);
        if (fs::is_directory(target, ec))
            throw usage_error(fmt::format("--grads {}: {}.npy is a directory, so the gradient cannot be written there",
                                          a.grads, name));
        for (const std::string* in : {&a.query, &a.key, &a.value, &a.in_proj_weight, &a.in_proj_bias,
                                      &a.out_proj_weight, &a.out_proj_bias, &a.key_padding_mask, &a.grad_output})
            if (!in->empty() && fs::weakly_canonical(*in, ec) == target)
                throw usage_error(
                    fmt::format("--grads {}: its {}.npy would overwrite the input {}: write the "
                                "gradients to another directory",
                                a.grads, name, *in));
    }
}

// The forward: with --weights the weights come along (B, H, N_q, N_k).
Tensor3 run_forward(const Problem& p, const std::optional<GroupedQueryAttention>& gqa, Tensor4* weights) {
    if (p.with_positions())
        return forward_with_positions(*gqa, p.query, p.key(), p.value(), p.positions, p.options, weights);
    if (gqa) return gqa->forward(p.query, p.key(), p.value(), p.options, weights);  // p.mha's weights are in gqa
    return p.mha.forward(p.query, p.key(), p.value(), p.options, weights);          // (B, N_q, d_model)
}

constexpr const char* result_overflowed = "the result overflowed float32 (inputs too large?); nothing was written";

// The output files, each written under a temporary name (npy::stage) by one job; the jobs run
// two or more at a time, and the files are renamed into place only when every one is written.
class Outputs {
public:
    // `t` into `file`, unless it holds an Inf or NaN: then `overflow` is the command's error.
    template <std::size_t R>
    void add(std::filesystem::path file, const Tensor<R>& t, std::string overflow) {
        jobs_.push_back([this, index = staged_.size(), file = std::move(file), &t, overflow = std::move(overflow)] {
            if (!cli::all_finite(t.data(), t.size())) throw usage_error(overflow);
            staged_[index].emplace(npy::stage(file, t));
        });
        staged_.emplace_back();
    }
    void write_all() {
        run_all_in_order(jobs_);  // a failure leaves no file: the staged ones are removed
        for (auto& f : staged_) f->commit();
    }

private:
    std::vector<std::function<void()>> jobs_;
    std::deque<std::optional<npy::PendingFile>> staged_;
};

// --weights, as asked: (B, H, N_q, N_k), or averaged over heads (B, N_q, N_k) into `averaged`.
// Returns its line.
std::string stage_weights(const AttendArgs& a, const Problem& p, const Tensor4& weights, Tensor3& averaged,
                          Outputs& outputs) {
    if (!a.average_weights) {
        outputs.add(a.weights, weights, result_overflowed);
        return fmt::format("weights  {:<16} [B, H, N_q, N_k] -> {}", npy::shape_string(shape_of(weights)), a.weights);
    }
    averaged = Tensor3::from_shape({p.batch, p.n_q, p.n_k});  // (B, N_q, N_k): mean over H
    for (std::size_t b = 0; b < p.batch; ++b)
        for (std::size_t i = 0; i < p.n_q; ++i)
            for (std::size_t j = 0; j < p.n_k; ++j) {
                double sum = 0.0;
                for (std::size_t h = 0; h < p.heads; ++h) sum += weights(b, h, i, j);
                averaged(b, i, j) = static_cast<float>(sum / double(p.heads));
            }
    outputs.add(a.weights, averaged, result_overflowed);
    return fmt::format("weights  {:<16} [B, N_q, N_k] averaged over heads -> {}", npy::shape_string(shape_of(averaged)),
                       a.weights);
}

// Each gradient into DIR as <input>.npy, in the input's shape. Returns the summary's lines.
std::string stage_grads(const AttendArgs& a, const Problem& p, const LayerGrads& g, Outputs& outputs) {
    namespace fs = std::filesystem;
    std::string lines;
    auto put = [&](const char* name, const auto& t) {
        if (t.size() == 0) return;
        const fs::path file = fs::path(a.grads) / (std::string(name) + ".npy");
        outputs.add(
            file, t,
            fmt::format("the gradient of {} overflowed float32 (inputs too large?); nothing was written", name));
        lines += fmt::format("  d {:<15} {:<16} -> {}\n", name, npy::shape_string(shape_of(t)), file.string());
    };
    put("query", g.query);
    if (!p.self_attention) {
        put("key", g.key);
        put("value", g.value);
    }
    put("in_proj_weight", g.in_proj_weight);
    put("in_proj_bias", g.in_proj_bias);
    put("out_proj_weight", g.out_proj_weight);
    put("out_proj_bias", g.out_proj_bias);
    return lines;
}

void print_summary(const AttendArgs& a, const Problem& p, const Tensor3& output, const std::string& weights_note,
                   const std::string& grads_note, std::size_t threads) {
    fmt::print("attend: {} attention, H = {} heads of d_head = {}{}{}{}\n", p.self_attention ? "self" : "cross",
               p.heads, p.d_model / p.heads,
               p.grouped ? fmt::format(", H_kv = {} key/value heads (query head h reads h / {})", p.kv_heads,
                                       p.heads / p.kv_heads)
                         : "",
               a.causal ? ", causal" : "", p.options.key_padding_mask ? ", key padding mask" : "");
    if (p.positions.rope)
        fmt::print("  RoPE     {} pairs, base {:g}, positions {}..{}\n", a.rope_layout, a.rope_base,
                   p.positions.first_position, p.positions.first_position + std::max(p.n_q, p.n_k) - 1);
    if (p.positions.alibi) fmt::print("  ALiBi    slopes 2^(-8h/H) for H = {}: bias -slope_h |i - j|\n", p.heads);
    fmt::print("  query    {:<16} [B, N_q, d_model]\n", npy::shape_string(shape_of(p.query)));
    if (!p.self_attention) fmt::print("  key      {:<16} [B, N_k, d_model]\n", npy::shape_string(shape_of(p.key())));
    fmt::print("  output   {:<16} [B, N_q, d_model] -> {}\n", npy::shape_string(shape_of(output)), a.output);
    if (!weights_note.empty()) fmt::print("  {}\n", weights_note);
    if (!grads_note.empty())
        fmt::print("  gradients of the loss sum(output * --grad-output), PyTorch's .grad of each input:\n{}",
                   grads_note);
    fmt::print("  threads  {} (the CPUs this process may use; HEADWISE_THREADS overrides)\n", threads);
}

// PyTorch returns NaN for a query whose keys are all masked; headwise defines it as zeros.
// Row i of batch b sees no key when every key it may see is padding (keys [0, i] when causal,
// all of them otherwise): counted from each batch's first unpadded key, in O(B * N).
void note_empty_rows(const Problem& p) {
    std::size_t empty_rows = 0;
    for (std::size_t b = 0; b < p.batch; ++b) {
        std::size_t first_seen = 0;  // the first key that is not padding (n_k when there is none)
        while (first_seen < p.n_k && p.options.key_padding_mask && p.padding(b, first_seen)) ++first_seen;
        for (std::size_t i = 0; i < p.n_q; ++i) {
            const std::size_t last_visible = p.options.causal ? std::min(i, p.n_k - 1) : p.n_k - 1;  // n_k >= 1
            empty_rows += first_seen > last_visible;
        }
    }
    if (empty_rows > 0) {
        fmt::print(stderr,
                   "attend: note: {} query row(s) have every key masked: their weights are 0 and their attention "
                   "output is 0 before out_proj (PyTorch gives NaN there)\n",
                   empty_rows);
    }
}

int compute(const AttendArgs& a) {
    check_output_paths(a);
    check_grads_dir(a);
    const std::size_t threads = fast::worker_count();  // a bad HEADWISE_THREADS stops here, before any reading
    sdpa::set_fused_budget(attend_workspace_budget);
    Problem p;
    InputFiles files(a);
    load_inputs(a, files, p);
    load_parameters(a, files, p);
    check_memory(a, p);
    if (!p.grouped) require_no_overflow(p.query, p.key(), p.value(), p.mha);

    std::optional<GroupedQueryAttention> gqa;  // the same weights, read with H_kv key/value heads
    if (p.grouped || p.with_positions() || p.grad_output) gqa = take_grouped(p);
    if (p.grad_output) check_backward_memory(p, *gqa);
    if (p.grouped)
        require_no_overflow(p.query, p.key(), p.value(), gqa->with_repeated_kv());  // the equal MHA bounds GQA

    Tensor4 weights;  // (B, H, N_q, N_k), only with --weights
    std::optional<LayerGrads> grads;
    Tensor3 output;       // (B, N_q, d_model)
    if (p.grad_output) {  // the forward keeps its tape, and the backward follows
        LayerTape tape;
        output = layer_forward(*gqa, p.query, p.key(), p.value(), p.positions, p.options, tape);
        grads =
            layer_backward(*gqa, p.query, p.key(), p.value(), p.positions, p.options, std::move(tape), *p.grad_output);
        if (!a.weights.empty()) run_forward(p, gqa, &weights);
    } else {
        output = run_forward(p, gqa, a.weights.empty() ? nullptr : &weights);
    }
    // Every output is written to a temporary file first; renamed into place only when all are ready.
    Outputs outputs;
    outputs.add(a.output, output, result_overflowed);
    Tensor3 averaged;  // (B, N_q, N_k), --average-weights only
    const std::string weights_note = a.weights.empty() ? "" : stage_weights(a, p, weights, averaged, outputs);
    const std::string grads_note = grads ? stage_grads(a, p, *grads, outputs) : "";
    outputs.write_all();

    print_summary(a, p, output, weights_note, grads_note, threads);
    note_empty_rows(p);
    return 0;
}

}  // namespace

int run_attend(const AttendArgs& a) {
    try {
        return compute(a);
    } catch (const headwise::usage_error& e) {  // the library's bad-input error: one line, exit 2
        throw usage_error(e.what());
    }
}

}  // namespace headwise::runner
