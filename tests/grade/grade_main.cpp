// tests/grade/grade_main.cpp -- Catch2's main() for the graders. Catch2 itself, without its own
// signal handlers, is compiled once in tests/catch_session.cpp: a crash must reach AddressSanitizer,
// whose report names the learner's line (gradekit/steps.cpp turns it into the diagnosis).
//
// --grade-subject=<key> (before Catch2's own arguments) chooses the subject a meta-tests' grader
// grades among those it holds (registry.hpp); a key it does not hold is one line and exit 2.
//
// HEADWISE_REPAIR_EACH=<id>,<id>,... grades the repair step's edits of a learner's file
// (gradekit/repair.hpp), each in a child forked from this process -- no exec, no start-up again:
// the child switches an edit on (HEADWISE_REPAIR=<id>, read by the schemata's headwise_repair_select), writes its report to
// $HEADWISE_REPAIR_REPORTS/run_<id>.json, its output to nowhere, and is stopped after
// $HEADWISE_REPAIR_TIMEOUT_MS milliseconds on one edit (with HEADWISE_REPAIR_WITH=<id>, that edit is on
// beside each). A child grades edits one after another, $HEADWISE_REPAIR_PER_CHILD at most.
// $HEADWISE_REPAIR_JOBS run at once; with HEADWISE_REPAIR_STOP=1,
// once one passes every check it runs, no more are started.
#include "catch_session.hpp"
#include "registry.hpp"

#include <csignal>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
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

// SIGALRM (which ends the process) after `ms` milliseconds; 0 disarms it. An edit's limit is a
// fraction of a second where the learner's checks take milliseconds: an endless loop (`h += 0`)
// then costs that, not alarm()'s whole second.
void arm(long ms) {
    itimerval t{};
    t.it_value.tv_sec = ms / 1000;
    t.it_value.tv_usec = (ms % 1000) * 1000;
    setitimer(ITIMER_REAL, &t, nullptr);
}

// SIGPROF (which ends the process too) once it has spent `ms` milliseconds of CPU time; 0 disarms
// it. Tighter than arm()'s limit in time: an edit that loops is stopped at ten times the learner's
// checks' CPU time, and a machine so busy that the edit waits for a core stops nothing early.
void arm_cpu(long ms) {
    itimerval t{};
    t.it_value.tv_sec = ms / 1000;
    t.it_value.tv_usec = (ms % 1000) * 1000;
    setitimer(ITIMER_PROF, &t, nullptr);
}

// What the children of one HEADWISE_REPAIR_EACH share: the next edit of the list to take, and
// whether one has passed every check it ran (HEADWISE_REPAIR_STOP). In memory shared across fork.
struct Shared {
    std::atomic<std::size_t> next{0};
    std::atomic<bool> repaired{false};
};

struct EachOptions {
    std::string dir;          // HEADWISE_REPAIR_REPORTS
    std::string with;         // HEADWISE_REPAIR_WITH: an edit kept on beside each
    long timeout_ms = 10000;  // per edit
    bool stop = false;        // no more edits once one passes
    long per_child = 0;       // edits a child grades one after another (HEADWISE_REPAIR_PER_CHILD; 0: no limit)
    long cpu_ms = 0;          // per edit, in CPU time (HEADWISE_REPAIR_CPU_MS; 0: none)
};

// One child: takes the list's next edit, switches it on, runs the checks, and so on until the list
// is done (or `per_child` edits are). A child is a copy of the grader, so an edit starts no
// process: forking was most of an edit's time (its page-table copies and faults; the emulator's
// first kernel launch, exercise 6: 44 ms an edit alone, 4 in turn). An edit that crashes or
// outlives its limit ends the child, and the grader forks another for the rest; the edit's report
// says it did not finish (as it would alone). gradekit/repair.cpp sets the number: one each for a
// learner's file with mutable static storage (what one edit left there would be the next one's
// start: a kernel's __shared__ arrays, exercise 6) or, without the sanitizers, writing through raw
// pointers (a stray write); no limit otherwise: nothing an edit does then outlives its run but the
// heap, which the sanitizers watch, or bound checks do (xtensor's, std::vector's).
[[noreturn]] void each_child(Shared& shared, const std::vector<std::string>& ids, const EachOptions& o, pid_t grader,
                             headwise::test::CatchRuns& runs) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);   // stopped with the grader (run_each's deadline)
    if (getppid() != grader) _exit(1);  // it is gone already
    if (const int null = open("/dev/null", O_WRONLY); null >= 0) {
        dup2(null, 1);
        dup2(null, 2);
    }
    for (long graded = 0; o.per_child == 0 || graded < o.per_child; ++graded) {
        if (o.stop && shared.repaired.load()) break;
        const std::size_t k = shared.next.fetch_add(1);
        if (k >= ids.size()) break;
        setenv("HEADWISE_REPAIR", (o.with.empty() ? ids[k] : o.with + "," + ids[k]).c_str(), 1);
        if (headwise_repair_select != nullptr) headwise_repair_select();  // the schemata reads it again
        setenv("HEADWISE_GRADE_REPORT", (o.dir + "/run_" + ids[k] + ".json").c_str(), 1);
        arm(o.timeout_ms);
        arm_cpu(o.cpu_ms);
        const int code = runs.run();
        arm_cpu(0);
        arm(0);
        if (o.stop && code == 0) shared.repaired = true;
    }
    _exit(runs.refused());
}

// The symbolizer's tables made once, here, for every child forked after: the debug sections
// inflated and the learner's file's line table read, which a child grading one edit (exercise 6's
// kernels, a file that keeps state) did again for the first throw it placed -- 30 ms of its 44.
void warm_symbolizer() {
    if (__sanitizer_symbolize_pc == nullptr || headwise_repair_select == nullptr) return;
    char buffer[512] = {};
    __sanitizer_symbolize_pc(reinterpret_cast<void*>(&headwise_repair_select), "%s:%l", buffer, sizeof buffer - 1);
}

int repair_each(std::string_view list, int argc, char** argv) {
    std::vector<std::string> ids;
    for (std::size_t p = 0; p < list.size();) {
        const std::size_t comma = std::min(list.find(',', p), list.size());
        if (comma > p) ids.emplace_back(list.substr(p, comma - p));
        p = comma + 1;
    }
    EachOptions o;
    const char* reports = std::getenv("HEADWISE_REPAIR_REPORTS");
    o.dir = reports != nullptr ? reports : ".";
    if (const char* with = std::getenv("HEADWISE_REPAIR_WITH")) o.with = with;
    o.timeout_ms = env_int("HEADWISE_REPAIR_TIMEOUT_MS", 10000);
    o.stop = env_int("HEADWISE_REPAIR_STOP", 0) == 1;
    o.per_child = env_int("HEADWISE_REPAIR_PER_CHILD", 0);
    o.cpu_ms = env_int("HEADWISE_REPAIR_CPU_MS", 0);
    const int jobs = env_int("HEADWISE_REPAIR_JOBS", 2);
    void* memory = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) return 1;
    Shared& shared = *new (memory) Shared;
    headwise::test::CatchRuns runs(argc, argv);  // made once: each child runs it
    if (runs.refused() != 0) return runs.refused();
    if (o.per_child == 1) warm_symbolizer();
    const auto more = [&] { return shared.next.load() < ids.size() && !(o.stop && shared.repaired.load()); };
    int running = 0;
    while (more() || running > 0) {
        // A child forked when the list is all but taken may find nothing left: it ends at once.
        while (running < jobs && more()) {
            std::fflush(stdout);
            std::fflush(stderr);
            const pid_t grader = getpid();
            const pid_t pid = fork();
            if (pid == 0) each_child(shared, ids, o, grader, runs);
            if (pid < 0) break;
            ++running;
        }
        if (running == 0) break;
        int status = 0;
        if (wait(&status) < 0) break;
        --running;
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
