# cmake/HeadwiseExercises.cmake -- exercises, their graders, and the meta-tests that prove the graders.
#
#   headwise_add_exercise(ex01 01_single_head)
#
# reads, for exercise <id> in directory <dir>:
#   solutions/<dir>/*.cpp, *.hpp        the reference answer (the source of truth for the file list)
#   exercises/<dir>/                    the learner's copy of the same files (stubs at first)
#   tests/grade/<dir>.hpp, <dir>.cpp    the grader: the exercise's Api table and its test cases
#   tests/grade/mistakes/<id>_*.mistake the mistake catalogue: one known-wrong answer per file, as
#                                       the lines of the solution's .cpp it changes ("replace:" /
#                                       "with:", headwise-gradetool patch), under three lines:
#                                       "mistake: <name>", "why: <line>", "fix: <line>" (the two
#                                       lines printed when a learner's output matches it). Patched
#                                       into the build tree at build time; a "replace:" the
#                                       solution no longer holds fails the build, naming the file
# and makes:
#   headwise_grade_<id>                 the grader of the learner's exercises/<dir> (built only when
#                                       grading, never by `all`, so a broken exercise breaks nothing
#                                       else), run by two ctest tests labelled "grade;<id>": build
#                                       (fixture setup; a compile error becomes the report) and grade
#   headwise_meta_<id>                  the same grader holding every subject its "meta" tests (of
#                                       the default suite) grade: solutions/<dir>, the pristine stubs
#                                       generated from it, every catalogued and learner-style mistake,
#                                       each in its own namespace; a meta-test chooses one with
#                                       --grade-subject=<key> (tests/grade/grade_main.cpp)
#
# The grader's test cases and the catalogue are compiled once; each subject adds only its own
# sources and a generated line that registers them. Re-grading an edited exercise recompiles one
# file and relinks one binary; an exercise's meta-tests share one link.
#
# Grade builds are sanitized where the subject is: its sources (and the library code it calls,
# sanitized copies built once, headwise_grade_core_sanitized and, for kernels, the emulator's
# headwise_grade_emulator_sanitized) compile with AddressSanitizer and
# UndefinedBehaviorSanitizer, abort on the first error, xtensor's bounds checks and NDEBUG off,
# and the learner's warnings on (-Wall -Wextra -Wconversion -Wsign-compare, never errors). The
# test cases and the catalogue stay plain: the default build and the lessons are untouched.
# headwise-gradetool (src/gradekit) runs the build and run steps and writes the report.

set(HEADWISE_GRADE_DIR "${PROJECT_SOURCE_DIR}/tests/grade")
include(${CMAKE_CURRENT_LIST_DIR}/HeadwiseMutants.cmake)

# Graders relink after every edit of an exercise: gold links one in ~0.3 s where ld.bfd takes ~0.8 s.
include(CheckLinkerFlag)
check_linker_flag(CXX "-fuse-ld=gold" HEADWISE_HAVE_GOLD)

# headwise_add_exercise(<id> <dir>)
function(headwise_add_exercise id dir)
  # An exercise listed in HEADWISE_GRADE_UNSANITIZED compiles its subject with the warnings only
  # (no sanitizers, the plain PCH): see tests/grade/CMakeLists.txt for which, and why.
  set(subject_options ${HEADWISE_GRADE_SUBJECT_OPTIONS})
  set(link_options ${HEADWISE_GRADE_LINK_OPTIONS})
  set(subject_pch headwise_grade_pch)
  if(id IN_LIST HEADWISE_GRADE_UNSANITIZED)
    set(subject_options ${HEADWISE_GRADE_WARNING_OPTIONS} ${HEADWISE_GRADE_OPTIMIZE})
    set(link_options -Wl,--wrap=__cxa_throw)
    set(subject_pch headwise_pch)
  endif()
  list(APPEND subject_options ${HEADWISE_GRADE_SUBJECT_OPTIONS_${id}})  # tests/grade/CMakeLists.txt
  set(solution_dir "${PROJECT_SOURCE_DIR}/solutions/${dir}")
  set(exercise_dir "${PROJECT_SOURCE_DIR}/exercises/${dir}")
  set(solution_includes "${solution_dir}" "${PROJECT_SOURCE_DIR}/solutions/common")
  set(exercise_includes "${exercise_dir}" "${PROJECT_SOURCE_DIR}/exercises/common")
  set(gen "${CMAKE_CURRENT_BINARY_DIR}/${id}")
  set(report_dir "${PROJECT_BINARY_DIR}/grade")

  file(GLOB sources RELATIVE "${solution_dir}" CONFIGURE_DEPENDS "${solution_dir}/*.cpp")
  list(SORT sources)
  if(NOT sources)
    message(FATAL_ERROR "headwise_add_exercise(${id}): no .cpp files in ${solution_dir}")
  endif()

  # The test cases, compiled once against the solution's headers (identical to the exercise's),
  # as the project's tests are (-O1: HeadwiseTargets.cmake).
  add_library(headwise_grade_${id}_cases OBJECT EXCLUDE_FROM_ALL "${HEADWISE_GRADE_DIR}/${dir}.cpp")
  target_include_directories(headwise_grade_${id}_cases PRIVATE ${solution_includes})
  target_link_libraries(headwise_grade_${id}_cases PRIVATE headwise_grade_deps)
  headwise_test_sources(headwise_grade_${id}_cases)

  # The registration of a subject: the same generated file for every subject of this exercise;
  # the include path decides whose header it sees.
  file(CONFIGURE OUTPUT "${gen}/subject.cpp" @ONLY CONTENT
"// Generated by cmake/HeadwiseExercises.cmake: registers the functions under grade.
#include \"${dir}.hpp\"
namespace {
[[maybe_unused]] const bool registered = headwise::grade::add_subject(bind_${id}());
}  // namespace
")

  # The mistake catalogue: each .mistake patched into a copy of the solution's .cpp (at build
  # time, by headwise-gradetool: one patcher for the catalogue and the learner-style mistakes),
  # compiled with its namespace renamed, next to the subject.
  list(LENGTH sources source_count)
  list(GET sources 0 first_source)
  file(GLOB stale CONFIGURE_DEPENDS "${HEADWISE_GRADE_DIR}/mistakes/${id}_*.cpp")
  if(stale)
    message(FATAL_ERROR "${stale}: a catalogued mistake is a .mistake file now, the lines of "
      "solutions/${dir}/${first_source} it changes (see docs/instructor-guide.md, \"Add an exercise\")")
  endif()
  file(GLOB specs CONFIGURE_DEPENDS "${HEADWISE_GRADE_DIR}/mistakes/${id}_*.mistake")
  list(SORT specs)
  if(specs AND NOT source_count EQUAL 1)
    message(FATAL_ERROR "headwise_add_exercise(${id}): a mistake patches the exercise's one .cpp, "
      "but solutions/${dir} has ${source_count}")
  endif()
  # A catalogued mistake is also the meta-tests' subject of the same name (registered under its
  # key), except where the exercise's kernels keep __shared__ arrays as function-local statics
  # (src/emulator): a subject sharing them with the catalogue's copy would read what the other
  # left there, so it is compiled again, a copy of its own, as a learner's file would be.
  set(own_copies OFF)
  if(HEADWISE_EXERCISE_${id}_LIBS MATCHES "headwise::(kernels|emulator)")
    set(own_copies ON)
  endif()
  set(mistakes "")
  set(wrappers "")
  set(mistake_keys "")
  set(mistake_names "")
  foreach(spec IN LISTS specs)
    get_filename_component(stem "${spec}" NAME_WE)
    string(REGEX REPLACE "^${id}_" "" key "${stem}")
    _headwise_mistake_info("${spec}" name explanation)
    # Named after the .mistake, so that the grader's locations (file:line) read ex01_no_scaling.cpp.
    set(file "${gen}/mistakes/${stem}.cpp")
    add_custom_command(OUTPUT "${file}"
      COMMAND headwise_gradetool patch ${spec} ${solution_dir}/${first_source} ${file}
      DEPENDS "${spec}" "${solution_dir}/${first_source}" headwise_gradetool
      COMMENT "Making the catalogued mistake ${stem}")
    list(APPEND mistakes "${file}")
    set(as_subject "")
    if(NOT own_copies)
      set(as_subject "[[maybe_unused]] const bool registered_as_subject = headwise::grade::add_subject(bind_${id}(), \"${key}\");\n")
    endif()
    file(CONFIGURE OUTPUT "${gen}/mistake_${key}.cpp" @ONLY CONTENT
"// Generated by cmake/HeadwiseExercises.cmake: the catalogue's copy of the mistake \"${name}\",
// compiled in its own namespace so that it can be linked next to the subject under grade.
#define ${id} ${id}_mistake_${key}
#include \"${file}\"
#include \"${dir}.hpp\"
namespace {
[[maybe_unused]] const bool registered = headwise::grade::add_mistake(bind_${id}(), R\"hw(${name})hw\", R\"hw(${explanation})hw\");
${as_subject}}  // namespace
")
    # The wrapper includes the patched file: made first (it is a source of the meta-test's grader).
    set_source_files_properties("${gen}/mistake_${key}.cpp" PROPERTIES OBJECT_DEPENDS "${file}")
    list(APPEND wrappers "${gen}/mistake_${key}.cpp")
    list(APPEND mistake_keys "${key}")
    list(APPEND mistake_names "${name}")
  endforeach()
  if(wrappers)
    add_library(headwise_grade_${id}_mistakes OBJECT EXCLUDE_FROM_ALL ${wrappers})
    set_target_properties(headwise_grade_${id}_mistakes PROPERTIES HEADWISE_LEARNER_CODE ON)
  else()
    add_library(headwise_grade_${id}_mistakes INTERFACE)
  endif()
  if(wrappers)
    target_include_directories(headwise_grade_${id}_mistakes PRIVATE ${solution_includes})
    target_link_libraries(headwise_grade_${id}_mistakes PRIVATE headwise_grade_deps)
    # Compiled exactly like the subject (sanitized, -Og, xtensor's checks on): a mistake and a
    # learner's identical code must give identical numbers, NaNs and infs included.
    target_compile_options(headwise_grade_${id}_mistakes PRIVATE ${subject_options} -w)
    target_precompile_headers(headwise_grade_${id}_mistakes REUSE_FROM ${subject_pch})
  endif()
  headwise_add_mutants(${id} ${dir})  # the search's variants (cmake/HeadwiseMutants.cmake)

  # --- The learner's grader: `ctest --preset grade [-L <id>]`.
  list(TRANSFORM sources PREPEND "${exercise_dir}/" OUTPUT_VARIABLE learner_sources)
  _headwise_grader(headwise_grade_${id} ${id} SOURCES ${learner_sources} "${gen}/subject.cpp" INCLUDES ${exercise_includes})
  # Built with the lessons (the first `./headwise run`): the grader's own parts -- its cases, the
  # catalogue, the search's variants, the sanitized library -- take most of a minute per exercise
  # on 2 cores, and a learner's first grade should wait only on their own file. Not the learner's
  # file itself: one that does not compile yet must not stop the lessons from building.
  if(NOT TARGET headwise_graders)
    add_custom_target(headwise_graders ALL)
  endif()
  foreach(part headwise_grade_${id}_cases headwise_grade_${id}_mistakes headwise_grade_${id}_mutants
               headwise_grade_support headwise_grade_main headwise_catch_session headwise_grade_pch headwise_grade_core_sanitized
               headwise_grade_emulator_sanitized)
    if(TARGET ${part})
      get_target_property(type ${part} TYPE)
      if(NOT type STREQUAL "INTERFACE_LIBRARY")
        add_dependencies(headwise_graders ${part})
      endif()
    endif()
  endforeach()
  set(subject_args "")
  foreach(file IN LISTS learner_sources)
    list(APPEND subject_args --subject "${file}")
  endforeach()
  set(step_args --id ${id} --source-dir ${PROJECT_SOURCE_DIR} --report ${report_dir}/${id}.json ${subject_args})
  add_test(NAME "${id} build: exercises/${dir} compiles"
    COMMAND headwise_gradetool build ${step_args} --build-dir ${PROJECT_BINARY_DIR} --target headwise_grade_${id})
  set_tests_properties("${id} build: exercises/${dir} compiles" PROPERTIES
    LABELS "grade;${id}" FIXTURES_SETUP headwise_grade_${id} RESOURCE_LOCK headwise_build_tree)
  add_test(NAME "${id} grade: exercises/${dir} passes the grader"
    COMMAND headwise_gradetool run ${step_args} -- $<TARGET_FILE:headwise_grade_${id}>)
  set_tests_properties("${id} grade: exercises/${dir} passes the grader" PROPERTIES
    LABELS "grade;${id}" FIXTURES_REQUIRED headwise_grade_${id} TIMEOUT 120)

  # --- The meta-tests: the grader passes the solution, fails every test of the pristine stub
  # with "not implemented yet", and names every planted mistake. Every subject is compiled into
  # one grader, headwise_meta_<id>, in its own namespace: one link per exercise. A planted
  # mistake is the catalogue's own object, registered as a subject too (above; a copy of its own
  # for kernels).
  set(meta_sources "")
  list(TRANSFORM sources PREPEND "${solution_dir}/" OUTPUT_VARIABLE solution_sources)
  _headwise_meta_subject(${id} ${dir} solution "${solution_sources}" meta_sources)
  _headwise_meta_test(${id} solution "grader ${id} passes on solutions/${dir}" "${solution_sources}" -DEXPECT=pass)

  set(stub_sources "")
  foreach(source IN LISTS sources)
    add_custom_command(OUTPUT "${gen}/stub/${source}"
      COMMAND headwise_gradetool stub ${solution_dir}/${source} ${gen}/stub/${source}
      DEPENDS "${solution_dir}/${source}" headwise_gradetool
      COMMENT "Generating the pristine stub of solutions/${dir}/${source}")
    list(APPEND stub_sources "${gen}/stub/${source}")
  endforeach()
  _headwise_meta_subject(${id} ${dir} stub "${stub_sources}" meta_sources)
  _headwise_meta_test(${id} stub "grader ${id} fails every test of the pristine stub with 'not implemented yet'"
    "${stub_sources}" -DEXPECT=stub)

  foreach(file key name IN ZIP_LISTS mistakes mistake_keys mistake_names)
    if(own_copies)
      _headwise_meta_subject(${id} ${dir} ${key} "${file}" meta_sources)
    endif()
    _headwise_meta_test(${id} ${key} "grader ${id} names the planted mistake '${name}'" "${file}"
      -DEXPECT=mistake "-DMISTAKE=${name}")
  endforeach()

  # The learner-style mistakes beyond the catalogue (tests/grade/learner_mistakes/<id>/*.mistake):
  # each a few one-line edits of the solution (headwise-gradetool patch), which must fail with the
  # diagnosis its "expect:" lines spell out and name no catalogued mistake. Each adds one compiled
  # file to the exercise's meta grader.
  file(GLOB flat CONFIGURE_DEPENDS "${HEADWISE_GRADE_DIR}/learner_mistakes/${id}_*.mistake")
  if(flat)
    message(FATAL_ERROR "${flat}: a learner-style mistake lives in its exercise's folder now, "
      "tests/grade/learner_mistakes/${id}/<what>.mistake (see docs/instructor-guide.md)")
  endif()
  file(GLOB learner_mistakes CONFIGURE_DEPENDS "${HEADWISE_GRADE_DIR}/learner_mistakes/${id}/*.mistake")
  list(SORT learner_mistakes)
  # 10 s (HEADWISE_GRADE_TIMEOUT_<id> where set): a mistake that loops for ever is stopped (and
  # diagnosed) after that.
  set(learner_timeout 10)
  if(DEFINED HEADWISE_GRADE_TIMEOUT_${id})
    set(learner_timeout ${HEADWISE_GRADE_TIMEOUT_${id}})
  endif()
  foreach(spec IN LISTS learner_mistakes)
    get_filename_component(key "${spec}" NAME_WE)
    set(stem "${id}_${key}")
    set(patched "${gen}/learner/${stem}.cpp")
    add_custom_command(OUTPUT "${patched}"
      COMMAND headwise_gradetool patch ${spec} ${solution_dir}/${first_source} ${patched}
      DEPENDS "${spec}" "${solution_dir}/${first_source}" headwise_gradetool
      COMMENT "Making the learner-style mistake ${stem}")
    _headwise_meta_subject(${id} ${dir} learner_${key} "${patched}" meta_sources)
    _headwise_meta_test(${id} learner_${key} "grader ${id} diagnoses the learner's mistake '${key}'" "${patched}"
      -DEXPECT=learner -DSUBJECT=${spec} -DTIMEOUT=${learner_timeout})
  endforeach()
  _headwise_transplant_tests(${id} ${dir} ${first_source} "${gen}" ${solution_includes})
  headwise_add_search_meta_tests(${id} meta_sources)  # the search's hand-written edits (HeadwiseMutants.cmake)
  _headwise_grader(headwise_meta_${id} ${id} SOURCES ${meta_sources} INCLUDES ${solution_includes})
  add_dependencies(headwise_tests headwise_meta_${id})

  # scripts/mutate's subject: build/mutants/<dir>/<first source>, written by the script (a copy
  # of the solution until then). Built only when the script asks.
  set(mutant "${PROJECT_BINARY_DIR}/mutants/${dir}/${first_source}")
  if(NOT EXISTS "${mutant}")
    file(COPY "${solution_dir}/${first_source}" DESTINATION "${PROJECT_BINARY_DIR}/mutants/${dir}")
  endif()
  _headwise_grader(headwise_mutant_${id} ${id} SOURCES "${mutant}" "${gen}/subject.cpp" INCLUDES ${solution_includes})
endfunction()

# The transplant step's tests (tests/grade/transplant/<id>_<what>.mistake, gradekit/transplant.hpp):
# each a learner-style mistake compiled as the learner's own grader is (its file alone, so that the
# step can compile copies of it in its place), graded, then located by grading those copies.
function(_headwise_transplant_tests id dir first_source gen)  # ARGN: the solution's include directories
  file(GLOB specs CONFIGURE_DEPENDS "${HEADWISE_GRADE_DIR}/transplant/${id}_*.mistake")
  set(solution "${PROJECT_SOURCE_DIR}/solutions/${dir}/${first_source}")
  foreach(spec IN LISTS specs)
    get_filename_component(stem "${spec}" NAME_WE)
    set(patched "${gen}/transplant/${stem}/${first_source}")
    add_custom_command(OUTPUT "${patched}"
      COMMAND ${CMAKE_COMMAND} -E make_directory "${gen}/transplant/${stem}"
      COMMAND headwise_gradetool patch ${spec} ${solution} ${patched}
      DEPENDS "${spec}" "${solution}" headwise_gradetool
      COMMENT "Making the transplant test's mistake ${stem}")
    _headwise_grader(headwise_transplant_${stem} ${id} SOURCES "${patched}" "${gen}/subject.cpp"
      INCLUDES ${ARGN})
    add_dependencies(headwise_tests headwise_transplant_${stem})
    set(name "grade: '${stem}' is located by grading copies of the file with pieces of the solution put back")
    file(STRINGS "${spec}" fresh REGEX "^expect-fresh: ")
    if(fresh)  # check_transplant.cmake: the fresh-memory step's test
      set(name "grade: '${stem}' is caught reading memory it never wrote (graded again on zeroed memory)")
    endif()
    add_test(NAME "${name}"
      COMMAND ${CMAKE_COMMAND} -DGRADETOOL=$<TARGET_FILE:headwise_gradetool> -DID=${id}
        -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DBUILD_DIR=${PROJECT_BINARY_DIR} -DTARGET=headwise_transplant_${stem}
        -DGRADER=$<TARGET_FILE:headwise_transplant_${stem}> -DSUBJECT=${patched} -DSOLUTION=${solution}
        -DSPEC=${spec} -DREPORT=${PROJECT_BINARY_DIR}/grade/transplant_${stem}.json
        -P ${HEADWISE_GRADE_DIR}/check_transplant.cmake)
    set_tests_properties("${name}" PROPERTIES LABELS "meta" TIMEOUT 300)
  endforeach()
endfunction()

# A catalogued mistake's name and explanation: its lines "mistake: <name>" (without ; " or \),
# "why: <line>" and "fix: <line>", each once.
function(_headwise_mistake_info spec out_name out_explanation)
  file(READ "${spec}" text)
  set(text "\n${text}\n")
  # Each field by position, never as a CMake list: the lines may hold semicolons.
  foreach(field mistake why fix)
    string(FIND "${text}" "\n${field}: " at)
    string(FIND "${text}" "\n${field}: " last REVERSE)
    set(value "")
    if(at GREATER -1 AND at EQUAL last)
      string(LENGTH "\n${field}: " skip)
      math(EXPR at "${at} + ${skip}")
      string(SUBSTRING "${text}" ${at} -1 rest)
      string(FIND "${rest}" "\n" end)
      string(SUBSTRING "${rest}" 0 ${end} value)
    endif()
    if(value STREQUAL "")
      message(FATAL_ERROR "${spec}: a catalogued mistake states each of \"mistake: <name>\", \"why: <line>\" "
        "and \"fix: <line>\" once")
    endif()
    set(${field} "${value}")
  endforeach()
  if(mistake MATCHES "[;\"\\]")
    message(FATAL_ERROR "${spec}: a mistake's name holds no ; \" or \\")
  endif()
  set(${out_name} "${mistake}" PARENT_SCOPE)
  set(${out_explanation} "${why}\n${fix}" PARENT_SCOPE)
endfunction()

# One grader binary: the test cases, the catalogue and the subjects' sources with the files that
# register them (sanitized, with the learner's warnings; see the top of this file and
# headwise_grade_pch in tests/grade).
function(_headwise_grader target id)
  cmake_parse_arguments(arg "" "MUTANTS" "SOURCES;INCLUDES" ${ARGN})
  if(NOT arg_MUTANTS)
    set(arg_MUTANTS headwise_grade_${id}_mutants)  # the search's variants (cmake/HeadwiseMutants.cmake)
  endif()
  add_executable(${target} EXCLUDE_FROM_ALL ${arg_SOURCES})
  set_target_properties(${target} PROPERTIES HEADWISE_LEARNER_CODE ON)  # no -Werror (HeadwiseTargets.cmake)
  target_include_directories(${target} PRIVATE ${arg_INCLUDES})
  target_link_libraries(${target} PRIVATE
    headwise_grade_${id}_cases headwise_grade_${id}_mistakes ${arg_MUTANTS} headwise_grade_support headwise_grade_deps
    headwise_grade_main headwise_catch_session headwise::gradekit)
  # The subject's options: tests/grade/CMakeLists.txt (its warnings, -Og, the sanitizers).
  target_compile_options(${target} PRIVATE ${subject_options})
  target_link_options(${target} PRIVATE ${link_options})
  if(HEADWISE_GRADE_SANITIZE AND NOT id IN_LIST HEADWISE_GRADE_UNSANITIZED)
    target_link_libraries(${target} PRIVATE headwise_grade_core_sanitized)
    if(HEADWISE_EXERCISE_${id}_LIBS MATCHES "headwise::(kernels|emulator)")
      target_link_libraries(${target} PRIVATE headwise_grade_emulator_sanitized)
    endif()
  endif()
  if(HEADWISE_HAVE_GOLD)
    target_link_options(${target} PRIVATE -fuse-ld=gold)
  endif()
  target_precompile_headers(${target} REUSE_FROM ${subject_pch})
endfunction()

# One subject of an exercise's meta grader: each of its files compiled in the namespace <id>_<key>
# (as the catalogue's mistakes are), the first with the line that registers it under <key>.
# Appends the generated files to <out_var>. The solution keeps the exercise's own namespace: an
# unoptimised build keeps the cases' unused bind_<id>(), which names <id>:: functions. Only the
# solution shows its warnings: the stub's and the mistakes' are their own (a learner's are shown
# by `headwise grade`).
function(_headwise_meta_subject id dir key subject_files out_var)
  set(gen "${CMAKE_CURRENT_BINARY_DIR}/${id}/meta")
  string(MAKE_C_IDENTIFIER "${key}" name)
  set(head "// Generated by cmake/HeadwiseExercises.cmake: the meta-tests' subject \"${key}\", in its own namespace.
#define ${id} ${id}_${name}")
  if(key STREQUAL "solution")
    set(head "// Generated by cmake/HeadwiseExercises.cmake: the meta-tests' subject \"${key}\", in the exercise's namespace.")
  endif()
  set(registration "#include \"${dir}.hpp\"
namespace {
[[maybe_unused]] const bool registered = headwise::grade::add_subject(bind_${id}(), \"${key}\");
}  // namespace
")
  set(made "")
  foreach(file IN LISTS subject_files)
    get_filename_component(file_name "${file}" NAME_WE)
    set(wrapper "${gen}/${name}_${file_name}.cpp")
    file(CONFIGURE OUTPUT "${wrapper}" @ONLY CONTENT
"${head}
#include \"${file}\"
${registration}")
    set(registration "")
    # The wrapper includes the subject's file, which may be generated (a stub, a patched mistake).
    set_source_files_properties("${wrapper}" PROPERTIES OBJECT_DEPENDS "${file}")
    if(NOT key STREQUAL "solution")
      set_source_files_properties("${wrapper}" PROPERTIES COMPILE_OPTIONS -w)
    endif()
    list(APPEND made "${wrapper}")
  endforeach()
  set(${out_var} ${${out_var}} ${made} PARENT_SCOPE)
endfunction()

# A meta-test: run the exercise's meta grader on one subject through headwise-gradetool's run
# step (as `headwise grade` does) and check its report (tests/grade/check_grader.cmake).
function(_headwise_meta_test id subject name subject_files)
  set(subject_args "")
  foreach(file IN LISTS subject_files)
    list(APPEND subject_args --subject "${file}")
  endforeach()
  string(REPLACE ";" "|" subject_args "${subject_args}")
  add_test(NAME "${name}"
    COMMAND ${CMAKE_COMMAND} -DGRADER=$<TARGET_FILE:headwise_meta_${id}> -DGRADER_ARGS=--grade-subject=${subject}
      -DID=${id} -DGRADETOOL=$<TARGET_FILE:headwise_gradetool> -DSOURCE_DIR=${PROJECT_SOURCE_DIR} "-DSUBJECT_ARGS=${subject_args}"
      -DREPORT=${PROJECT_BINARY_DIR}/grade/meta/${id}_${subject}.json ${ARGN}
      -P ${HEADWISE_GRADE_DIR}/check_grader.cmake)
  set_tests_properties("${name}" PROPERTIES LABELS "meta" TIMEOUT 120)
endfunction()
