// Lesson 10 -- how attention learns: the backward pass, by hand, checked by finite differences.
//
// Lessons 01-09 computed attention's output. Training needs the other direction: given dO, how
// the loss changes with the output, find how it changes with every input -- q, k, v, and through
// them the projections' weights and x. This file derives each gradient one step at a time, in the
// order the chain rule visits them (dO -> dV, dP -> dS -> dQ, dK -> the projections -> dX), and
// checks every one against central finite differences in double precision:
//
//     dL/dx[i] ~ (L(x + h e_i) - L(x - h e_i)) / 2h,   L = sum(dO * O)   (so dL/dO = dO)
//
// It ends with what FlashAttention's backward is built on (Dao et al. 2022, kept by FlashAttention-2):
// D = rowsum(dP * P) = rowsum(dO * O),
// and P recomputed from the saved log-sum-exp instead of stored (B H N^2 floats vs B H N: the memory
// measured, both backwards timed on this machine) -- and with the two as CUDA kernels
// (src/kernels/backward_*.cuh), their traffic counted by the emulator.
//
// The steps compute in double (xt::xtensor<double, R>): finite differences need the precision.
// Dimension letters: B = batch, H = heads, N = tokens, d_head = d_model / H, H_kv = key/value heads.
// Run:  ./headwise run 10      or      build/lessons/10_backward --help

#include "headwise/fast/blas.hpp"
#include "headwise/fast/fused_backward.hpp"
#include "headwise/fast/parallel.hpp"
#include "headwise/fast/vexp.hpp"
#include "headwise/lesson/lesson.hpp"
#include "headwise/reference/attention_backward.hpp"
#include "headwise/reference/positions.hpp"
#include "kernels/attention_backward.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <new>
#include <optional>
#include <vector>

using namespace headwise;

namespace {

template <std::size_t R>
using Real = xt::xtensor<double, R>;  // the lesson's tensors: double precision for the checks
using R1 = Real<1>;
using R2 = Real<2>;
using R3 = Real<3>;
using R4 = Real<4>;

constexpr double tolerance = 1e-6;  // what every finite-difference check must meet (relative)
constexpr double neg_inf = -std::numeric_limits<double>::infinity();

// ---------------------------------------------------------------------------------------------
// Tensor helpers, in double.

template <std::size_t R>
Real<R> random_real(Random& rng, const std::array<std::size_t, R>& shape, float stddev = 1.0f) {
    return xt::cast<double>(rng.normal<R>(shape, stddev));
}

// (B, H, n, m) -> (B, H, m, n): each head's matrix transposed.
R4 transposed(const R4& a) { return xt::transpose(a, {0, 1, 3, 2}); }

// a (B, H, n, k) . b (B, H, k, m) -> (B, H, n, m): one matrix product per (batch, head).
R4 bmm(const R4& a, const R4& b) {
    const std::size_t batch = a.shape()[0], heads = a.shape()[1], n = a.shape()[2], k = a.shape()[3];
    const std::size_t m = b.shape()[3];
    R4 c = xt::zeros<double>(std::array<std::size_t, 4>{batch, heads, n, m});
    for (std::size_t bi = 0; bi < batch; ++bi)
        for (std::size_t h = 0; h < heads; ++h)
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t t = 0; t < k; ++t)
                    for (std::size_t j = 0; j < m; ++j) c(bi, h, i, j) += a(bi, h, i, t) * b(bi, h, t, j);
    return c;
}

// sum over the last axis, kept as an axis of 1 so that it broadcasts back: (B, H, n, m) -> (B, H, n, 1).
R4 rowsum(const R4& a) {
    const R3 s = xt::sum(a, {3});
    return xt::view(s, xt::all(), xt::all(), xt::all(), xt::newaxis());
}

double dot(const R4& a, const R4& b) { return xt::sum(a * b)(); }

// Largest |a|.
template <class T>
double largest(const T& a) {
    return xt::amax(xt::abs(a))();
}

AttentionOptions causal_only() {
    AttentionOptions o;
    o.causal = true;
    return o;
}

// Is key j hidden from query i of batch element b?
bool hidden(const AttentionOptions& o, std::size_t b, std::size_t i, std::size_t j) {
    return (o.causal && j > i) || (o.key_padding_mask != nullptr && (*o.key_padding_mask)(b, j));
}

// ---------------------------------------------------------------------------------------------
// The forward pass, keeping what the backward needs.

struct Forward {
    R4 scores;  // (B, H, N_q, N_k): q k^T / sqrt(d_head), -inf where hidden
    R4 p;       // (B, H, N_q, N_k): softmax of each row; a row with no visible key is all 0
    R4 o;       // (B, H, N_q, d_head) = P V
};

// softmax of each row of scores (B, H, N_q, N_k), stable (each row's maximum subtracted); a row
// whose scores are all -inf (every key hidden) gives zeros, never NaN.
R4 softmax_rows(const R4& scores) {
    R4 p = xt::zeros_like(scores);
    const std::size_t rows = scores.size() / scores.shape()[3], n = scores.shape()[3];
    for (std::size_t r = 0; r < rows; ++r) {
        const double* s = scores.data() + r * n;
        double* w = p.data() + r * n;
        const double m = *std::max_element(s, s + n);
        if (m == neg_inf) continue;
        double sum = 0.0;
        for (std::size_t j = 0; j < n; ++j) sum += w[j] = std::exp(s[j] - m);
        for (std::size_t j = 0; j < n; ++j) w[j] /= sum;
    }
    return p;
}

Forward attend(const R4& q, const R4& k, const R4& v, const AttentionOptions& opt = {}) {
    Forward f;
    f.scores = bmm(q, transposed(k)) / std::sqrt(double(q.shape()[3]));
    for (std::size_t b = 0; b < q.shape()[0]; ++b)
        for (std::size_t i = 0; i < q.shape()[2]; ++i)
            for (std::size_t j = 0; j < k.shape()[2]; ++j)
                if (hidden(opt, b, i, j)) xt::view(f.scores, b, xt::all(), i, j) = neg_inf;
    f.p = softmax_rows(f.scores);
    f.o = bmm(f.p, v);
    return f;
}

// ---------------------------------------------------------------------------------------------
// The backward pass: every formula of steps 2-7, composed.

struct Grads {
    R4 dq, dk, dv;  // (B, H, N_q, d_head), (B, H, N_k, d_head), (B, H, N_k, d_head)
};

// dS = P * (dP - rowsum(dP * P)): the softmax's backward, O(N) per row (step 4).
R4 softmax_backward(const R4& p, const R4& dp) { return p * (dp - rowsum(dp * p)); }

Grads attention_backward(const R4& q, const R4& k, const R4& v, const R4& d_out, const AttentionOptions& opt = {}) {
    const double scale = 1.0 / std::sqrt(double(q.shape()[3]));
    const Forward f = attend(q, k, v, opt);
    const R4 dp = bmm(d_out, transposed(v));  // (B, H, N_q, N_k)
    const R4 ds = softmax_backward(f.p, dp);  // (B, H, N_q, N_k)
    return {bmm(ds, k) * scale,               // dQ = dS K / sqrt(d)
            bmm(transposed(ds), q) * scale,   // dK = dS^T Q / sqrt(d)
            bmm(transposed(f.p), d_out)};     // dV = P^T dO
}

// ---------------------------------------------------------------------------------------------
// Finite differences.

// dL/dx by central differences, one element of x at a time: (L(x + h) - L(x - h)) / 2h.
// h = 1e-5: the truncation error (h^2 L''' / 6) and the rounding error (1e-16 L / h) both stay
// far below 1e-6 of a gradient of order 1.
template <class T, class Loss>
T numeric_gradient(T x, const Loss& loss) {
    constexpr double h = 1e-5;
    T g = xt::zeros_like(x);
    for (std::size_t e = 0; e < x.size(); ++e) {
        const double x0 = x.data()[e];
        x.data()[e] = x0 + h;
        const double up = loss(x);
        x.data()[e] = x0 - h;
        const double down = loss(x);
        x.data()[e] = x0;
        g.data()[e] = (up - down) / (2.0 * h);
    }
    return g;
}

// Every check of the lesson: the largest |analytic - numeric|, relative to the largest |numeric|
// (or to 1 when that is smaller: a gradient that is exactly 0, like db_k's, is then checked to 1e-6
// absolute instead of against the finite differences' own rounding noise).
class Checks {
public:
    template <class T>
    void operator()(const std::string& name, const T& analytic, const T& numeric) {
        const double rel = largest(analytic - numeric) / std::max(largest(numeric), 1.0);
        worst_ = std::max(worst_, rel);
        fmt::print("  {:<26} vs finite differences: largest relative difference {:.1e} ({} 1e-6)\n", name, rel,
                   rel <= tolerance ? "<=" : "> FAILS");
    }
    bool passed() const { return worst_ <= tolerance; }
    double worst() const { return worst_; }

private:
    double worst_ = 0.0;
};

// ---------------------------------------------------------------------------------------------
// The problem every step works on.

struct Problem {
    std::size_t batch, heads, n, d_model, d_head, kv_heads;
    R4 q, k, v;   // (B, H, N, d_head)
    R4 d_out;     // (B, H, N, d_head): dL/dO, given from above
    Forward fwd;  // of q, k, v without a mask
};

Problem make_problem(const cli::LessonOptions& opt, std::size_t kv_heads) {
    const std::size_t B = opt.dims.batch, H = opt.dims.heads, N = opt.dims.seq, d = opt.dims.d_model;
    Random rng(opt.seed);
    Problem p{B, H, N, d, d / H, kv_heads, {}, {}, {}, {}, {}};
    p.q = random_real<4>(rng, {B, H, N, d / H}, 1.5f);  // wide enough that the weights are not uniform
    p.k = random_real<4>(rng, {B, H, N, d / H}, 1.5f);
    p.v = random_real<4>(rng, {B, H, N, d / H});
    p.d_out = random_real<4>(rng, {B, H, N, d / H});
    p.fwd = attend(p.q, p.k, p.v);
    return p;
}

// L = sum(dO * O(q, k, v)): a loss whose gradient with respect to O is exactly dO.
double loss(const R4& q, const R4& k, const R4& v, const R4& d_out, const AttentionOptions& opt = {}) {
    return dot(d_out, attend(q, k, v, opt).o);
}

// ---------------------------------------------------------------------------------------------
// Steps 1-3: the forward's saved tensors, dV, dP.

void step1_forward(const Problem& p, const Tracer& trace) {
    trace.section("step 1: the forward pass, and what it keeps for the backward");
    trace("q", p.q, "B, H, N, d_head");
    trace("k", p.k, "B, H, N, d_head");
    trace("v", p.v, "B, H, N, d_head");
    trace("scores", p.fwd.scores, "B, H, N, N");
    trace("P = softmax(scores)", p.fwd.p, "B, H, N, N");
    trace("O = P V", p.fwd.o, "B, H, N, d_head");
    trace("dO (from above)", p.d_out, "B, H, N, d_head");
    fmt::print(
        "  the loss here is L = sum(dO * O), so dL/dO = dO exactly: any dO a real loss sends down\n"
        "  behaves the same, since the backward is linear in dO. L = {:.6f}\n",
        dot(p.d_out, p.fwd.o));
}

void step2_dv(const Problem& p, const Tracer& trace, Checks& check) {
    trace.section("step 2: dV = P^T dO -- each value row collects dO from the queries that read it");
    const R4 dv = bmm(transposed(p.fwd.p), p.d_out);  // (B, H, N, d_head)
    trace("dV", dv, "B, H, N, d_head");
    fmt::print("  O = P V is linear in V: dV[j] = sum_i P[i, j] dO[i], key j's column of P times dO\n");
    check("dV", dv, numeric_gradient(p.v, [&](const R4& v) { return loss(p.q, p.k, v, p.d_out); }));
}

void step3_dp(const Problem& p, const Tracer& trace, Checks& check) {
    trace.section("step 3: dP = dO V^T -- how the loss changes with each weight");
    const R4 dp = bmm(p.d_out, transposed(p.v));  // (B, H, N, N)
    trace("dP", dp, "B, H, N, N");
    fmt::print("  dP[i, j] = dO[i] . V[j]: (N, d_head) x (d_head, N), one N x N matrix per head again\n");
    check("dP", dp, numeric_gradient(p.fwd.p, [&](const R4& weights) { return dot(p.d_out, bmm(weights, p.v)); }));
}

// ---------------------------------------------------------------------------------------------
// Step 4: the softmax.

void print_matrix(const R2& m) {
    for (std::size_t i = 0; i < m.shape()[0]; ++i) {
        fmt::print("   ");
        for (std::size_t j = 0; j < m.shape()[1]; ++j) fmt::print(" {:>7.4f}", m(i, j) + 0.0);  // no "-0.0000"
        fmt::print("\n");
    }
}

void step4_softmax(const Problem& p, const Tracer& trace, Checks& check) {
    trace.section("step 4: through the softmax -- its Jacobian for one row, then the O(N) form");
    const std::size_t n = p.n, row = n - 1;
    const R4 dp = bmm(p.d_out, transposed(p.v));              // (B, H, N, N)
    const R1 prow = xt::view(p.fwd.p, 0, 0, row, xt::all());  // (N)
    const R2 jac = xt::diag(prow) - xt::view(prow, xt::all(), xt::newaxis()) * xt::view(prow, xt::newaxis(), xt::all());
    trace("J = diag(p) - p p^T", jac, "N, N");
    fmt::print("  batch 0, head 0, query {}: dp_i/ds_j = p_i (delta_ij - p_j), whole:\n", row);
    print_matrix(jac);
    const R1 ds_row = xt::sum(jac * xt::view(xt::view(dp, 0, 0, row, xt::all()), xt::all(), xt::newaxis()), {0});
    const R4 ds = softmax_backward(p.fwd.p, dp);  // (B, H, N, N)
    trace("dS = P * (dP - rowsum(dP * P))", ds, "B, H, N, N");
    fmt::print(
        "  J is symmetric, and J dp = p * dp - p (p . dp): each row needs one number, rowsum(dP * P),\n"
        "  not an N x N matrix. Jacobian form vs O(N) form on this row: max |diff| = {:.1e}\n",
        largest(ds_row - xt::view(ds, 0, 0, row, xt::all())));
    fmt::print(
        "  exact by construction: every row of dS sums to 0, as sum_j P[j] (dP[j] - D) = D - D (P's row sums to 1)\n"
        "  -- softmax ignores a shift of its scores, so their gradient has no share along (1, ..., 1)\n");
    check("dS", ds,
          numeric_gradient(p.fwd.scores, [&](const R4& s) { return dot(p.d_out, bmm(softmax_rows(s), p.v)); }));
}

// ---------------------------------------------------------------------------------------------
// Steps 5-7: the scale, the masks, dQ and dK.

void step5_scale(const Problem& p, const Tracer& trace, Checks& check) {
    trace.section("step 5: the scale -- scores = (q k^T) / sqrt(d_head), so d(q k^T) = dS / sqrt(d_head)");
    const double scale = 1.0 / std::sqrt(double(p.d_head));
    const R4 dp = bmm(p.d_out, transposed(p.v));
    const R4 d_dots = softmax_backward(p.fwd.p, dp) * scale;  // (B, H, N, N)
    trace("d(q k^T)", d_dots, "B, H, N, N");
    const R4 dots = bmm(p.q, transposed(p.k));  // (B, H, N, N): the unscaled dot products
    check("d(q k^T)", d_dots,
          numeric_gradient(dots, [&](const R4& x) { return dot(p.d_out, bmm(softmax_rows(x * scale), p.v)); }));
    fmt::print("  forgetting it makes dQ and dK sqrt(d_head) = {:.3f} times too large\n", std::sqrt(double(p.d_head)));
}

// Key padding for the masked steps: batch element b hides its last b keys and, to show a query
// that sees nothing, batch element 1 also hides key 0 -- under the causal mask its query 0 is blind.
Mask2 padding_for(std::size_t batch, std::size_t n) {
    Mask2 m = Mask2::from_shape({batch, n});
    for (std::size_t b = 0; b < batch; ++b)
        for (std::size_t j = 0; j < n; ++j) m(b, j) = (j + b >= n && j > 0) || (b == 1 && j == 0);
    return m;
}

void step6_masks(const Problem& p, const Tracer& trace, Checks& check) {
    trace.section("step 6: masks -- hidden keys get no gradient; a query that sees nothing stays finite");
    const Mask2 padding = padding_for(p.batch, p.n);
    AttentionOptions opt;
    opt.causal = true;
    opt.key_padding_mask = &padding;
    const Forward f = attend(p.q, p.k, p.v, opt);
    const R4 ds = softmax_backward(f.p, bmm(p.d_out, transposed(p.v)));  // (B, H, N, N)
    trace("P (causal + padding)", f.p, "B, H, N, N");
    trace("dS (causal + padding)", ds, "B, H, N, N");
    std::size_t count = 0;
    for (std::size_t b = 0; b < p.batch; ++b)
        for (std::size_t i = 0; i < p.n; ++i)
            for (std::size_t j = 0; j < p.n; ++j) count += hidden(opt, b, i, j) ? p.heads : 0;
    fmt::print("  exact by construction: dS = P * (dP - D) is 0 at the {} hidden entries, as P = exp(-inf) = 0 there\n",
               count);
    if (p.batch > 1) {
        const Grads g = attention_backward(p.q, p.k, p.v, p.d_out, opt);
        fmt::print("  batch 1, query 0 sees no key: P row = 0, O row = 0, and its dQ row = {} (finite: {})\n",
                   largest(xt::view(g.dq, 1, xt::all(), 0, xt::all())), xt::all(xt::isfinite(g.dq)) ? "yes" : "NO");
    }
    check("dS (masked)", ds, numeric_gradient(f.scores, [&](const R4& s) {
              R4 masked = s;  // the hidden scores stay -inf however s moves
              for (std::size_t e = 0; e < s.size(); ++e)
                  if (f.scores.data()[e] == neg_inf) masked.data()[e] = neg_inf;
              return dot(p.d_out, bmm(softmax_rows(masked), p.v));
          }));
}

void step7_dq_dk(const Problem& p, const Tracer& trace, Checks& check) {
    trace.section("step 7: dQ = dS K / sqrt(d), dK = dS^T Q / sqrt(d) -- with the causal mask");
    const AttentionOptions opt = causal_only();
    const Grads g = attention_backward(p.q, p.k, p.v, p.d_out, opt);
    trace("dQ", g.dq, "B, H, N, d_head");
    trace("dK", g.dk, "B, H, N, d_head");
    trace("dV", g.dv, "B, H, N, d_head");
    fmt::print("  scores[i, j] = q_i . k_j / sqrt(d): q_i collects k_j weighted by row i of dS, k_j by column j\n");
    check("dQ", g.dq, numeric_gradient(p.q, [&](const R4& q) { return loss(q, p.k, p.v, p.d_out, opt); }));
    check("dK", g.dk, numeric_gradient(p.k, [&](const R4& k) { return loss(p.q, k, p.v, p.d_out, opt); }));
    check("dV", g.dv, numeric_gradient(p.v, [&](const R4& v) { return loss(p.q, p.k, v, p.d_out, opt); }));
    const Tensor4 qf = xt::cast<float>(p.q), kf = xt::cast<float>(p.k), vf = xt::cast<float>(p.v);
    const AttentionGrads lib = attention_backward_reference(qf, kf, vf, xt::cast<float>(p.d_out), opt);
    fmt::print("  the library's attention_backward_reference (float in and out) agrees: max |diff| = {:.1e}\n",
               std::max({largest(lib.dq - g.dq), largest(lib.dk - g.dk), largest(lib.dv - g.dv)}));
    const R4 dk_from_ds = bmm(softmax_backward(attend(p.q, p.k, p.v, opt).p, bmm(p.d_out, transposed(p.v))), p.q) /
                          std::sqrt(double(p.d_head));
    fmt::print("  dK from dS instead of dS^T: max |diff| = {:.2f} -- the transpose matters\n",
               largest(dk_from_ds - g.dk));
}

// ---------------------------------------------------------------------------------------------
// Step 8: the whole layer -- projections, head split and merge.

struct Layer {
    R2 w_q, w_k, w_v;       // the three input projections, (d_model, d_model) each
    R2 w_o;                 // the output projection, (d_model, d_model)
    R1 b_q, b_k, b_v, b_o;  // their biases, (d_model) each
};

// y (B, N, out) = x (B, N, in) . w^T + b.
R3 linear_real(const R3& x, const R2& w, const R1& b) {
    R3 y = R3::from_shape({x.shape()[0], x.shape()[1], w.shape()[0]});
    for (std::size_t i = 0; i < x.shape()[0]; ++i)
        for (std::size_t n = 0; n < x.shape()[1]; ++n)
            for (std::size_t o = 0; o < w.shape()[0]; ++o) {
                double acc = b(o);
                for (std::size_t c = 0; c < w.shape()[1]; ++c) acc += x(i, n, c) * w(o, c);
                y(i, n, o) = acc;
            }
    return y;
}

// The backward of y = x w^T + b: dW = sum over (B, N) of dy^T x, db = sum of dy, dx = dy w.
R2 weight_grad(const R3& dy, const R3& x) {
    R2 dw = xt::zeros<double>(std::array<std::size_t, 2>{dy.shape()[2], x.shape()[2]});
    for (std::size_t i = 0; i < x.shape()[0]; ++i)
        for (std::size_t n = 0; n < x.shape()[1]; ++n)
            for (std::size_t o = 0; o < dy.shape()[2]; ++o)
                for (std::size_t c = 0; c < x.shape()[2]; ++c) dw(o, c) += dy(i, n, o) * x(i, n, c);
    return dw;
}
R1 bias_grad(const R3& dy) { return xt::sum(dy, {0, 1}); }
R3 input_grad(const R3& dy, const R2& w) {
    R3 dx = xt::zeros<double>(std::array<std::size_t, 3>{dy.shape()[0], dy.shape()[1], w.shape()[1]});
    for (std::size_t i = 0; i < dy.shape()[0]; ++i)
        for (std::size_t n = 0; n < dy.shape()[1]; ++n)
            for (std::size_t o = 0; o < w.shape()[0]; ++o)
                for (std::size_t c = 0; c < w.shape()[1]; ++c) dx(i, n, c) += dy(i, n, o) * w(o, c);
    return dx;
}

// Each token's d_model numbers cut into H slices of d_head, heads moved ahead of tokens (lesson 02);
// merge puts them back.
R4 split(const R3& x, std::size_t heads) {
    const std::size_t b = x.shape()[0], n = x.shape()[1], dh = x.shape()[2] / heads;
    return xt::transpose(xt::reshape_view(x, std::vector<std::size_t>{b, n, heads, dh}), {0, 2, 1, 3});
}
R3 merge(const R4& x) {
    const R4 t = xt::transpose(x, {0, 2, 1, 3});  // (B, N, H, d_head)
    return xt::reshape_view(t, std::vector<std::size_t>{t.shape()[0], t.shape()[1], t.shape()[2] * t.shape()[3]});
}

R3 layer_forward(const Layer& l, const R3& x, std::size_t heads) {
    const AttentionOptions causal = causal_only();
    const Forward f = attend(split(linear_real(x, l.w_q, l.b_q), heads), split(linear_real(x, l.w_k, l.b_k), heads),
                             split(linear_real(x, l.w_v, l.b_v), heads), causal);
    return linear_real(merge(f.o), l.w_o, l.b_o);
}

void step8_layer(const Problem& p, const Tracer& trace, Checks& check, std::uint64_t seed) {
    trace.section("step 8: the whole layer -- out projection, merge, attention, split, in projections");
    const std::size_t B = p.batch, N = p.n, d = p.d_model, H = p.heads;
    Random rng(seed + 8);
    const auto weight = [&] { return R2(xt::cast<double>(rng.linear_weight(d, d)) * 2.0); };
    const auto bias = [&] { return random_real<1>(rng, {d}, 0.1f); };
    Layer l{weight(), weight(), weight(), weight(), bias(), bias(), bias(), bias()};
    const R3 x = random_real<3>(rng, {B, N, d});   // (B, N, d_model)
    const R3 dy = random_real<3>(rng, {B, N, d});  // (B, N, d_model): dL/dY from above
    const AttentionOptions causal = causal_only();
    const R4 q = split(linear_real(x, l.w_q, l.b_q), H), k = split(linear_real(x, l.w_k, l.b_k), H),
             v = split(linear_real(x, l.w_v, l.b_v), H);    // (B, H, N, d_head)
    const R3 heads_out = merge(attend(q, k, v, causal).o);  // (B, N, d_model)
    trace("dY", dy, "B, N, d_model");
    const R2 dw_o = weight_grad(dy, heads_out);
    trace("dW_o = sum dY^T concat", dw_o, "d_model, d_model");
    const R4 d_out = split(input_grad(dy, l.w_o), H);  // (B, H, N, d_head)
    trace("dO = split(dY W_o)", d_out, "B, H, N, d_head");
    const Grads g = attention_backward(q, k, v, d_out, causal);
    const R3 dq = merge(g.dq), dk = merge(g.dk), dv = merge(g.dv);  // (B, N, d_model)
    trace("merge(dQ)", dq, "B, N, d_model");
    const R2 dw_q = weight_grad(dq, x);
    trace("dW_q = sum dQ^T X", dw_q, "d_model, d_model");
    const R3 via_q = input_grad(dq, l.w_q), via_k = input_grad(dk, l.w_k), via_v = input_grad(dv, l.w_v);
    const R3 dx = via_q + via_k + via_v;  // (B, N, d_model): x feeds three projections
    trace("dX = dQ W_q + dK W_k + dV W_v", dx, "B, N, d_model");
    fmt::print("  dX is the sum of three paths, largest |path|: via Q {:.3f}, via K {:.3f}, via V {:.3f}\n",
               largest(via_q), largest(via_k), largest(via_v));
    const auto L = [&](const Layer& layer, const R3& input) { return xt::sum(dy * layer_forward(layer, input, H))(); };
    check("dX", dx, numeric_gradient(x, [&](const R3& xx) { return L(l, xx); }));
    const auto check_param = [&](const std::string& name, auto member, const auto& analytic) {
        check(name, analytic, numeric_gradient(l.*member, [&](const auto& value) {
                  Layer changed = l;
                  changed.*member = value;
                  return L(changed, x);
              }));
    };
    check_param("dW_q", &Layer::w_q, dw_q);
    check_param("dW_k", &Layer::w_k, weight_grad(dk, x));
    check_param("dW_v", &Layer::w_v, weight_grad(dv, x));
    check_param("dW_o", &Layer::w_o, dw_o);
    check_param("db_q", &Layer::b_q, bias_grad(dq));
    check_param("db_k", &Layer::b_k, bias_grad(dk));
    check_param("db_v", &Layer::b_v, bias_grad(dv));
    check_param("db_o", &Layer::b_o, bias_grad(dy));
    fmt::print("  db_k = 0 ({:.1e}): a bias on k adds q . b_k to a whole row of scores, which softmax ignores\n",
               largest(bias_grad(dk)));
}

// ---------------------------------------------------------------------------------------------
// Steps 9-10: GQA and RoPE.

// (B, H_kv, N, d_head) -> (B, H, N, d_head): query head h reads K/V head h / (H / H_kv).
R4 repeat_heads(const R4& kv, std::size_t heads) {
    const std::size_t group = heads / kv.shape()[1];
    R4 out = R4::from_shape({kv.shape()[0], heads, kv.shape()[2], kv.shape()[3]});
    for (std::size_t h = 0; h < heads; ++h) xt::view(out, xt::all(), h) = xt::view(kv, xt::all(), h / group);
    return out;
}

// The backward of repeat_heads: each K/V head's gradient is the sum over its query group.
R4 sum_groups(const R4& d, std::size_t kv_heads) {
    const std::size_t group = d.shape()[1] / kv_heads;
    R4 out = xt::zeros<double>(std::array<std::size_t, 4>{d.shape()[0], kv_heads, d.shape()[2], d.shape()[3]});
    for (std::size_t h = 0; h < d.shape()[1]; ++h) xt::view(out, xt::all(), h / group) += xt::view(d, xt::all(), h);
    return out;
}

void step9_gqa(const Problem& p, const Tracer& trace, Checks& check) {
    trace.section(
        fmt::format("step 9: grouped-query attention -- {} query heads share {} K/V heads", p.heads, p.kv_heads));
    const AttentionOptions causal = causal_only();
    const R4 k_kv = xt::view(p.k, xt::all(), xt::range(0, p.kv_heads));  // (B, H_kv, N, d_head)
    const R4 v_kv = xt::view(p.v, xt::all(), xt::range(0, p.kv_heads));
    trace("k (shared)", k_kv, "B, H_kv, N, d_head");
    const Grads g = attention_backward(p.q, repeat_heads(k_kv, p.heads), repeat_heads(v_kv, p.heads), p.d_out, causal);
    const R4 dk = sum_groups(g.dk, p.kv_heads), dv = sum_groups(g.dv, p.kv_heads);  // (B, H_kv, N, d_head)
    trace("dK per query head", g.dk, "B, H, N, d_head");
    trace("dK = sum over the group", dk, "B, H_kv, N, d_head");
    trace("dV = sum over the group", dv, "B, H_kv, N, d_head");
    fmt::print("  a K/V head read by {} query heads collects all their gradients: used {} times, summed {} times\n",
               p.heads / p.kv_heads, p.heads / p.kv_heads, p.heads / p.kv_heads);
    const auto L = [&](const R4& k, const R4& v) {
        return loss(p.q, repeat_heads(k, p.heads), repeat_heads(v, p.heads), p.d_out, causal);
    };
    check("dK (GQA)", dk, numeric_gradient(k_kv, [&](const R4& k) { return L(k, v_kv); }));
    check("dV (GQA)", dv, numeric_gradient(v_kv, [&](const R4& v) { return L(k_kv, v); }));
}

// x (B, H, N, d_head) with token n's pairs rotated by sign * n theta_i (lesson 09's RoPE, in double).
R4 rotate(const R4& x, const Rope& rope, double sign) {
    const std::size_t dh = x.shape()[3];
    const std::vector<double> theta = rope_frequencies(dh, rope.base);
    R4 y = x;
    for (std::size_t n = 0; n < x.shape()[2]; ++n)
        for (std::size_t i = 0; i < dh / 2; ++i) {
            const auto [a, b] = rope_pair(i, dh, rope.layout);
            const double c = std::cos(sign * double(n) * theta[i]), s = std::sin(sign * double(n) * theta[i]);
            const auto xa = xt::view(x, xt::all(), xt::all(), n, a), xb = xt::view(x, xt::all(), xt::all(), n, b);
            xt::view(y, xt::all(), xt::all(), n, a) = xa * c - xb * s;
            xt::view(y, xt::all(), xt::all(), n, b) = xb * c + xa * s;
        }
    return y;
}

void step10_rope(const Problem& p, const Tracer& trace, Checks& check) {
    trace.section("step 10: RoPE -- the backward rotates by -theta");
    const AttentionOptions causal = causal_only();
    for (const RopeLayout layout : {RopeLayout::half, RopeLayout::interleaved}) {
        const Rope rope{10000.0, layout};
        const R4 q_rot = rotate(p.q, rope, +1.0), k_rot = rotate(p.k, rope, +1.0);  // (B, H, N, d_head)
        const Grads g = attention_backward(q_rot, k_rot, p.v, p.d_out, causal);
        const R4 dq = rotate(g.dq, rope, -1.0), dk = rotate(g.dk, rope, -1.0);  // (B, H, N, d_head)
        if (layout == RopeLayout::half) {
            trace("d(q rotated)", g.dq, "B, H, N, d_head");
            trace("dQ = rotate(d(q rotated), -theta)", dq, "B, H, N, d_head");
            fmt::print(
                "  q_rot = R(n theta) q, and R is a rotation: R^T = R^-1 = R(-n theta). dV needs no turn (v is\n"
                "  not rotated). Rotating by +theta again instead: max |error| = {:.2f}\n",
                largest(rotate(g.dq, rope, +1.0) - dq));
        }
        const auto L = [&](const R4& q, const R4& k) {
            return loss(rotate(q, rope, +1.0), rotate(k, rope, +1.0), p.v, p.d_out, causal);
        };
        const std::string name(layout_name(layout));
        check("dQ (RoPE, " + name + ")", dq, numeric_gradient(p.q, [&](const R4& q) { return L(q, p.k); }));
        check("dK (RoPE, " + name + ")", dk, numeric_gradient(p.k, [&](const R4& k) { return L(p.q, k); }));
    }
}

// ---------------------------------------------------------------------------------------------
// Step 11: FlashAttention's D.

void step11_d(const Problem& p, const Tracer& trace) {
    trace.section("step 11: D = rowsum(dP * P) = rowsum(dO * O) -- N x N numbers replaced by d_head");
    const R4 dp = bmm(p.d_out, transposed(p.v));
    const R4 d_from_p = rowsum(dp * p.fwd.p), d_from_o = rowsum(p.d_out * p.fwd.o);  // (B, H, N, 1)
    trace("rowsum(dP * P)", d_from_p, "B, H, N, 1");
    trace("rowsum(dO * O)", d_from_o, "B, H, N, 1");
    fmt::print(
        "  exact by construction: rowsum(dP * P) = rowsum(dO * O), as sum_j P[i,j] (dO[i] . V[j]) = dO[i] . O[i]\n"
        "  FlashAttention (Dao et al. 2022, the first paper; FlashAttention-2 keeps it) takes D = rowsum(dO * O):\n"
        "  it comes from dO and O, both (N, d_head), so the backward needs neither dP nor P to start\n");
}

// ---------------------------------------------------------------------------------------------
// Step 12: store P, or recompute it from the log-sum-exp -- the memory each needs at long N (what
// the log-sum-exp is for), then how long each backward takes on this machine (a measurement).

// One head at long N, in float (B = H = 1): its inputs, its forward's output, its gradients.
struct LongHead {
    Tensor2 q, k, v, d_out;  // (N, d_head)
    Tensor2 o;               // (N, d_head): the forward's output
    Tensor2 dq, dk, dv;      // (N, d_head): the backward's gradients

    std::size_t n() const { return q.shape()[0]; }
    std::size_t d() const { return q.shape()[1]; }
    float scale() const { return 1.0f / std::sqrt(float(d())); }
};

// Seeded inputs, and gradients already written once (zeros): no first touch of their pages is timed.
LongHead random_head(std::size_t n, std::size_t d_head, std::uint64_t seed) {
    Random rng(seed);
    LongHead x;
    for (Tensor2* t : {&x.q, &x.k, &x.v, &x.d_out}) *t = rng.normal<2>({n, d_head});
    for (Tensor2* t : {&x.dq, &x.dk, &x.dv}) *t = xt::zeros<float>(std::array<std::size_t, 2>{n, d_head});
    return x;
}

// An (N, d_head) tensor as the library's fused kernels take a (B, H, N, d_head) one: B = H = 1.
template <class T>
auto one_head(T& t) {
    return fast::contiguous_heads(t.data(), 1, t.shape()[0], t.shape()[1]);
}

// The forward that keeps P: scores = q k^T / sqrt(d) into an (N, N) buffer, softmax in place, O = P V.
// Where lse is given it receives each row's log-sum-exp, max + log(sum): what a recomputing backward needs.
Tensor2 forward_storing_p(LongHead& x, std::vector<float>* lse = nullptr) {
    const std::size_t n = x.n(), d = x.d();
    Tensor2 p = Tensor2::from_shape({n, n});  // (N, N): the B H N^2 floats a stored-P backward keeps
    blas::gemm(false, true, n, n, d, x.scale(), x.q.data(), d, x.k.data(), d, 0.0f, p.data(), n);
    if (lse != nullptr) lse->resize(n);
    fast::parallel_for(n, [&](std::size_t i, std::size_t) {
        float* row = p.data() + i * n;
        const float m = fast::row_max(row, n), sum = fast::exp_shifted_sum(row, n, m);
        for (std::size_t j = 0; j < n; ++j) row[j] /= sum;
        if (lse != nullptr) (*lse)[i] = m + std::log(sum);
    });
    x.o = Tensor2::from_shape({n, d});
    blas::gemm(false, false, n, d, n, 1.0f, p.data(), n, x.v.data(), d, 0.0f, x.o.data(), d);
    return p;
}

// The library's fused forward (the CPU's flash-style tiles): O and each row's log-sum-exp, no P.
std::vector<float> forward_keeping_lse(LongHead& x) {
    x.o = Tensor2::from_shape({x.n(), x.d()});
    std::vector<float> lse(x.n());  // (N)
    fast::fused_attention({1, 1, x.n(), x.n(), x.d()}, one_head(std::as_const(x.q)), one_head(std::as_const(x.k)),
                          one_head(std::as_const(x.v)), one_head(x.o), x.scale(), {}, {}, lse.data());
    return lse;
}

// Both backwards are the library's (src/headwise/fast/fused_backward.hpp), on the same tiles with the
// same kernel: P read from p (N, N), or, where p is null, recomputed from lse as exp(scale q k^T - lse).
void backward(LongHead& x, const float* p, const float* lse, const fast::BackwardTiling& tiling = {}) {
    const fast::AttentionShape s{1, 1, x.n(), x.n(), x.d()};
    const auto q = one_head(std::as_const(x.q)), k = one_head(std::as_const(x.k)), v = one_head(std::as_const(x.v));
    const auto o = one_head(std::as_const(x.o)), d_out = one_head(std::as_const(x.d_out));
    if (p != nullptr)
        fast::fused_attention_backward_stored_p(s, q, k, v, o, d_out, p, one_head(x.dq), one_head(x.dk), one_head(x.dv),
                                                x.scale(), {}, tiling);
    else
        fast::fused_attention_backward(s, q, k, v, o, d_out, lse, one_head(x.dq), one_head(x.dk), one_head(x.dv),
                                       x.scale(), {}, tiling);
}

// The most bytes in use beyond what was allocated before work() (counted by the lesson's operator
// new; OpenBLAS's own buffers are not), or nothing where the memory limit refused it.
template <class Work>
std::optional<std::size_t> extra_bytes(const Work& work) {
    const std::size_t before = lesson::bytes_allocated();
    lesson::reset_peak_bytes_allocated();
    try {
        work();
    } catch (const std::bad_alloc&) {
        return std::nullopt;
    }
    return lesson::peak_bytes_allocated() - before;
}

std::string mib(std::size_t bytes) { return fmt::format("{:.1f} MiB", double(bytes) / double(1u << 20)); }

// One row of the memory table: forward + backward of one head of N tokens, P stored, then recomputed.
// Returns the head with the recomputed gradients.
LongHead memory_row(std::size_t n, std::size_t d_head, std::uint64_t seed) {
    LongHead x = random_head(n, d_head, seed);
    const std::optional<std::size_t> stored = extra_bytes([&] {
        const Tensor2 p = forward_storing_p(x);  // (N, N)
        backward(x, p.data(), nullptr);
    });
    const Tensor2 dq = x.dq, dk = x.dk, dv = x.dv;  // (N, d_head): from the stored P
    x.o = Tensor2();
    const std::optional<std::size_t> recomputed = extra_bytes([&] {
        const std::vector<float> lse = forward_keeping_lse(x);  // (N)
        backward(x, nullptr, lse.data());
    });
    const std::string diff =
        stored && recomputed
            ? fmt::format("{:.1e}", std::max({largest(x.dq - dq), largest(x.dk - dk), largest(x.dv - dv)}))
            : "-";
    const auto shown = [](const std::optional<std::size_t>& bytes) { return bytes ? mib(*bytes) : "refused"; };
    fmt::print("    {:>7} {:>14} {:>14} {:>14} {:>17} {:>11}\n", n, mib(n * n * sizeof(float)), shown(stored),
               mib(n * sizeof(float)), shown(recomputed), diff);
    return x;
}

template <class Work>
double seconds(const Work& work) {
    const auto start = std::chrono::steady_clock::now();
    work();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> x) {
    std::sort(x.begin(), x.end());
    return x[x.size() / 2];
}

struct Timed {
    std::size_t d_head;
    double read, recomputed;  // seconds, the median of timed_runs each
};

constexpr int timed_runs = 3;
constexpr std::array<std::size_t, 2> timed_d_heads{16, 64};

// The backward alone at N and d_head, P read and P recomputed (from the same forward's O and
// log-sum-exp), alternating. P is written and every buffer touched before the clock starts. One
// pass over the head (BackwardSplit::heads): one core, each tile of P read or recomputed once.
Timed time_backwards(std::size_t n, std::size_t d_head, std::uint64_t seed) {
    LongHead x = random_head(n, d_head, seed);
    std::vector<float> lse;                        // (N)
    const Tensor2 p = forward_storing_p(x, &lse);  // (N, N)
    const fast::BackwardTiling one_pass{128, 128, fast::BackwardSplit::heads, fast::Kernel::automatic};
    std::vector<double> read, recomputed;
    for (int run = 0; run < timed_runs; ++run) {
        read.push_back(seconds([&] { backward(x, p.data(), nullptr, one_pass); }));
        recomputed.push_back(seconds([&] { backward(x, nullptr, lse.data(), one_pass); }));
    }
    return {d_head, median(read), median(recomputed)};
}

std::string_view kernel_name(std::size_t d_head) {
    return fast::to_string(fast::resolve_kernel(fast::Kernel::automatic, d_head));
}

// Which backward a row says was faster: within 5% of each other, neither.
enum class Faster { read, recomputed, neither };
Faster faster(const Timed& t) {
    const double ratio = t.recomputed / t.read;
    return ratio > 1.05 ? Faster::read : ratio < 1.0 / 1.05 ? Faster::recomputed : Faster::neither;
}

// What the times say, chosen by them: which backward was faster here, with the measured ratios.
std::string verdict(const std::vector<Timed>& rows) {
    std::vector<std::string> ratios;
    for (const Timed& t : rows) ratios.push_back(fmt::format("{:.2f} at d_head {}", t.recomputed / t.read, t.d_head));
    const std::string measured = fmt::format("recomputed / read = {}", fmt::join(ratios, ", "));
    const Faster first = faster(rows.front());
    const bool same = std::all_of(rows.begin(), rows.end(), [&](const Timed& t) { return faster(t) == first; });
    if (!same) return fmt::format("here the faster one depends on d_head ({})", measured);
    switch (first) {
        case Faster::read:
            return fmt::format(
                "here reading the stored P was faster ({}):\n  the log-sum-exp buys its memory with time", measured);
        case Faster::recomputed:
            return fmt::format(
                "here recomputing P was faster ({}):\n  making each tile of P again cost less than reading it",
                measured);
        case Faster::neither:
            break;
    }
    return fmt::format("here the two took about as long (within 5%: {})", measured);
}

// The time table: the two backwards on this machine at N and d_head 16 and 64.
void time_table(std::size_t n, std::uint64_t seed) {
    fmt::print(
        "  on this machine, the backward alone at N = {} (P is {}): one head, one pass (one core, each tile of P\n"
        "  read or recomputed once), the same kernel both ways; the median of {} runs each, the two alternating, P\n"
        "  written and every buffer touched before the clock starts (a forward that keeps P also writes it: not "
        "timed)\n",
        n, mib(n * n * sizeof(float)), timed_runs);
    fmt::print("    {:>7} {:>7} {:>20} {:>10} {:>13} {:>18}\n", "N", "d_head", "kernel", "P read", "P recomputed",
               "recomputed / read");
    std::vector<Timed> rows;
    for (const std::size_t d_head : timed_d_heads) {
        rows.push_back(time_backwards(n, d_head, seed + d_head));
        const Timed& t = rows.back();
        fmt::print("    {:>7} {:>7} {:>20} {:>9.3f}s {:>12.3f}s {:>18.2f}\n", n, d_head, kernel_name(d_head), t.read,
                   t.recomputed, t.recomputed / t.read);
    }
    fmt::print("  {}\n", verdict(rows));
}

// Step 12 calls fast's kernels (fast::), which charge no work: the lesson charges it
// before it starts, so that sizes it cannot afford are refused at once, not after steps 1-11. Per
// N^2: a forward 4 d_head + 25, a backward from P 8 d_head + 5, one recomputing P 10 d_head + 30.
void charge_step_work(std::size_t long_n, std::size_t d_head) {
    const auto per_n2 = [](std::size_t d, double forwards, double backwards) {
        return forwards * (4.0 * double(d) + 25.0) + backwards * (18.0 * double(d) + 35.0);
    };
    const double n = double(long_n), quarter = n / 4.0;
    double work = (n * n + quarter * quarter) * per_n2(d_head, 2.0, 1.0);  // the memory table
    for (const std::size_t d : timed_d_heads) work += quarter * quarter * per_n2(d, 1.0, timed_runs);  // the times
    limits::charge_work(work, "step 12's forwards and backwards");
}

void step12_memory(std::size_t long_n, std::size_t d_head, std::uint64_t seed, const Tracer& trace) {
    trace.section("step 12: store P (B H N^2 floats) or recompute it from the log-sum-exp (B H N floats)");
    fmt::print(
        "  one head (B = H = 1), d_head = {}, forward + backward. Stored: a forward that keeps P (N x N), then the\n"
        "  library's fused backward reading each tile of it. Recomputed: the library's fused forward (O and the\n"
        "  log-sum-exp), then the same backward making each tile again as exp(scale q k^T - lse). Memory = the most\n"
        "  bytes in use beyond the inputs and gradients (the lesson's operator new counts them; OpenBLAS's own\n"
        "  buffers are not counted). Memory is the point of the log-sum-exp:\n",
        d_head);
    fmt::print("    {:>7} {:>14} {:>14} {:>14} {:>17} {:>11}\n", "N", "P would be", "stored: extra", "lse is",
               "recompute: extra", "max |diff|");
    memory_row(long_n / 4, d_head, seed + long_n / 4);
    const LongHead last = memory_row(long_n, d_head, seed + long_n);
    const std::array<std::size_t, 4> one{1, 1, long_n, d_head};
    trace("dQ (recomputed P)", Tensor4(xt::reshape_view(last.dq, one)), "B, H, N, d_head");
    trace("dK (recomputed P)", Tensor4(xt::reshape_view(last.dk, one)), "B, H, N, d_head");
    trace("dV (recomputed P)", Tensor4(xt::reshape_view(last.dv, one)), "B, H, N, d_head");
    fmt::print(
        "  the stored P grows as N^2 (x16 from N/4 to N); recomputing keeps the extra memory to O, the\n"
        "  log-sum-exp and a few tiles, at the price of computing q k^T and exp once more (FlashAttention-2's\n"
        "  backward). At N = {} with B H = 8 x 16 heads, P alone would be {:.0f} GiB.\n",
        long_n, 128.0 * double(long_n) * double(long_n) * sizeof(float) / double(1u << 30));
    time_table(long_n / 4, seed);
}

// ---------------------------------------------------------------------------------------------
// Step 13: the same two backwards as CUDA kernels -- what they move through global memory.

constexpr std::size_t kernel_long_n = 256;  // step 13's second, longer N: where N^2 starts to show

// One row per backward kernel (src/kernels/backward_*.cuh) at (B, H, N, d_head): the bytes the
// forward it needs and the backward itself read and write, as the emulator counts them.
void print_kernel_traffic(const kernels::Problem& kp) {
    fmt::print("  B={} H={} N={} d_head={}, bytes:\n", kp.batch, kp.heads, kp.seq, kp.d_head);
    fmt::print("    {:<16} {:>14} {:>14} {:>14} {:>14}\n", "kernel", "forward read", "written", "backward read",
               "written");
    for (const kernels::BackwardTraffic& r : kernels::backward_traffic(kp))
        fmt::print("    {:<16} {:>14} {:>14} {:>14} {:>14}\n", kernels::name(r.version), r.forward.load_bytes,
                   r.forward.store_bytes, r.backward.load_bytes, r.backward.store_bytes);
}

void step13_kernels(const Problem& p, const Tracer& trace) {
    trace.section("step 13: the backward as CUDA kernels -- bytes through global memory, counted by the emulator");
    kernels::Problem kp;
    kp.batch = int(p.batch), kp.heads = int(p.heads), kp.d_head = int(p.d_head);
    if (!kernels::supports(kernels::BackwardVersion::flash, kp.d_head)) {
        fmt::print("  the kernels are compiled for d_head 8, 16, 32, 64 and 128, not {}: no counts\n", kp.d_head);
        return;
    }
    for (const std::size_t n : {p.n, kernel_long_n}) {
        kp.seq = int(n);
        if (kernels::emulation_accesses(kp) > kernels::emulation_budget) {
            fmt::print("  N={}: too large to emulate in a lesson (~{:.0e} accesses)\n", n,
                       kernels::emulation_accesses(kp));
            continue;
        }
        print_kernel_traffic(kp);
    }
    fmt::print(
        "  naive_backward: the forward writes P (4 B H N^2 bytes); the backward reads P and dS row by row for dQ,\n"
        "  then column by column for dK and dV: N^2 traffic that grows 16x when N grows 4x.\n"
        "  flash_backward: the forward writes only the log-sum-exp (4 B H N bytes); one block per tile of keys\n"
        "  reads each query tile once, recomputes P, keeps dK and dV in registers and adds its share of dQ with\n"
        "  atomicAdd (at long N, most of what it writes). src/kernels/backward_naive.cuh and backward_flash.cuh;\n"
        "  docs/06_cuda_kernel.md explains both.\n");
}

// The flags' sizes fit together, and the finite differences stay at about a second: step 8 runs
// the layer's forward twice for each of its B N d_model + 4 d_model^2 inputs and parameters.
void validate_sizes(const Dims& dims, std::size_t kv_heads) {
    const std::size_t B = dims.batch, N = dims.seq, d = dims.d_model, H = dims.heads;
    cli::require_divisible(d, H);
    if ((d / H) % 2 != 0) {
        throw usage_error(fmt::format("RoPE (step 10) rotates pairs: d_head = {} / {} = {} must be even", d, H, d / H));
    }
    if (H % kv_heads != 0) throw usage_error(fmt::format("--kv-heads {} does not divide --heads {}", kv_heads, H));
    const double inputs = double(B * N * d + 4 * d * d);
    const double forward = 4.0 * double(B * N * d) * double(d + N);  // projections and attention
    if (const double work = 2.0 * inputs * forward; work > 4e9) {
        throw usage_error(fmt::format(
            "finite differences run the layer twice per input and parameter: B = {}, N = {}, d_model = {} would "
            "take about {:.1e} operations (at most 4e9): use smaller sizes",
            B, N, d, work));
    }
}

}  // namespace

int main(int argc, char** argv) {
    lesson::App app{"Lesson 10: how attention learns -- the backward pass, by hand, checked by finite differences",
                    "10_backward"};
    cli::LessonOptions opt;
    opt.dims = {2, 6, 32, 4};  // B = 2, N = 6, d_model = 32, H = 4: d_head = 8, every axis its own size
    // Step 12's memory table at d_head 8, steps 1-11's: P's N^2 floats do not depend on it, and at 16
    // the table and the timings together would pass the lessons' work limit (lesson.hpp).
    std::size_t kv_heads = 2, long_n = 16384, long_d_head = 8;
    cli::add_lesson_options(app, opt, "batch,seq,d-model,heads,seed");
    lesson::add_bounded_option(app, "--kv-heads", kv_heads, "key/value heads H_kv for step 9 (must divide --heads)", 1,
                               256);
    lesson::add_bounded_option(app, "--measure-seq", long_n,
                               "step 12: the memory table's longest N (and N / 4, where the two backwards are timed)",
                               64, 65536);
    lesson::add_bounded_option(app, "--measure-d-head", long_d_head,
                               "step 12: d_head of the memory table's head (the backward is timed at 16 and 64)", 1,
                               256);
    return lesson::run(app, argc, argv, [&] {
        validate_sizes(opt.dims, kv_heads);
        charge_step_work(long_n, long_d_head);
        const std::size_t N = opt.dims.seq, d = opt.dims.d_model, H = opt.dims.heads;
        const Tracer trace(!opt.quiet);
        fmt::print("Lesson 10: the backward pass   B={} N={} d_model={} H={} d_head={} H_kv={} seed={}\n",
                   opt.dims.batch, N, d, H, d / H, kv_heads, opt.seed);
        const Problem p = make_problem(opt, kv_heads);
        Checks checks;
        step1_forward(p, trace);
        step2_dv(p, trace, checks);
        step3_dp(p, trace, checks);
        step4_softmax(p, trace, checks);
        step5_scale(p, trace, checks);
        step6_masks(p, trace, checks);
        step7_dq_dk(p, trace, checks);
        step8_layer(p, trace, checks, opt.seed);
        step9_gqa(p, trace, checks);
        step10_rope(p, trace, checks);
        step11_d(p, trace);
        step12_memory(long_n, long_d_head, opt.seed, trace);
        step13_kernels(p, trace);
        fmt::print("\nevery gradient against finite differences: largest relative difference {:.1e} ({})\n",
                   checks.worst(), checks.passed() ? "<= 1e-6, all agree" : "> 1e-6: A CHECK FAILED");
        return checks.passed() ? cli::exit_ok : cli::exit_failure;
    });
}
