// tests for headwise/model/safetensors.hpp: hand-built files (header bytes written out here, so the
// expected values are known by construction) are read right, and every kind of damaged or lying
// file is refused with one line that names the file and the problem.
#include "headwise/model/safetensors.hpp"

#include <fmt/format.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

namespace fs = std::filesystem;
using namespace headwise;
using Catch::Matchers::Contains;

namespace {

// 8 bytes little-endian header length, the header, the data.
std::string file_bytes(const std::string& header, const std::string& data) {
    std::string out;
    std::uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out += static_cast<char>((n >> (8 * i)) & 0xff);
    return out + header + data;
}

std::string floats(std::initializer_list<float> values) {
    std::string out;
    for (float v : values) out.append(reinterpret_cast<const char*>(&v), sizeof v);
    return out;
}

// Two tensors: "a" (2, 3) = 0..5 and "b" (2) = 10, 11, in the order a, b.
const std::string good_header =
    R"({"__metadata__":{"format":"pt"},"b":{"dtype":"F32","shape":[2],"data_offsets":[24,32]},)"
    R"("a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}})";
const std::string good_data = floats({0, 1, 2, 3, 4, 5, 10, 11});

safetensors::File parse(const std::string& header, const std::string& data = good_data) {
    return safetensors::File::parse(file_bytes(header, data), "test.safetensors");
}

}  // namespace

TEST_CASE("safetensors reads every tensor's dtype, shape and values", "[safetensors]") {
    const auto f = parse(good_header);
    REQUIRE(f.tensors().size() == 2);
    CHECK(f.tensors()[0].name == "a");
    CHECK(f.info("a").shape == std::vector<std::size_t>{2, 3});
    CHECK(f.info("b").dtype == safetensors::DType::f32);
    CHECK(f.metadata().at("format") == "pt");
    CHECK(f.read_f32("b", {2}) == std::vector<float>{10, 11});
    const Tensor2 a = f.tensor<2>("a", {2, 3});
    CHECK(a(1, 2) == 5.0f);
    CHECK(a(0, 1) == 1.0f);
}

TEST_CASE("safetensors maps a file from disk and reads it like bytes in memory", "[safetensors]") {
    const fs::path p = fs::temp_directory_path() / fmt::format("headwise-st-{}.safetensors", ::getpid());
    {
        std::ofstream out(p, std::ios::binary);
        out << file_bytes(good_header, good_data);
    }
    {
        const auto f = safetensors::File::open(p);
        CHECK(f.read_f32("a", {2, 3}) == std::vector<float>{0, 1, 2, 3, 4, 5});
        CHECK(f.bytes("b").size() == 8);
    }
    fs::remove(p);
    CHECK_THROWS_WITH(safetensors::File::open(p), Contains("cannot open"));
    CHECK_THROWS_WITH(safetensors::File::open(fs::temp_directory_path()), Contains("not a regular file"));
}

TEST_CASE("safetensors refuses the wrong dtype or shape, naming the tensor and both shapes", "[safetensors]") {
    const auto f = parse(good_header);
    CHECK_THROWS_WITH(f.read_f32("a", {3, 2}), Contains("tensor \"a\" is (2, 3), expected (3, 2)"));
    CHECK_THROWS_WITH(f.read_f32("missing", {1}), Contains("no tensor \"missing\""));
    const auto ints = parse(R"({"i":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})", std::string(8, '\0'));
    CHECK_THROWS_WITH(ints.read_f32("i", {1}), Contains("is I64, expected F32"));
}

TEST_CASE("safetensors refuses NaN and Inf weights", "[safetensors]") {
    const auto f = parse(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                         floats({1.0f, std::numeric_limits<float>::infinity()}));
    CHECK_THROWS_WITH(f.read_f32("w", {2}), Contains("holds inf at flat index 1"));
}

TEST_CASE("safetensors refuses truncated, oversized and lying headers with one line", "[safetensors]") {
    using safetensors::File;
    auto refuses = [](const std::string& bytes, const std::string& why) {
        INFO(why);
        try {
            File::parse(bytes, "bad.safetensors");
            FAIL("accepted");
        } catch (const usage_error& e) {
            const std::string msg = e.what();
            CHECK_THAT(msg, Contains("bad.safetensors") && Contains(why));
            CHECK(msg.find('\n') == std::string::npos);
        }
    };
    refuses("", "too short");
    refuses("\x05\0\0\0", "too short");
    refuses(file_bytes(good_header, good_data).substr(0, 40), "the header claims");  // truncated inside the header
    refuses(std::string("\xff\xff\xff\xff\xff\xff\xff\xff", 8) + "{}", "the header claims");
    refuses(file_bytes("{not json", ""), "not valid JSON");
    refuses(file_bytes("[1, 2]", ""), "not a JSON object");
    refuses(file_bytes(R"({"a":3})", ""), "its entry is not an object");
    refuses(file_bytes(R"({"a":{"dtype":"F32","shape":[1]}})", ""), "no \"data_offsets\"");
    refuses(file_bytes(R"({"a":{"dtype":"Q8","shape":[1],"data_offsets":[0,1]}})", "x"), "unknown dtype \"Q8\"");
    refuses(file_bytes(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", "xxxx"),
            "not a non-negative integer");
    refuses(file_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", "xxxx"), "needs 8 bytes");
    refuses(file_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", "xxxx"),
            "fall outside the 4 bytes");
    refuses(file_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", "xxxx"), "fall outside");
    refuses(file_bytes(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,4]}})", "xxxx"),
            "its shape overflows");
    refuses(file_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                       R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                       std::string(8, 'x')),
            "overlap");
    refuses(file_bytes(R"({"__metadata__":{"k":1}})", ""), "is not a string");
    refuses(file_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", "xxxx"), "not [begin, end]");
}

TEST_CASE("safetensors accepts empty tensors and a file with no tensors", "[safetensors]") {
    const auto f = parse(R"({"e":{"dtype":"F32","shape":[0,3],"data_offsets":[0,0]}})", "");
    CHECK(f.info("e").count() == 0);
    CHECK(f.read_f32("e", {0, 3}).empty());
    CHECK(parse("{}", "").tensors().empty());
}
