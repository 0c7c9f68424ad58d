// `headwise heads --sentence TEXT` -- lesson 07's trained model (all-MiniLM-L6-v2) on your own
// sentence: its tokens, what each head does (the measures of headwise/model/head_roles.hpp), one head's
// heat map, and optionally every layer's attention and the sentence embedding as .npy:
//
//   --attention OUT.npy   (L, H, N, N) float32, rows = queries, as `attend --weights` (B dropped)
//   --embedding OUT.npy   (d_model,) float32, mean over the tokens, L2-normalised
//   --html OUT.html       the same weights as one interactive page (headwise/io/head_view.hpp):
//                         head view, model view with each head's role, ablation view
// --sentence-b makes the input a pair, [CLS] a [SEP] b [SEP] (token types 0 then 1).
//
// The model is the one scripts/fetch-model caches (HEADWISE_MODEL_DIR overrides). Like `attend`,
// it computes, so it links headwise::core (xtensor) in an object library of its own; outputs
// appear only when everything succeeded (temporary file + rename).
#include "cmd_heads.hpp"
#include "common.hpp"

#include "headwise/model/bert.hpp"
#include "headwise/model/head_roles.hpp"
#include "headwise/io/head_view.hpp"
#include "headwise/io/heatmap.hpp"
#include "headwise/io/npy.hpp"

#include <fmt/format.h>
#include <xtensor/xview.hpp>

#include <unistd.h>
#include <memory>
#include <optional>

namespace headwise::runner {

namespace {

bool blank(const std::string& s) { return s.find_first_not_of(" \t\r\n") == std::string::npos; }

// The page for `headwise heads --html`: every layer's weights, each head's role, and how far the
// embedding moves without each head (cosine to the full one: L x H more forward passes).
head_view::Data page(const bert::Model& model, const bert::Batch& batch, const bert::Outputs& out,
                     std::vector<std::string> tokens, std::size_t boundary, const std::string& title) {
    const std::size_t L = model.config.layers, H = model.config.heads, N = batch.seq(), d = model.config.d_model;
    head_view::Data v;
    v.title = title;
    v.subtitle = fmt::format(
        "all-MiniLM-L6-v2 through the course's forward pass (headwise heads): {} layers x {} heads, "
        "{} tokens; the same weights as --attention writes",
        L, H, N);
    v.tokens = std::move(tokens);
    v.boundary = boundary;
    v.ablation_label = "cosine between the sentence embedding without that head and the full one";
    for (std::size_t l = 0; l < L; ++l) {
        v.weights.push_back(xt::view(out.attention[l], 0));  // (H, N, N)
        v.roles.emplace_back();
        v.ablation.emplace_back();
        for (std::size_t h = 0; h < H; ++h) {
            v.roles[l].push_back(roles::role(xt::view(out.attention[l], 0, h), N));
            bert::ForwardOptions cut;
            cut.ablate_layer = l;
            cut.ablate_head = h;
            const Tensor2 e = bert::forward(model, batch, cut).embedding;  // (1, d_model)
            v.ablation[l].push_back(bert::cosine(&e(0, 0), &out.embedding(0, 0), d));
        }
    }
    return v;
}

int compute(const HeadsArgs& a) {
    if (blank(a.sentence)) {
        throw headwise::usage_error("--sentence is empty: give the text to run, e.g. --sentence \"The cat sat.\"");
    }
    if (a.sentence_b_given && blank(a.sentence_b)) {
        throw headwise::usage_error("--sentence-b is empty: give the second sentence of the pair, or leave it out");
    }
    const auto dir = bert::model_dir();
    bert::require_model(dir);
    if (a.tokens_only && !a.sentence_b_given) {  // the tokenizer only: no weights are loaded
        const WordPiece vocab = WordPiece::load(dir / "vocab.txt");
        const auto e = vocab.encode(a.sentence);
        fmt::print("{:>4}  {:<16} {:>6}\n", "pos", "token", "id");
        for (std::size_t i = 0; i < e.tokens.size(); ++i) fmt::print("{:>4}  {:<16} {:>6}\n", i, e.tokens[i], e.ids[i]);
        return 0;
    }
    const bert::Model model = bert::Model::load(dir);
    const std::size_t L = model.config.layers, H = model.config.heads;
    if (a.layer && (*a.layer < 0 || static_cast<std::size_t>(*a.layer) >= L)) {
        throw headwise::usage_error(
            fmt::format("--layer {} is outside 0..{} (the model has {} layers)", *a.layer, L - 1, L));
    }
    if (a.head && (*a.head < 0 || static_cast<std::size_t>(*a.head) >= H)) {
        throw headwise::usage_error(
            fmt::format("--head {} is outside 0..{} (each layer has {} heads)", *a.head, H - 1, H));
    }
    bert::Pair input;  // one sentence: boundary 0, token types all 0
    if (a.sentence_b_given) {
        input = bert::encode_pair(model, a.sentence, a.sentence_b);
    } else {
        const auto enc = model.vocab.encode(a.sentence, model.config.max_positions);
        input.tokens = enc.tokens;
        input.batch = bert::make_batch({enc.ids}, model.vocab.pad_id());
    }
    const bert::Batch& batch = input.batch;
    const std::vector<std::string>& tokens = input.tokens;
    if (a.tokens_only) {
        fmt::print("{:>4}  {:<16} {:>6} {:>5}\n", "pos", "token", "id", "type");
        for (std::size_t i = 0; i < tokens.size(); ++i)
            fmt::print("{:>4}  {:<16} {:>6} {:>5}\n", i, tokens[i], batch.ids[0][i], batch.token_types[0][i]);
        return 0;
    }
    bert::ForwardOptions keep;
    keep.keep_attention = true;
    const bert::Outputs out = bert::forward(model, batch, keep);
    const std::size_t N = batch.seq();

    // Every output is staged before anything is printed, so a bad path fails first and alone.
    std::vector<npy::PendingFile> pending;
    if (!a.attention.empty()) {
        Tensor4 all = Tensor4::from_shape({L, H, N, N});  // (L, H, N, N)
        for (std::size_t l = 0; l < L; ++l) xt::view(all, l) = xt::view(out.attention[l], 0);
        pending.push_back(npy::stage(a.attention, all));
    }
    if (!a.embedding.empty()) {
        const Tensor1 e = xt::view(out.embedding, 0);  // (d_model,)
        pending.push_back(npy::stage(a.embedding, e));
    }
    if (!a.html.empty()) {
        const std::string title = a.sentence_b_given ? fmt::format("\"{}\" / \"{}\"", a.sentence, a.sentence_b)
                                                     : fmt::format("\"{}\"", a.sentence);
        pending.emplace_back(a.html, head_view::render(page(model, batch, out, tokens, input.boundary, title)));
    }

    fmt::print("tokens ({}): {}\n", N, fmt::join(tokens, " "));
    auto w = [&](std::size_t l, std::size_t h) { return Tensor2(xt::view(out.attention[l], 0, h)); };  // (N, N)
    fmt::print("\n{:<6} {:>10} {:>10} {:>9} {:>9} {:>14} {:>14}\n", "layer", "on [CLS]", "on [SEP]", "CLS>60%",
               "SEP>60%", "best prev", "best next");
    for (std::size_t l = 0; l < L; ++l) {
        double cls = 0.0, sep = 0.0;
        std::size_t cls_heads = 0, sep_heads = 0, best_prev = 0, best_next = 0;
        double prev = -1.0, next = -1.0;
        for (std::size_t h = 0; h < H; ++h) {
            const Tensor2 wh = w(l, h);
            const double c = roles::share_on(wh, N, 0), s = roles::share_on(wh, N, N - 1);
            cls += c / static_cast<double>(H);
            sep += s / static_cast<double>(H);
            cls_heads += c > 0.6;
            sep_heads += s > 0.6;
            if (const double p = roles::previous_token(wh, N); p > prev) prev = p, best_prev = h;
            if (const double n = roles::next_token(wh, N); n > next) next = n, best_next = h;
        }
        fmt::print("{:<6} {:>9.1f}% {:>9.1f}% {:>9} {:>9} {:>14} {:>14}\n", l, 100.0 * cls, 100.0 * sep, cls_heads,
                   sep_heads, fmt::format("h{} {:.3f}", best_prev, prev), fmt::format("h{} {:.3f}", best_next, next));
    }

    // One head's heat map: --layer/--head, or the sharpest head (lowest entropy) of that layer.
    const std::size_t layer = a.layer ? static_cast<std::size_t>(*a.layer) : 0;
    std::size_t head = 0;
    if (a.head) {
        head = static_cast<std::size_t>(*a.head);
    } else {
        double lowest = 1e30;
        for (std::size_t h = 0; h < H; ++h)
            if (const double e = roles::mean_entropy(w(layer, h), N); e < lowest) lowest = e, head = h;
    }
    const Tensor2 chosen = w(layer, head);
    fmt::print("\nlayer {} head {}: previous-token {:.3f}, next-token {:.3f}, entropy {:.2f} (uniform {:.2f})\n", layer,
               head, roles::previous_token(chosen, N), roles::next_token(chosen, N), roles::mean_entropy(chosen, N),
               std::log(static_cast<double>(N)));
    HeatmapOptions look;
    look.color = ::isatty(1) != 0 && std::getenv("NO_COLOR") == nullptr;
    look.max_size = 24;
    fmt::print("{}{}\n", heatmap(chosen, tokens, tokens, look), heatmap_legend(look.color));

    for (auto& p : pending) {
        p.commit();
        fmt::print("wrote {}\n", p.target().string());
    }
    return 0;
}

}  // namespace

int run_heads(const HeadsArgs& a) {
    try {
        return compute(a);
    } catch (const headwise::usage_error& e) {  // bad text, bad path, missing or damaged model: exit 2
        throw usage_error(e.what());
    }
}

}  // namespace headwise::runner
