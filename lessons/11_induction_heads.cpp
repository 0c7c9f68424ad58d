// Lesson 11: a model that learns -- train a small transformer on this CPU, watch its loss fall in
// two stages, and read the circuit behind the second.
//
// The model is attention only (headwise/train/model.hpp): token and position embeddings, then per
// layer x = x + MHA(LN(x)) (causal, no biases), then LN_f and the unembedding. The data are random
// tokens in which one segment appears twice (headwise/train/data.hpp): about 70% of the targets are
// noise that nothing predicts, and the rest -- the copy -- only content predicts. The lesson
// watches the copy loss (the loss on the predictable targets) and trains two controls beside the
// model, so that each stage of its curve is compared with something that cannot do the next one:
//   stage 1, ln V down to about 0.8 ln V: in-context token statistics. A 1-layer model gets there
//     too, and it cannot hold an induction circuit: a layer-0 head's keys are made from the token
//     and position at each place alone, never from the token before it. What it learns is to bet
//     on tokens the sequence has already shown.
//   stage 2, about 0.8 down to 0.2 ln V, abruptly: two heads that compose. Layer 0, a
//     previous-token head: each position copies in the token before it. Layer 1, an induction head:
//     the current token looks for an earlier position whose *previous* token was the current token
//     (what the layer-0 head wrote there) and copies the token it finds into the logits.
// Olsson et al. (2022) saw a phase change on text: in-context learning improved abruptly as induction
// heads formed. The drop here is on synthetic data, the setting of Reddy (2023), Singh et al. (2024)
// and Edelman et al. (2024), who study how and when such heads form; Edelman et al. report the same
// order on in-context Markov chains: in-context single-token statistics first, then an abrupt move to
// the bigram (induction) solution.
//
// An attention pattern alone does not certify an induction head: the second control (fixed-period
// data, where position alone predicts the copy) grows, on the defaults, a head that scores high on
// induction with no previous-token head at all. So the lesson also measures copying (each head's OV circuit read by
// direct logit attribution, headwise/train/circuits.hpp) and ablates every head, zeroed and
// mean-ablated. Every sentence it prints about a head is chosen by those numbers against the
// thresholds stated below, and identities that hold by construction are printed as such.
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

// The thresholds every sentence about a head is chosen by.
constexpr float role_score = 0.5f;  // previous-token, induction or copying score at least this: the role is named
constexpr double matters = 0.10;    // an ablation raising the copy loss by at least 10% of its value: the head matters
constexpr float composes = 0.2f;    // an ablation lowering a head's induction score by at least this much
// ... and the sentences about the stages. A model has learned from context when its copy loss is below
// `learned` ln V and p(seen) is at least `favours` times the seen tokens' share; two copy losses
// within `same` ln V are "as far".
constexpr double learned = 0.95, favours = 1.25, same = 0.05;

struct Settings {
    train::TrainOptions train;
    std::size_t steps = 1000, every = 100;  // training steps; scores measured every `every` steps
    std::size_t one_layer_steps = 800;      // the 1-layer control (still falling slowly at the end)
    std::size_t fixed_period_steps = 200;   // the fixed-period control (its copy loss near 0 by then)
    std::string figures_dir, html;
};

// One training run and what it measured as it went.
struct Run {
    std::string name;
    train::TrainOptions options;
    std::size_t steps = 0;
    train::Batch eval;  // fresh sequences of the run's kind, never trained on
    std::vector<double> step, loss, copy_loss, seen_mass;
    std::vector<std::vector<double>> previous_token, induction;  // [head][measurement]: layer 0, last layer
    train::CircuitScores last;                                   // measured after the last step
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
    fmt::print("  sequence {}: segment of {} tokens at {}..{} repeated at {}..{}\n   ", s, r.length, r.first,
               r.first + r.length - 1, r.second, r.second + r.length - 1);
    for (std::size_t n = 0; n < b.seq; ++n) {
        const bool first = n >= r.first && n < r.first + r.length, second = n >= r.second && n < r.second + r.length;
        fmt::print(" {}{:>2}{}", first ? "[" : second ? "<" : " ", b.token(s, n), first ? "]" : second ? ">" : " ");
    }
    fmt::print("\n");
}

double ln_v(const train::Config& c) { return std::log(double(c.vocab)); }

// -------------------------------------------------------------------------------------------------
void step1_data(const Tracer& trace, const Settings& s, train::Batch& batch) {
    trace.section("step 1: the data -- random tokens, one segment repeated later; and the fixed-period control");
    Random rng(s.train.seed + 1000);
    const train::Config& c = s.train.config;
    batch = train::make_batch(rng, s.train.batch, c.context, c.vocab);
    trace.shape_line("tokens", std::vector<std::size_t>{batch.batch, batch.seq}, "B, N");
    trace.shape_line("targets (next tokens)", std::vector<std::size_t>{batch.batch, batch.seq}, "B, N");
    print_repeat(batch, 0);
    fmt::print("  [..] the first occurrence, <..> the copy: every <token> after the first is predictable\n");
    std::size_t predictable = 0;
    for (const train::Repeat& r : batch.repeats) predictable += r.length - 1;
    const double share = double(predictable) / double(batch.batch * (batch.seq - 1));
    fmt::print("  predictable targets: {} of {} ({:.1f}%); the rest are noise\n", predictable,
               batch.batch * (batch.seq - 1), 100.0 * share);
    fmt::print(
        "  by counting: a model that predicted every copied token for sure and guessed the rest evenly would\n"
        "  score {:.2f} on every token (ln V = {:.3f} times the unpredictable share), about the floor here\n",
        ln_v(c) * (1.0 - share), ln_v(c));
    Random periodic(s.train.seed + 1001);
    print_repeat(train::make_batch(periodic, 1, c.context, c.vocab, train::DataKind::fixed_period), 0);
    fmt::print("  fixed-period (a control): the copy always starts at N/2, so position alone predicts it\n");
}

// -------------------------------------------------------------------------------------------------
void step2_model(const Tracer& trace, const train::Params& params, const train::Batch& batch) {
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
    fmt::print("  loss at step 0: {:.3f} (ln V = {:.3f}: an untrained model is guessing)\n", loss, ln_v(params.config));
}

// -------------------------------------------------------------------------------------------------
void step3_one_training_step(const Tracer& trace, train::Trainer& trainer) {
    trace.section("step 3: one training step -- a gradient for every parameter, then AdamW");
    const train::Params before = trainer.params();
    const double loss = trainer.step();
    for (const train::ParamInfo& p : trainer.grads().layout.params)
        trace.shape_line("d " + p.name, p.shape, dims_of(p.name));
    fmt::print("  loss {:.3f}; the attention core's dq, dk, dv come from lesson 10's backward\n", loss);
    const auto& o = trainer.options().adamw;
    double largest = 0.0;
    for (std::size_t i = 0; i < before.values.size(); ++i)
        largest = std::max(
            largest, double(std::abs(trainer.params().values[i] - before.values[i] * (1 - o.lr * o.weight_decay))));
    fmt::print(
        "  exact by construction: on AdamW's first step bias correction makes m_hat = g and v_hat = g^2,\n"
        "  so each parameter moves by lr |g| / (|g| + eps) <= lr after its decay: largest move {:.2e}, lr {:.0e}\n"
        "  (a check of the code, not a finding about the model)\n",
        largest, double(o.lr));
}

// -------------------------------------------------------------------------------------------------
void record(Run& run, std::size_t step, double loss, const train::CircuitScores& s) {
    run.step.push_back(double(step));
    run.loss.push_back(loss);
    run.copy_loss.push_back(s.copy_loss);
    run.seen_mass.push_back(s.seen_mass);
    const std::size_t H = s.previous_token[0].size();
    run.previous_token.resize(H);
    run.induction.resize(H);
    for (std::size_t k = 0; k < H; ++k) {
        run.previous_token[k].push_back(s.previous_token.front()[k]);
        run.induction[k].push_back(s.induction.back()[k]);
    }
}

// Trains `run` for its steps (the first already taken when `first_taken`), measuring every `every` steps.
void train_run(Run& run, train::Trainer& trainer, std::size_t every, bool first_taken) {
    const std::size_t H = run.options.config.heads, last = run.options.config.layers - 1;
    fmt::print("  {:>5} {:>7} {:>9} {:>7}  {:<{}}   {}\n", "step", "loss", "copy loss", "p(seen)",
               "previous-token score, layer 0 heads", 7 * H, fmt::format("induction score, layer {} heads", last));
    double mean = 0.0;
    std::size_t in_mean = 0;
    for (std::size_t step = 1; step <= run.steps; ++step) {
        if (step > 1 || !first_taken) {
            mean += trainer.step();
            ++in_mean;
        }
        if (step % every != 0 && step != 1 && step != run.steps) continue;
        const train::CircuitScores sc = train::measure(trainer.params(), run.eval);
        record(run, step, in_mean ? mean / double(in_mean) : sc.loss, sc);
        std::string prev, ind;
        for (std::size_t k = 0; k < H; ++k) {
            prev += fmt::format(" {:6.3f}", sc.previous_token.front()[k]);
            ind += fmt::format(" {:6.3f}", sc.induction.back()[k]);
        }
        fmt::print("  {:>5} {:7.3f} {:9.3f} {:7.3f}  {}   {}\n", step, run.loss.back(), sc.copy_loss, sc.seen_mass,
                   prev, ind);
        mean = 0.0;
        in_mean = 0;
        run.last = sc;
    }
}

Run make_run(std::string name, const Settings& s, std::size_t layers, train::DataKind data, std::size_t steps) {
    Run run{std::move(name), s.train, steps, {}, {}, {}, {}, {}, {}, {}, {}};
    run.options.config.layers = layers;
    run.options.data = data;
    Random eval_rng(s.train.seed + 3000);
    run.eval = train::make_batch(eval_rng, 128, s.train.config.context, s.train.config.vocab, data);
    return run;
}

Run step4_train(const Tracer& trace, const Settings& s, train::Trainer& trainer) {
    trace.section(
        fmt::format("step 4: training -- the model, measured on 128 fresh sequences every {} steps", s.every));
    Run run = make_run("the 2-layer model", s, s.train.config.layers, train::DataKind::random_repeat, s.steps);
    fmt::print("  p(seen): the probability the model puts on tokens already in the sequence, on the copy's targets\n");
    train_run(run, trainer, s.every, true);
    return run;
}

std::vector<Run> step5_controls(const Tracer& trace, const Settings& s) {
    trace.section("step 5: two controls -- a 1-layer model, and the 2-layer model on fixed-period data");
    std::vector<Run> controls;
    controls.push_back(make_run("1 layer", s, 1, train::DataKind::random_repeat, s.one_layer_steps));
    controls.push_back(
        make_run("fixed-period", s, s.train.config.layers, train::DataKind::fixed_period, s.fixed_period_steps));
    for (Run& run : controls) {
        fmt::print("  {}: {} layer{} x {} heads, {} data, {} steps, the same seed and learning rate\n", run.name,
                   run.options.config.layers, run.options.config.layers == 1 ? "" : "s", run.options.config.heads,
                   train::name_of(run.options.data), run.steps);
        train::Trainer trainer(run.options);
        train_run(run, trainer, s.every, false);
    }
    return controls;
}

// -------------------------------------------------------------------------------------------------
// The measurement interval over which the copy loss fell the most: (index before, index after).
std::pair<std::size_t, std::size_t> steepest_drop(const Run& run) {
    if (run.copy_loss.size() < 2) return {0, 0};  // measured once: no interval
    std::size_t at = 1;
    for (std::size_t i = 1; i < run.copy_loss.size(); ++i)
        if (run.copy_loss[i - 1] - run.copy_loss[i] > run.copy_loss[at - 1] - run.copy_loss[at]) at = i;
    return {at - 1, at};
}

double best_at(const std::vector<std::vector<double>>& per_head, std::size_t i) {
    double best = 0.0;
    for (const auto& h : per_head) best = std::max(best, h[i]);
    return best;
}

// Stage 1, read from the 1-layer control against the 2-layer model just before its steepest fall.
void read_stage_one(const Run& model, std::size_t before_fall, const Run& one) {
    const double chance = ln_v(model.options.config);
    const train::CircuitScores& o = one.last;
    const double favour = o.seen_mass / o.seen_share, loss = o.copy_loss / chance;
    const double two = model.copy_loss[before_fall] / chance;
    std::string copying;
    for (float c : o.copying[0]) copying += fmt::format(" {:.2f}", c);
    fmt::print(
        "  exact by construction: a 1-layer model has no induction circuit -- a layer-0 key is made from its\n"
        "  position's own token and position, never from the token before it\n");
    fmt::print(
        "  the 1-layer model after {} steps: copy loss {:.3f} = {:.2f} ln V (the 2-layer model at step {:.0f},\n"
        "  before its steepest fall: {:.2f} ln V); p(seen) {:.3f}, {:.2f} times the seen tokens' share of the\n"
        "  vocabulary ({:.3f}); its heads' copying scores{};\n  an even bet on the seen tokens alone: {:.2f} ln V\n",
        one.steps, o.copy_loss, loss, model.step[before_fall], two, o.seen_mass, favour, o.seen_share, copying,
        o.seen_even_bet_loss / chance);
    if (loss < learned && favour >= favours)
        fmt::print(
            "  -> stage 1 needs no circuit: one layer gets the copy loss to {:.2f} ln V (< {:.2f}) and favours\n"
            "     the tokens the sequence has shown (p(seen) {:.2f} times their share, >= {:.2f});\n     {}\n",
            loss, learned, favour, favours,
            std::abs(loss - two) <= same
                ? fmt::format("the 2-layer model was within {:.2f} ln V of it before its fall", same)
                : fmt::format("the 2-layer model was at {:.2f} ln V before its fall", two));
    else
        fmt::print(
            "  -> the 1-layer model did not clearly learn in-context statistics here (copy loss >= {:.2f} ln V\n"
            "     or p(seen) < {:.2f} times the seen share): train it longer with --one-layer-steps\n",
            learned, favours);
}

void read_stage_two(const Run& model, std::size_t a, std::size_t b, const Run& one) {
    if (a == b) {
        fmt::print("  2 layers: measured once, so there is no fall to read (more --steps, or a smaller --every)\n");
        return;
    }
    const double chance = ln_v(model.options.config), end = model.copy_loss.back();
    const double ind_a = best_at(model.induction, a), ind_b = best_at(model.induction, b);
    fmt::print(
        "  2 layers: the steepest fall of the copy loss was between steps {:.0f} and {:.0f}: {:.2f} -> {:.2f} "
        "ln V,\n  while the best induction score went {:.3f} -> {:.3f} and the best previous-token score "
        "{:.3f} -> {:.3f}\n",
        model.step[a], model.step[b], model.copy_loss[a] / chance, model.copy_loss[b] / chance, ind_a, ind_b,
        best_at(model.previous_token, a), best_at(model.previous_token, b));
    if (end < one.last.copy_loss && ind_a < role_score && ind_b >= role_score)
        fmt::print(
            "  -> stage 2 is what the second layer adds: the copy loss ends at {:.2f} ln V, below the 1-layer\n"
            "     model's {:.2f}, and its steepest fall came as the best induction score crossed {:.1f}\n",
            end / chance, one.last.copy_loss / chance, double(role_score));
    else
        fmt::print(
            "  -> no clear second stage here (the copy loss ended at {:.2f} ln V, the 1-layer model's at {:.2f};\n"
            "     the best induction score crossed {:.1f} {} the steepest fall): try --steps {}\n",
            end / chance, one.last.copy_loss / chance, double(role_score),
            ind_b < role_score ? "neither before nor during" : "before", 2 * model.steps);
}

void read_fixed_period(const Run& fixed) {
    const double chance = ln_v(fixed.options.config), t = role_score;
    const train::CircuitScores& f = fixed.last;
    train::HeadRef ind = f.best_induction();  // the best of every layer, not only the last
    for (std::size_t l = 0; l < f.induction.size(); ++l)
        for (std::size_t h = 0; h < f.induction[l].size(); ++h)
            if (f.induction[l][h] > ind.score) ind = {l, h, f.induction[l][h]};
    const train::HeadRef prev = f.best_previous_token(0);
    fmt::print(
        "  fixed-period, after {} steps: copy loss {:.2f} ln V; best induction score {:.3f} (layer {} head {},\n"
        "  copying {:.2f}); best previous-token score in layer 0 {:.3f} (head {})\n",
        fixed.steps, f.copy_loss / chance, ind.score, ind.layer, ind.head, f.copying[ind.layer][ind.head], prev.score,
        prev.head);
    if (ind.score >= role_score && ind.layer == 0)
        fmt::print(
            "  -> a layer-0 head with an induction score >= {:.1f}, and no layer before it to compose with (exact by\n"
            "     construction): where the copy always starts at N/2, position finds it, so an attention score\n"
            "     alone does not certify an induction head\n",
            t);
    else if (ind.score >= role_score && prev.score < role_score)
        fmt::print(
            "  -> an induction score >= {:.1f} with no previous-token head in layer 0 (all < {:.1f}): where the copy\n"
            "     always starts at N/2, position can find it, so an attention score alone does not certify an\n"
            "     induction head\n",
            t, t);
    else
        fmt::print("  -> this run did not show an induction score >= {:.1f} without a layer-0 previous-token head\n",
                   t);
}

void step6_read_stages(const Tracer& trace, const Run& model, const std::vector<Run>& controls) {
    trace.section("step 6: the two stages of the loss curve, read against the controls");
    const auto [a, b] = steepest_drop(model);
    read_stage_one(model, a, controls[0]);
    read_stage_two(model, a, b, controls[0]);
    read_fixed_period(controls[1]);
}

// -------------------------------------------------------------------------------------------------
// One head's role from its three scores against `role_score` (whether its pattern needs an earlier
// head is step 8's question).
std::string role_of(const train::CircuitScores& s, std::size_t l, std::size_t h) {
    const float p = s.previous_token[l][h], i = s.induction[l][h], c = s.copying[l][h];
    const double t = role_score;
    if (i >= role_score && c >= role_score)
        return fmt::format(
            "the induction pattern, and it copies (induction {:.2f} >= {:.1f}, copying {:.2f} >= {:.1f})", i, t, c, t);
    if (i >= role_score)
        return fmt::format(
            "the induction pattern, but it does not copy (induction {:.2f} >= {:.1f}, copying {:.2f} < {:.1f})", i, t,
            c, t);
    if (p >= role_score)
        return fmt::format("a previous-token head (previous-token {:.2f} >= {:.1f}; copying {:.2f})", p, t, c);
    if (c >= role_score)
        return fmt::format("copies what it attends to (copying {:.2f} >= {:.1f}); its other scores are < {:.1f}", c, t,
                           t);
    return fmt::format("no role measured here (every score < {:.1f})", t);
}

void step7_read_heads(const Tracer& trace, const Run& model) {
    trace.section("step 7: what each head does -- attention scores and copying (the OV circuit)");
    const train::CircuitScores& s = model.last;
    const std::size_t V = model.options.config.vocab;
    fmt::print(
        "  copying: the fraction of positions whose own token gets the largest logit from what the head\n"
        "  writes when it attends there (W_U diag(g_f) centred W_o^h v, LN_f's scale left out); chance 1/V = "
        "{:.3f}\n",
        1.0 / double(V));
    fmt::print("  {:>5} {:>4} {:>14} {:>9} {:>7}\n", "layer", "head", "previous-token", "induction", "copying");
    for (std::size_t l = 0; l < s.previous_token.size(); ++l)
        for (std::size_t h = 0; h < s.previous_token[l].size(); ++h)
            fmt::print("  {:>5} {:>4} {:14.3f} {:9.3f} {:7.3f}\n", l, h, s.previous_token[l][h], s.induction[l][h],
                       s.copying[l][h]);
    for (std::size_t l = 0; l < s.previous_token.size(); ++l)
        for (std::size_t h = 0; h < s.previous_token[l].size(); ++h)
            fmt::print("  layer {} head {}: {}\n", l, h, role_of(s, l, h));
}

// -------------------------------------------------------------------------------------------------
// What one head's two ablations did to the copy loss `full`, as a sentence chosen by `matters`.
std::string ablation_verdict(double full, const train::HeadAblation& a) {
    const double zero = a.zero.copy_loss / full - 1.0, mean = a.mean.copy_loss / full - 1.0, t = 100 * matters;
    if (zero >= matters && mean >= matters)
        return fmt::format("matters: the copy loss rises {:+.0f}% zeroed, {:+.0f}% mean-ablated (>= {:.0f}%)",
                           100 * zero, 100 * mean, t);
    if (zero >= matters)
        return fmt::format(
            "zeroed {:+.0f}% (>= {:.0f}%) but mean-ablated {:+.0f}%: what matters in its output is the same "
            "in every sequence",
            100 * zero, t, 100 * mean);
    if (mean >= matters)
        return fmt::format("mean-ablating hurts ({:+.0f}% >= {:.0f}%), zeroing does not ({:+.0f}%)", 100 * mean, t,
                           100 * zero);
    return fmt::format("little on its own: {:+.0f}% zeroed, {:+.0f}% mean-ablated (< {:.0f}%)", 100 * zero, 100 * mean,
                       t);
}

// For each last-layer head with the induction pattern and copying: which earlier heads its attention
// needs (its induction score with each of them mean-ablated), and whether that certifies the circuit.
void read_composition(const train::CircuitScores& full, const std::vector<train::HeadAblation>& all) {
    const std::size_t last = full.induction.size() - 1;
    const double t = role_score;
    for (std::size_t j = 0; j < full.induction[last].size(); ++j) {
        const float score = full.induction[last][j];
        if (score < role_score || full.copying[last][j] < role_score) continue;
        std::string needs;
        bool previous_token = false;
        for (const train::HeadAblation& a : all) {
            const float after = a.mean.induction[last][j], p = full.previous_token[a.layer][a.head];
            if (a.layer >= last || score - after < composes) continue;
            needs += fmt::format("\n     layer {} head {} (previous-token {:.2f}): {:.3f} -> {:.3f} mean-ablated",
                                 a.layer, a.head, p, score, after);
            previous_token = previous_token || p >= role_score;
        }
        if (needs.empty())
            fmt::print(
                "  -> layer {} head {} has the pattern and copies, but no single earlier head's mean-ablation lowers\n"
                "     its induction score by {:.1f} or more\n",
                last, j, double(composes));
        else
            fmt::print(
                "  -> layer {} head {}'s attention needs (its induction score drops >= {:.1f}):{}\n     so it is {}\n",
                last, j, double(composes), needs,
                previous_token
                    ? fmt::format("an induction head by all three: pattern, copying, and a previous-token "
                                  "head (>= {:.1f}) it needs",
                                  t)
                    : fmt::format("composed, but not with a previous-token head (those it needs are < {:.1f})", t));
    }
}

void step8_ablate(const Tracer& trace, const train::Params& params, const Run& model) {
    trace.section("step 8: ablation -- every head in turn, zeroed and mean-ablated, and the copy loss again");
    const train::CircuitScores& full = model.last;
    const double chance = ln_v(params.config);
    const train::HeadRef ind = full.best_induction();
    fmt::print(
        "  zeroed: its output replaced by 0; mean-ablated: by its mean over the 128 sequences at each position\n");
    fmt::print("  copy loss with every head: {:.3f} = {:.2f} ln V\n", full.copy_loss, full.copy_loss / chance);
    fmt::print("  {:>5} {:>4}  {:>17}  {:>17}  {}\n", "layer", "head", "copy loss, zeroed", "mean-ablated",
               fmt::format("layer {} head {} induction, mean-ablated", ind.layer, ind.head));
    const std::vector<train::HeadAblation> all = train::ablate_each_head(params, model.eval);
    for (const train::HeadAblation& a : all)
        fmt::print(
            "  {:>5} {:>4}  {:8.3f} ({:+4.0f}%)  {:8.3f} ({:+4.0f}%)  {}\n", a.layer, a.head, a.zero.copy_loss,
            100 * (a.zero.copy_loss / full.copy_loss - 1), a.mean.copy_loss,
            100 * (a.mean.copy_loss / full.copy_loss - 1),
            a.layer >= ind.layer ? std::string("n/a") : fmt::format("{:.3f}", a.mean.induction[ind.layer][ind.head]));
    fmt::print("  exact by construction (n/a): a head in layer {} or later cannot change layer {}'s attention\n",
               ind.layer, ind.layer);
    for (const train::HeadAblation& a : all)
        fmt::print("  layer {} head {}: {}\n", a.layer, a.head, ablation_verdict(full.copy_loss, a));
    read_composition(full, all);
}

// -------------------------------------------------------------------------------------------------
void draw_figures(const Settings& s, const Run& model, const std::vector<Run>& controls) {
    figure::LinePlot loss{"lesson 11: copy loss of the model and its two controls, and the loss on every token",
                          "step",
                          "loss (nats)",
                          {},
                          false,
                          false};
    loss.series.push_back({"2 layers: loss on every next token", model.step, model.loss, figure::palette(0)});
    loss.series.push_back({"2 layers: copy loss", model.step, model.copy_loss, figure::palette(1)});
    loss.series.push_back({"1 layer: copy loss", controls[0].step, controls[0].copy_loss, figure::palette(2)});
    loss.series.push_back({"fixed-period: copy loss", controls[1].step, controls[1].copy_loss, figure::palette(3)});
    const double chance = ln_v(s.train.config);
    loss.series.push_back({"ln V (chance)", {model.step.front(), model.step.back()}, {chance, chance}, figure::grey});
    figure::save(figure::line_plot(loss), s.figures_dir, "11_loss.png");
    figure::LinePlot scores{"lesson 11: each head's score as training goes", "step", "score", {}, false, false};
    for (std::size_t k = 0; k < model.previous_token.size(); ++k) {
        scores.series.push_back({fmt::format("layer 0 head {} previous-token", k), model.step, model.previous_token[k],
                                 figure::palette(k)});
        scores.series.push_back({fmt::format("layer {} head {} induction", s.train.config.layers - 1, k), model.step,
                                 model.induction[k], figure::palette(k + 4)});
    }
    figure::save(figure::line_plot(scores), s.figures_dir, "11_scores.png");
}

void step9_pictures(const Tracer& trace, const Settings& s, const train::Params& params, const Run& model,
                    const std::vector<Run>& controls) {
    trace.section("step 9: pictures -- the curves, and the trained heads on one repeated sequence");
    if (!s.figures_dir.empty()) draw_figures(s, model, controls);
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
            page.roles[l].push_back(fmt::format("previous-token {:.2f}, induction {:.2f}, copying {:.2f}",
                                                sc.previous_token[l][k], sc.induction[l][k], sc.copying[l][k]));
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
    lesson::App app{"Lesson 11: a model that learns -- train a small transformer and watch an induction head form",
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
    lesson::add_bounded_option(app, "--one-layer-steps", s.one_layer_steps, "training steps of the 1-layer control", 1,
                               100000);
    lesson::add_bounded_option(app, "--fixed-period-steps", s.fixed_period_steps,
                               "training steps of the fixed-period control", 1, 100000);
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
        train::keep_freed_memory();  // as `headwise train` does: a step's buffers stay mapped between steps
        const Tracer trace(!quiet);
        fmt::print(
            "Lesson 11: a model that learns   V={} N={} d_model={} H={} L={} batch={} lr={:g} steps={} "
            "control steps={},{} seed={}\n",
            c.vocab, c.context, c.d_model, c.heads, c.layers, s.train.batch, double(s.train.adamw.lr), s.steps,
            s.one_layer_steps, s.fixed_period_steps, s.train.seed);
        train::Batch batch;
        step1_data(trace, s, batch);
        train::Trainer trainer(s.train);
        step2_model(trace, trainer.params(), batch);
        step3_one_training_step(trace, trainer);
        const Run model = step4_train(trace, s, trainer);
        const std::vector<Run> controls = step5_controls(trace, s);
        step6_read_stages(trace, model, controls);
        step7_read_heads(trace, model);
        step8_ablate(trace, trainer.params(), model);
        step9_pictures(trace, s, trainer.params(), model, controls);
        return 0;
    });
}
