// `headwise heads --sentence TEXT` -- lesson 07's trained model (all-MiniLM-L6-v2) on your own
// sentence: its tokens, what each head does (the measures of headwise/model/head_roles.hpp), one head's
// heat map, and optionally every layer's attention and the sentence embedding as .npy:
//
//   --attention OUT.npy   (L, H, N, N) float32, rows = queries, as `attend --weights` (B dropped)
//   --embedding OUT.npy   (d_model,) float32, mean over the tokens, L2-normalised
//
// The model is the one scripts/fetch-model caches (HEADWISE_MODEL_DIR overrides). Like `attend`,
// it computes, so it links headwise::core (xtensor) in an object library of its own; outputs
// appear only when everything succeeded (temporary file + rename).
#include "common.hpp"

#include "headwise/model/bert.hpp"
#include "headwise/model/head_roles.hpp"
#include "headwise/io/heatmap.hpp"
#include "headwise/io/npy.hpp"

#include <fmt/format.h>
#include <xtensor/xview.hpp>

#include <unistd.h>
#include <memory>
#include <optional>

namespace headwise::runner {

namespace {

struct HeadsArgs {
    std::string sentence;
    std::optional<long long> layer, head;
    bool tokens_only = false;
    std::string attention, embedding;
};

int heads(const HeadsArgs& a) {
    if (a.sentence.find_first_not_of(" \t\r\n") == std::string::npos) {
        throw headwise::usage_error("--sentence is empty: give the text to run, e.g. --sentence \"The cat sat.\"");
    }
    const auto dir = bert::model_dir();
    bert::require_model(dir);
    if (a.tokens_only) {  // the tokenizer only: no weights are loaded
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
    const auto enc = model.vocab.encode(a.sentence, model.config.max_positions);
    const bert::Batch batch = bert::make_batch({enc.ids}, model.vocab.pad_id());
    bert::ForwardOptions keep;
    keep.keep_attention = true;
    const bert::Outputs out = bert::forward(model, batch, keep);
    const std::size_t N = batch.seq();

    // Both outputs are staged before anything is printed, so a bad path fails first and alone.
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

    fmt::print("tokens ({}): {}\n", N, fmt::join(enc.tokens, " "));
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
    fmt::print("{}{}\n", heatmap(chosen, enc.tokens, enc.tokens, look), heatmap_legend(look.color));

    for (auto& p : pending) {
        p.commit();
        fmt::print("wrote {}\n", p.target().string());
    }
    return 0;
}

}  // namespace

void add_heads_command(CLI::App& app, Action& action) {
    auto a = std::make_shared<HeadsArgs>();
    auto* cmd = app.add_subcommand(
        "heads", "lesson 07's trained model on your sentence: tokens, head roles, a heat map, .npy out");
    cmd->footer(
        "Example:\n"
        "  ./headwise heads --sentence \"The dog could not jump the fence because it was too tired.\" \\\n"
        "                   --layer 0 --head 2 --attention att.npy --embedding emb.npy\n"
        "The model comes from scripts/fetch-model (HEADWISE_MODEL_DIR points at another copy).\n");
    cmd->add_option("--sentence", a->sentence, "the text to run (UTF-8, at most 512 tokens with [CLS] and [SEP])")
        ->required();
    cmd->add_option("--layer", a->layer, "the layer whose head is drawn (0-5; default 0)");
    cmd->add_option("--head", a->head, "the head drawn (0-11; default: the layer's sharpest)");
    cmd->add_flag("--tokens", a->tokens_only, "only print the WordPiece tokens and ids");
    cmd->add_option("--attention", a->attention, "write every layer's attention (L, H, N, N) float32 .npy");
    cmd->add_option("--embedding", a->embedding, "write the sentence embedding (d_model,) float32 .npy");
    cmd->callback([&action, a] {
        action = [a] {
            try {
                return heads(*a);
            } catch (const headwise::usage_error& e) {  // bad text, bad path, missing or damaged model: exit 2
                throw usage_error(e.what());
            }
        };
    });
}

}  // namespace headwise::runner
