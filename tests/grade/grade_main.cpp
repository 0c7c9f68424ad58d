// tests/grade/grade_main.cpp -- Catch2's main() for the graders. Catch2 itself, without its own
// signal handlers, is compiled once in tests/catch_session.cpp: a crash must reach AddressSanitizer,
// whose report names the learner's line (gradekit/steps.cpp turns it into the diagnosis).
//
// --grade-subject=<key> (before Catch2's own arguments) chooses the subject a meta-tests' grader
// grades among those it holds (registry.hpp); a key it does not hold is one line and exit 2.
//
// HEADWISE_REPAIR_EACH=<id>,<id>,... grades the repair step's edits of a learner's file
// (gradekit/repair.hpp), each in a child forked from this process -- no exec, no start-up again:
// the child switches its edit on (HEADWISE_REPAIR=<id>, read by the schemata's headwise_repair_select), writes its report to
// $HEADWISE_REPAIR_REPORTS/run_<id>.json, its output to nowhere, and is stopped after
// $HEADWISE_REPAIR_TIMEOUT seconds (with HEADWISE_REPAIR_WITH=<id>, that edit is on in every child
// too). $HEADWISE_REPAIR_JOBS run at once; with HEADWISE_REPAIR_STOP=1,
// once one passes every check it runs, no more are started.
#include "catch_session.hpp"
#include "registry.hpp"

#include <csignal>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

// Defined by the repair step's schemata (gradekit/repair.cpp), absent from every other grader:
// switches on the edits HEADWISE_REPAIR names.
extern "C" [[gnu::weak]] void headwise_repair_select();

namespace {

int env_int(const char* name, int fallback) {
    const char* v = std::getenv(name);
    return v != nullptr && std::atoi(v) > 0 ? std::atoi(v) : fallback;
}

int repair_each(std::string_view list, int argc, char** argv) {
    std::vector<std::string> ids;
    for (std::size_t p = 0; p < list.size();) {
        const std::size_t comma = std::min(list.find(',', p), list.size());
        if (comma > p) ids.emplace_back(list.substr(p, comma - p));
        p = comma + 1;
    }
    const char* reports = std::getenv("HEADWISE_REPAIR_REPORTS");
    const std::string dir = reports != nullptr ? reports : ".";
    const unsigned timeout = static_cast<unsigned>(env_int("HEADWISE_REPAIR_TIMEOUT", 10));
    const int jobs = env_int("HEADWISE_REPAIR_JOBS", 2);
    const bool stop = env_int("HEADWISE_REPAIR_STOP", 0) == 1;
    std::size_t next = 0;
    int running = 0;
    bool repaired = false;
    while ((next < ids.size() && !repaired) || running > 0) {
        while (running < jobs && next < ids.size() && !repaired) {
            const std::string& id = ids[next++];
            std::fflush(stdout);
            std::fflush(stderr);
            const pid_t grader = getpid();
            const pid_t pid = fork();
            if (pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);   // stopped with the grader (run_each's deadline)
                if (getppid() != grader) _exit(1);  // it is gone already
                const char* with = std::getenv("HEADWISE_REPAIR_WITH");  // an edit kept on in every child
                setenv("HEADWISE_REPAIR", (with != nullptr ? std::string(with) + "," + id : id).c_str(), 1);
                if (headwise_repair_select != nullptr) headwise_repair_select();  // the schemata reads it again
                setenv("HEADWISE_GRADE_REPORT", (dir + "/run_" + id + ".json").c_str(), 1);
                if (const int null = open("/dev/null", O_WRONLY); null >= 0) {
                    dup2(null, 1);
                    dup2(null, 2);
                }
                alarm(timeout);
                _exit(headwise::test::run_catch(argc, argv));
            }
            if (pid > 0) ++running;
        }
        int status = 0;
        if (wait(&status) < 0) break;
        --running;
        repaired = repaired || (stop && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    headwise::grade::own_command().assign(argv, argv + argc);  // to run itself as a candidate edit
    constexpr std::string_view flag = "--grade-subject=";
    std::vector<char*> args;
    for (int i = 0; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (i > 0 && arg.starts_with(flag)) {
            headwise::grade::chosen_subject() = std::string(arg.substr(flag.size()));
        } else {
            args.push_back(argv[i]);
        }
    }
    if (!headwise::grade::subject_keys().contains(headwise::grade::chosen_subject())) {
        std::fprintf(stderr, "grader: it holds no subject '%s'\n", headwise::grade::chosen_subject().c_str());
        return 2;
    }
    if (const char* each = std::getenv("HEADWISE_REPAIR_EACH"))
        return repair_each(each, static_cast<int>(args.size()), args.data());
    return headwise::test::run_catch(static_cast<int>(args.size()), args.data());
}
