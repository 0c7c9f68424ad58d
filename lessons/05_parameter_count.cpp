// Lesson 05 -- counting parameters, FLOPs and memory.
//
// Multi-head attention holds four d_model x d_model projections, W_Q, W_K, W_V and W_O, however
// many heads it has: splitting into heads cuts the same matrices into slices, it adds nothing.
//
//     parameters = 4 * d_model^2   (+ 4 * d_model with biases)
//
// What does grow is the attention matrix: (H, N, N) per sequence, quadratic in the length N.
// This file counts the parameters of its own module by walking the tensors, checks the closed
// form, shows the per-head layout holds the same count, tabulates published models, and shows
// how FLOPs and memory grow with N.
//
// Dimension letters: H = heads, d_head = d_model / H, N = context length (tokens).
// Run:  ./headwise run 5      or      build/lessons/05_parameter_count --help

#include "headwise/io/figure.hpp"
#include "headwise/lesson/lesson.hpp"
#include "headwise/reference/params.hpp"

#include <algorithm>

using namespace headwise;
using params::group_digits;

namespace {

// ---------------------------------------------------------------------------------------------
// Step helpers.

// 1.41e9 -> "1.41 G"
std::string si(double x) {
    static constexpr std::array<const char*, 5> units{"", " k", " M", " G", " T"};
    std::size_t u = 0;
    while (x >= 1000.0 && u + 1 < units.size()) {
        x /= 1000.0;
        ++u;
    }
    return fmt::format("{:.3g}{}", x, units[u]);
}

std::string shape_of(const params::ParameterTensor& t) { return format_shape(t.shape); }

void print_tensors(const std::vector<params::ParameterTensor>& tensors, std::size_t at_most) {
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        if (i == at_most && tensors.size() > at_most + 1) {
            fmt::print("    {:<18} ({} more tensors)\n", "...", tensors.size() - at_most - 1);
            i = tensors.size() - 1;
        }
        fmt::print("    {:<18} {:<14} {:>14}\n", tensors[i].name, shape_of(tensors[i]), group_digits(tensors[i].count));
    }
}

// The head counts to tabulate: divisors of d_model up to 64 (at most 10), plus the chosen H.
std::vector<std::size_t> head_counts_to_show(std::size_t d_model, std::size_t heads) {
    std::vector<std::size_t> out;
    for (std::size_t h : params::valid_head_counts(d_model))
        if (h <= 64 && out.size() < 10) out.push_back(h);
    if (std::find(out.begin(), out.end(), heads) == out.end()) out.push_back(heads);
    return out;
}

// ---------------------------------------------------------------------------------------------
// The steps, in the order the lesson tells them.

// What step 1 counts: the module and its parameter total.
struct Counted {
    MultiHeadAttention mha;  // in_proj (3*d_model, d_model), out_proj (d_model, d_model), biases
    std::size_t walked;
};

Counted step1_walk_tensors(const Tracer& trace, Random& rng, std::size_t d, std::size_t H) {
    trace.section("step 1: count by walking the module's tensors");
    const MultiHeadAttention mha = MultiHeadAttention::random(d, H, /*bias=*/true, rng);
    trace("in_proj_weight", mha.in_proj_weight, "3*d_model, d_model");
    trace("in_proj_bias", mha.in_proj_bias, "3*d_model");
    trace("out_proj_weight", mha.out_proj_weight, "d_model, d_model");
    trace("out_proj_bias", mha.out_proj_bias, "d_model");
    const auto tensors = params::parameters_of(mha);
    print_tensors(tensors, 8);
    const std::size_t walked = params::total(tensors);
    const std::size_t closed = params::attention_params(d, true);
    fmt::print("  walked: {}   closed form 4*{}^2 + 4*{} = {}   {}\n", group_digits(walked), d, d, group_digits(closed),
               walked == closed ? "agree" : "DISAGREE");
    MultiHeadAttention bare = mha;  // the same weights without the two bias vectors
    bare.in_proj_bias = Tensor1();
    bare.out_proj_bias = Tensor1();
    const std::size_t walked_bare = params::total(params::parameters_of(bare));
    fmt::print("  without biases: walked {}   closed form 4*{}^2 = {}   {}\n", group_digits(walked_bare), d,
               group_digits(params::attention_params(d, false)),
               walked_bare == params::attention_params(d, false) ? "agree" : "DISAGREE");
    fmt::print("  the biases are {:.2f}% of the total (4*d_model of 4*d_model^2 + 4*d_model).\n",
               100.0 * static_cast<double>(walked - walked_bare) / static_cast<double>(walked));
    return {mha, walked};
}

// The per-head tensors of step 2 (H of each of w_q, w_k, w_v, b_q..., then w_o, b_o).
std::vector<params::ParameterTensor> step2_per_head(const Tracer& trace, const Counted& c, std::size_t d,
                                                    std::size_t H) {
    trace.section("step 2: the same weights cut per head");
    const MultiHeadAttention& mha = c.mha;
    const std::size_t dh = d / H, walked = c.walked;
    const params::PerHeadAttention per_head = params::split_per_head(mha);
    trace("w_q[0]", per_head.w_q[0], "d_head, d_model");
    trace("b_q[0]", per_head.b_q[0], "d_head");
    trace("w_o", per_head.w_o, "d_model, d_model");
    const auto head_tensors = params::parameters_of(per_head);
    print_tensors(head_tensors, 6);
    const std::size_t walked_heads = params::total(head_tensors);
    fmt::print("  {} tensors, {} parameters; H*3*d_model*d_head + d_model^2 (+ biases) = {}*3*{}*{} + {}^2 + {} = {}\n",
               head_tensors.size(), group_digits(walked_heads), H, d, dh, d, H * 3 * dh + d,
               group_digits(params::per_head_params(d, H, true)));
    fmt::print("  per-head vs fused: {} = {}   {}\n", group_digits(walked_heads), group_digits(walked),
               walked_heads == walked ? "equal" : "NOT EQUAL");
    return head_tensors;
}

void step3_any_head_count(const Tracer& trace, const std::vector<params::ParameterTensor>& head_tensors, std::size_t d,
                          std::size_t H) {
    trace.section("step 3: one head or many, the same budget at the same width");
    // The per-head tensors for any H, as split_per_head would make them (shapes only, so this
    // allocates nothing); for the lesson's H the layout matches step 2's real tensors.
    const auto layout = params::per_head_layout(d, H, true);
    const bool layout_matches =
        std::equal(layout.begin(), layout.end(), head_tensors.begin(), head_tensors.end(),
                   [](const auto& a, const auto& b) { return a.name == b.name && a.shape == b.shape; });
    fmt::print("  per-head layout for H = {} vs the tensors of step 2: {}\n", H,
               layout_matches ? "same names and shapes" : "DIFFERENT");
    fmt::print("    {:>6} {:>8} {:>8} {:>16} {:>16}\n", "H", "d_head", "tensors", "sum (no bias)", "4 * d_model^2");
    bool all_equal = true;
    for (std::size_t h : head_counts_to_show(d, H)) {
        const auto tensors_h = params::per_head_layout(d, h, false);
        const std::size_t count = params::total(tensors_h);
        all_equal = all_equal && count == params::attention_params(d, false);
        fmt::print("    {:>6} {:>8} {:>8} {:>16} {:>16}\n", h, d / h, tensors_h.size(), group_digits(count),
                   group_digits(params::attention_params(d, false)));
    }
    fmt::print("  {}: more heads means narrower heads, not more weights.\n",
               all_equal ? "every row equal" : "ROWS DIFFER");
}

void step4_published_models(const Tracer& trace, std::size_t d, std::size_t H, std::size_t N, std::size_t walked) {
    trace.section(fmt::format("step 4: published models (attention blocks only, fp32, context N = {})", N));
    const std::size_t dh = d / H;
    fmt::print("    {:<17} {:>7} {:>4} {:>6} {:>14} {:>6} {:>16} {:>12} {:>12}\n", "model", "d_model", "H", "d_head",
               "params/block", "blocks", "params, all", "FLOPs/token", "(H,N,N)");
    for (const auto& m : params::known_models()) {
        const std::size_t per_block = params::attention_params(m.d_model, true);
        fmt::print("    {:<17} {:>7} {:>4} {:>6} {:>14} {:>6} {:>16} {:>12} {:>12}\n", m.name, m.d_model, m.heads,
                   m.d_model / m.heads, group_digits(per_block), m.attention_blocks,
                   group_digits(per_block * m.attention_blocks), si(params::flops_per_token(m.d_model, N)),
                   params::format_bytes(static_cast<double>(params::attention_matrix_bytes(1, m.heads, N))));
    }
    fmt::print("    {:<17} {:>7} {:>4} {:>6} {:>14} {:>6} {:>16} {:>12} {:>12}\n", "this lesson", d, H, dh,
               group_digits(walked), 1, group_digits(walked), si(params::flops_per_token(d, N)),
               params::format_bytes(static_cast<double>(params::attention_matrix_bytes(1, H, N))));
    fmt::print(
        "  params/block = 4*d_model^2 + 4*d_model; FLOPs/token = 8*d_model^2 + 4*N*d_model per block;\n"
        "  (H,N,N) = one block's attention weights for one sequence. Blocks: Transformer base counts\n"
        "  {}; the others one per layer.\n",
        params::known_models()[0].blocks_note);
    const auto bert = params::known_models()[1];
    fmt::print("  e.g. {}: 4*{}^2 + 4*{} = {} per block.\n", bert.name, bert.d_model, bert.d_model,
               group_digits(params::attention_params(bert.d_model, true)));
    fmt::print("  e.g. 32 heads x {}^2 floats = {} for one block and one sequence.\n", N,
               params::format_bytes(static_cast<double>(params::attention_matrix_bytes(1, 32, N))));
}

void step5_cost_vs_n(const Tracer& trace, std::size_t d, std::size_t H) {
    trace.section(fmt::format("step 5: how cost grows with N (d_model = {}, H = {})", d, H));
    const double projections = params::flops_per_token(d, 0);                              // 8 d^2, independent of N
    const double per_key = params::flops_per_token(d, 1) - params::flops_per_token(d, 0);  // 4 d per key
    fmt::print("    {:>8} {:>14} {:>14} {:>10} {:>14}\n", "N", "projections", "q.k^T, w.v", "share", "(H,N,N) fp32");
    for (std::size_t n = 128; n <= (std::size_t{1} << 20); n *= 4) {
        const double attn = per_key * static_cast<double>(n);
        fmt::print("    {:>8} {:>14} {:>14} {:>9.1f}% {:>14}\n", n, si(projections), si(attn),
                   100.0 * attn / (attn + projections),
                   params::format_bytes(static_cast<double>(params::attention_matrix_bytes(1, H, n))));
    }
    fmt::print(
        "  (FLOPs per token per block.) Each 4x longer context: the N-dependent FLOPs per token grow 4x,\n"
        "  the attention matrix 16x. They overtake the projections at N = {:.0f} = 2 * d_model.\n",
        projections / per_key);
}

void step6_possible_head_counts(const Tracer& trace, std::size_t d) {
    trace.section("step 6: which head counts are possible");
    const auto valid = params::valid_head_counts(d);
    fmt::print("  d_model = {} splits evenly into H =", d);
    for (std::size_t h : valid) fmt::print(" {}", h);
    fmt::print("\n");
    std::size_t bad = 2;
    while (bad <= d && d % bad == 0) ++bad;
    try {
        cli::require_divisible(d, bad);
        fmt::print("  H = {} is accepted\n", bad);
    } catch (const usage_error& e) {
        fmt::print("  any other H is refused, e.g. H = {}: \"{}\"\n", bad, e.what());
    }
}

// Memory and FLOPs against N for the published models, when --save-figures asks for them.
void figures_cost_vs_n(const Tracer& trace, const std::string& figures_dir) {
    if (figures_dir.empty()) return;
    trace.section("figures: attention-matrix memory and FLOPs against N, published models");
    // Models with the same shape (BERT-base and GPT-2 small, ...) share one line.
    std::vector<params::ModelConfig> shapes;
    std::vector<std::string> names;
    for (const auto& m : params::known_models()) {
        const auto same = std::find_if(shapes.begin(), shapes.end(), [&](const auto& s) {
            return s.d_model == m.d_model && s.heads == m.heads && s.attention_blocks == m.attention_blocks;
        });
        if (same != shapes.end()) {
            names[std::size_t(same - shapes.begin())] += fmt::format(" = {}", m.name);
        } else {
            shapes.push_back(m);
            names.push_back(std::string(m.name));
        }
    }
    figure::LinePlot memory{"fp32 attention weights, all blocks", "context length N (tokens)", "bytes"};
    figure::LinePlot flops{"Attention FLOPs per sequence, all blocks", "context length N (tokens)", "FLOPs"};
    for (std::size_t i = 0; i < shapes.size(); ++i) {
        figure::Series mem{names[i], {}, {}, figure::palette(i)}, work{names[i], {}, {}, figure::palette(i)};
        for (std::size_t n = 128; n <= (std::size_t{1} << 17); n *= 2) {
            const double blocks = double(shapes[i].attention_blocks);
            mem.x.push_back(double(n));
            mem.y.push_back(blocks * double(params::attention_matrix_bytes(1, shapes[i].heads, n)));
            work.x.push_back(double(n));
            work.y.push_back(blocks * double(n) * params::flops_per_token(shapes[i].d_model, n));
        }
        memory.series.push_back(std::move(mem));
        flops.series.push_back(std::move(work));
    }
    memory.format_y = [](double b) { return params::format_bytes(b); };
    flops.format_y = [](double f) { return fmt::format("1e{:.0f}", std::log10(f)); };
    memory.format_x = flops.format_x = [](double n) { return group_digits(std::size_t(n)); };
    figure::save(figure::line_plot(memory), figures_dir, "05_attention_memory_vs_n.png");
    figure::save(figure::line_plot(flops), figures_dir, "05_attention_flops_vs_n.png");
}

}  // namespace

int main(int argc, char** argv) {
    lesson::App app{"Lesson 05: counting parameters, FLOPs and memory", "05_parameter_count"};
    cli::LessonOptions opt;
    std::size_t N = 4096;
    std::string figures_dir;
    cli::add_lesson_options(app, opt, "d-model,heads,seed");
    lesson::add_save_figures(app, figures_dir, "this lesson's pictures (PNG)");
    lesson::add_bounded_option(app, "--context", N, "context length N for the FLOPs and attention-matrix columns", 1,
                               1 << 20);
    return lesson::run(app, argc, argv, [&] {
        const std::size_t d = opt.dims.d_model, H = opt.dims.heads;
        cli::require_divisible(d, H);
        const Tracer trace(!opt.quiet);
        Random rng(opt.seed);
        fmt::print("Lesson 05: counting parameters   d_model={} H={} d_head={} context N={}\n", d, H, d / H, N);
        const Counted counted = step1_walk_tensors(trace, rng, d, H);
        const auto head_tensors = step2_per_head(trace, counted, d, H);
        step3_any_head_count(trace, head_tensors, d, H);
        step4_published_models(trace, d, H, N, counted.walked);
        step5_cost_vs_n(trace, d, H);
        step6_possible_head_counts(trace, d);
        figures_cost_vs_n(trace, figures_dir);
        return cli::exit_ok;
    });
}
