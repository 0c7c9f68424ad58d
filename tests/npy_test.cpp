// tests for headwise/io/npy.hpp: files NumPy wrote (tests/fixtures/npy, values known by eye:
// np.arange) are read right in every layout, and every kind of damaged file is refused with a
// message that names the file and the problem.
#include "headwise/io/npy.hpp"

#include "temp_dir.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

namespace fs = std::filesystem;
using namespace headwise;
using Catch::Matchers::Contains;
using headwise::test::TempDir;

namespace {

const fs::path samples = fs::path(HEADWISE_FIXTURES_DIR) / "npy";

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A version 1.0 file: magic, version, little-endian header length, the header padded with
// spaces and ended by '\n' to a multiple of 64 bytes (as numpy writes), then `data`.
std::string npy_bytes(const std::string& dict, const std::string& data, int major = 1) {
    const std::size_t prefix = 6 + 2 + (major == 1 ? 2 : 4);
    std::string header = dict;
    while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::string out = "\x93NUMPY";
    out += static_cast<char>(major);
    out += '\0';
    const std::size_t n = header.size();
    out += static_cast<char>(n & 0xff);
    out += static_cast<char>((n >> 8) & 0xff);
    if (major != 1) out += std::string(2, '\0');
    return out + header + data;
}

std::string floats(std::initializer_list<float> values) {
    std::string out;
    for (float v : values) out.append(reinterpret_cast<const char*>(&v), sizeof v);
    return out;
}

const std::string good_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
const std::string six = floats({0, 1, 2, 3, 4, 5});

// Parses `bytes` and returns the usage_error's message ("" if it was accepted).
std::string refusal(const std::string& bytes) {
    try {
        npy::parse(bytes, "bad.npy");
    } catch (const usage_error& e) {
        return e.what();
    }
    return "";
}

bool is_arange_2x3(const npy::Array& a) {
    if (a.shape != std::vector<std::size_t>{2, 3} || a.values.size() != 6) return false;
    for (std::size_t i = 0; i < 6; ++i)
        if (a.values[i] != static_cast<double>(i)) return false;
    return true;
}

}  // namespace

TEST_CASE("npy reads float32, float64 and big-endian files written by numpy", "[npy]") {
    for (const char* name :
         {"arange_2x3_float32.npy", "arange_2x3_float64.npy", "arange_2x3_big_endian.npy", "arange_2x3_version2.npy"}) {
        INFO(name);
        const auto a = npy::read(samples / name);
        CHECK(is_arange_2x3(a));
        CHECK_FALSE(a.fortran_order);
    }
    CHECK(npy::read(samples / "arange_2x3_float64.npy").dtype == npy::DType::float64);
    CHECK(npy::read(samples / "arange_2x3_big_endian.npy").descr == ">f4");
}

TEST_CASE("npy converts fortran-order files to c order", "[npy]") {
    const auto a = npy::read(samples / "arange_2x3_fortran.npy");
    CHECK(a.fortran_order);
    CHECK(is_arange_2x3(a));

    const auto b = npy::read(samples / "arange_2x3x4_fortran.npy");
    REQUIRE(b.shape == std::vector<std::size_t>{2, 3, 4});
    bool in_order = true;
    for (std::size_t i = 0; i < 24; ++i) in_order = in_order && b.values[i] == static_cast<double>(i);
    CHECK(in_order);
    const auto t = npy::to_tensor<3>(b, "x");
    CHECK(t(1, 2, 3) == 23.0f);
    CHECK(t(0, 1, 2) == 6.0f);
}

TEST_CASE("npy reads bool masks", "[npy]") {
    const Mask2 m = npy::to_mask(npy::read(samples / "mask_2x3_bool.npy"), "--key-padding-mask");
    REQUIRE(m.shape()[0] == 2);
    REQUIRE(m.shape()[1] == 3);
    CHECK(m(0, 0));
    CHECK_FALSE(m(0, 1));
    CHECK_FALSE(m(0, 2));
    CHECK_FALSE(m(1, 0));
    CHECK_FALSE(m(1, 1));
    CHECK(m(1, 2));
}

TEST_CASE("npy refuses unsupported dtypes naming them", "[npy]") {
    CHECK_THROWS_WITH(npy::read(samples / "arange_2x3_int64.npy"),
                      Contains("arange_2x3_int64.npy") && Contains("int64") && Contains("float32, float64 or bool"));
    CHECK_THAT(refusal(npy_bytes("{'descr': '<f2', 'fortran_order': False, 'shape': (3,), }", std::string(6, '\0'))),
               Contains("float16"));
    CHECK_THAT(refusal(npy_bytes("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", floats({1}))),
               Contains("structured"));
}

TEST_CASE("npy accepts a hand-made header, including one longer than 127 bytes", "[npy]") {
    CHECK(is_arange_2x3(npy::parse(npy_bytes(good_dict, six), "ok.npy")));
    std::string long_dict = good_dict;  // 150 more spaces before the closing brace
    long_dict.insert(long_dict.size() - 1, 150, ' ');
    CHECK(is_arange_2x3(npy::parse(npy_bytes(long_dict, six), "ok.npy")));
    CHECK(is_arange_2x3(
        npy::parse(npy_bytes("{\"shape\": (2, 3), \"fortran_order\": False, \"descr\": \"<f4\"}", six, 2), "ok.npy")));
}

TEST_CASE("npy refuses damaged files with one line naming the file", "[npy]") {
    const std::string good = npy_bytes(good_dict, six);
    REQUIRE(refusal(good).empty());
    struct Case {
        const char* what;
        std::string bytes;
        const char* expect;
    };
    const Case cases[] = {
        {"empty file", "", "is empty"},
        {"wrong magic", "PK\x03\x04" + good.substr(4), "not a .npy file"},
        {"text file", "hello, world\n", "not a .npy file"},
        {"unknown version", good.substr(0, 6) + "\x09" + good.substr(7), "unsupported .npy format version 9.0"},
        {"cut inside the header", good.substr(0, 30), "truncated inside the header"},
        {"cut inside the length", good.substr(0, 9), "truncated inside the header"},
        {"cut inside the data", good.substr(0, good.size() - 3),
         "truncated: shape (2, 3) of float32 needs 24 data bytes, the file has 21"},
        {"no data at all", good.substr(0, good.size() - 24), "truncated"},
        {"bytes after the data", good + "xx", "2 unexpected bytes"},
        {"missing key", npy_bytes("{'descr': '<f4', 'shape': (2, 3), }", six), "lacks 'fortran_order'"},
        {"extra key", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}", six),
         "unexpected key 'x'"},
        {"duplicate key", npy_bytes("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", six),
         "appears twice"},
        {"negative dimension", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 3), }", six),
         "non-negative integers"},
        {"shape not a tuple", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3], }", six),
         "expected '('"},
        {"bad fortran_order", npy_bytes("{'descr': '<f4', 'fortran_order': maybe, 'shape': (2, 3), }", six),
         "True or False"},
        {"unterminated string", npy_bytes("{'descr': '<f4, 'fortran_order': False, 'shape': (2, 3), }", six),
         "malformed header"},
        {"no closing brace", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), ", six),
         "the header dict is not closed"},
        {"dict then junk", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3) x}", six),
         "expected ',' or '}'"},
        {"junk after the dict", npy_bytes(good_dict + " junk", six), "unexpected text after"},
        {"overflowing shape",
         npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), }", six),
         "too large"},
        {"overflowing dimension",
         npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }", six),
         "overflows"},
        {"bool that is not 0 or 1",
         npy_bytes("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", std::string("\x01\x07", 2)),
         "bool value 7 at (1,)"},
    };
    for (const auto& c : cases) {
        INFO(c.what);
        const std::string msg = refusal(c.bytes);
        CHECK_THAT(msg, Contains("bad.npy: ") && Contains(c.expect));
        CHECK(msg.find('\n') == std::string::npos);
    }
}

TEST_CASE("npy refuses paths that are not readable files", "[npy]") {
    TempDir dir;
    CHECK_THROWS_WITH(npy::read(dir.path / "missing.npy"), Contains("missing.npy: no such file"));
    CHECK_THROWS_WITH(npy::read(dir.path), Contains("is a directory"));
}

TEST_CASE("npy to_tensor refuses NaN, Inf, wrong rank, empty dimensions and bool data", "[npy]") {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    const auto with_nan = npy::parse(npy_bytes(good_dict, floats({0, 1, 2, 3, nan, 5})), "q.npy");
    CHECK_THROWS_WITH(npy::to_tensor<2>(with_nan, "--query"), Contains("q.npy: --query has nan at (1, 1)"));
    const auto with_inf = npy::parse(npy_bytes(good_dict, floats({0, -inf, 2, 3, 4, 5})), "q.npy");
    CHECK_THROWS_WITH(npy::to_tensor<2>(with_inf, "--query"), Contains("-inf at (0, 1)") && Contains("finite"));

    double big[2] = {1.0, 1e300};
    const auto huge = npy::parse(npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }",
                                           std::string(reinterpret_cast<const char*>(big), sizeof big)),
                                 "b.npy");
    CHECK_THROWS_WITH(npy::to_tensor<1>(huge, "bias"), Contains("too large for float32"));

    const auto two_d = npy::parse(npy_bytes(good_dict, six), "x.npy");
    CHECK_THROWS_WITH(npy::to_tensor<3>(two_d, "--query (B, N, d_model)"),
                      Contains("must have 3 dimensions, the file has shape (2, 3) (2 dimensions)"));
    CHECK_THROWS_WITH(npy::to_mask(two_d, "--key-padding-mask"), Contains("must be a bool array"));

    const auto empty =
        npy::parse(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 0, 4), }", ""), "e.npy");
    CHECK_THROWS_WITH(npy::to_tensor<3>(empty, "--query"), Contains("dimension 1 is empty"));

    const auto mask = npy::read(samples / "mask_2x3_bool.npy");
    CHECK_THROWS_WITH(npy::to_tensor<2>(mask, "--query"), Contains("holds bool"));
}

TEST_CASE("npy writes float32 c-order files whose data numpy would read back", "[npy]") {
    TempDir dir;
    Tensor2 t = Tensor2::from_shape({2, 3});
    for (std::size_t i = 0; i < 6; ++i) t.data()[i] = static_cast<float>(i);
    npy::save(dir.path / "out.npy", t);
    const std::string ours = slurp(dir.path / "out.npy");
    const std::string numpys = slurp(samples / "arange_2x3_float32.npy");
    REQUIRE(ours.size() >= 24);
    CHECK(ours.compare(0, 6, "\x93NUMPY") == 0);
    CHECK(ours.substr(ours.size() - 24) == numpys.substr(numpys.size() - 24));  // the same data bytes
    CHECK(ours.find("'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)") != std::string::npos);
    CHECK((ours.size() - 24) % 16 == 0);  // numpy aligns the data
    CHECK(is_arange_2x3(npy::read(dir.path / "out.npy")));
}

TEST_CASE("npy pending files leave nothing behind unless committed", "[npy]") {
    TempDir dir;
    Tensor1 t = Tensor1::from_shape({3});
    t.fill(1.0f);
    {
        npy::PendingFile pending(dir.path / "y.npy", npy::encode(t));
        CHECK_FALSE(fs::exists(dir.path / "y.npy"));
    }
    CHECK(fs::is_empty(dir.path));  // neither the target nor a temporary file

    CHECK_THROWS_WITH(npy::save(dir.path / "no" / "such" / "dir.npy", t), Contains("does not exist"));
    CHECK(fs::is_empty(dir.path));

    npy::PendingFile pending(dir.path / "y.npy", npy::encode(t));
    pending.commit();
    CHECK(fs::exists(dir.path / "y.npy"));
    CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);
}

TEST_CASE("npy committing over an existing file replaces its bytes and leaves no temporary file", "[npy]") {
    TempDir dir;
    Tensor1 old_values = Tensor1::from_shape({3}), new_values = Tensor1::from_shape({5});
    old_values.fill(1.0f);
    new_values.fill(2.0f);
    npy::save(dir.path / "y.npy", old_values);
    {
        npy::PendingFile pending(dir.path / "y.npy", npy::encode(new_values));
        CHECK(slurp(dir.path / "y.npy") == npy::encode(old_values));  // untouched until commit
        pending.commit();
    }
    CHECK(slurp(dir.path / "y.npy") == npy::encode(new_values));
    CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);
}

TEST_CASE("npy read_tensor gives what read() then to_tensor() give, in every layout numpy writes", "[npy]") {
    for (const char* name : {"arange_2x3_float32.npy", "arange_2x3_float64.npy", "arange_2x3_big_endian.npy",
                             "arange_2x3_fortran.npy", "arange_2x3_version2.npy"}) {
        INFO(name);
        const Tensor2 direct = npy::read_tensor<2>(samples / name, "x");
        const Tensor2 staged = npy::to_tensor<2>(npy::read(samples / name), "x");
        const bool same = direct == staged;
        CHECK(same);
        CHECK(direct(1, 2) == 5.0f);
    }
    const bool same_3d = npy::read_tensor<3>(samples / "arange_2x3x4_float32.npy", "x") ==
                         npy::to_tensor<3>(npy::read(samples / "arange_2x3x4_fortran.npy"), "x");
    CHECK(same_3d);
    CHECK_THROWS_WITH(npy::read_tensor<3>(samples / "arange_2x3_float32.npy", "--query"),
                      Contains("--query must have 3 dimensions"));
    CHECK_THROWS_WITH(npy::read_tensor<2>(samples / "mask_2x3_bool.npy", "x"), Contains("the file holds bool"));
    CHECK_THROWS_WITH(npy::read_tensor<2>(samples / "arange_2x3_int64.npy", "x"), Contains("int64"));
}
