#include "headwise/reference/attention.hpp"
#include "headwise/fast/fused_attention.hpp"
#include "headwise/fast/isa.hpp"
#include "headwise/fast/parallel.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

using namespace headwise;

namespace {
Tensor4 one_head(std::initializer_list<std::initializer_list<float>> rows) {
    Tensor2 m = rows;
    Tensor4 t = Tensor4::from_shape({1, 1, m.shape()[0], m.shape()[1]});
    std::copy(m.begin(), m.end(), t.begin());
    return t;
}
}  // namespace

TEST_CASE("attention: a hand-worked one-query example", "[attention]") {
    // With scale ln 3 the scores are (ln 3, 0) -> weights (3/4, 1/4) -> out = 3/4 v0 + 1/4 v1.
    const Tensor4 q = one_head({{1.0f, 0.0f}});
    const Tensor4 k = one_head({{1.0f, 0.0f}, {0.0f, 1.0f}});
    const Tensor4 v = one_head({{1.0f, 2.0f}, {3.0f, 4.0f}});
    AttentionOptions o;
    o.scale = std::log(3.0f);
    Tensor4 w;
    const Tensor4 out = scaled_dot_product_attention(q, k, v, o, &w);
    CHECK(w(0, 0, 0, 0) == Approx(0.75));
    CHECK(w(0, 0, 0, 1) == Approx(0.25));
    CHECK(out(0, 0, 0, 0) == Approx(1.5));
    CHECK(out(0, 0, 0, 1) == Approx(2.5));
}

TEST_CASE("attention: the default scale is 1/sqrt(d_head)", "[attention]") {
    // scores (1/sqrt 2 * 2, 0) = (sqrt 2, 0)
    const Tensor4 q = one_head({{2.0f, 0.0f}});
    const Tensor4 k = one_head({{1.0f, 0.0f}, {0.0f, 1.0f}});
    const Tensor4 v = one_head({{1.0f, 0.0f}, {0.0f, 1.0f}});
    Tensor4 w;
    scaled_dot_product_attention(q, k, v, {}, &w);
    const double e = std::exp(std::sqrt(2.0));
    CHECK(w(0, 0, 0, 0) == Approx(e / (e + 1.0)));
}

TEST_CASE("attention: causal rows with equal scores are 1, 1/2, 1/3", "[attention]") {
    Tensor4 q = Tensor4::from_shape({1, 1, 3, 2});
    q.fill(0.0f);  // every score is 0, so weights are uniform over what is visible
    AttentionOptions o;
    o.causal = true;
    Tensor4 w;
    scaled_dot_product_attention(q, q, q, o, &w);
    CHECK(w(0, 0, 0, 0) == 1.0f);
    CHECK(w(0, 0, 0, 1) == 0.0f);
    CHECK(w(0, 0, 1, 0) == Approx(0.5));
    CHECK(w(0, 0, 1, 1) == Approx(0.5));
    CHECK(w(0, 0, 1, 2) == 0.0f);
    for (int j = 0; j < 3; ++j) CHECK(w(0, 0, 2, j) == Approx(1.0 / 3));
}

TEST_CASE("attention: a query whose keys are all padded gets zeros, not NaN", "[attention]") {
    Random rng(3);
    const Tensor4 q = rng.normal<4>({2, 2, 3, 4});
    Mask2 pad = Mask2::from_shape({2, 3});
    pad.fill(false);
    for (int j = 0; j < 3; ++j) pad(1, j) = true;  // batch 1: every key is padding
    AttentionOptions o;
    o.key_padding_mask = &pad;
    Tensor4 w;
    const Tensor4 out = scaled_dot_product_attention(q, q, q, o, &w);
    for (std::size_t h = 0; h < 2; ++h)
        for (std::size_t i = 0; i < 3; ++i)
            for (std::size_t c = 0; c < 4; ++c) CHECK(out(1, h, i, c) == 0.0f);
    const Tensor4 ref = attention_reference(q, q, q, o);
    CHECK(max_abs_diff(out, ref) < 1e-5);
}

TEST_CASE("attention: BLAS path equals the double-precision reference", "[attention]") {
    Random rng(11);
    for (bool causal : {false, true}) {
        const Tensor4 q = rng.normal<4>({2, 3, 7, 5});
        const Tensor4 k = rng.normal<4>({2, 3, 9, 5});  // cross-attention: N_k != N_q
        const Tensor4 v = rng.normal<4>({2, 3, 9, 5});
        AttentionOptions o;
        o.causal = causal;
        Tensor4 w1, w2;
        const Tensor4 fast = scaled_dot_product_attention(q, k, v, o, &w1);
        const Tensor4 ref = attention_reference(q, k, v, o, &w2);
        CHECK(max_abs_diff(fast, ref) < 1e-5);
        CHECK(max_abs_diff(w1, w2) < 1e-6);
    }
}

TEST_CASE("attention: split_heads then merge_heads is exact", "[attention]") {
    Random rng(5);
    const Tensor3 x = rng.normal<3>({2, 5, 64});
    const Tensor4 h = split_heads(x, 8);
    CHECK(h.shape() == std::array<std::size_t, 4>{2, 8, 5, 8});
    // head 1 of token 3 holds columns 8..15 of token 3
    for (std::size_t c = 0; c < 8; ++c) CHECK(h(1, 1, 3, c) == x(1, 3, 8 + c));
    CHECK(max_abs_diff(merge_heads(h), x) == 0.0);  // bit-exact round trip
}

TEST_CASE("attention: linear computes x . W^T + b", "[attention]") {
    Tensor3 x = Tensor3::from_shape({1, 1, 2});
    x(0, 0, 0) = 1.0f;
    x(0, 0, 1) = 2.0f;
    const Tensor2 w = {{1.0f, 0.0f}, {0.0f, 1.0f}, {1.0f, 1.0f}};  // (out=3, in=2)
    const Tensor1 b = {10.0f, 20.0f, 30.0f};
    const Tensor3 y = linear(x, w, b);
    CHECK(y(0, 0, 0) == 11.0f);
    CHECK(y(0, 0, 1) == 22.0f);
    CHECK(y(0, 0, 2) == 33.0f);
}

TEST_CASE("attention: multi-head forward equals its steps composed by hand", "[attention]") {
    Random rng(9);
    const auto mha = MultiHeadAttention::random(16, 4, true, rng);
    const Tensor3 x = rng.normal<3>({2, 6, 16});
    Tensor4 w;
    const Tensor3 y = mha.forward(x, {}, &w);
    CHECK(w.shape() == std::array<std::size_t, 4>{2, 4, 6, 6});

    auto rows = [&](std::size_t i) { return Tensor2(xt::view(mha.in_proj_weight, xt::range(16 * i, 16 * (i + 1)))); };
    auto bias = [&](std::size_t i) { return Tensor1(xt::view(mha.in_proj_bias, xt::range(16 * i, 16 * (i + 1)))); };
    const Tensor4 q = split_heads(linear(x, rows(0), bias(0)), 4);
    const Tensor4 k = split_heads(linear(x, rows(1), bias(1)), 4);
    const Tensor4 v = split_heads(linear(x, rows(2), bias(2)), 4);
    const Tensor3 expect = linear(merge_heads(attention_reference(q, k, v)), mha.out_proj_weight, mha.out_proj_bias);
    CHECK(max_abs_diff(y, expect) < 1e-5);
}

TEST_CASE("attention: mismatched shapes are refused with a usage_error", "[attention]") {
    Random rng(1);
    const auto mha = MultiHeadAttention::random(16, 4, false, rng);
    const Tensor3 x = rng.normal<3>({2, 6, 12});
    CHECK_THROWS_AS(mha.forward(x), usage_error);
    CHECK_THROWS_AS(split_heads(rng.normal<3>({1, 2, 10}), 3), usage_error);
}

TEST_CASE("attention: max_abs_diff does not hide a NaN", "[attention]") {
    Tensor1 a = {1.0f, 2.0f};
    Tensor1 b = {1.0f, std::nanf("")};
    CHECK(std::isnan(max_abs_diff(a, b)));
}

TEST_CASE("attention: the fused path equals the reference on awkward sizes and masks", "[attention][fused]") {
    // Sizes straddle the 64-query causal strips and the 256-query tiles; cross-attention has
    // N_k != N_q; every mask kind is used.
    Random rng(21);
    for (std::size_t nq : {1u, 127u, 128u, 129u, 255u, 256u, 257u}) {
        for (bool causal : {false, true}) {
            const std::size_t nk = causal ? nq : nq + 3;
            const Tensor4 q = rng.normal<4>({2, 3, nq, 8});
            const Tensor4 k = rng.normal<4>({2, 3, nk, 8});
            const Tensor4 v = rng.normal<4>({2, 3, nk, 8});
            Mask2 pad = Mask2::from_shape({2, nk});
            pad.fill(false);
            pad(1, nk - 1) = true;
            AttentionOptions o;
            o.causal = causal;
            o.key_padding_mask = &pad;
            const Tensor4 fused = scaled_dot_product_attention(q, k, v, o);  // no weights: fused path
            const Tensor4 ref = attention_reference(q, k, v, o);
            INFO("N_q = " << nq << ", causal = " << causal);
            CHECK(max_abs_diff(fused, ref) < 1e-5);
        }
    }
}

TEST_CASE("attention: the fused path equals the reference when long key rows shrink the tile", "[attention][fused]") {
    // 20000 keys: a 256-query tile of scores would not fit in cache, so tiles shrink to 16 rows.
    Random rng(24);
    const Tensor4 q = rng.normal<4>({1, 2, 40, 8});
    const Tensor4 k = rng.normal<4>({1, 2, 20000, 8});
    const Tensor4 v = rng.normal<4>({1, 2, 20000, 8});
    Mask2 attn = Mask2::from_shape({40, 20000});
    attn.fill(false);
    for (std::size_t i = 0; i < 40; ++i) attn(i, (i * 7919) % 20000) = true;
    AttentionOptions o;
    o.attn_mask = &attn;
    CHECK(max_abs_diff(scaled_dot_product_attention(q, k, v, o), attention_reference(q, k, v, o)) < 1e-5);
}

TEST_CASE("attention: multi-head fast path equals the weights path for self- and cross-attention",
          "[attention][fused]") {
    Random rng(22);
    const auto mha = MultiHeadAttention::random(32, 4, true, rng);
    const Tensor3 x = rng.normal<3>({2, 70, 32});
    const Tensor3 mem = rng.normal<3>({2, 33, 32});
    const Tensor3 other = rng.normal<3>({2, 33, 32});
    for (bool causal : {false, true}) {
        AttentionOptions o;
        o.causal = causal;
        Tensor4 w;
        CHECK(max_abs_diff(mha.forward(x, o), mha.forward(x, o, &w)) < 1e-5);  // self
        if (!causal) {
            CHECK(max_abs_diff(mha.forward(x, mem, mem, o), mha.forward(x, mem, mem, o, &w)) < 1e-5);      // K = V
            CHECK(max_abs_diff(mha.forward(x, mem, other, o), mha.forward(x, mem, other, o, &w)) < 1e-5);  // K != V
        }
    }
}

TEST_CASE("attention: the fast path's reused scratch carries nothing from one call to the next", "[attention][fused]") {
    // A big call leaves its numbers in the per-thread workspace; a smaller call must not see them.
    Random rng(23);
    const auto mha = MultiHeadAttention::random(64, 4, true, rng);
    const Tensor3 small = rng.normal<3>({1, 9, 64});
    const Tensor3 big = rng.normal<3>({3, 300, 64});
    const Tensor3 first = mha.forward(small);
    (void)mha.forward(big);
    CHECK(max_abs_diff(mha.forward(small), first) == 0.0);
    Tensor4 w;
    CHECK(max_abs_diff(mha.forward(big), mha.forward(big, {}, &w)) < 1e-5);
}

namespace {
constexpr fast::Kernel all_kernels[] = {fast::Kernel::blas, fast::Kernel::micro_kernel_avx2,
                                        fast::Kernel::micro_kernel_avx512};

// |fast - reference| relative to the reference's largest entry (at least 1).
double relative_diff(const Tensor4& fast, const Tensor4& ref) {
    double scale = 1.0;
    for (float x : ref) scale = std::max(scale, double(std::abs(x)));
    return max_abs_diff(fast, ref) / scale;
}
}  // namespace

TEST_CASE("attention: the fused path agrees with the reference to 1e-5 on N = 1, 17, 257 and d_head = 1 to 128",
          "[attention][fused]") {
    // Default tiles, and tiles of 16 queries against blocks of 32 keys, so the online softmax
    // carries its max and sum across many blocks and causal strips end inside blocks; every
    // kernel (the AVX2 micro-kernels run where the CPU has AVX2 and d_head is a multiple of 8, the
    // AVX-512 ones where it has AVX-512 and d_head is a multiple of 16: 24 runs only the first,
    // 1 and 3 neither). Tiles of 7 queries put a causal group of queries across a block's first
    // key, so some of its rows see no key of that block at all.
    Random rng(25);
    for (std::size_t n : {1u, 17u, 257u})
        for (std::size_t d_head : {1u, 3u, 8u, 16u, 24u, 64u, 128u})
            for (bool causal : {false, true})
                for (bool padded : {false, true}) {
                    const std::size_t nk = causal ? n : n + 5;
                    const Tensor4 q = rng.normal<4>({2, 2, n, d_head});
                    const Tensor4 k = rng.normal<4>({2, 2, nk, d_head}) * 3.0f;  // peaky rows: max changes often
                    const Tensor4 v = rng.normal<4>({2, 2, nk, d_head});
                    Mask2 pad = Mask2::from_shape({2, nk});
                    pad.fill(false);
                    if (padded)
                        for (std::size_t j = 0; j < nk; j += 3) pad(1, j) = true;  // incl. key 0: row 0 sees nothing
                    AttentionOptions o;
                    o.causal = causal;
                    o.key_padding_mask = padded ? &pad : nullptr;
                    const Tensor4 ref = attention_reference(q, k, v, o);
                    INFO("N = " << n << ", d_head = " << d_head << ", causal = " << causal << ", padded = " << padded);
                    CHECK(relative_diff(scaled_dot_product_attention(q, k, v, o), ref) <= 1e-5);
                    Tensor4 small = Tensor4::from_shape(ref.shape());
                    auto view = [&](auto* data, std::size_t rows) {
                        return fast::Strided<std::remove_pointer_t<decltype(data)>>{data, 2 * rows * d_head,
                                                                                    rows * d_head, d_head};
                    };
                    for (auto kernel : all_kernels)
                        for (std::size_t rows : {16u, 7u}) {
                            fast::fused_attention({2, 2, n, nk, d_head}, view(q.data(), n), view(k.data(), nk),
                                                  view(v.data(), nk), view(small.data(), n),
                                                  1.0f / std::sqrt(float(d_head)), o, {rows, 32, kernel});
                            INFO("kernel = " << fast::to_string(fast::resolve_kernel(kernel, d_head)) << " (asked for "
                                             << fast::to_string(kernel) << "), tiles of " << rows << " queries");
                            CHECK(relative_diff(small, ref) <= 1e-5);
                        }
                }
}

TEST_CASE("attention: with a causal mask, keys after a query change nothing of its output, however large their scores",
          "[attention][fused]") {
    // Keys from `future` on get scores near +600 from every query. A query before them must not let
    // those into its running max (the register tiles compute scores past a query's own position,
    // up to the last query of its group of 6, in whole vectors): against a max of 600 its own
    // scores' exponentials would all be 0. Two places for the loud keys, one inside a vector.
    Random rng(27);
    const std::size_t n = 40;
    for (std::size_t d_head : {8u, 16u, 24u, 64u}) {
        Tensor4 q = rng.normal<4>({1, 2, n, d_head});
        const Tensor4 k = rng.normal<4>({1, 2, n, d_head});
        const Tensor4 v = rng.normal<4>({1, 2, n, d_head});
        for (std::size_t h = 0; h < 2; ++h)
            for (std::size_t i = 0; i < n; ++i) q(0, h, i, 0) = 1.0f + std::abs(q(0, h, i, 0));
        AttentionOptions o;
        o.causal = true;
        auto view = [&](auto* data) {
            return fast::Strided<std::remove_pointer_t<decltype(data)>>{data, 2 * n * d_head, n * d_head, d_head};
        };
        auto in = [&](const Tensor4& x) { return view(x.data()); };
        const float scale = 1.0f / std::sqrt(float(d_head));
        for (std::size_t future : {13u, 20u}) {
            Tensor4 k_loud = k;  // the same keys, but the later ones point along every query
            for (std::size_t h = 0; h < 2; ++h)
                for (std::size_t j = future; j < n; ++j) k_loud(0, h, j, 0) = 600.0f * std::sqrt(float(d_head));
            for (const fast::Kernel kernel : all_kernels)
                for (std::size_t rows : {7u, 40u}) {
                    INFO("d_head = " << d_head << ", loud from key " << future << ", "
                                     << fast::to_string(fast::resolve_kernel(kernel, d_head)) << ", tiles of " << rows
                                     << " queries");
                    Tensor4 quiet = Tensor4::from_shape(q.shape()), loud = Tensor4::from_shape(q.shape());
                    fast::fused_attention({1, 2, n, n, d_head}, in(q), in(k), in(v), view(quiet.data()), scale, o,
                                          {rows, 32, kernel});
                    fast::fused_attention({1, 2, n, n, d_head}, in(q), in(k_loud), in(v), view(loud.data()), scale, o,
                                          {rows, 32, kernel});
                    std::size_t changed = 0;  // outputs of the queries before the loud keys: the same bits
                    for (std::size_t h = 0; h < 2; ++h)
                        for (std::size_t i = 0; i < future; ++i)
                            for (std::size_t c = 0; c < d_head; ++c) changed += loud(0, h, i, c) != quiet(0, h, i, c);
                    CHECK(changed == 0);
                    CHECK(relative_diff(quiet, attention_reference(q, k, v, o)) <= 1e-5);
                }
        }
    }
}

TEST_CASE("attention: the fused path matches the reference whether cores pack per head or all heads first",
          "[attention][fused]") {
    // With four heads per core or more, each core packs a head's K^T and V and runs its tiles at
    // once; with fewer, every head is packed before the tiles are shared out. B * H is chosen from
    // this machine's core count so that both happen (d_head 64: each kernel the CPU has).
    Random rng(26);
    const std::size_t workers = fast::worker_count();
    for (const fast::Kernel kernel : all_kernels)
        for (std::size_t batch : {std::size_t{1}, 2 * workers})
            for (bool causal : {false, true}) {
                const std::size_t heads = 2, n = 70, d_head = 64;
                const Tensor4 q = rng.normal<4>({batch, heads, n, d_head});
                const Tensor4 k = rng.normal<4>({batch, heads, n, d_head});
                const Tensor4 v = rng.normal<4>({batch, heads, n, d_head});
                Mask2 pad = Mask2::from_shape({batch, n});
                pad.fill(false);
                pad(batch - 1, n - 1) = true;
                AttentionOptions o;
                o.causal = causal;
                o.key_padding_mask = &pad;
                INFO("B * H = " << batch * heads << " on " << workers << " cores, causal = " << causal << ", "
                                << fast::to_string(fast::resolve_kernel(kernel, d_head)));
                fast::set_default_kernel(kernel);
                const Tensor4 fast = scaled_dot_product_attention(q, k, v, o);
                fast::set_default_kernel(fast::Kernel::automatic);
                CHECK(relative_diff(fast, attention_reference(q, k, v, o)) <= 1e-5);
            }
}

TEST_CASE("attention: each instruction set's micro-kernels run where asked if the CPU has it, BLAS elsewhere",
          "[attention][fused]") {
    // What the tests above ran: without this, a kernel that silently fell back to BLAS would pass them.
    using fast::Kernel;
    const Isa isa = fast::fast_isa();  // the CPU's widest, or HEADWISE_ISA (tests/isa_test.cpp)
    const bool avx2 = isa >= Isa::avx2, avx512 = isa >= Isa::avx512;
    CHECK(fast::resolve_kernel(Kernel::micro_kernel_avx2, 8) == (avx2 ? Kernel::micro_kernel_avx2 : Kernel::blas));
    CHECK(fast::resolve_kernel(Kernel::micro_kernel_avx2, 64) == (avx2 ? Kernel::micro_kernel_avx2 : Kernel::blas));
    CHECK(fast::resolve_kernel(Kernel::micro_kernel_avx2, 12) == Kernel::blas);  // not a multiple of 8
    CHECK(fast::resolve_kernel(Kernel::micro_kernel_avx512, 64) ==
          (avx512 ? Kernel::micro_kernel_avx512 : Kernel::blas));
    CHECK(fast::resolve_kernel(Kernel::micro_kernel_avx512, 24) == Kernel::blas);  // not a multiple of 16
    CHECK(fast::resolve_kernel(Kernel::blas, 64) == Kernel::blas);
    // automatic: the widest that runs, AVX-512 before AVX2 before BLAS
    CHECK(fast::choose_kernel(64) == (avx512 ? Kernel::micro_kernel_avx512
                                      : avx2 ? Kernel::micro_kernel_avx2
                                             : Kernel::blas));
    CHECK(fast::choose_kernel(24) == (avx2 ? Kernel::micro_kernel_avx2 : Kernel::blas));
    CHECK(fast::choose_kernel(3) == Kernel::blas);
    CHECK(fast::resolve_kernel(Kernel::automatic, 64) == fast::choose_kernel(64));
}

TEST_CASE("attention: the chunked fast path (batch elements, then groups of heads) equals the weights path",
          "[attention][fused]") {
    Random rng(26);
    const auto mha = MultiHeadAttention::random(24, 4, true, rng);  // d_head = 6
    const Tensor3 x = rng.normal<3>({3, 41, 24});
    const Tensor3 mem = rng.normal<3>({3, 29, 24});
    const Tensor3 other = rng.normal<3>({3, 29, 24});
    Mask2 pad = Mask2::from_shape({3, 41});
    pad.fill(false);
    pad(2, 0) = pad(2, 5) = pad(1, 40) = true;
    Mask2 pad_mem = Mask2::from_shape({3, 29});
    pad_mem.fill(false);
    pad_mem(1, 3) = true;
    // 1 MiB: the whole batch at once; smaller budgets: a batch element at a time, then groups of
    // heads, then one head at a time (the exact split depends on the attention's scratch).
    for (std::size_t budget :
         {std::size_t{1} << 20, std::size_t{64} << 10, std::size_t{24} << 10, std::size_t{1} << 10}) {
        sdpa::set_fused_budget(budget);
        for (bool causal : {false, true}) {
            AttentionOptions o;
            o.causal = causal;
            o.key_padding_mask = &pad;
            Tensor4 w;
            INFO("budget = " << budget << " bytes, causal = " << causal);
            CHECK(max_abs_diff(mha.forward(x, o), mha.forward(x, o, &w)) < 1e-5);
            AttentionOptions oc;
            oc.key_padding_mask = &pad_mem;
            CHECK(max_abs_diff(mha.forward(x, mem, mem, oc), mha.forward(x, mem, mem, oc, &w)) < 1e-5);
            CHECK(max_abs_diff(mha.forward(x, mem, other, oc), mha.forward(x, mem, other, oc, &w)) < 1e-5);
        }
    }
    sdpa::set_fused_budget(0);
}

TEST_CASE("attention: the fast path's memory is O(N * d) and within 64 MiB at N = 16384, d_model = 1024",
          "[attention][fused]") {
    MultiHeadAttention mha;
    mha.heads = 16;
    mha.in_proj_weight = Tensor2::from_shape({3 * 1024, 1024});
    mha.out_proj_weight = Tensor2::from_shape({1024, 1024});
    const std::size_t mib = 1u << 20;
    // (1, 16384, 1024, 16): Q, K, V alone would be 192 MiB, one head's fp32 N x N 1 GiB.
    const std::size_t long_context = mha.forward_scratch_bytes(1, 16384, 16384, false);
    CHECK(long_context <= 64 * mib);
    CHECK(long_context >= 16384 * 64 * 4 * sizeof(float));  // at least one head's Q, K, V and output
    // Linear in N: twice the keys, at most twice the memory (less while heads still group).
    CHECK(mha.forward_scratch_bytes(1, 32768, 32768, false) <= 2 * long_context);
    // With weights the (B, H, N_q, N_k) weights are counted.
    CHECK(mha.forward_scratch_bytes(1, 4096, 4096, true) >= std::size_t{16} * 4096 * 4096 * sizeof(float));
    // At the benchmark sizes the whole batch goes at once: Q, K, V and the merged heads are
    // 4 * B * N * d_model floats, and the attention's packed K and V up to as much again.
    MultiHeadAttention small;
    small.heads = 8;
    small.in_proj_weight = Tensor2::from_shape({3 * 512, 512});
    small.out_proj_weight = Tensor2::from_shape({512, 512});
    CHECK(small.forward_scratch_bytes(8, 512, 512, false) >= std::size_t{4} * 8 * 512 * 512 * sizeof(float));
    CHECK(small.forward_scratch_bytes(8, 512, 512, false) <= 64 * mib);
}
