// tests for headwise/train/circuits (and the two controls lesson 11 needs from data and model): the
// copying score on hand-built weights whose OV circuit is known, LN_f's gain and centring in its
// read-out, the seen-token figures on hand-made sequences, mean- and zero-ablation against means the
// test computes itself, and the fixed-period data.
#include "headwise/train/circuits.hpp"
#include "headwise/train/data.hpp"
#include "headwise/train/model.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace headwise;
using namespace headwise::train;

namespace {

// One layer of two heads, V = 4 tokens, d = 8 (d_head 4), no positions. Token t's embedding is e_t,
// so LN(x) = s (e_t - 1/8) with s > 0, and every head's value is v = (LN(x))_0..3 = s (e_t - 1/8)
// restricted to the first four dimensions (W_v picks them for both heads). W_o writes head 0's value
// into dimensions 0..3 as it is (+v) and head 1's negated (-v). The unembedding reads dimension k
// for token k. So through LN_f with gain g: head 0 raises token t's own logit when g = +1 (a copying
// head) and lowers it when g = -1; head 1 the other way round. The queries and keys are built from
// -W_v, so a score read from the wrong third of in_proj comes out inverted.
Params copy_and_anti_copy(float gain) {
    const Config c{.vocab = 4, .context = 8, .d_model = 8, .heads = 2, .layers = 1};
    Params p(c);
    const std::size_t d = 8;
    for (std::size_t t = 0; t < 4; ++t) p.values[p.layout.embed + t * d + t] = 1.0f;  // embed[t] = e_t
    const LayerOffsets& o = p.layout.layers[0];
    for (std::size_t i = 0; i < d; ++i) p.values[o.ln_weight + i] = 1.0f;
    float* in_proj = p.at(o.in_proj);  // (3d, d): rows [W_q; W_k; W_v]
    for (std::size_t h = 0; h < 2; ++h)
        for (std::size_t i = 0; i < 4; ++i) {
            in_proj[(2 * d + h * 4 + i) * d + i] = 1.0f;  // W_v: head h's value i = LN(x)_i
            in_proj[(0 * d + h * 4 + i) * d + i] = -1.0f;
            in_proj[(1 * d + h * 4 + i) * d + i] = -1.0f;
        }
    float* W_o = p.at(o.out_proj);  // (d, d), (out, in)
    for (std::size_t i = 0; i < 4; ++i) {
        W_o[i * d + i] = 1.0f;       // head 0: +v into dimension i
        W_o[i * d + 4 + i] = -1.0f;  // head 1: -v into dimension i
    }
    for (std::size_t i = 0; i < d; ++i) p.values[p.layout.ln_f_weight + i] = gain;
    for (std::size_t k = 0; k < 4; ++k) p.values[p.layout.unembed + k * d + k] = 1.0f;  // reads dimension k
    return p;
}

// One sequence of every token twice: 0 1 2 3 0 1 2 3, the second half the copy.
Batch every_token_twice() {
    Batch b;
    b.batch = 1;
    b.seq = 8;
    b.tokens = {0, 1, 2, 3, 0, 1, 2, 3};
    b.repeats = {{0, 4, 4}};
    return b;
}

}  // namespace

TEST_CASE("a head whose OV circuit writes the attended token scores copying 1, its negation 0", "[train][circuits]") {
    const CircuitScores s = measure(copy_and_anti_copy(1.0f), every_token_twice());
    REQUIRE(s.copying.size() == 1);
    REQUIRE(s.copying[0].size() == 2);
    CHECK(s.copying[0][0] == 1.0f);
    CHECK(s.copying[0][1] == 0.0f);
}

TEST_CASE("the copying score reads through LN_f's gain: a negative gain turns copying into its opposite",
          "[train][circuits]") {
    const CircuitScores s = measure(copy_and_anti_copy(-1.0f), every_token_twice());
    CHECK(s.copying[0][0] == 0.0f);
    CHECK(s.copying[0][1] == 1.0f);
}

TEST_CASE("the copying score reads through LN_f's centring: an unembedding row that leans on the mean wins",
          "[train][circuits]") {
    // Token 0's unembedding row also reads dimension 4 with weight -20. Head 0 writes o = s (e_t - 1/8)
    // into dimensions 0..3 and nothing into 4..7, so o's mean is s (1 - 4/8) / 8 = s / 16 and, centred,
    // dimension 4 holds -s/16: token 0's logit gains 20 s / 16 = 1.25 s, more than the gap s between
    // t's own logit and any other. Token 0 is then the top logit everywhere: copying = 2 of the 8
    // positions (the two 0s). Read without centring, dimension 4 would stay 0 and the score stay 1.
    Params p = copy_and_anti_copy(1.0f);
    p.values[p.layout.unembed + 0 * 8 + 4] = -20.0f;
    const CircuitScores s = measure(p, every_token_twice());
    CHECK(s.copying[0][0] == 0.25f);
}

TEST_CASE("the seen-token figures: an even bet on the tokens shown so far, and a flat model's mass on them",
          "[train][circuits]") {
    // Two sequences of V = 8 tokens. The copy's targets are positions second .. second + length - 2;
    // no new token appears inside a copy, so the seen tokens are those before it:
    //   0 0 1 | 0 0 1 ... : first 0, second 3, length 3 -> targets at 3, 4; seen {0, 1}: 2 tokens
    //   2 3 4 5 | 2 3 4 5  : first 0, second 4, length 4 -> targets at 4, 5, 6; seen {2..5}: 4 tokens
    Batch b;
    b.batch = 2;
    b.seq = 8;
    b.tokens = {0, 0, 1, 0, 0, 1, 7, 6, 2, 3, 4, 5, 2, 3, 4, 5};
    b.repeats = {{0, 3, 3}, {0, 4, 4}};
    const Config c{.vocab = 8, .context = 8, .d_model = 4, .heads = 2, .layers = 1};
    Random rng(4);
    Params p = init_params(c, rng);
    for (std::size_t i = 0; i < 8 * 4; ++i) p.values[p.layout.unembed + i] = 0.0f;  // every logit 0: uniform
    const CircuitScores s = measure(p, b);
    CHECK(s.seen_even_bet_loss == Approx((2 * std::log(2.0) + 3 * std::log(4.0)) / 5));
    CHECK(s.seen_share == Approx((2 * 2.0 / 8 + 3 * 4.0 / 8) / 5));
    CHECK(s.seen_mass == Approx(s.seen_share));  // a uniform model puts its share on them, no more
    CHECK(s.copy_loss == Approx(std::log(8.0)));
}

TEST_CASE("mean-ablation replaces one head's output by its mean over the batch at each position, zeroing by 0",
          "[train][ablation]") {
    const Config c{.vocab = 11, .context = 9, .d_model = 12, .heads = 3, .layers = 2};
    Random rng(7);
    const Params p = init_params(c, rng);
    const Batch b = make_batch(rng, 5, 9, 11);
    const std::size_t B = 5, N = 9, d = 12, dh = 4;
    Activations full, mean, zero;
    forward(p, b.tokens, B, N, full);
    ForwardOptions cut;
    cut.ablate_layer = 1;
    cut.ablate_head = 2;
    forward(p, b.tokens, B, N, zero, cut);
    cut.ablate_with = Ablation::mean;
    forward(p, b.tokens, B, N, mean, cut);
    CHECK(mean.layers[0].z == full.layers[0].z);  // the layer before is untouched
    for (std::size_t n = 0; n < N; ++n)
        for (std::size_t j = 0; j < d; ++j) {
            double average = 0.0;
            for (std::size_t s = 0; s < B; ++s) average += full.layers[1].z[(s * N + n) * d + j];
            average /= double(B);
            for (std::size_t s = 0; s < B; ++s) {
                const std::size_t at = (s * N + n) * d + j;
                if (j / dh == 2) {
                    CHECK(mean.layers[1].z[at] == Approx(average).margin(1e-6));
                    CHECK(zero.layers[1].z[at] == 0.0f);
                } else {
                    CHECK(mean.layers[1].z[at] == full.layers[1].z[at]);
                }
            }
        }
    CHECK(mean.logits != full.logits);
    // One sequence is its own mean: mean-ablation changes nothing.
    const Batch one{1, 9, std::vector<std::int32_t>(b.tokens.begin(), b.tokens.begin() + 9), {b.repeats[0]}};
    Activations alone, alone_mean;
    forward(p, one.tokens, 1, N, alone);
    forward(p, one.tokens, 1, N, alone_mean, cut);
    CHECK(alone_mean.logits == alone.logits);
    cut.ablate_head = 3;
    CHECK_THROWS_AS(forward(p, one.tokens, 1, N, alone, cut), usage_error);
}

TEST_CASE("ablate_each_head ablates every head of every layer, both ways, layer 0 first", "[train][ablation]") {
    const Config c{.vocab = 11, .context = 9, .d_model = 12, .heads = 3, .layers = 2};
    Random rng(8);
    const Params p = init_params(c, rng);
    const Batch b = make_batch(rng, 6, 9, 11);
    const std::vector<HeadAblation> all = ablate_each_head(p, b);
    REQUIRE(all.size() == 6);
    for (std::size_t i = 0; i < all.size(); ++i) {
        CHECK(all[i].layer == i / 3);
        CHECK(all[i].head == i % 3);
        ForwardOptions cut;
        cut.ablate_layer = i / 3;
        cut.ablate_head = i % 3;
        CHECK(all[i].zero.copy_loss == measure(p, b, cut).copy_loss);
        cut.ablate_with = Ablation::mean;
        CHECK(all[i].mean.copy_loss == measure(p, b, cut).copy_loss);
    }
}

TEST_CASE("fixed-period data: the first N/2 tokens random, the next N/2 their copy, in every sequence",
          "[train][data]") {
    Random rng(3);
    const Batch b = make_batch(rng, 50, 13, 7, DataKind::fixed_period);
    for (std::size_t s = 0; s < b.batch; ++s) {
        const Repeat& r = b.repeats[s];
        CHECK(r.first == 0);
        CHECK(r.second == 6);
        CHECK(r.length == 6);
        for (std::size_t i = 0; i < 6; ++i) CHECK(b.token(s, 6 + i) == b.token(s, i));
    }
    CHECK(parse_data_kind("fixed-period") == DataKind::fixed_period);
    CHECK(parse_data_kind("random-repeat") == DataKind::random_repeat);
    CHECK(name_of(DataKind::fixed_period) == "fixed-period");
    CHECK_THROWS_WITH(parse_data_kind("periodic"),
                      Catch::Matchers::Contains("--data periodic: expected random-repeat or fixed-period"));
}
