// gradekit/mutants_command.cpp -- `headwise-gradetool mutants ...`: the variants' data file and
// the schemata source compiled into each grader (gradekit/mutants.hpp).
//
//   mutants list SOLUTION CASES DATA            a fresh data file: every variant untested
//   mutants schemata ID SOLUTION HEADER DATA OUT [--all]
//                                               the schemata source registered as the grader's
//                                               mutants: the variants marked ok, or with --all every
//                                               one not marked nocompile (OUT.map: line -> variant)
//   mutants mark DATA STATUS ID...              sets the status of these variants
//   mutants record DATA DIR                     folds DIR/<id>.out (a grader's output with
//                                               HEADWISE_MUTANT=<id>; 0: the solution) into DATA
//   mutants check SOLUTION CASES DATA           exit 1 with one line when DATA is stale
//   mutants own FILE SOURCE_DIR                 the repair step's edits of a learner's FILE, one a
//                                               line: id, line, kind, the edited line
#include "gradekit/mutants.hpp"
#include "gradekit/repair.hpp"
#include "gradekit/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

namespace headwise::gradekit {

namespace {}  // namespace

void write_if_changed(const std::string& path, const std::string& text) {
    std::ifstream old_in(path, std::ios::binary);
    std::ostringstream old;
    if (old_in) old << old_in.rdbuf();
    if (old_in && old.str() == text) return;  // unchanged: keeps its time stamp
    const std::filesystem::path p(path);
    if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) throw std::runtime_error(fmt::format("cannot write {}", path));
}

namespace {

// The stamp of the variants made from `solution`: another solution text, or another generator,
// gives another list (ids are positions in it), and the data is stale.
std::string stamp_of(const std::string& solution) {
    std::string all;
    for (const Variant& v : generate_mutants(solution).variants)
        all += fmt::format("{} {} {} {}\n", v.id, v.begin, v.end, v.replacement);
    return fnv_hex(solution + all);
}

int list(const std::vector<std::string>& a) {
    if (a.size() != 3) throw std::invalid_argument("usage: mutants list SOLUTION CASES DATA");
    const std::string solution = read_text(a[0]);
    MutantData d;
    d.solution_hash = stamp_of(solution);
    d.cases_hash = fnv_hex(read_text(a[1]));
    for (const Variant& v : generate_mutants(solution).variants)
        d.variants.push_back({v.id, "untested", "-", 0, v.line, v.kind, v.original_line, v.edited_line, v.context});
    write_if_changed(a[2], write_mutant_data(d));
    fmt::print("{}: {} variants\n", a[2], d.variants.size());
    return 0;
}

// The registration's data: the checks, and each candidate variant's fingerprint and message.
std::string embedded(const MutantData& d, const std::vector<int>& ids) {
    std::string out;
    for (const auto& c : d.checks) out += "check\t" + c + "\n";
    for (const auto& v : d.variants)
        if (v.status == "ok" && std::find(ids.begin(), ids.end(), v.id) != ids.end())
            out += fmt::format("variant\t{}\t{}\t{}\t{}\t{}\n", v.id, v.fingerprint, v.kind, v.line, describe_edit(v));
    return out;
}

// The schemata's text with a #line before each line: the solution's line it comes from, in the
// file "headwise-solution/<the solution's name>" (what search.hpp looks for in a throw's stack).
std::string with_source_lines(const Schemata& s, const std::string& solution_path) {
    const std::string file = "headwise-solution/" + std::filesystem::path(solution_path).filename().string();
    std::string out;
    std::istringstream in(s.text);
    int line = 1;
    for (std::string text; std::getline(in, text); ++line) {
        const auto source = s.line_to_source.find(line);
        if (source != s.line_to_source.end()) out += fmt::format("#line {} \"{}\"\n", source->second, file);
        out += text + "\n";
    }
    return out;
}

int schemata(const std::vector<std::string>& a) {
    if (a.size() != 5 && !(a.size() == 6 && a[5] == "--all"))
        throw std::invalid_argument("usage: mutants schemata ID SOLUTION HEADER DATA OUT [--all]");
    const std::string& id = a[0];
    const std::string solution = read_text(a[1]);
    const MutantData d = read_mutant_data(read_text(a[3]));
    const bool all = a.size() == 6;
    std::vector<int> keep;
    // Stale data (another solution text) keeps no variant: the search is off until it is
    // regenerated, and the data's own test says so.
    if (d.solution_hash == stamp_of(solution))
        for (const auto& v : d.variants)
            if (all ? v.status != "nocompile" : v.status == "ok") keep.push_back(v.id);
    const Mutants m = generate_mutants(solution);
    const Schemata s = make_schemata(solution, m, keep);
    const std::string preamble = fmt::format(
        "// Generated by headwise-gradetool mutants schemata from {} and {}: the solution with its\n"
        "// single-edit variants behind the selector headwise_mutant (gradekit/mutants.hpp).\n"
        "extern \"C\" int headwise_mutant;\n"
        "extern \"C\" bool headwise_mutant_reached(int id);\n"
        "#define HW_M(id) (headwise_mutant == (id) || (headwise_mutant < 0 && headwise_mutant_reached(id)))\n"
        "#define {} {}_mutants\n",
        a[1], a[3], id, id);
    const std::string data = embedded(d, keep);
    if (data.find(")hw\"") != std::string::npos) throw std::runtime_error("the data holds the raw string's end");
    // The graders' schemata says, line by line, which line of the solution each came from: a
    // variant's exception is then reported at the solution's line, comparable with the line the
    // learner's code threw at (tests/grade/search.hpp). The --all build keeps its own lines: its
    // compiler errors are read by line to find the variants that do not compile.
    std::string text = preamble + (all ? s.text : with_source_lines(s, a[1]));
    text += fmt::format(
        "\n#include \"{}\"\nnamespace {{\n[[maybe_unused]] const bool registered_mutants = "
        "headwise::grade::add_mutants(bind_{}(), R\"hw({})hw\");\n}}  // namespace\n",
        a[2], id, data);
    write_if_changed(a[4], text);
    if (all) {
        const int offset = static_cast<int>(std::count(preamble.begin(), preamble.end(), '\n'));
        std::string map;
        for (const auto& [line, variant] : s.line_to_variant) map += fmt::format("{} {}\n", line + offset, variant);
        write_if_changed(a[4] + ".map", map);
    }
    return 0;
}

int mark(const std::vector<std::string>& a) {
    if (a.size() < 2) throw std::invalid_argument("usage: mutants mark DATA STATUS ID...");
    MutantData d = read_mutant_data(read_text(a[0]));
    for (std::size_t k = 2; k < a.size(); ++k)
        for (auto& v : d.variants)
            if (v.id == std::stoi(a[k])) v.status = a[1];
    write_if_changed(a[0], write_mutant_data(d));
    return 0;
}

// One grader run with HEADWISE_MUTANT set: its "[headwise-mutant] S\tdigest\tname" lines.
struct Run {
    std::vector<std::string> names;
    std::string fingerprint, digests;
    bool clean = false;  // finished, and no sanitizer report
};

Run read_run(const std::string& path) {
    Run r;
    std::ifstream in(path);
    bool ended = false, report = false;
    for (std::string line; std::getline(in, line);) {
        if (line.find("AddressSanitizer") != std::string::npos || line.find("runtime error:") != std::string::npos)
            report = true;
        if (!line.starts_with("[headwise-mutant] ")) continue;
        line = line.substr(18);
        if (line == "end") {
            ended = true;
            continue;
        }
        const auto t1 = line.find('\t'), t2 = line.find('\t', t1 + 1);
        r.fingerprint += line.substr(0, t1);
        r.digests += line.substr(t1 + 1, t2 - t1 - 1) + ",";
        r.names.push_back(line.substr(t2 + 1));
    }
    r.clean = ended && !report;
    return r;
}

int record(const std::vector<std::string>& a) {
    if (a.size() != 2) throw std::invalid_argument("usage: mutants record DATA DIR");
    MutantData d = read_mutant_data(read_text(a[0]));
    const Run solution = read_run(a[1] + "/0.out");
    if (!solution.clean || solution.fingerprint.find_first_not_of('P') != std::string::npos)
        throw std::runtime_error("the schemata with no variant selected does not pass every check: " + a[1] + "/0.out");
    d.checks = solution.names;
    std::map<std::string, int> groups;
    for (auto& v : d.variants) {
        if (v.status == "nocompile") continue;
        const Run r = read_run(fmt::format("{}/{}.out", a[1], v.id));
        v.fingerprint = r.fingerprint.empty() ? "-" : r.fingerprint;
        if (!r.clean || r.names != d.checks) {
            v.status = "crash";
        } else if (r.fingerprint == solution.fingerprint) {
            v.status = "equivalent";
        } else {
            v.status = "ok";
            v.group = groups.emplace(r.fingerprint + r.digests, v.id).first->second;
        }
    }
    write_if_changed(a[0], write_mutant_data(d));
    return 0;
}

int check(const std::vector<std::string>& a) {
    if (a.size() != 3) throw std::invalid_argument("usage: mutants check SOLUTION CASES DATA");
    const MutantData d = read_mutant_data(read_text(a[2]));
    const bool solution_ok = d.solution_hash == stamp_of(read_text(a[0]));
    const bool cases_ok = d.cases_hash == fnv_hex(read_text(a[1]));
    const bool complete = std::none_of(d.variants.begin(), d.variants.end(),
                                       [](const VariantRecord& v) { return v.status == "untested"; });
    if (solution_ok && cases_ok && complete && !d.checks.empty()) return 0;
    fmt::print(stderr, "{} is stale ({}): run scripts/regenerate-mutants\n", a[2],
               !solution_ok ? "made from another " + a[0] + " or by another generator"
               : !cases_ok  ? "its fingerprints were taken with another " + a[1]
                            : "some variants were never run");
    return 1;
}

int own(const std::vector<std::string>& a) {
    if (a.size() != 2) throw std::invalid_argument("usage: mutants own FILE SOURCE_DIR");
    const Mutants m = generate_own_mutants(read_text(a[0]), included_structs(a[0], a[1]));
    for (const Variant& v : m.variants) fmt::print("{}\t{}\t{}\t{}\n", v.id, v.line, v.kind, v.edited_line);
    return 0;
}

}  // namespace

int mutants_command(const std::vector<std::string>& args) {
    if (args.empty()) throw std::invalid_argument("usage: mutants list|schemata|mark|record|check|own ...");
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    if (args[0] == "list") return list(rest);
    if (args[0] == "schemata") return schemata(rest);
    if (args[0] == "mark") return mark(rest);
    if (args[0] == "record") return record(rest);
    if (args[0] == "check") return check(rest);
    if (args[0] == "own") return own(rest);
    throw std::invalid_argument(fmt::format("unknown mutants command '{}'", args[0]));
}

}  // namespace headwise::gradekit
