// Lesson 02 -- split and merge heads.
//
// Multi-head attention does not give each head its own full-width projection. It projects once,
// to d_model features, and then *reinterprets* those features as H groups of d_head = d_model / H:
//
//     (B, N, d_model) --reshape--> (B, N, H, d_head) --transpose N and H--> (B, H, N, d_head)
//
// After the transpose, every (batch, head) pair owns a plain (N, d_head) matrix, which is what
// attention wants. Merging runs the same two moves backwards. This file does both, checks that
// the round trip loses nothing, shows what goes wrong with the tempting one-step reshape, and
// shows that "head h" is nothing more than a block of rows of the one big projection.
//
// Dimension letters: B = batch, N = tokens, H = heads, d_head = d_model / H.
// Run:  ./headwise run 2      or      build/lessons/02_split_merge --help

#include "headwise/io/figure.hpp"
#include "headwise/lesson/lesson.hpp"

#include <cstring>
#include <tuple>

using namespace headwise;

namespace {

// ---------------------------------------------------------------------------------------------
// Step helpers.

// A single reshape straight to the head layout (B, H, N, d_head): the tempting mistake. It keeps
// memory order, so head 0 receives the first N * d_head numbers of each batch element -- mostly
// token 0.
Tensor4 reshape_straight(const Tensor3& x, std::size_t heads) {
    const std::size_t batch = x.shape()[0], n = x.shape()[1], d_head = x.shape()[2] / heads;
    return xt::reshape_view(x, std::array<std::size_t, 4>{batch, heads, n, d_head});
}

// Its inverse, from the head layout back to (B, N, d_model), again one reshape alone.
Tensor3 unreshape_straight(const Tensor4& x) {
    const std::size_t batch = x.shape()[0], heads = x.shape()[1], n = x.shape()[2], d_head = x.shape()[3];
    return xt::reshape_view(x, std::array<std::size_t, 3>{batch, n, heads * d_head});
}

// A tensor shaped like x whose every element holds its own index along `axis` (1 = its token,
// 2 = its feature): split it like x and you can read off where each number came from.
Tensor3 index_along(const Dims& d, std::size_t axis) {
    Tensor3 t = Tensor3::from_shape({d.batch, d.seq, d.d_model});  // (B, N, d_model)
    for (std::size_t b = 0; b < d.batch; ++b)
        for (std::size_t n = 0; n < d.seq; ++n)
            for (std::size_t c = 0; c < d.d_model; ++c) t(b, n, c) = static_cast<float>(axis == 1 ? n : c);
    return t;
}

// "token 2, dims 8..15" for row n of head h of batch 0, read from the split tags.
std::string origin(const Tensor4& tokens, const Tensor4& features, std::size_t h, std::size_t n) {
    const auto tok = xt::eval(xt::view(tokens, 0, h, n));    // (d_head)
    const auto dim = xt::eval(xt::view(features, 0, h, n));  // (d_head)
    const auto t0 = static_cast<long>(xt::amin(tok)()), t1 = static_cast<long>(xt::amax(tok)());
    const auto c0 = static_cast<long>(xt::amin(dim)()), c1 = static_cast<long>(xt::amax(dim)());
    const std::string who = t0 == t1 ? fmt::format("token {}", t0) : fmt::format("tokens {}..{}", t0, t1);
    return fmt::format("{}, dims {}..{}", who, c0, c1);
}

// Every (b, h, n) row of two split tag tensors that holds the same numbers.
std::size_t rows_agreeing(const Tensor4& a, const Tensor4& b) {
    const std::size_t d_head = a.shape()[3], rows = a.size() / d_head;
    std::size_t same = 0;
    for (std::size_t r = 0; r < rows; ++r)
        same += std::equal(a.data() + r * d_head, a.data() + (r + 1) * d_head, b.data() + r * d_head);
    return same;
}

bool bit_identical(const auto& a, const auto& b) {
    return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::string verdict(const auto& a, const auto& b) {
    if (bit_identical(a, b)) return "bit-identical";
    return fmt::format("max |diff| = {:.2e}", max_abs_diff(a, b));
}

// What every step reads: the sizes, the shape tracer and the seeded random stream (drawn from in
// step order, so a seed gives the same numbers however the steps are printed).
struct Setup {
    Dims dims;
    std::size_t B, N, d, H, dh;  // batch, tokens, d_model, heads, d_head = d_model / H
    Tracer trace;
    Random rng;
};

// ---------------------------------------------------------------------------------------------
// The steps, in the order the lesson tells them.

// One input and its three projections, each (B, N, d_model).
struct Projected {
    Tensor3 x;        // (B, N, d_model)
    Tensor2 w_q;      // (d_model, d_model), (out, in)
    Tensor3 q, k, v;  // (B, N, d_model)
};

Projected step1_project(Setup& s) {
    s.trace.section("step 1: one projection of width d_model serves all heads");
    const auto [B, N, d] = std::tuple{s.B, s.N, s.d};
    const Tensor3 x = s.rng.normal<3>({B, N, d});   // (B, N, d_model)
    const Tensor2 w_q = s.rng.linear_weight(d, d);  // (d_model, d_model), (out, in)
    const Tensor2 w_k = s.rng.linear_weight(d, d);  // (d_model, d_model)
    const Tensor2 w_v = s.rng.linear_weight(d, d);  // (d_model, d_model)
    s.trace("x", x, "B, N, d_model");
    s.trace("w_q", w_q, "d_out, d_model");
    Projected p{x, w_q, linear(x, w_q), linear(x, w_k), linear(x, w_v)};  // q, k, v: (B, N, d_model)
    s.trace("q = x . w_q^T", p.q, "B, N, d_model");
    s.trace("k = x . w_k^T", p.k, "B, N, d_model");
    s.trace("v = x . w_v^T", p.v, "B, N, d_model");
    return p;
}

// q (B, N, d_model) -> q_heads (B, H, N, d_head), by hand and by the library.
Tensor4 step2_split(const Setup& s, const Tensor3& q) {
    s.trace.section("step 2: split = reshape the last axis into (H, d_head), then swap N and H");
    const auto [B, N, H, dh] = std::tuple{s.B, s.N, s.H, s.dh};
    const Tensor4 q_bnhd = xt::reshape_view(q, std::array<std::size_t, 4>{B, N, H, dh});  // (B, N, H, d_head)
    s.trace("q.view(B, N, H, dh)", q_bnhd, "B, N, H, d_head");
    const Tensor4 q_heads = xt::transpose(q_bnhd, {0, 2, 1, 3});  // axes 1 and 2 swapped: (B, H, N, d_head)
    s.trace("q.transpose(1, 2)", q_heads, "B, H, N, d_head");
    const Tensor4 q_library = split_heads(q, H);  // (B, H, N, d_head)
    s.trace("split_heads(q)", q_library, "B, H, N, d_head");
    fmt::print("  by hand vs headwise::split_heads: {}\n", verdict(q_heads, q_library));
    std::size_t misplaced = 0;
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t n = 0; n < N; ++n)
                for (std::size_t c = 0; c < dh; ++c) misplaced += q_heads(b, h, n, c) != q(b, n, h * dh + c);
    fmt::print("  q_heads(b, h, n, c) == q(b, n, h*d_head + c) for all {} elements: {} misplaced\n", q_heads.size(),
               misplaced);
    fmt::print("  so head h of token n holds features {}*h .. {}*h+{} of that token's query, nothing else.\n", dh, dh,
               dh - 1);
    return q_heads;
}

// Where the straight reshape puts each number, and what attention makes of it.
void step3_straight_reshape(const Setup& s, const Projected& p, const Tensor4& q_heads) {
    s.trace.section("step 3: the tempting shortcut -- reshape straight to (B, H, N, d_head)");
    const auto [B, N, H] = std::tuple{s.B, s.N, s.H};
    // Label every number with the token and the feature it came from, then split the labels.
    const Tensor3 token_of = index_along(s.dims, 1);                // (B, N, d_model), value = token index
    const Tensor3 feature_of = index_along(s.dims, 2);              // (B, N, d_model), value = feature index
    const Tensor4 tok_split = split_heads(token_of, H);             // (B, H, N, d_head)
    const Tensor4 feat_split = split_heads(feature_of, H);          // (B, H, N, d_head)
    const Tensor4 tok_straight = reshape_straight(token_of, H);     // (B, H, N, d_head)
    const Tensor4 feat_straight = reshape_straight(feature_of, H);  // (B, H, N, d_head)
    s.trace("tokens, split", tok_split, "B, H, N, d_head");
    s.trace("tokens, straight", tok_straight, "B, H, N, d_head");
    fmt::print("  Same shape. Where the rows of head 0 (batch 0) come from:\n");
    fmt::print("    {:<10} {:<26} {}\n", "row", "reshape + transpose", "straight reshape");
    const std::size_t shown = std::min<std::size_t>(N, 6);
    for (std::size_t n = 0; n < shown; ++n) {
        fmt::print("    {:<10} {:<26} {}\n", fmt::format("head 0, {}", n), origin(tok_split, feat_split, 0, n),
                   origin(tok_straight, feat_straight, 0, n));
    }
    if (shown < N) fmt::print("    ... ({} more rows)\n", N - shown);
    const std::size_t rows = B * H * N;
    const std::size_t same = std::min(rows_agreeing(tok_split, tok_straight), rows_agreeing(feat_split, feat_straight));
    fmt::print("  rows holding the same token and features both ways: {} of {}{}\n", same, rows,
               H == 1 ? " (with one head the two are the same thing)" : "");
    std::size_t from_token0 = 0;  // rows of head 0 (batch 0) that the straight reshape fills from token 0
    for (std::size_t n = 0; n < N; ++n) from_token0 += xt::amax(xt::view(tok_straight, 0, 0, n))() == 0.0f;
    fmt::print("  with the straight reshape, {} of head 0's {} rows are slices of token 0: {}\n", from_token0, N,
               from_token0 > 1 ? "its 'tokens' are pieces of one token" : "here it happens to match");

    // What attention computes on each: same shapes, no error, different answer.
    const Tensor4 k_heads = split_heads(p.k, H), v_heads = split_heads(p.v, H);            // (B, H, N, d_head)
    const Tensor4 q_wrong = reshape_straight(p.q, H), k_wrong = reshape_straight(p.k, H),  // (B, H, N, d_head)
        v_wrong = reshape_straight(p.v, H);
    const Tensor3 out_right = merge_heads(scaled_dot_product_attention(q_heads, k_heads, v_heads));  // (B, N, d_model)
    const Tensor3 out_wrong =
        unreshape_straight(scaled_dot_product_attention(q_wrong, k_wrong, v_wrong));  // (B, N, d_model)
    s.trace("attention, split", out_right, "B, N, d_model");
    s.trace("attention, straight", out_wrong, "B, N, d_model");
    fmt::print("  attention output, split vs straight reshape: {} (mean |output| = {:.2e})\n",
               verdict(out_right, out_wrong), static_cast<double>(xt::mean(xt::abs(out_right))()));
}

// q_heads (B, H, N, d_head) -> (B, N, d_model): the round trip, and the straight reshape's.
void step4_merge(const Setup& s, const Tensor3& q, const Tensor4& q_heads) {
    s.trace.section("step 4: merge = swap H and N back, then flatten (H, d_head) into d_model");
    const Tensor4 back = xt::transpose(q_heads, {0, 2, 1, 3});  // (B, N, H, d_head)
    s.trace("heads.transpose(1, 2)", back, "B, N, H, d_head");
    const Tensor3 merged = xt::reshape_view(back, std::array<std::size_t, 3>{s.B, s.N, s.d});  // (B, N, d_model)
    s.trace(".reshape(B,N,d_model)", merged, "B, N, d_model");
    const Tensor3 merged_library = merge_heads(q_heads);  // (B, N, d_model)
    s.trace("merge_heads(q_heads)", merged_library, "B, N, d_model");
    fmt::print("  round trip merge(split(q)) vs q: {}\n", verdict(merged, q));
    fmt::print("  by hand vs headwise::merge_heads: {}\n", verdict(merged, merged_library));
    const Tensor3 straight_round_trip = unreshape_straight(reshape_straight(q, s.H));  // (B, N, d_model)
    fmt::print(
        "  the straight reshape round-trips too: {} -- a round-trip test cannot catch it;\n"
        "  only looking at which numbers share a head (step 3) does.\n",
        verdict(straight_round_trip, q));
}

// Head h's queries (B, N, d_head) from rows h*d_head.. of w_q alone equal head h of the split.
void step5_head_rows(const Setup& s, const Projected& p, const Tensor4& q_heads) {
    s.trace.section("step 5: head h is a block of rows of w_q -- the split is a view of one projection");
    // PyTorch stores w_q as (out, in) and computes x . w_q^T, so output feature j is row j.
    // In the paper's Q = X W_Q, with W_Q = w_q^T of shape (d_model, d_model), the same block is
    // columns h*d_head .. (h+1)*d_head - 1 of W_Q.
    const auto [H, dh] = std::tuple{s.H, s.dh};
    double worst = 0.0;
    bool all_identical = true;
    for (std::size_t h = 0; h < H; ++h) {
        const Tensor2 w_q_h = xt::view(p.w_q, xt::range(h * dh, (h + 1) * dh), xt::all());  // (d_head, d_model)
        const Tensor3 q_h = linear(p.x, w_q_h);                                             // (B, N, d_head)
        const Tensor3 from_split = xt::view(q_heads, xt::all(), h);                         // (B, N, d_head)
        if (h == 0 || h + 1 == H) {
            s.trace(fmt::format("w_q[{}:{}, :]", h * dh, (h + 1) * dh), w_q_h, "d_head, d_model");
            s.trace(fmt::format("x . w_q[{}:{}, :]^T", h * dh, (h + 1) * dh), q_h, "B, N, d_head");
            s.trace(fmt::format("q_heads[:, {}]", h), from_split, "B, N, d_head");
        }
        all_identical = all_identical && bit_identical(q_h, from_split);
        worst = std::max(worst, max_abs_diff(q_h, from_split));
    }
    fmt::print("  projecting with each head's {} rows alone vs splitting the full projection, all {} heads: {}\n", dh,
               H, all_identical ? std::string("bit-identical") : fmt::format("max |diff| = {:.2e}", worst));
    fmt::print("  head h owns rows h*{0} .. h*{0}+{1} of w_q (columns of W_Q):", dh, dh - 1);
    for (std::size_t h = 0; h < std::min<std::size_t>(H, 8); ++h) fmt::print(" {}:{}..{}", h, h * dh, (h + 1) * dh - 1);
    fmt::print("{}\n", H > 8 ? " ..." : "");
    fmt::print("  The same holds for w_k and w_v: H heads cost no more weights than one wide projection.\n");
}

// W_Q (d_model, d_model) drawn with each head's columns marked, when --save-figures asks for it.
void figure_w_q_columns(const Setup& s, const Tensor2& w_q, const std::string& figures_dir) {
    if (figures_dir.empty()) return;
    s.trace.section("figure: the columns of W_Q, coloured by the head that owns them");
    const auto [d, H, dh] = std::tuple{s.d, s.H, s.dh};
    const Tensor2 W_Q = xt::transpose(w_q);  // (d_model, d_model): the paper's Q = X W_Q
    figure::HeatmapPanel panel{
        fmt::format("W_Q = w_q^T  ({} x {}), intensity = |weight|", d, d), figure::grid_of(W_Q), {}, {}, H};
    figure::save(figure::heatmaps(
                     fmt::format("Which columns of W_Q belong to which head (d_model = {}, H = {})", d, H), {&panel, 1},
                     fmt::format("rows: input features; columns h*{0} .. h*{0}+{1}: head h's queries", dh, dh - 1)),
                 figures_dir, "02_w_q_columns_per_head.png");
}

}  // namespace

int main(int argc, char** argv) {
    lesson::App app{"Lesson 02: split and merge heads", "02_split_merge"};
    cli::LessonOptions opt;
    std::string figures_dir;
    cli::add_lesson_options(app, opt, "batch,seq,d-model,heads,seed");
    lesson::add_save_figures(app, figures_dir, "this lesson's picture (PNG)");
    return lesson::run(app, argc, argv, [&] {
        const Dims& dims = opt.dims;
        cli::require_divisible(dims.d_model, dims.heads);
        Setup s{dims,       dims.batch,    dims.seq,           dims.d_model,
                dims.heads, dims.d_head(), Tracer(!opt.quiet), Random(opt.seed)};
        fmt::print("Lesson 02: split and merge heads   B={} N={} d_model={} H={} d_head={} seed={}\n", s.B, s.N, s.d,
                   s.H, s.dh, opt.seed);
        const Projected p = step1_project(s);
        const Tensor4 q_heads = step2_split(s, p.q);
        step3_straight_reshape(s, p, q_heads);
        step4_merge(s, p.q, q_heads);
        step5_head_rows(s, p, q_heads);
        figure_w_q_columns(s, p.w_q, figures_dir);
        return cli::exit_ok;
    });
}
