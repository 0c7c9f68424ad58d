// The integer dot products of lesson 12's fast path: each instruction set against the definition,
// which is the dequantized weights times the dequantized activations, summed in double.
#include "headwise/base/random.hpp"
#include "headwise/model/quant.hpp"
#include "headwise/model/quant_dot.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

using namespace headwise;

namespace {

struct Row {
    std::vector<std::byte> bytes;
    std::vector<float> weights;  // the row dequantized by quant::dequantize_row (not by quant_dot)
};

Row quantized_row(gguf::Type type, const std::vector<float>& w) {
    const std::size_t blocks = w.size() / quant::block;
    Row r;
    r.bytes.resize(blocks * gguf::block_bytes(type));
    if (type == gguf::Type::q4_1)
        quant::quantize_row_q4_1(w.data(), reinterpret_cast<quant::BlockQ4_1*>(r.bytes.data()), w.size());
    else
        quant::quantize_row_q8_0(w.data(), reinterpret_cast<quant::BlockQ8_0*>(r.bytes.data()), w.size());
    r.weights.resize(w.size());
    quant::dequantize_row(type, r.bytes.data(), r.weights.data(), w.size());
    return r;
}

std::vector<float> normal(Random& rng, std::size_t n, float stddev, float mean = 0.0f) {
    std::vector<float> v(n);
    for (float& x : v) x = mean + stddev * rng.normal();
    return v;
}

// sum_j w_j * d_b * q_j in double: the value every spelling of the product must give.
double definition(const Row& row, const quant::QuantizedRow& x) {
    double sum = 0.0;
    for (std::size_t j = 0; j < row.weights.size(); ++j)
        sum += double(row.weights[j]) * double(x.d(j / quant::block)) * double(x.q()[j]);
    return sum;
}

// A (rows, n) Q4_1 matrix over all's bytes, as the file's layout has it.
gguf::TensorInfo q4_1_matrix(const Row& all, std::size_t rows, std::size_t n) {
    gguf::TensorInfo t;
    t.name = "w";
    t.shape = {rows, n};
    t.type = gguf::Type::q4_1;
    t.bytes = all.bytes.size();
    t.data = all.bytes.data();
    return t;
}

}  // namespace

TEST_CASE("quantized activations: each block keeps its largest value at +-127 and its sum in s", "[quant_dot]") {
    std::vector<float> x(64);
    for (std::size_t i = 0; i < 64; ++i) x[i] = float(i) - 20.0f;  // block 0: -20..11, block 1: 12..43
    quant::QuantizedRow q;
    q.quantize(x.data(), 64);
    CHECK(q.blocks() == 2);
    CHECK(q.d(0) == Approx(20.0f / 127.0f));
    CHECK(q.q()[0] == -127);
    CHECK(q.d(1) == Approx(43.0f / 127.0f));
    CHECK(q.q()[63] == 127);
    int sum = 0;
    for (std::size_t j = 32; j < 64; ++j) sum += q.q()[j];
    CHECK(q.s(1) == Approx(q.d(1) * float(sum)));
    CHECK(reinterpret_cast<std::uintptr_t>(q.q()) % 64 == 0);  // two blocks are one aligned 512-bit load
    std::vector<float> zeros(32, 0.0f);
    q.quantize(zeros.data(), 32);  // an all-zero block: d = 0, no NaN
    CHECK(q.d(0) == 0.0f);
    CHECK(q.q()[5] == 0);
}

TEST_CASE("integer dot products equal the dequantized definition on every instruction set", "[quant_dot]") {
    Random rng(3);
    for (gguf::Type type : {gguf::Type::q4_1, gguf::Type::q8_0}) {
        for (std::size_t n : {32u, 64u, 96u, 128u, 160u, 576u, 1536u}) {  // 1-5 blocks: every AVX-512 tail
            const Row row = quantized_row(type, normal(rng, n, 0.05f, type == gguf::Type::q4_1 ? 0.01f : 0.0f));
            const std::vector<float> activation = normal(rng, n, 1.0f);
            quant::QuantizedRow x;
            x.quantize(activation.data(), n);
            const double expected = definition(row, x);
            double scale = 0.0;  // the size of the terms, for a tolerance that float sums can meet
            for (std::size_t j = 0; j < n; ++j) scale += std::fabs(double(row.weights[j]) * activation[j]);
            for (quant::Isa isa : {quant::Isa::scalar, quant::Isa::avx2, quant::Isa::avx512}) {
                if (!quant::cpu_has(isa)) continue;
                quant::set_isa(isa);
                INFO(gguf::to_string(type) << " n = " << n << " on " << quant::to_string(isa));
                CHECK(quant::dot(type, row.bytes.data(), x) == Approx(expected).margin(1e-5 * scale));
            }
        }
    }
    quant::set_isa(quant::active_isa());
}

TEST_CASE("integer dot products stay within the activation's quantization error of the float product", "[quant_dot]") {
    Random rng(4);
    const std::size_t n = 1536;
    const Row row = quantized_row(gguf::Type::q4_1, normal(rng, n, 0.05f));
    const std::vector<float> activation = normal(rng, n, 1.0f);
    quant::QuantizedRow x;
    x.quantize(activation.data(), n);
    double exact = 0.0, bound = 0.0;
    for (std::size_t j = 0; j < n; ++j) {
        exact += double(row.weights[j]) * activation[j];
        bound += std::fabs(row.weights[j]) * x.d(j / quant::block) / 2;  // each x off by at most d / 2
    }
    const float got = quant::dot(gguf::Type::q4_1, row.bytes.data(), x);
    CHECK(std::fabs(got - exact) <= bound);
    CHECK(std::fabs(got - exact) > 0.0);  // quantizing did change something: the bound is not vacuous
}

TEST_CASE("matvec_rows gives each row's dot product, for a range of rows", "[quant_dot]") {
    Random rng(5);
    const std::size_t rows = 9, n = 64;
    const Row all = quantized_row(gguf::Type::q4_1, normal(rng, rows * n, 0.1f));
    const gguf::TensorInfo t = q4_1_matrix(all, rows, n);
    const std::vector<float> activation = normal(rng, n, 1.0f);
    quant::QuantizedRow x;
    x.quantize(activation.data(), n);
    std::vector<float> y(rows, -1.0f);
    quant::matvec_rows(t, x, 2, 8, y.data() + 2);  // one group of four, then two alone
    // four rows at a time fold their sums in another order than one row alone: equal to rounding
    for (std::size_t r = 2; r < 8; ++r) CHECK(y[r] == Approx(quant::dot(gguf::Type::q4_1, t.row(r), x)).epsilon(1e-5));
    CHECK(y[0] == -1.0f);
    CHECK(y[8] == -1.0f);
}

TEST_CASE("a Q4_1 matrix regrouped in panels is multiplied as its rows were, on every instruction set", "[quant_dot]") {
    Random rng(7);
    for (std::size_t n : {32u, 96u, 576u}) {
        const std::size_t rows = 48;  // three panels
        Row all = quantized_row(gguf::Type::q4_1, normal(rng, rows * n, 0.05f, 0.01f));
        const std::vector<std::byte> file_layout = all.bytes;
        gguf::TensorInfo t = q4_1_matrix(all, rows, n);
        quant::regroup_in_panels(t, all.bytes.data());
        t.layout = gguf::Layout::panels16;
        REQUIRE(all.bytes != file_layout);  // the bytes did move
        const std::vector<float> activation = normal(rng, n, 1.0f);
        quant::QuantizedRow x;
        x.quantize(activation.data(), n);
        const std::size_t row_bytes = n / quant::block * sizeof(quant::BlockQ4_1);
        for (quant::Isa isa : {quant::Isa::scalar, quant::Isa::avx2, quant::Isa::avx512}) {
            if (!quant::cpu_has(isa)) continue;
            quant::set_isa(isa);
            std::vector<float> y(rows, -1.0f);
            quant::matvec_rows(t, x, 16, 48, y.data() + 16);  // the second and third panels
            CHECK(y[15] == -1.0f);
            for (std::size_t r = 16; r < rows; ++r) {
                INFO("n = " << n << ", row " << r << " on " << quant::to_string(isa));
                // against the row as the file had it, by the scalar definition's terms
                const Row one{{file_layout.begin() + r * row_bytes, file_layout.begin() + (r + 1) * row_bytes},
                              {all.weights.begin() + r * n, all.weights.begin() + (r + 1) * n}};
                double scale = 0.0;
                for (std::size_t j = 0; j < n; ++j) scale += std::fabs(double(one.weights[j]) * activation[j]);
                CHECK(y[r] == Approx(definition(one, x)).margin(1e-5 * scale));
            }
        }
        quant::set_isa(quant::active_isa());
        std::vector<float> y(rows);
        CHECK_THROWS_AS(quant::matvec_rows(t, x, 8, 16, y.data()), std::invalid_argument);  // not on a panel
        // the float path's dequantization: the reference's values exactly, whole panels or not
        std::vector<float> want(rows * n), got(rows * n, -1.0f);
        quant::dequantize_rows(t, 0, rows, want.data());
        quant::dequantize_rows_fast(t, 16, 48, got.data() + 16 * n);
        quant::dequantize_rows_fast(t, 3, 9, got.data() + 3 * n);
        CHECK(std::equal(got.begin() + 16 * n, got.end(), want.begin() + 16 * n));
        CHECK(std::equal(got.begin() + 3 * n, got.begin() + 9 * n, want.begin() + 3 * n));
        CHECK(got[2 * n] == -1.0f);
    }
}

TEST_CASE("HEADWISE_ISA names the instruction set, and one the CPU lacks is refused", "[quant_dot]") {
    CHECK(quant::to_string(quant::Isa::avx2) == "avx2");
    CHECK(quant::cpu_has(quant::Isa::scalar));
    if (!quant::cpu_has(quant::Isa::avx512))
        CHECK_THROWS_WITH(quant::set_isa(quant::Isa::avx512), Catch::Contains("this CPU has no avx512"));
}
