// headwise/io/gpu_reports.hpp: the GPU run's CSV and ptxas's resource file, read back; bad files are
// refused with a usage_error that names them.
#include "headwise/io/gpu_reports.hpp"

#include "headwise/base/tensor.hpp"
#include "temp_dir.hpp"

#include <catch2/catch.hpp>

#include <fstream>

using namespace headwise;
using namespace headwise::gpu_reports;
using headwise::test::TempDir;

namespace {

std::filesystem::path write(const TempDir& dir, const std::string& name, const std::string& text) {
    const auto path = dir / name;
    std::ofstream(path) << text;
    return path;
}

const char* const csv =
    "# GPU X, driver 1, CUDA 2, today\n"
    "gpu,version,dtype,seq,causal,median_ms,tflops,registers,shared_bytes,local_bytes,note\n"
    "GPU X,naive,fp32,512,0,,,,,,skipped: too slow\n"
    "GPU X,tiled,fp32,4096,1,2.5,0.75,40,32768,256,\n"
    "GPU X,torch_sdpa,fp16,4096,0,0.5,3.5,,,,flash backend\n";

}  // namespace

TEST_CASE("gpu reports: the CSV's provenance and rows, columns found by name", "[gpu_reports]") {
    TempDir dir;
    const GpuResults r = read_gpu_results(write(dir, "t.csv", csv));
    CHECK(r.provenance == "GPU X, driver 1, CUDA 2, today");
    REQUIRE(r.rows.size() == 3);
    const GpuRow& skipped = r.rows[0];
    CHECK(skipped.version == "naive");
    CHECK(skipped.median_ms == 0.0);
    CHECK(skipped.registers == -1);
    CHECK(skipped.note == "skipped: too slow");
    const GpuRow& tiled = r.rows[1];
    CHECK(tiled.gpu == "GPU X");
    CHECK(tiled.seq == 4096);
    CHECK(tiled.causal);
    CHECK(tiled.median_ms == 2.5);
    CHECK(tiled.tflops == 0.75);
    CHECK(tiled.registers == 40);
    CHECK(tiled.shared_bytes == 32768);
    CHECK(tiled.local_bytes == 256);
    CHECK(r.rows[2].dtype == "fp16");
    CHECK(r.rows[2].note == "flash backend");
}

TEST_CASE("gpu reports: a bad CSV is a usage_error naming the file and what is wrong", "[gpu_reports]") {
    TempDir dir;
    CHECK_THROWS_WITH(read_gpu_results(dir / "missing.csv"),
                      Catch::Contains("cannot read") && Catch::Contains("missing.csv"));
    CHECK_THROWS_AS(read_gpu_results(write(dir, "empty.csv", "# only a comment\n")), usage_error);
    CHECK_THROWS_WITH(read_gpu_results(write(dir, "nocol.csv", "gpu,version\nX,naive\n")),
                      Catch::Contains("nocol.csv") && Catch::Contains("no column 'dtype'"));
    CHECK_THROWS_WITH(read_gpu_results(write(dir, "bad.csv",
                                             "gpu,version,dtype,seq,causal,median_ms,tflops,registers,note\n"
                                             "X,tiled,fp32,many,0,,,,\n")),
                      Catch::Contains("a malformed row: X,tiled,fp32,many"));
}

TEST_CASE("gpu reports: ptxas's resources per (version, d_head), header and provenance skipped", "[gpu_reports]") {
    TempDir dir;
    const ResourceFile r = read_kernel_resources(write(dir, "r.txt",
                                                       "# nvcc 13.0 -arch=sm_90, commit abc\n"
                                                       "# a second comment line\n"
                                                       "version d_head registers stack spill_stores spill_loads "
                                                       "shared_bytes LDS\n"
                                                       "naive 0 40 0 0 0 0 7\n"
                                                       "mma 64 128 16 0 0 18432 0\n"));
    CHECK(r.provenance == "nvcc 13.0 -arch=sm_90, commit abc");
    REQUIRE(r.of.size() == 2);
    const KernelResources& mma = r.of.at({"mma", 64});
    CHECK(mma.registers == 128);
    CHECK(mma.stack == 16);
    CHECK(mma.shared_bytes == 18432);
    CHECK(r.of.at({"naive", 0}).registers == 40);
    CHECK_THROWS_WITH(read_kernel_resources(write(dir, "bad.txt", "mma 64 lots\n")),
                      Catch::Contains("bad.txt: a malformed line: mma 64 lots"));
}
