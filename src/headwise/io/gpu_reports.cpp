#include "headwise/io/gpu_reports.hpp"

#include "headwise/base/tensor.hpp"  // usage_error

#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <string_view>

namespace headwise::gpu_reports {

namespace {

// A "# ..." line's text after the marks.
std::string provenance_of(const std::string& line) { return line.substr(line.find_first_not_of("# ")); }

// The cells of one CSV line (no quoting in these files); a trailing comma is an empty last cell.
std::vector<std::string> split_cells(const std::string& text) {
    std::vector<std::string> cells;
    std::stringstream ss(text);
    for (std::string cell; std::getline(ss, cell, ',');) cells.push_back(cell);
    if (!text.empty() && text.back() == ',') cells.emplace_back();
    return cells;
}

// One data line of the CSV, its cells found by the header's names.
GpuRow parse_row(const std::filesystem::path& file, const std::vector<std::string>& header, const std::string& line) {
    const std::vector<std::string> cells = split_cells(line);
    auto cell = [&](std::string_view name) -> std::string {
        for (std::size_t c = 0; c < header.size(); ++c)
            if (header[c] == name) return c < cells.size() ? cells[c] : "";
        throw usage_error(fmt::format("{}: no column '{}'", file.string(), name));
    };
    GpuRow row;
    row.gpu = cell("gpu"), row.version = cell("version"), row.dtype = cell("dtype"), row.note = cell("note");
    try {
        row.seq = std::stoi(cell("seq"));
        row.causal = cell("causal") == "1";
        if (!cell("median_ms").empty())
            row.median_ms = std::stod(cell("median_ms")), row.tflops = std::stod(cell("tflops"));
        if (!cell("registers").empty()) {
            row.registers = std::stoi(cell("registers"));
            row.shared_bytes = std::stoll(cell("shared_bytes")), row.local_bytes = std::stoll(cell("local_bytes"));
        }
    } catch (const std::exception&) {
        throw usage_error(fmt::format("{}: a malformed row: {}", file.string(), line));
    }
    return row;
}

}  // namespace

GpuResults read_gpu_results(const std::filesystem::path& file) {
    std::ifstream in(file);
    if (!in) throw usage_error(fmt::format("cannot read {}", file.string()));
    GpuResults r;
    std::vector<std::string> header;
    for (std::string line; std::getline(in, line);) {
        if (line.empty()) continue;
        if (line[0] == '#') {
            if (r.provenance.empty()) r.provenance = provenance_of(line);
            continue;
        }
        if (header.empty()) {
            header = split_cells(line);
            continue;
        }
        r.rows.push_back(parse_row(file, header, line));
    }
    if (header.empty()) throw usage_error(fmt::format("{} has no header line", file.string()));
    return r;
}

ResourceFile read_kernel_resources(const std::filesystem::path& file) {
    std::ifstream in(file);
    if (!in) throw usage_error(fmt::format("cannot read {}", file.string()));
    ResourceFile r;
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line.rfind("version ", 0) == 0) continue;
        if (line[0] == '#') {
            if (r.provenance.empty()) r.provenance = provenance_of(line);
            continue;
        }
        std::istringstream cells(line);
        std::string version;
        int d_head = 0, spill_stores = 0, spill_loads = 0;
        KernelResources k;
        if (!(cells >> version >> d_head >> k.registers >> k.stack >> spill_stores >> spill_loads >> k.shared_bytes))
            throw usage_error(fmt::format("{}: a malformed line: {}", file.string(), line));
        r.of[{version, d_head}] = k;
    }
    return r;
}

}  // namespace headwise::gpu_reports
