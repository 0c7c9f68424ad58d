// `headwise train` -- lesson 11's attention-only transformer, trained from scratch on this CPU on
// sequences in which a random segment repeats (headwise/train/). It prints a progress line (step,
// loss, tokens/s, time left), then measures the circuit on fresh sequences of the same kind: the
// copy loss, the best layer-0 previous-token head, the best last-layer induction head and its
// copying score, and the copy loss with that previous-token head zeroed and mean-ablated.
//
//   --layers 1                the control with no second layer to compose with
//   --data fixed-period       the control whose repeat position alone predicts (headwise/train/data.hpp)
//   --save FILE.safetensors   the trained model (F32, names and metadata in headwise/train/checkpoint.hpp)
//   --log FILE.csv            step,loss for every step
// Outputs appear only when the run finished (temporary file + rename). The same seed and thread
// count give the same run.
#include "cmd_train.hpp"
#include "common.hpp"

#include "headwise/fast/blas.hpp"
#include "headwise/fast/parallel.hpp"
#include "headwise/io/npy.hpp"
#include "headwise/train/checkpoint.hpp"
#include "headwise/train/circuits.hpp"
#include "headwise/train/trainer.hpp"

#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <optional>

namespace headwise::runner {

namespace {

std::size_t positive(long long v, const char* flag, long long most) {
    if (v < 1 || v > most)
        throw headwise::usage_error(fmt::format("{} {}: expected a whole number from 1 to {}", flag, v, most));
    return std::size_t(v);
}

train::TrainOptions options_of(const TrainArgs& a) {
    train::TrainOptions o;
    o.config.vocab =
        a.vocab < 2
            ? throw headwise::usage_error(fmt::format("--vocab {}: the vocabulary needs at least 2 tokens", a.vocab))
            : positive(a.vocab, "--vocab", 1 << 20);
    o.config.context = a.context < 8
                           ? throw headwise::usage_error(fmt::format(
                                 "--context {}: a sequence needs at least 8 tokens (a segment of 4, twice)", a.context))
                           : positive(a.context, "--context", 4096);
    o.config.d_model = positive(a.d_model, "--d-model", 4096);
    o.config.heads = positive(a.heads, "--heads", 4096);
    o.config.layers = positive(a.layers, "--layers", 64);
    o.batch = positive(a.batch, "--batch", 1 << 16);
    if (!(a.lr > 0.0 && a.lr < 1.0))
        throw headwise::usage_error(fmt::format("--lr {}: expected a number in (0, 1)", a.lr));
    if (!(a.weight_decay >= 0.0 && a.weight_decay < 1.0))
        throw headwise::usage_error(fmt::format("--weight-decay {}: expected a number in [0, 1)", a.weight_decay));
    o.adamw.lr = float(a.lr);
    o.adamw.weight_decay = float(a.weight_decay);
    o.seed = a.seed;
    o.data = train::parse_data_kind(a.data);
    train::check(o.config);
    if (double(o.config.vocab) * double(o.config.d_model) * double(o.batch) * double(o.config.context) > 4e10)
        throw headwise::usage_error("the model and batch are too large for this command (logits over 40 G values)");
    return o;
}

std::string duration(double seconds) {
    if (seconds < 60) return fmt::format("{:.0f} s", seconds);
    return fmt::format("{:.0f} min {:02.0f} s", std::floor(seconds / 60), std::fmod(seconds, 60));
}

void report(const train::Params& params, const train::TrainOptions& o) {
    Random rng(o.seed ^ 0xC0FFEEull);  // fresh sequences, never trained on
    const train::Batch eval = train::make_batch(rng, 256, params.config.context, params.config.vocab, o.data);
    const train::CircuitScores s = train::measure(params, eval);
    const train::HeadRef prev = s.best_previous_token(0), ind = s.best_induction();
    train::ForwardOptions cut;
    cut.ablate_layer = prev.layer;
    cut.ablate_head = prev.head;
    const train::CircuitScores zeroed = train::measure(params, eval, cut);
    cut.ablate_with = train::Ablation::mean;
    const train::CircuitScores mean = train::measure(params, eval, cut);
    const double chance = std::log(double(params.config.vocab));
    fmt::print("on 256 fresh {} sequences:\n", train::name_of(o.data));
    fmt::print("  loss on every next token       {:.3f}  (ln V = {:.3f})\n", s.loss, chance);
    fmt::print("  copy loss (second copy)        {:.3f}  = {:.2f} ln V\n", s.copy_loss, s.copy_loss / chance);
    fmt::print("  best previous-token head       layer 0 head {}: {:.3f}\n", prev.head, prev.score);
    fmt::print("  best induction head            layer {} head {}: {:.3f}, copying score {:.3f}\n", ind.layer, ind.head,
               ind.score, s.copying[ind.layer][ind.head]);
    fmt::print("  copy loss, layer 0 head {} zeroed: {:.3f} = {:.2f} ln V; mean-ablated: {:.3f} = {:.2f} ln V\n",
               prev.head, zeroed.copy_loss, zeroed.copy_loss / chance, mean.copy_loss, mean.copy_loss / chance);
}

int compute(const TrainArgs& a) {
    const train::TrainOptions o = options_of(a);
    const std::size_t steps = positive(a.steps, "--steps", 10'000'000);
    if (a.threads != 0) {
        positive(a.threads, "--threads", 1024);
        ::setenv("HEADWISE_THREADS", std::to_string(a.threads).c_str(), 1);
    }
    std::size_t threads = 0;
    try {
        threads = fast::worker_count();
    } catch (const std::runtime_error& e) {  // a bad HEADWISE_THREADS: one line, exit 2
        throw headwise::usage_error(e.what());
    }
    blas::set_threads(int(threads));
    train::keep_freed_memory();
    if (!a.save.empty()) train::check_writable(a.save);
    if (!a.log.empty()) npy::PendingFile probe(a.log, std::string());

    const train::Config& c = o.config;
    fmt::print(
        "training {} layer{} x {} heads, d_model {}, vocab {}, context {}, batch {}, {} steps, AdamW lr {:g}, "
        "{} data, {} threads\n",
        c.layers, c.layers == 1 ? "" : "s", c.heads, c.d_model, c.vocab, c.context, o.batch, steps, a.lr,
        train::name_of(o.data), threads);
    train::Trainer trainer(o);
    std::string csv = "step,loss\n";
    const auto start = std::chrono::steady_clock::now();
    const std::clock_t cpu_start = std::clock();  // CPU time of every thread: what a loaded machine does not inflate
    auto last_print = start;
    for (std::size_t step = 1; step <= steps; ++step) {
        const double loss = trainer.step();
        csv += fmt::format("{},{:.6f}\n", step, loss);
        const auto now = std::chrono::steady_clock::now();
        if (step == steps || step == 1 || now - last_print > std::chrono::seconds(2)) {
            last_print = now;
            const double elapsed = std::chrono::duration<double>(now - start).count();
            fmt::print("step {:>6}/{}  loss {:.3f}  {:>8.0f} tokens/s  {} left\n", step, steps, loss,
                       double(step * o.batch * c.context) / elapsed,
                       duration(elapsed / double(step) * double(steps - step)));
            std::fflush(stdout);
        }
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double cpu = double(std::clock() - cpu_start) / CLOCKS_PER_SEC;
    fmt::print("trained in {} ({:.2f} ms a step; {:.2f} ms of CPU time a step)\n", duration(elapsed),
               1e3 * elapsed / double(steps), 1e3 * cpu / double(steps));
    report(trainer.params(), o);
    if (!a.log.empty()) {
        npy::PendingFile(a.log, csv).commit();
        fmt::print("wrote {}\n", a.log);
    }
    if (!a.save.empty()) {
        train::save_checkpoint(
            a.save, trainer.params(),
            {{"steps", std::to_string(steps)}, {"seed", std::to_string(o.seed)}, {"data", train::name_of(o.data)}});
        fmt::print("wrote {}\n", a.save);
    }
    return 0;
}

}  // namespace

int run_training(const TrainArgs& a) {
    try {
        return compute(a);
    } catch (const headwise::usage_error& e) {  // the library's bad-input error: one line, exit 2
        throw usage_error(e.what());
    }
}

}  // namespace headwise::runner
