// The attention backward (reference/attention_backward.hpp) against two independent oracles: central
// finite differences of a double-precision forward written here, and PyTorch's float64 autograd
// (tests/fixtures/backward/sdpa_*, scripts/make-fixtures-backward). The fast backward is held to the
// reference.
#include "headwise/reference/attention_backward.hpp"
#include "headwise/base/random.hpp"
#include "headwise/fast/fused_backward.hpp"
#include "headwise/fast/parallel.hpp"
#include "headwise/io/npy.hpp"
#include "headwise/lesson/lesson.hpp"
#include "headwise/reference/attention.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <new>
#include <limits>
#include <string>
#include <utility>
#include <vector>

using namespace headwise;

namespace {

// sum(d_out o attention(q, k, v)) in double, plain loops: the loss whose gradient the backward is.
// q (B, H, N_q, d_head), k and v (B, H, N_k, d_head), all as doubles in C order.
struct DoubleLoss {
    std::size_t batch, heads, nq, nk, d_head;
    double scale;
    AttentionOptions options;
    std::vector<double> d_out;

    double operator()(const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v) const {
        double loss = 0.0;
        std::vector<double> p(nk);
        for (std::size_t b = 0; b < batch; ++b)
            for (std::size_t h = 0; h < heads; ++h) {
                const std::size_t bh = b * heads + h;
                for (std::size_t i = 0; i < nq; ++i) {
                    double m = -std::numeric_limits<double>::infinity();
                    for (std::size_t j = 0; j < nk; ++j) {
                        double s = 0.0;
                        for (std::size_t c = 0; c < d_head; ++c)
                            s += q[(bh * nq + i) * d_head + c] * k[(bh * nk + j) * d_head + c];
                        p[j] = sdpa::masked(options, b, i, j) ? -std::numeric_limits<double>::infinity() : s * scale;
                        m = std::max(m, p[j]);
                    }
                    if (std::isinf(m)) continue;  // no key: output 0
                    double sum = 0.0;
                    for (double& x : p) sum += (x = std::exp(x - m));
                    for (std::size_t c = 0; c < d_head; ++c) {
                        double o = 0.0;
                        for (std::size_t j = 0; j < nk; ++j) o += p[j] / sum * v[(bh * nk + j) * d_head + c];
                        loss += d_out[(bh * nq + i) * d_head + c] * o;
                    }
                }
            }
        return loss;
    }
};

std::vector<double> as_doubles(const Tensor4& t) { return std::vector<double>(t.begin(), t.end()); }

// Largest |a - b| over the largest |b|: one relative figure for a whole gradient. A gradient that is
// zero in exact arithmetic (one key: the softmax is constant, dq = dk = 0) is held to 1e-2 times
// the tolerance in absolute terms instead, rounding's noise over zero being no relative figure.
template <class A>
double relative_error(const A& got, const std::vector<double>& want) {
    double diff = 0.0, scale = 0.0;
    std::size_t i = 0;
    for (auto it = got.begin(); it != got.end(); ++it, ++i) {
        diff = std::max(diff, std::abs(double(*it) - want[i]));
        scale = std::max(scale, std::abs(want[i]));
    }
    REQUIRE(i == want.size());
    return diff / std::max(scale, 1e-2);
}

// Central differences of the loss with respect to every element of which (0: q, 1: k, 2: v).
std::vector<double> finite_differences(const DoubleLoss& loss, std::vector<double> q, std::vector<double> k,
                                       std::vector<double> v, int which) {
    std::vector<double>& x = which == 0 ? q : which == 1 ? k : v;
    std::vector<double> grad(x.size());
    constexpr double eps = 1e-5;
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double keep = x[i];
        x[i] = keep + eps;
        const double up = loss(q, k, v);
        x[i] = keep - eps;
        const double down = loss(q, k, v);
        x[i] = keep;
        grad[i] = (up - down) / (2.0 * eps);
    }
    return grad;
}

struct Case {
    std::size_t batch, heads, nq, nk, d_head;
    AttentionOptions options;
};

// Seeded normal q, d_out (B, H, N_q, d_head) and k, v (B, H, N_k, d_head) for a case.
struct Inputs {
    Tensor4 q, k, v, d_out;
    Inputs(const Case& c, std::uint64_t seed) {
        Random rng(seed);
        q = rng.normal<4>({c.batch, c.heads, c.nq, c.d_head});
        k = rng.normal<4>({c.batch, c.heads, c.nk, c.d_head});
        v = rng.normal<4>({c.batch, c.heads, c.nk, c.d_head});
        d_out = rng.normal<4>({c.batch, c.heads, c.nq, c.d_head});
    }
};

void check_against_finite_differences(const Case& c, std::uint64_t seed) {
    const auto [q, k, v, d_out] = Inputs(c, seed);
    const double scale = c.options.scale ? double(*c.options.scale) : 1.0 / std::sqrt(double(c.d_head));
    const DoubleLoss loss{c.batch, c.heads, c.nq, c.nk, c.d_head, scale, c.options, as_doubles(d_out)};
    const AttentionGrads g = attention_backward_reference(q, k, v, d_out, c.options);
    const Tensor4* got[] = {&g.dq, &g.dk, &g.dv};
    for (int which = 0; which < 3; ++which) {
        const auto fd = finite_differences(loss, as_doubles(q), as_doubles(k), as_doubles(v), which);
        INFO("gradient "
             << "qkv"[which]);
        CHECK(relative_error(*got[which], fd) < 1e-5);
    }
}

// A path, not a concatenated string: GCC 12 at -O1 warns (-Warray-bounds) on the inlined
// string + string + ... here.
std::string fixture(const std::string& name, const std::string& file) {
    return (std::filesystem::path(HEADWISE_FIXTURES_DIR) / "backward" / name / file).string();
}

}  // namespace

TEST_CASE("attention backward: the reference agrees with central finite differences in double",
          "[attention_backward]") {
    Mask2 padding = {{false, false, true, false, true, true}, {false, false, false, false, false, false}};
    Mask2 attn = Mask2::from_shape({4, 6});
    for (std::size_t i = 0; i < 4; ++i)
        for (std::size_t j = 0; j < 6; ++j) attn(i, j) = (i + 2 * j) % 5 == 0;
    AttentionOptions causal, padded, masked, scaled;
    causal.causal = true;
    padded.key_padding_mask = &padding;
    masked.attn_mask = &attn;
    scaled.scale = 0.7f;
    SECTION("plain, B != H != N != d_head") { check_against_finite_differences({2, 3, 5, 5, 4, {}}, 1); }
    SECTION("cross-attention, N_q != N_k, causal") { check_against_finite_differences({2, 2, 4, 6, 3, causal}, 2); }
    SECTION("key padding") { check_against_finite_differences({2, 2, 4, 6, 3, padded}, 3); }
    SECTION("a boolean attn_mask") { check_against_finite_differences({1, 2, 4, 6, 5, masked}, 4); }
    SECTION("a given scale") { check_against_finite_differences({1, 1, 3, 3, 2, scaled}, 5); }
    SECTION("N = 1") { check_against_finite_differences({2, 2, 1, 1, 4, causal}, 6); }
}

TEST_CASE("attention backward: a hand-worked case, one query and two keys", "[attention_backward]") {
    // scale ln 3, scores (ln 3, 0) -> P = (3/4, 1/4); v0 = (1, 2), v1 = (3, 4); d_out = (1, 0).
    // dv = P^T d_out = ((3/4, 0), (1/4, 0)); dP = d_out . v^T = (1, 3); D = 3/4 + 3/4 = 3/2;
    // dS = P o (dP - D) = (-3/8, 3/8); dq = ln 3 dS . k = ln 3 (-3/8, 3/8); dk_j = ln 3 dS_j q.
    Tensor4 q = Tensor4::from_shape({1, 1, 1, 2}), k = Tensor4::from_shape({1, 1, 2, 2});
    Tensor4 v = Tensor4::from_shape({1, 1, 2, 2}), d_out = Tensor4::from_shape({1, 1, 1, 2});
    q = {{{{1.0f, 0.0f}}}};
    k = {{{{1.0f, 0.0f}, {0.0f, 1.0f}}}};
    v = {{{{1.0f, 2.0f}, {3.0f, 4.0f}}}};
    d_out = {{{{1.0f, 0.0f}}}};
    AttentionOptions o;
    o.scale = std::log(3.0f);
    const double ln3 = std::log(3.0);
    const AttentionGrads g = attention_backward_reference(q, k, v, d_out, o);
    CHECK(g.dv(0, 0, 0, 0) == Approx(0.75));
    CHECK(g.dv(0, 0, 1, 0) == Approx(0.25));
    CHECK(g.dv(0, 0, 0, 1) == Approx(0.0).margin(1e-7));
    CHECK(g.dq(0, 0, 0, 0) == Approx(-0.375 * ln3));
    CHECK(g.dq(0, 0, 0, 1) == Approx(0.375 * ln3));
    CHECK(g.dk(0, 0, 0, 0) == Approx(-0.375 * ln3));
    CHECK(g.dk(0, 0, 1, 0) == Approx(0.375 * ln3));
    CHECK(g.dk(0, 0, 0, 1) == Approx(0.0).margin(1e-7));
}

TEST_CASE("attention backward: PyTorch's float64 autograd gradients on the committed fixtures",
          "[attention_backward]") {
    for (const std::string name : {"sdpa_b2_h3_n5_d4", "sdpa_cross_b2_h2_nq3_nk7_d8", "sdpa_causal_b1_h2_n9_d8",
                                   "sdpa_padding_b3_h2_n6_d4", "sdpa_n1_b2_h2_d8"}) {
        INFO(name);
        const Tensor4 q = npy::to_tensor<4>(npy::read(fixture(name, "q.npy")), "q");
        const Tensor4 k = npy::to_tensor<4>(npy::read(fixture(name, "k.npy")), "k");
        const Tensor4 v = npy::to_tensor<4>(npy::read(fixture(name, "v.npy")), "v");
        const Tensor4 d_out = npy::to_tensor<4>(npy::read(fixture(name, "d_out.npy")), "d_out");
        AttentionOptions o;
        o.causal = name.find("causal") != std::string::npos || name.find("n1") != std::string::npos;
        Mask2 padding;
        if (name.find("padding") != std::string::npos) {
            padding = npy::to_mask(npy::read(fixture(name, "key_padding_mask.npy")), "key_padding_mask");
            o.key_padding_mask = &padding;
        }
        const AttentionGrads ref = attention_backward_reference(q, k, v, d_out, o);
        const AttentionGrads fast = scaled_dot_product_attention_backward(q, k, v, d_out, o);
        const std::pair<const char*, const Tensor4*> got[] = {{"dq", &ref.dq}, {"dk", &ref.dk}, {"dv", &ref.dv}};
        const Tensor4* fast_got[] = {&fast.dq, &fast.dk, &fast.dv};
        for (std::size_t t = 0; t < 3; ++t) {
            const std::vector<double> want = npy::read(fixture(name, std::string(got[t].first) + ".npy")).values;
            INFO(got[t].first);
            CHECK(relative_error(*got[t].second, want) < 1e-6);
            CHECK(relative_error(*fast_got[t], want) < 1e-4);
        }
    }
}

TEST_CASE("attention backward: a query whose keys are all masked gives zero, finite gradients",
          "[attention_backward]") {
    Random rng(11);
    const Tensor4 q = rng.normal<4>({2, 2, 3, 4}), k = rng.normal<4>({2, 2, 3, 4}), v = rng.normal<4>({2, 2, 3, 4});
    const Tensor4 d_out = rng.normal<4>({2, 2, 3, 4});
    Mask2 padding = {{false, false, false}, {true, true, true}};  // batch 1 sees no key at all
    AttentionOptions o;
    o.key_padding_mask = &padding;
    for (const AttentionGrads& g :
         {attention_backward_reference(q, k, v, d_out, o), scaled_dot_product_attention_backward(q, k, v, d_out, o)}) {
        for (const Tensor4* t : {&g.dq, &g.dk, &g.dv}) {
            for (float x : *t) REQUIRE(std::isfinite(x));
            CHECK(xt::amax(xt::abs(xt::view(*t, 1)))() == 0.0f);
            CHECK(xt::amax(xt::abs(xt::view(*t, 0)))() > 0.0f);
        }
    }
}

TEST_CASE("attention backward: a d_out that is not the output's shape is refused, naming both",
          "[attention_backward]") {
    Random rng(12);
    const Tensor4 q = rng.normal<4>({1, 2, 3, 4}), kv = rng.normal<4>({1, 2, 5, 4});
    const Tensor4 wrong = rng.normal<4>({1, 2, 5, 4});
    CHECK_THROWS_WITH(attention_backward_reference(q, kv, kv, wrong),
                      Catch::Contains("(1, 2, 3, 4)") && Catch::Contains("(1, 2, 5, 4)"));
    CHECK_THROWS_AS(scaled_dot_product_attention_backward(q, kv, kv, wrong), usage_error);
}

namespace {

// A case's (B, H, n, d_head) tensor as the fused kernels take it.
template <class T>
fast::Strided<T> heads_of(T* data, const Case& c, std::size_t n) {
    return {data, c.heads * n * c.d_head, n * c.d_head, c.d_head};
}

float scale_of(const Case& c) { return c.options.scale.value_or(1.0f / std::sqrt(float(c.d_head))); }

// What the fused backward starts from: the fused forward's output and log-sum-exp.
struct FusedForward {
    Tensor4 out;             // (B, H, N_q, d_head)
    std::vector<float> lse;  // (B, H, N_q)
    FusedForward(const Case& c, const Tensor4& q, const Tensor4& k, const Tensor4& v)
        : out(Tensor4::from_shape(q.shape())), lse(c.batch * c.heads * c.nq) {
        fast::fused_attention({c.batch, c.heads, c.nq, c.nk, c.d_head}, heads_of(q.data(), c, c.nq),
                              heads_of(k.data(), c, c.nk), heads_of(v.data(), c, c.nk), heads_of(out.data(), c, c.nq),
                              scale_of(c), c.options, {}, lse.data());
    }
};

// The fused backward on (b, h, n, d) tensors, its lse from the fused forward, against the reference;
// where backward_writes_in_place, again with dq, dk, dv in q's, k's and v's storage, to the same
// bits. Returns whether it wrote in place.
bool check_fast_against_reference(const Case& c, const fast::BackwardTiling& tiling, std::uint64_t seed) {
    const auto [q, k, v, d_out] = Inputs(c, seed);
    const AttentionGrads want = attention_backward_reference(q, k, v, d_out, c.options);
    auto view = [&](auto* data, std::size_t n) { return heads_of(data, c, n); };
    const fast::AttentionShape shape{c.batch, c.heads, c.nq, c.nk, c.d_head};
    const float scale = scale_of(c);
    const auto [out, lse] = FusedForward(c, q, k, v);
    // Garbage in the outputs first: the backward must overwrite every element.
    Tensor4 dq = xt::full_like(q, 1e30f), dk = xt::full_like(k, 1e30f), dv = xt::full_like(v, 1e30f);
    const Tensor4& o = out;
    fast::fused_attention_backward(shape, view(q.data(), c.nq), view(k.data(), c.nk), view(v.data(), c.nk),
                                   view(o.data(), c.nq), view(d_out.data(), c.nq), lse.data(), view(dq.data(), c.nq),
                                   view(dk.data(), c.nk), view(dv.data(), c.nk), scale, c.options, tiling);
    CHECK(relative_error(dq, as_doubles(want.dq)) < 1e-4);
    CHECK(relative_error(dk, as_doubles(want.dk)) < 1e-4);
    CHECK(relative_error(dv, as_doubles(want.dv)) < 1e-4);
    if (!fast::backward_writes_in_place(shape, tiling)) return false;
    Tensor4 q_dq = q, k_dk = k, v_dv = v;  // each the input, then its gradient
    fast::fused_attention_backward(shape, view(std::as_const(q_dq).data(), c.nq),
                                   view(std::as_const(k_dk).data(), c.nk), view(std::as_const(v_dv).data(), c.nk),
                                   view(o.data(), c.nq), view(d_out.data(), c.nq), lse.data(), view(q_dq.data(), c.nq),
                                   view(k_dk.data(), c.nk), view(v_dv.data(), c.nk), scale, c.options, tiling);
    CHECK((q_dq == dq));  // the same bits: (( )) keeps Catch from taking the tensors apart
    CHECK((k_dk == dk));
    CHECK((v_dv == dv));
    return true;
}

// The fused backward reading the weights stored by the reference forward (P, (B, H, N_q, N_k)) against
// the same backward recomputing them from the fused forward's log-sum-exp, and against the reference:
// reading P where the other computes it changes the gradients by rounding only.
void check_stored_p_against_recompute(const Case& c, const fast::BackwardTiling& tiling, std::uint64_t seed) {
    const auto [q, k, v, d_out] = Inputs(c, seed);
    Tensor4 p;  // (B, H, N_q, N_k)
    attention_reference(q, k, v, c.options, &p);
    const auto [out, lse] = FusedForward(c, q, k, v);
    const fast::AttentionShape shape{c.batch, c.heads, c.nq, c.nk, c.d_head};
    auto backward = [&](bool stored) {
        AttentionGrads g{xt::full_like(q, 1e30f), xt::full_like(k, 1e30f), xt::full_like(v, 1e30f)};
        const auto qv = heads_of(q.data(), c, c.nq), kv = heads_of(k.data(), c, c.nk), vv = heads_of(v.data(), c, c.nk);
        const auto ov = heads_of(out.data(), c, c.nq), gv = heads_of(d_out.data(), c, c.nq);
        const auto dq = heads_of(g.dq.data(), c, c.nq), dk = heads_of(g.dk.data(), c, c.nk),
                   dv = heads_of(g.dv.data(), c, c.nk);
        if (stored)
            fast::fused_attention_backward_stored_p(shape, qv, kv, vv, ov, gv, p.data(), dq, dk, dv, scale_of(c),
                                                    c.options, tiling);
        else
            fast::fused_attention_backward(shape, qv, kv, vv, ov, gv, lse.data(), dq, dk, dv, scale_of(c), c.options,
                                           tiling);
        return g;
    };
    const AttentionGrads from_p = backward(true), recomputed = backward(false);
    const AttentionGrads want = attention_backward_reference(q, k, v, d_out, c.options);
    const std::pair<const Tensor4*, const Tensor4*> pairs[] = {
        {&from_p.dq, &recomputed.dq}, {&from_p.dk, &recomputed.dk}, {&from_p.dv, &recomputed.dv}};
    const Tensor4* reference[] = {&want.dq, &want.dk, &want.dv};
    for (int which = 0; which < 3; ++which) {
        INFO("gradient "
             << "qkv"[which]);
        CHECK(relative_error(*pairs[which].first, as_doubles(*pairs[which].second)) < 1e-5);
        CHECK(relative_error(*pairs[which].first, as_doubles(*reference[which])) < 1e-4);
    }
}

}  // namespace

TEST_CASE("attention backward: the fused backward equals the reference, tile by tile, either split",
          "[attention_backward]") {
    Mask2 padding = Mask2::from_shape({2, 37});
    for (std::size_t j = 0; j < 37; ++j) padding(0, j) = j % 7 == 3, padding(1, j) = j >= 20;
    Mask2 attn = Mask2::from_shape({29, 37});
    for (std::size_t i = 0; i < 29; ++i)
        for (std::size_t j = 0; j < 37; ++j) attn(i, j) = (3 * i + j) % 11 == 0;
    Mask2 all_padded = Mask2::from_shape({2, 37});  // the second sequence has no key: its rows' L is -inf
    for (std::size_t j = 0; j < 37; ++j) all_padded(0, j) = j >= 30, all_padded(1, j) = true;
    AttentionOptions causal, padded, masked, empty;
    empty.key_padding_mask = &all_padded;
    causal.causal = true;
    padded.key_padding_mask = &padding;
    padded.causal = true;
    masked.attn_mask = &attn;
    using fast::BackwardSplit;
    using fast::Kernel;
    // BLAS calls on any d_head; the micro-kernels (AVX2: d_head a multiple of 8, on a CPU with AVX2;
    // AVX-512: a multiple of 16, with AVX-512; elsewhere they fall back to BLAS) with blocks of 32
    // keys, and with 128.
    std::size_t in_place = 0;  // cases also run with the gradients over their inputs
    for (const Kernel kernel : {Kernel::blas, Kernel::micro_kernel_avx2, Kernel::micro_kernel_avx512})
        for (const BackwardSplit split : {BackwardSplit::heads, BackwardSplit::blocks}) {
            INFO("split " << (split == BackwardSplit::heads ? "heads" : "blocks") << ", kernel "
                          << fast::to_string(kernel) << " (BLAS where it cannot run)");
            const fast::BackwardTiling small{8, 5, split, kernel};
            in_place += check_fast_against_reference({2, 3, 29, 37, 4, {}}, small, 21);
            in_place += check_fast_against_reference({2, 3, 29, 37, 16, causal}, small, 22);
            in_place += check_fast_against_reference({2, 3, 37, 29, 8, causal}, small, 23);  // N_q > N_k
            in_place += check_fast_against_reference({2, 3, 37, 29, 16, causal}, small, 23);
            in_place += check_fast_against_reference({2, 2, 29, 37, 8, padded}, small, 24);
            in_place += check_fast_against_reference({2, 2, 29, 37, 32, padded}, small, 24);
            in_place += check_fast_against_reference({2, 2, 29, 37, 16, empty}, small, 31);
            in_place += check_fast_against_reference({1, 2, 29, 37, 8, masked}, small, 25);
            in_place += check_fast_against_reference({1, 2, 29, 37, 16, masked}, small, 25);
            in_place += check_fast_against_reference({2, 2, 1, 1, 8, causal}, small, 26);
            in_place += check_fast_against_reference({2, 2, 1, 1, 16, causal}, small, 26);
            in_place += check_fast_against_reference({1, 2, 300, 300, 32, causal}, {128, 128, split, kernel}, 27);
            in_place += check_fast_against_reference({2, 2, 100, 37, 64, padded}, {40, 20, split, kernel}, 28);
            in_place += check_fast_against_reference({2, 1, 130, 130, 48, {}}, {64, 64, split, kernel}, 29);
            in_place += check_fast_against_reference({2, 2, 45, 70, 24, causal}, {16, 32, split, kernel}, 32);
            in_place += check_fast_against_reference({2, 3, 33, 37, 8, padded}, {12, 32, split, kernel}, 33);
            // N_q * d_head past what a core packs whole: q and d_out a tile at a time
            in_place += check_fast_against_reference({1, 2, 1100, 40, 64, causal}, {128, 32, split, kernel}, 30);
        }
    // Where the micro-kernels run, a head per core writes in place: the cases above cover it.
    if (fast::resolve_kernel(Kernel::automatic, 16) != Kernel::blas) CHECK(in_place > 0);
}

TEST_CASE("attention backward: reading a stored P gives the gradients recomputing it gives, either kernel and split",
          "[attention_backward]") {
    Mask2 padding = Mask2::from_shape({2, 37});
    for (std::size_t j = 0; j < 37; ++j) padding(0, j) = j % 5 == 2, padding(1, j) = true;  // batch 1 sees no key
    AttentionOptions causal, padded;
    causal.causal = true;
    padded.key_padding_mask = &padding;
    using fast::BackwardSplit;
    using fast::Kernel;
    for (const Kernel kernel : {Kernel::blas, Kernel::micro_kernel_avx2, Kernel::micro_kernel_avx512})
        for (const BackwardSplit split : {BackwardSplit::heads, BackwardSplit::blocks}) {
            INFO("split " << (split == BackwardSplit::heads ? "heads" : "blocks") << ", kernel "
                          << fast::to_string(kernel));
            const fast::BackwardTiling small{8, 5, split, kernel};
            check_stored_p_against_recompute({2, 3, 29, 37, 16, {}}, small, 41);
            check_stored_p_against_recompute({2, 3, 37, 29, 16, causal}, small, 42);  // N_q > N_k
            check_stored_p_against_recompute({2, 2, 29, 37, 8, padded}, small, 43);
            check_stored_p_against_recompute({2, 2, 29, 37, 32, padded}, small, 43);
            check_stored_p_against_recompute({1, 2, 300, 300, 64, causal}, {128, 128, split, kernel}, 44);
        }
}

TEST_CASE("attention backward: the fused backward's scratch is what it allocates, and bounded at long context",
          "[attention_backward]") {
    const std::size_t mib = 1u << 20;
    // (B, N, d_model, H) = (1, 16384, 1024, 16): q, k, v, out, d_out and the gradients are
    // 64 MiB each, one head's N x N weights 1 GiB. Beyond them: the scratch and the lse (1 MiB).
    const fast::AttentionShape long_context{1, 16, 16384, 16384, 64};
    const std::size_t lse_bytes = 16 * 16384 * sizeof(float);
    CHECK(fast::fused_attention_backward_scratch_bytes(long_context) + lse_bytes <= 64 * mib);
    for (const auto split : {fast::BackwardSplit::heads, fast::BackwardSplit::blocks})
        CHECK(fast::fused_attention_backward_scratch_bytes(long_context, {128, 128, split}) + lse_bytes <= 64 * mib);

    // What a call allocates, counted by the lesson runtime's operator new (linked into this test),
    // is no more than it says: under a memory limit of that (and 16 KiB for the allocator's rounding
    // and the thread pool's hand-out) the call runs; under half of it, it is refused.
    for (const auto split : {fast::BackwardSplit::heads, fast::BackwardSplit::blocks}) {
        INFO("split " << (split == fast::BackwardSplit::heads ? "heads" : "blocks"));
        const fast::AttentionShape s{2, 3, 700, 500, 32};
        Random rng(31);
        const Tensor4 q = rng.normal<4>({2, 3, 700, 32}), kv = rng.normal<4>({2, 3, 500, 32});
        std::vector<float> lse(2 * 3 * 700, 1.0f);
        Tensor4 dq = Tensor4::from_shape({2, 3, 700, 32}), dk = Tensor4::from_shape({2, 3, 500, 32}),
                dv = Tensor4::from_shape({2, 3, 500, 32});
        auto view = [&](auto* data, std::size_t n) {
            return fast::Strided<std::remove_pointer_t<decltype(data)>>{data, 3 * n * 32, n * 32, 32};
        };
        const fast::BackwardTiling tiling{128, 128, split};
        auto run = [&] {
            fast::fused_attention_backward(s, view(q.data(), 700), view(kv.data(), 500), view(kv.data(), 500),
                                           view(q.data(), 700), view(q.data(), 700), lse.data(), view(dq.data(), 700),
                                           view(dk.data(), 500), view(dv.data(), 500), 0.2f, {}, tiling);
        };
        for (int warm = 0; warm < 3; ++warm) run();  // every worker started before anything is counted
        const std::size_t claimed = fast::fused_attention_backward_scratch_bytes(s, tiling);
        lesson::set_memory_limit(lesson::bytes_allocated() + claimed + 16384);
        CHECK_NOTHROW(run());
        lesson::set_memory_limit(lesson::bytes_allocated() + claimed / 2);
        CHECK_THROWS_AS(run(), std::bad_alloc);
        lesson::set_memory_limit(std::numeric_limits<std::size_t>::max());
    }
}
