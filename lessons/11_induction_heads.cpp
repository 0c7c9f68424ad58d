// Lesson 11: a model that learns -- train a small transformer on this CPU and watch an induction
// head form.
//
// The model is attention only (headwise/train/model.hpp): token and position embeddings, then per
// layer x = x + MHA(LN(x)) (causal, no biases), then LN_f and the unembedding. The data are
// random tokens in which one segment appears twice (headwise/train/data.hpp): nothing but content
// predicts the second copy. To predict it, the model grows two heads that work together:
//   layer 0, a previous-token head: each position copies in the token before it;
//   layer 1, an induction head: the current token looks for an earlier position whose *previous*
//     token was the current token (what the layer-0 head wrote there), and copies its token.
// The loss sits at ln V for a while, then drops as the two heads appear together (the phase change
// of Olsson et al., 2022). Zeroing the previous-token head breaks the induction head: the two
// compose. The forward is the course's, the attention core's backward is lesson 10's, and AdamW
// updates every parameter.
#include "headwise/io/figure.hpp"
#include "headwise/io/head_view.hpp"
#include "headwise/lesson/lesson.hpp"
#include "headwise/train/circuits.hpp"
#include "headwise/train/data.hpp"
#include "headwise/train/loss.hpp"
#include "headwise/train/model.hpp"
#include "headwise/train/trainer.hpp"

#include <cmath>
#include <optional>

using namespace headwise;

namespace {

struct Settings {
    train::TrainOptions train;
    std::size_t steps = 1200, every = 100;  // training steps; scores measured every `every` steps
    std::string figures_dir, html;
};

// What training leaves for the later steps: the scores measured as it went.
struct History {
    std::vector<double> step, loss, copy_loss;
    std::vector<std::vector<double>> previous_token, induction;  // [head][measurement]
    std::optional<std::size_t> induction_crossed;                // first step with induction >= 0.5
};

std::string dims_of(const std::string& name) {
    if (name == "embed.weight" || name == "unembed.weight") return "V, d_model";
    if (name == "pos_embed.weight") return "N, d_model";
    if (name.ends_with("in_proj_weight")) return "3 d_model, d_model";
    if (name.ends_with("out_proj.weight")) return "d_model, d_model";
    return "d_model";
}

void print_repeat(const train::Batch& b, std::size_t s) {
    const train::Repeat& r = b.repeats[s];
    fmt::print("  sequence 0: segment of {} tokens at {}..{} repeated at {}..{}\n   ", r.length, r.first,
               r.first + r.length - 1, r.second, r.second + r.length - 1);
    for (std::size_t n = 0; n < b.seq; ++n) {
        const bool first = n >= r.first && n < r.first + r.length, second = n >= r.second && n < r.second + r.length;
        fmt::print(" {}{:>2}{}", first ? "[" : second ? "<" : " ", b.token(s, n), first ? "]" : second ? ">" : " ");
    }
    fmt::print("\n  [..] the first occurrence, <..> the copy: every <token> after the first is predictable\n");
}

// -------------------------------------------------------------------------------------------------
void show_data(const Tracer& trace, const Settings& s, train::Batch& batch) {
    trace.section("step 1: the data -- random tokens, one segment repeated later");
    Random rng(s.train.seed + 1000);
    batch = train::make_batch(rng, s.train.batch, s.train.config.context, s.train.config.vocab);
    trace.shape_line("tokens", std::vector<std::size_t>{batch.batch, batch.seq}, "B, N");
    trace.shape_line("targets (next tokens)", std::vector<std::size_t>{batch.batch, batch.seq}, "B, N");
    print_repeat(batch, 0);
    std::size_t predictable = 0;
    for (const train::Repeat& r : batch.repeats) predictable += r.length - 1;
    fmt::print(
        "  predictable targets: {} of {} ({:.1f}%); the best possible mean loss is about {:.2f} (ln V = {:.3f})\n",
        predictable, batch.batch * (batch.seq - 1), 100.0 * double(predictable) / double(batch.batch * (batch.seq - 1)),
        std::log(double(s.train.config.vocab)) * (1.0 - double(predictable) / double(batch.batch * (batch.seq - 1))),
        std::log(double(s.train.config.vocab)));
}

// -------------------------------------------------------------------------------------------------
void show_model(const Tracer& trace, const train::Params& params, const train::Batch& batch) {
    trace.section("step 2: the model -- every parameter, and one forward pass at step 0");
    std::size_t total = 0;
    for (const train::ParamInfo& p : params.layout.params) {
        trace.shape_line(p.name, p.shape, dims_of(p.name));
        total += p.count();
    }
    fmt::print("  {} parameters in {} tensors\n", total, params.layout.params.size());
    train::Activations acts;
    train::ForwardOptions keep;
    keep.keep_weights = true;
    train::forward(params, batch.tokens, batch.batch, batch.seq, acts, keep);
    const std::size_t B = batch.batch, N = batch.seq, d = params.config.d_model;
    trace.shape_line("x = embed[token] + pos_embed", std::vector<std::size_t>{B, N, d}, "B, N, d_model");
    trace("layer 0: q", acts.layers[0].q, "B, H, N, d_head");
    trace("layer 0: weights", *acts.layers[0].weights, "B, H, N_query, N_key");
    trace.shape_line("layer 0: heads merged", std::vector<std::size_t>{B, N, d}, "B, N, d_model");
    trace.shape_line("logits = LN_f(x) . unembed^T", std::vector<std::size_t>{B, N, params.config.vocab}, "B, N, V");
    const double loss = train::cross_entropy(acts.logits, params.config.vocab, train::next_token_targets(batch));
    fmt::print("  loss at step 0: {:.3f} (ln V = {:.3f}: an untrained model is guessing)\n", loss,
               std::log(double(params.config.vocab)));
}

// -------------------------------------------------------------------------------------------------
void show_first_step(const Tracer& trace, train::Trainer& trainer) {
    trace.section("step 3: one training step -- a gradient for every parameter, then AdamW");
    const train::Params before = trainer.params();
    const double loss = trainer.step();
    for (const train::ParamInfo& p : trainer.grads().layout.params)
        trace.shape_line("d " + p.name, p.shape, dims_of(p.name));
    fmt::print("  loss {:.3f}; the attention core's dq, dk, dv come from lesson 10's backward\n", loss);
    // AdamW's first step: bias correction makes m_hat = g and v_hat = g^2, so every parameter with a
    // gradient moves by about lr (times its sign), plus the decay lr * weight_decay * p.
    const auto& o = trainer.options().adamw;
    double largest = 0.0;
    for (std::size_t i = 0; i < before.values.size(); ++i)
        largest = std::max(
            largest, double(std::abs(trainer.params().values[i] - before.values[i] * (1 - o.lr * o.weight_decay))));
    fmt::print("  AdamW step 1: largest move {:.2e} = lr {:.0e} (bias correction: |m_hat / sqrt(v_hat)| = 1)\n",
               largest, double(o.lr));
}

// -------------------------------------------------------------------------------------------------
void record(History& h, std::size_t step, double loss, const train::CircuitScores& s) {
    h.step.push_back(double(step));
    h.loss.push_back(loss);
    h.copy_loss.push_back(s.copy_loss);
    const std::size_t H = s.previous_token[0].size();
    h.previous_token.resize(H);
    h.induction.resize(H);
    for (std::size_t k = 0; k < H; ++k) {
        h.previous_token[k].push_back(s.previous_token.front()[k]);
        h.induction[k].push_back(s.induction.back()[k]);
    }
    if (!h.induction_crossed && s.best_induction().score >= 0.5f) h.induction_crossed = step;
}

History train_and_watch(const Tracer& trace, const Settings& s, train::Trainer& trainer, const train::Batch& eval) {
    trace.section("step 4: training -- the loss sits at ln V, then drops as two heads appear");
    const std::size_t H = s.train.config.heads, last = s.train.config.layers - 1;
    fmt::print("  {:>5} {:>7} {:>9}  {:<{}}   {}\n", "step", "loss", "copy loss", "previous-token score, layer 0 heads",
               7 * H, fmt::format("induction score, layer {} heads", last));
    History h;
    double mean = 0.0;
    std::size_t in_mean = 0;
    for (std::size_t step = 1; step <= s.steps; ++step) {
        mean += step == 1 ? 0.0 : trainer.step();  // step 1 ran in step 3
        in_mean += step != 1;
        if (step % s.every != 0 && step != 1) continue;
        const train::CircuitScores sc = train::measure(trainer.params(), eval);
        record(h, step, in_mean ? mean / double(in_mean) : sc.loss, sc);
        std::string prev, ind;
        for (std::size_t k = 0; k < H; ++k) {
            prev += fmt::format(" {:6.3f}", sc.previous_token.front()[k]);
            ind += fmt::format(" {:6.3f}", sc.induction.back()[k]);
        }
        fmt::print("  {:>5} {:7.3f} {:9.3f}  {}   {}\n", step, h.loss.back(), sc.copy_loss, prev, ind);
        mean = 0.0;
        in_mean = 0;
    }
    if (h.induction_crossed)
        fmt::print("  the best induction score crossed 0.5 at step {} (measured every {} steps)\n",
                   *h.induction_crossed, s.every);
    else
        fmt::print("  the induction score never reached 0.5 in {} steps: try --steps {}\n", s.steps, 2 * s.steps);
    return h;
}

// -------------------------------------------------------------------------------------------------
void ablate(const Tracer& trace, const train::Params& params, const train::Batch& eval) {
    trace.section("step 5: ablation -- zero one layer-0 head and measure the copy loss again");
    const train::CircuitScores full = train::measure(params, eval);
    const train::HeadRef prev = full.best_previous_token(0), ind = full.best_induction();
    const double chance = std::log(double(params.config.vocab));
    fmt::print("  previous-token head: layer 0 head {} ({:.3f}); induction head: layer {} head {} ({:.3f})\n",
               prev.head, prev.score, ind.layer, ind.head, ind.score);
    fmt::print("  copy loss with every head: {:.3f} = {:.2f} ln V\n", full.copy_loss, full.copy_loss / chance);
    for (std::size_t h = 0; h < params.config.heads; ++h) {
        train::ForwardOptions cut;
        cut.ablate_layer = 0;
        cut.ablate_head = h;
        const train::CircuitScores s = train::measure(params, eval, cut);
        fmt::print("  without layer 0 head {}: copy loss {:.3f} = {:.2f} ln V, induction score {:.3f}{}\n", h,
                   s.copy_loss, s.copy_loss / chance, s.induction.back()[ind.head],
                   h == prev.head ? "   <- the previous-token head: the induction head loses its key" : "");
    }
}

// -------------------------------------------------------------------------------------------------
void draw_figures(const Settings& s, const History& h) {
    figure::LinePlot loss{
        "lesson 11: training loss (mean over each interval) and copy loss", "step", "loss (nats)", {}, false, false};
    loss.series.push_back({"loss on every next token", h.step, h.loss, figure::palette(0)});
    loss.series.push_back({"copy loss (second copy)", h.step, h.copy_loss, figure::palette(1)});
    const double chance = std::log(double(s.train.config.vocab));
    loss.series.push_back({"ln V (chance)", {h.step.front(), h.step.back()}, {chance, chance}, figure::grey});
    figure::save(figure::line_plot(loss), s.figures_dir, "11_loss.png");
    figure::LinePlot scores{"lesson 11: each head's score as training goes", "step", "score", {}, false, false};
    for (std::size_t k = 0; k < h.previous_token.size(); ++k) {
        scores.series.push_back(
            {fmt::format("layer 0 head {} previous-token", k), h.step, h.previous_token[k], figure::palette(k)});
        scores.series.push_back({fmt::format("layer {} head {} induction", s.train.config.layers - 1, k), h.step,
                                 h.induction[k], figure::palette(k + 4)});
    }
    figure::save(figure::line_plot(scores), s.figures_dir, "11_scores.png");
}

void show_pictures(const Tracer& trace, const Settings& s, const train::Params& params, const History& h) {
    trace.section("step 6: pictures -- the curves, and the trained heads on one repeated sequence");
    if (!s.figures_dir.empty()) draw_figures(s, h);
    Random rng(s.train.seed + 2000);
    const train::Batch one = train::make_batch(rng, 1, params.config.context, params.config.vocab);
    print_repeat(one, 0);
    const train::CircuitScores sc = train::measure(params, one);
    train::Activations acts;
    train::ForwardOptions keep;
    keep.keep_weights = true;
    train::forward(params, one.tokens, 1, one.seq, acts, keep);
    head_view::Data page;
    page.title = "lesson 11: a trained induction circuit on one repeated sequence";
    page.subtitle =
        fmt::format("{} layers x {} heads trained {} steps by headwise (lesson 11); segment {}..{} repeated at {}..{}",
                    params.config.layers, params.config.heads, s.steps, one.repeats[0].first,
                    one.repeats[0].first + one.repeats[0].length - 1, one.repeats[0].second,
                    one.repeats[0].second + one.repeats[0].length - 1);
    for (std::size_t n = 0; n < one.seq; ++n) page.tokens.push_back(fmt::format("{}:{}", n, one.token(0, n)));
    for (std::size_t l = 0; l < params.config.layers; ++l) {
        page.weights.push_back(xt::view(*acts.layers[l].weights, 0));  // (H, N, N)
        page.roles.emplace_back();
        for (std::size_t k = 0; k < params.config.heads; ++k)
            page.roles[l].push_back(
                fmt::format("previous-token {:.2f}, induction {:.2f}", sc.previous_token[l][k], sc.induction[l][k]));
    }
    trace("head view weights, layer 0", page.weights[0], "H, N_query, N_key");
    if (!s.html.empty()) {
        head_view::write(s.html, page);
        fmt::print("  head view: {} (open it in a browser; hover a token of the copy)\n", s.html);
    } else {
        fmt::print("  --html FILE writes these weights as the head view page (the page `headwise heads` writes)\n");
    }
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Lesson 11: a model that learns -- train a small transformer and watch an induction head form",
                 "11_induction_heads"};
    Settings s;
    train::Config& c = s.train.config;
    c.vocab = 64;
    c.context = 32;
    c.d_model = 64;
    c.heads = 4;
    c.layers = 2;
    s.train.adamw.lr = 3e-3f;
    bool quiet = false;
    lesson::add_bounded_option(app, "--steps", s.steps, "training steps", 1, 100000);
    lesson::add_bounded_option(app, "--every", s.every, "measure the heads every this many steps", 1, 100000);
    lesson::add_bounded_option(app, "--d-model", c.d_model, "width of the residual stream", 1, 1024);
    lesson::add_bounded_option(app, "--heads", c.heads, "heads per layer (must divide --d-model)", 1, 64);
    lesson::add_bounded_option(app, "--vocab", c.vocab, "tokens in the vocabulary", 2, 4096);
    lesson::add_bounded_option(app, "--context", c.context, "tokens per sequence", 8, 256);
    lesson::add_bounded_option(app, "--batch", s.train.batch, "sequences per step", 1, 1024);
    lesson::add_bounded_option(app, "--lr", s.train.adamw.lr, "AdamW learning rate", 1e-6f, 0.5f);
    lesson::add_bounded_option(app, "--seed", s.train.seed, "seed of the initialisation and the data", 0u, 1u << 30);
    app.add_option("--html", s.html, "write the trained heads as the head view page")->type_name("FILE");
    app.add_flag("--quiet", quiet, "no shape lines");
    lesson::add_save_figures(app, s.figures_dir, "the loss and score curves (PNG)");
    return lesson::run(app, argc, argv, [&] {
        train::check(c);
        const Tracer trace(!quiet);
        fmt::print(
            "Lesson 11: a model that learns   V={} N={} d_model={} H={} L={} batch={} lr={:g} steps={} seed={}\n",
            c.vocab, c.context, c.d_model, c.heads, c.layers, s.train.batch, double(s.train.adamw.lr), s.steps,
            s.train.seed);
        train::Batch batch;
        show_data(trace, s, batch);
        train::Trainer trainer(s.train);
        show_model(trace, trainer.params(), batch);
        show_first_step(trace, trainer);
        Random eval_rng(s.train.seed + 3000);
        const train::Batch eval = train::make_batch(eval_rng, 128, c.context, c.vocab);  // never trained on
        const History history = train_and_watch(trace, s, trainer, eval);
        ablate(trace, trainer.params(), eval);
        show_pictures(trace, s, trainer.params(), history);
        return 0;
    });
}
