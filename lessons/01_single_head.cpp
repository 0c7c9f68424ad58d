// Lesson 01 -- single-head scaled dot-product attention.
//
// Every token asks a question (its query), advertises what it holds (its key) and offers a
// payload (its value). Attention scores every query against every key, turns each row of scores
// into weights that sum to 1, and hands each token a weighted average of the values:
//
//     Attention(Q, K, V) = softmax(Q K^T / sqrt(d)) V
//
// This file walks that formula one step at a time and prints the shape of every tensor it
// makes. Then it measures *why* the scores are divided by sqrt(d).
//
// Dimension letters: B = batch, N = sequence length (tokens), d = d_model (model width).
// Run:  ./headwise run 1      or      build/lessons/01_single_head --help

#include "headwise/lesson/lesson.hpp"

#include <xtensor-blas/xlinalg.hpp>

#include <cmath>

using namespace headwise;

namespace {

// ---------------------------------------------------------------------------------------------
// Step helpers. Each evaluates into a named tensor: that is where its shape gets printed.

// scores (B, N, N) = Q (B, N, d) . K^T (B, d, N), one matrix product per batch element.
Tensor3 dot_scores(const Tensor3& q, const Tensor3& k) {
    const std::size_t batch = q.shape()[0], n = q.shape()[1];
    Tensor3 scores = Tensor3::from_shape({batch, n, n});
    for (std::size_t b = 0; b < batch; ++b) {
        xt::view(scores, b) = xt::linalg::dot(xt::view(q, b), xt::transpose(xt::view(k, b)));
    }
    return scores;
}

// out (B, N, d) = weights (B, N, N) . V (B, N, d)
Tensor3 weighted_values(const Tensor3& weights, const Tensor3& v) {
    Tensor3 out = Tensor3::from_shape(v.shape());
    for (std::size_t b = 0; b < v.shape()[0]; ++b) {
        xt::view(out, b) = xt::linalg::dot(xt::view(weights, b), xt::view(v, b));
    }
    return out;
}

double variance(const Tensor3& t) {
    const double mean = xt::mean(t)();
    double s = 0.0;
    for (float x : t) s += (x - mean) * (x - mean);
    return s / static_cast<double>(t.size());
}

// Mean over rows of the softmax entropy, and mean of each row's largest weight.
struct Peakedness {
    double entropy;
    double max_weight;
};
Peakedness peakedness(const Tensor3& weights) {
    const auto h = row_entropy(weights);  // (B, N)
    const double max_w = xt::mean(xt::amax(weights, {2}))();
    return {xt::mean(h)(), max_w};
}

// ---------------------------------------------------------------------------------------------
// The steps, in the order main() runs them.

Tensor3 step1_input(const Tracer& trace, Random& rng, std::size_t B, std::size_t N, std::size_t d) {
    trace.section("step 1: the input -- one d_model-wide vector per token");
    const Tensor3 x = rng.normal<3>({B, N, d});  // (B, N, d)
    trace("x", x, "B, N, d_model");
    return x;
}

struct Projected {
    Tensor3 q, k, v;  // (B, N, d) each
};

Projected step2_projections(const Tracer& trace, Random& rng, const Tensor3& x, std::size_t d) {
    trace.section("step 2: three learned projections turn each token into a query, a key and a value");
    const Tensor2 w_q = rng.linear_weight(d, d);  // (d, d), PyTorch layout: (out, in)
    const Tensor2 w_k = rng.linear_weight(d, d);  // (d, d)
    const Tensor2 w_v = rng.linear_weight(d, d);  // (d, d)
    trace("w_q", w_q, "d_out, d_model");
    trace("w_k", w_k, "d_out, d_model");
    trace("w_v", w_v, "d_out, d_model");
    Projected p{linear(x, w_q), linear(x, w_k), linear(x, w_v)};  // (B, N, d) each: q = x . w_q^T
    trace("q = x . w_q^T", p.q, "B, N, d");
    trace("k = x . w_k^T", p.k, "B, N, d");
    trace("v = x . w_v^T", p.v, "B, N, d");
    return p;
}

Tensor3 step3_scores(const Tracer& trace, const Projected& p, std::size_t d) {
    trace.section("step 3: every query is compared with every key");
    const Tensor3 raw = dot_scores(p.q, p.k);  // (B, N, N): raw(b, i, j) = q_i . k_j
    trace("q . k^T", raw, "B, N_query, N_key");
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    const Tensor3 scores = raw * scale;  // (B, N, N)
    trace("scores = q.k^T/sqrt(d)", scores, "B, N_query, N_key");
    return scores;
}

Tensor3 step4_softmax(const Tracer& trace, const Tensor3& scores) {
    trace.section("step 4: softmax turns each row of scores into weights");
    const std::size_t B = scores.shape()[0], N = scores.shape()[1];
    const Tensor3 weights = softmax(scores);  // (B, N, N), each row sums to 1
    trace("weights", weights, "B, N_query, N_key");
    const auto row_sums = xt::eval(xt::sum(weights, {2}));  // (B, N)
    trace("weights.sum(-1)", row_sums, "B, N_query");
    const double worst = xt::amax(xt::abs(row_sums - 1.0f))();
    fmt::print("  every row of weights sums to 1: largest |sum - 1| = {:.2e} over {} rows\n", worst, B * N);
    fmt::print("  token 0 of batch 0 spreads its attention as:");
    for (std::size_t j = 0; j < std::min<std::size_t>(N, 8); ++j) fmt::print(" {:.3f}", weights(0, 0, j));
    fmt::print("{}\n", N > 8 ? " ..." : "");
    return weights;
}

void step5_weighted_values(const Tracer& trace, const Tensor3& weights, const Projected& p) {
    trace.section("step 5: each token receives a weighted average of the values");
    const Tensor3 out = weighted_values(weights, p.v);  // (B, N, d)
    trace("out = weights . v", out, "B, N, d");
    const Tensor4 library =
        scaled_dot_product_attention(xt::eval(xt::expand_dims(p.q, 1)), xt::eval(xt::expand_dims(p.k, 1)),
                                     xt::eval(xt::expand_dims(p.v, 1)));  // (B, 1, N, d)
    trace("library attention", library, "B, H=1, N, d");
    fmt::print("  step-by-step vs headwise::scaled_dot_product_attention: max |diff| = {:.2e}\n",
               max_abs_diff(out, xt::eval(xt::view(library, xt::all(), 0))));
}

void step6_why_sqrt_d(const Tracer& trace, Random& rng, std::size_t d, std::size_t wide_d) {
    trace.section("step 6: why divide by sqrt(d)? measured, not asserted");
    // With q and k entries of mean 0 and variance 1, q . k sums d products of variance 1, so its
    // variance grows like d. Dividing by sqrt(d) brings it back to 1 whatever the width.
    // A fresh sample of 64 queries and 64 keys (4096 scores) per width, so the variances are
    // measured on enough numbers to mean something, whatever --batch and --seq are.
    const std::size_t M = 64;
    fmt::print("  {} queries x {} keys per width, entries drawn with mean 0 and variance 1:\n", M, M);
    fmt::print("  {:>8}  {:>12}  {:>20}  {:>26}  {:>20}\n", "d", "var(q . k)", "var(q . k / sqrt(d))",
               "entropy unscaled / scaled", "max weight unscaled");
    for (std::size_t width : {d, wide_d}) {
        const Tensor3 qs = rng.normal<3>({1, M, width});  // (1, M, width)
        const Tensor3 ks = rng.normal<3>({1, M, width});  // (1, M, width)
        const Tensor3 unscaled = dot_scores(qs, ks);      // (1, M, M)
        const Tensor3 scaled = unscaled / std::sqrt(static_cast<float>(width));
        const Peakedness raw_p = peakedness(softmax(unscaled));
        const Peakedness scaled_p = peakedness(softmax(scaled));
        fmt::print("  {:>8}  {:>12.1f}  {:>20.3f}  {:>12.3f} / {:<11.3f}  {:>20.3f}\n", width, variance(unscaled),
                   variance(scaled), raw_p.entropy, scaled_p.entropy, raw_p.max_weight);
    }
    fmt::print("  a uniform row over {} keys has entropy ln {} = {:.3f}; 0 means one key takes everything.\n", M, M,
               std::log(static_cast<double>(M)));
    fmt::print(
        "  Without the scaling the scores' spread grows with d, softmax saturates (entropy falls toward 0,\n"
        "  the largest weight toward 1) and its gradients vanish. With it, the spread stays near 1.\n");
}

}  // namespace

int main(int argc, char** argv) {
    lesson::App app{"Lesson 01: single-head scaled dot-product attention", "01_single_head"};
    cli::LessonOptions opt;
    opt.dims.d_model = 64;
    std::size_t wide_d = 512;
    cli::add_lesson_options(app, opt, "batch,seq,d-model,seed");
    lesson::add_bounded_option(app, "--wide-d", wide_d, "width used to show what happens without the sqrt(d) scaling",
                               2, 8192);
    return lesson::run(app, argc, argv, [&] {
        const std::size_t B = opt.dims.batch, N = opt.dims.seq, d = opt.dims.d_model;
        const Tracer trace(!opt.quiet);
        Random rng(opt.seed);
        fmt::print("Lesson 01: single-head attention   B={} N={} d_model={} seed={}\n", B, N, d, opt.seed);

        const Tensor3 x = step1_input(trace, rng, B, N, d);       // (B, N, d)
        const Projected p = step2_projections(trace, rng, x, d);  // q, k, v: (B, N, d)
        const Tensor3 scores = step3_scores(trace, p, d);         // (B, N, N)
        const Tensor3 weights = step4_softmax(trace, scores);     // (B, N, N)
        step5_weighted_values(trace, weights, p);
        step6_why_sqrt_d(trace, rng, d, wide_d);
        return cli::exit_ok;
    });
}
