# cmake/HeadwiseExercises.cmake -- exercises, their graders, and the meta-tests that prove the graders.
#
#   headwise_add_exercise(ex01 01_single_head [LIBS ...] [TIMEOUT s] [OPTIONS ...] [UNSANITIZED])
#
# (tests/grade/CMakeLists.txt calls it with the exercise's course.json entry) reads, for exercise
# <id> in directory <dir>:
#   solutions/<dir>/*.cpp, *.hpp        the reference answer (the source of truth for the file list)
#   exercises/<dir>/                    the learner's copy of the same files (stubs at first)
#   tests/grade/<id>/                   the exercise's grading, one folder:
#     <dir>.hpp, <dir>.cpp              the grader: the exercise's Api table and its test cases
#     mistakes/<what>.mistake           the catalogue: one known-wrong answer per file, named by
#                                       "mistake:", "why:", "fix:" (the report prints the last two)
#     learner/<what>.mistake            learner-style mistakes: the diagnosis their expect lines say
#     search/variants.mutants           the search's data (cmake/HeadwiseMutants.cmake), and its
#     search/<what>.mistake             hand-written edits, checked as the learner-style ones are
#     located/<what>.mistake            mistakes the steps after a failed grade must locate
#   each .mistake the lines of the solution's .cpp it changes, in the one format that
#   src/gradekit/mistake.hpp parses (headwise-gradetool patch, check-report): patched into the
#   build tree at build time (headwise_patched_subject); a "replace:" the solution no longer holds
#   fails the build, naming the file.
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
# How a subject compiles is the INTERFACE target headwise_grade_subject_options (or
# headwise_grade_unsanitized_options), made by tests/grade/CMakeLists.txt; each exercise's own
# settings sit on headwise_grade_<id>_subject, read back by _headwise_exercise_get.
# headwise-gradetool (src/gradekit) runs the build and run steps and writes the report.

include(${CMAKE_CURRENT_LIST_DIR}/HeadwiseMutants.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/HeadwiseUnity.cmake)

# headwise_add_exercise(<id> <dir> [LIBS ...] [TIMEOUT s] [OPTIONS ...] [UNSANITIZED])
function(headwise_add_exercise id dir)
  cmake_parse_arguments(arg "UNSANITIZED" "TIMEOUT" "LIBS;OPTIONS" ${ARGN})
  set(grading "${PROJECT_SOURCE_DIR}/tests/grade/${id}")
  set(solution_dir "${PROJECT_SOURCE_DIR}/solutions/${dir}")
  set(headers ${PROJECT_SOURCE_DIR}/exercises/${dir} ${PROJECT_SOURCE_DIR}/exercises/common)
  file(GLOB sources RELATIVE "${solution_dir}" CONFIGURE_DEPENDS "${solution_dir}/*.cpp")
  list(SORT sources)
  if(NOT sources)
    message(FATAL_ERROR "headwise_add_exercise(${id}): no .cpp files in ${solution_dir}")
  endif()
  file(GLOB specs CONFIGURE_DEPENDS "${grading}/*/*.mistake")
  list(LENGTH sources source_count)
  if(specs AND NOT source_count EQUAL 1)
    message(FATAL_ERROR "headwise_add_exercise(${id}): a mistake patches the exercise's one .cpp, "
      "but solutions/${dir} has ${source_count}")
  endif()
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT 6)  # a learner-style mistake that loops for ever is stopped (and diagnosed) after that:
    # ten times the slowest of these exercises' meta-tests under a loaded CI (~0.6 s)
  endif()
  # A kernel's __shared__ arrays are function-local statics (src/emulator): a subject sharing them
  # with the catalogue's copy would read what the other left there, so each gets a copy of its own.
  set(own_copies OFF)
  if(arg_LIBS MATCHES "headwise::(kernels|emulator)")
    set(own_copies ON)
  endif()
  _headwise_exercise_settings(${id} "${dir}" "${sources}" ${arg_TIMEOUT} ${own_copies} ${arg_UNSANITIZED} "${arg_OPTIONS}")
  _headwise_unity_headers(${id} guards)
  set_property(TARGET headwise_grade_${id}_subject PROPERTY HEADWISE_UNITY_GUARDS "${guards}")

  # The test cases, compiled once against the exercise's headers (exercises/<dir>/*.hpp: their one
  # home, the solutions hold only the files the learner writes),
  # as the project's tests are (-O1: HeadwiseTargets.cmake).
  add_library(headwise_grade_${id}_cases OBJECT EXCLUDE_FROM_ALL "${grading}/${dir}.cpp")
  target_include_directories(headwise_grade_${id}_cases PRIVATE ${headers} ${grading})
  target_link_libraries(headwise_grade_${id}_cases PRIVATE headwise_grade_deps INTERFACE ${arg_LIBS})
  target_compile_definitions(headwise_grade_${id}_cases PRIVATE HEADWISE_FIXTURES_DIR="${PROJECT_SOURCE_DIR}/tests/fixtures")
  headwise_test_sources(headwise_grade_${id}_cases)

  # The registration of a subject: the same generated file for every subject of this exercise;
  # the include path decides whose header it sees.
  file(CONFIGURE OUTPUT "${CMAKE_CURRENT_BINARY_DIR}/${id}/subject.cpp" @ONLY CONTENT
"// Generated by cmake/HeadwiseExercises.cmake: registers the functions under grade.
#include \"${dir}.hpp\"
namespace {
[[maybe_unused]] const bool registered = headwise::grade::add_subject(bind_${id}());
}  // namespace
")
  _headwise_catalogue(${id})
  headwise_add_mutants(${id})  # the search's variants (cmake/HeadwiseMutants.cmake)
  _headwise_learner_grader(${id})
  _headwise_meta_tests(${id})
endfunction()

# How exercise <id>'s subjects compile (an INTERFACE target, headwise_grade_<id>_subject) and what
# the other functions read back (_headwise_exercise_get): its directory, .cpp files, where its
# files are generated, its mistakes' timeout, and whether each mistake is compiled on its own.
function(_headwise_exercise_settings id dir sources timeout own_copies unsanitized options)
  set(target headwise_grade_${id}_subject)
  add_library(${target} INTERFACE)
  set(pch headwise_grade_pch)
  set(objects "")
  if(unsanitized)
    target_link_libraries(${target} INTERFACE headwise_grade_unsanitized_options)
    set(pch headwise_pch)
  else()
    target_link_libraries(${target} INTERFACE headwise_grade_subject_options)
    foreach(part headwise_grade_core_sanitized headwise_grade_emulator_sanitized)
      if(TARGET ${part} AND (part STREQUAL "headwise_grade_core_sanitized" OR own_copies))
        list(APPEND objects ${part})  # linked directly: an object library's objects do not pass through
      endif()
    endforeach()
  endif()
  target_compile_options(${target} INTERFACE ${options})
  list(GET sources 0 first)
  set_target_properties(${target} PROPERTIES HEADWISE_DIR "${dir}" HEADWISE_SOURCES "${sources}"
    HEADWISE_SOLUTION "${PROJECT_SOURCE_DIR}/solutions/${dir}/${first}" HEADWISE_GEN "${CMAKE_CURRENT_BINARY_DIR}/${id}"
    HEADWISE_TIMEOUT ${timeout} HEADWISE_OWN_COPIES ${own_copies} HEADWISE_PCH ${pch} HEADWISE_OBJECTS "${objects}")
endfunction()

# _headwise_exercise_get(<id> <out> <PROPERTY> [<out> <PROPERTY>...]): _headwise_exercise_settings's values.
function(_headwise_exercise_get id)
  set(pairs ${ARGN})
  while(pairs)
    list(POP_FRONT pairs out property)
    get_target_property(value headwise_grade_${id}_subject HEADWISE_${property})
    set(${out} "${value}" PARENT_SCOPE)
  endwhile()
endfunction()

# headwise_patched_subject(<spec> <solution> <output> [DESCRIPTION <header>]): the rule that makes
# <output>, the solution's file with the .mistake's edits (headwise-gradetool patch); a catalogued
# mistake's name and explanation go to <header>. The one way a .mistake becomes a source.
function(headwise_patched_subject spec solution output)
  cmake_parse_arguments(arg "" "DESCRIPTION" "DEPENDS" ${ARGN})
  set(outputs "${output}")
  set(description "")
  if(arg_DESCRIPTION)
    list(APPEND outputs "${arg_DESCRIPTION}")
    set(description --description "${arg_DESCRIPTION}")
  endif()
  get_filename_component(folder "${output}" DIRECTORY)
  file(RELATIVE_PATH shown "${PROJECT_SOURCE_DIR}" "${spec}")
  add_custom_command(OUTPUT ${outputs}
    COMMAND ${CMAKE_COMMAND} -E make_directory "${folder}"
    COMMAND headwise_gradetool patch "${spec}" "${solution}" "${output}" ${description}
    DEPENDS "${spec}" "${solution}" ${arg_DEPENDS} headwise_gradetool
    COMMENT "Patching ${shown} into a copy of the solution")
endfunction()

# The catalogue (tests/grade/<id>/mistakes/*.mistake): each patched into a copy of the solution,
# compiled with its namespace renamed into headwise_grade_<id>_mistakes, which every grader of
# <id> links. Each is also the meta-tests' subject of its key (a copy of its own for kernels).
function(_headwise_catalogue id)
  _headwise_exercise_get(${id} gen GEN dir DIR solution SOLUTION own_copies OWN_COPIES)
  file(GLOB specs CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/tests/grade/${id}/mistakes/*.mistake")
  list(SORT specs)
  set(blocks "")
  foreach(spec IN LISTS specs)
    get_filename_component(key "${spec}" NAME_WE)
    # Named <id>_<key>.cpp, so that the grader's locations (file:line) read ex01_no_scaling.cpp.
    set(file "${gen}/mistakes/${id}_${key}.cpp")
    set(description "${gen}/mistakes/${id}_${key}.description.hpp")
    headwise_patched_subject("${spec}" "${solution}" "${file}" DESCRIPTION "${description}")
    set(calls "headwise::grade::add_mistake(bind_${id}(), HEADWISE_MISTAKE_NAME, HEADWISE_MISTAKE_EXPLANATION)")
    if(NOT own_copies)
      list(APPEND calls "headwise::grade::add_subject(bind_${id}(), \"${key}\")")
    endif()
    _headwise_unity_block(${id} mistake_${key} block FILES "${file}" INCLUDES "${description}" REGISTER ${calls}
      UNDEFINE HEADWISE_MISTAKE_NAME HEADWISE_MISTAKE_EXPLANATION)
    list(APPEND blocks "${block}")
  endforeach()
  if(NOT blocks)
    add_library(headwise_grade_${id}_mistakes INTERFACE)
    return()
  endif()
  _headwise_unity_sources(${id} mistakes wrappers "${blocks}")
  # Compiled exactly like the subject (sanitized, -Og, xtensor's checks on): a mistake and a
  # learner's identical code must give identical numbers, NaNs and infs included.
  _headwise_subject_objects(headwise_grade_${id}_mistakes ${id} EXCLUDE_FROM_ALL ${wrappers})
endfunction()

# An object library of <id>'s subject code (the catalogue, the search's variants): compiled as the
# subject is, its warnings off, against the exercise's headers.
function(_headwise_subject_objects target id)
  _headwise_exercise_get(${id} pch PCH dir DIR gen GEN)
  add_library(${target} OBJECT ${ARGN})
  set_target_properties(${target} PROPERTIES HEADWISE_LEARNER_CODE ON)
  target_include_directories(${target} PRIVATE ${gen}/unity ${PROJECT_SOURCE_DIR}/exercises/${dir}
    ${PROJECT_SOURCE_DIR}/exercises/common ${PROJECT_SOURCE_DIR}/tests/grade/${id})
  target_link_libraries(${target} PRIVATE headwise_grade_deps headwise_grade_${id}_subject)
  target_compile_options(${target} PRIVATE -w)
  target_precompile_headers(${target} REUSE_FROM ${pch})
endfunction()

# The learner's grader: `ctest --preset grade [-L <id>]`, and scripts/mutate's.
function(_headwise_learner_grader id)
  _headwise_exercise_get(${id} dir DIR sources SOURCES gen GEN)
  list(TRANSFORM sources PREPEND "${PROJECT_SOURCE_DIR}/exercises/${dir}/" OUTPUT_VARIABLE learner_sources)
  _headwise_grader(headwise_grade_${id} ${id} SOURCES ${learner_sources} "${gen}/subject.cpp" INCLUDES
    ${PROJECT_SOURCE_DIR}/exercises/${dir} ${PROJECT_SOURCE_DIR}/exercises/common)
  # Built with the lessons (the first `./headwise run`): the grader's own parts -- its cases, the
  # catalogue, the search's variants, the sanitized library -- take most of a minute per exercise
  # on 2 cores, and a learner's first grade should wait only on their own file. Not the learner's
  # file itself: one that does not compile yet must not stop the lessons from building.
  if(NOT TARGET headwise_graders)
    add_custom_target(headwise_graders ALL)
  endif()
  _headwise_exercise_get(${id} objects OBJECTS)
  foreach(part headwise_grade_${id}_cases headwise_grade_${id}_mistakes headwise_grade_${id}_mutants
               headwise_grade_support headwise_grade_main headwise_catch_session headwise_grade_pch ${objects})
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
  set(step_args --id ${id} --source-dir ${PROJECT_SOURCE_DIR} --report ${PROJECT_BINARY_DIR}/grade/${id}.json ${subject_args})
  add_test(NAME "${id} build: exercises/${dir} compiles"
    COMMAND headwise_gradetool build ${step_args} --build-dir ${PROJECT_BINARY_DIR} --target headwise_grade_${id})
  set_tests_properties("${id} build: exercises/${dir} compiles" PROPERTIES
    LABELS "grade;${id}" FIXTURES_SETUP headwise_grade_${id} RESOURCE_LOCK headwise_build_tree)
  add_test(NAME "${id} grade: exercises/${dir} passes the grader"
    COMMAND headwise_gradetool run ${step_args} -- $<TARGET_FILE:headwise_grade_${id}>)
  set_tests_properties("${id} grade: exercises/${dir} passes the grader" PROPERTIES
    LABELS "grade;${id}" FIXTURES_REQUIRED headwise_grade_${id} TIMEOUT 120)

  # scripts/mutate's subject: build/mutants/<dir>/<first source>, written by the script (a copy
  # of the solution until then). Built only when the script asks.
  _headwise_exercise_get(${id} solution SOLUTION)
  get_filename_component(first "${solution}" NAME)
  if(NOT EXISTS "${PROJECT_BINARY_DIR}/mutants/${dir}/${first}")
    file(COPY "${solution}" DESTINATION "${PROJECT_BINARY_DIR}/mutants/${dir}")
  endif()
  _headwise_grader(headwise_mutant_${id} ${id} SOURCES "${PROJECT_BINARY_DIR}/mutants/${dir}/${first}" "${gen}/subject.cpp")
endfunction()

# The meta-tests: the grader passes the solution, fails every test of the pristine stub with "not
# implemented yet", names every catalogued mistake, diagnoses each learner-style mistake and the
# search's hand-written edits as their .mistake says, and locates the located cases. Every subject
# is compiled into one grader, headwise_meta_<id>, in its own namespace: one link per exercise.
function(_headwise_meta_tests id)
  _headwise_exercise_get(${id} dir DIR sources SOURCES gen GEN own_copies OWN_COPIES)
  list(TRANSFORM sources PREPEND "${PROJECT_SOURCE_DIR}/solutions/${dir}/" OUTPUT_VARIABLE solution_sources)
  _headwise_meta_subject(${id} solution "${solution_sources}" meta_sources)
  _headwise_meta_test(${id} solution "grader ${id} passes on solutions/${dir}" "${solution_sources}" solution)

  set(stub_sources "")
  foreach(source IN LISTS sources)
    add_custom_command(OUTPUT "${gen}/stub/${source}"
      COMMAND headwise_gradetool stub ${PROJECT_SOURCE_DIR}/solutions/${dir}/${source} ${gen}/stub/${source}
      DEPENDS "${PROJECT_SOURCE_DIR}/solutions/${dir}/${source}" headwise_gradetool
      COMMENT "Generating the pristine stub of solutions/${dir}/${source}")
    list(APPEND stub_sources "${gen}/stub/${source}")
  endforeach()
  _headwise_meta_subject(${id} stub "${stub_sources}" made)
  list(APPEND meta_sources ${made})
  _headwise_meta_test(${id} stub "grader ${id} fails every test of the pristine stub with 'not implemented yet'"
    "${stub_sources}" stub)

  # The catalogue's subjects are its own objects (_headwise_catalogue), but for kernels.
  file(GLOB specs CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/tests/grade/${id}/mistakes/*.mistake")
  list(SORT specs)
  foreach(spec IN LISTS specs)
    get_filename_component(key "${spec}" NAME_WE)
    set(file "${gen}/mistakes/${id}_${key}.cpp")
    if(own_copies)
      _headwise_meta_subject(${id} ${key} "${file}" made)
      list(APPEND meta_sources ${made})
    endif()
    _headwise_meta_test(${id} ${key} "grader ${id} names the planted mistake '${key}'" "${file}" "${spec}")
  endforeach()
  _headwise_spec_tests(${id} learner "grader ${id} diagnoses the learner's mistake" made)
  list(APPEND meta_sources ${made})
  if(TARGET headwise_mutants_${id}_all)  # the search's hand-written edits, where it has data
    _headwise_spec_tests(${id} search "the grader's search on ${id}'s hand-written edit" made)
    list(APPEND meta_sources ${made})
  endif()
  _headwise_located_tests(${id})
  # every subject but the solution is a block of a unity source (cmake/HeadwiseUnity.cmake)
  set(blocks ${meta_sources})
  list(FILTER blocks INCLUDE REGEX "[.]inc$")
  list(FILTER meta_sources EXCLUDE REGEX "[.]inc$")
  _headwise_unity_sources(${id} meta unity "${blocks}")
  _headwise_grader(headwise_meta_${id} ${id} SOURCES ${meta_sources} ${unity})
  _headwise_exercise_get(${id} gen GEN)
  target_include_directories(headwise_meta_${id} BEFORE PRIVATE ${gen}/unity)
  add_dependencies(headwise_tests headwise_meta_${id})
endfunction()

# The meta-tests of tests/grade/<id>/<kind>/*.mistake (learner/, search/): each a subject
# <kind>_<what> of the meta grader, patched into <id>_<what>.cpp (the name its expect-where lines
# read), checked by headwise-gradetool check-report against its expect lines. Sets <out_var> to
# the sources they add to the meta grader.
function(_headwise_spec_tests id kind title out_var)
  _headwise_exercise_get(${id} gen GEN solution SOLUTION timeout TIMEOUT)
  file(GLOB specs CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/tests/grade/${id}/${kind}/*.mistake")
  list(SORT specs)
  set(sources "")
  foreach(spec IN LISTS specs)
    get_filename_component(key "${spec}" NAME_WE)
    set(patched "${gen}/${kind}/${id}_${key}.cpp")
    headwise_patched_subject("${spec}" "${solution}" "${patched}")
    _headwise_meta_subject(${id} ${kind}_${key} "${patched}" made)
    list(APPEND sources ${made})
    _headwise_meta_test(${id} ${kind}_${key} "${title} '${key}'" "${patched}" "${spec}" -DTIMEOUT=${timeout})
  endforeach()
  set(${out_var} ${sources} PARENT_SCOPE)
endfunction()

# The located cases (tests/grade/<id>/located/*.mistake; gradekit/pipeline.hpp): each a
# learner-style mistake (made in the solution, or with "own:" in a learner's own implementation,
# located/own/) compiled as the learner's own grader is (its file alone, so that the repair and
# transplant steps can compile their files in its place), graded, then located by the steps that
# follow a failed grade; headwise-gradetool check-report runs them and checks what they say.
function(_headwise_located_tests id)
  _headwise_exercise_get(${id} gen GEN solution SOLUTION)
  get_filename_component(first "${solution}" NAME)
  file(GLOB specs CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/tests/grade/${id}/located/*.mistake")
  file(GLOB owns CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/tests/grade/${id}/located/own/*")
  foreach(spec IN LISTS specs)
    get_filename_component(key "${spec}" NAME_WE)
    set(stem ${id}_${key})
    set(patched "${gen}/transplant/${stem}/${first}")
    headwise_patched_subject("${spec}" "${solution}" "${patched}" DEPENDS ${owns})
    _headwise_grader(headwise_transplant_${stem} ${id} SOURCES "${patched}" "${gen}/subject.cpp")
    add_dependencies(headwise_tests headwise_transplant_${stem})
    set(name "grade: '${stem}' is located by the steps that follow a failed grade (repair, transplant, fresh memory)")
    set(steps --source-dir ${PROJECT_SOURCE_DIR} --subject ${patched} --build-dir ${PROJECT_BINARY_DIR}
      --target headwise_transplant_${stem} --solution ${solution} -- $<TARGET_FILE:headwise_transplant_${stem}>)
    string(REPLACE ";" "|" steps "${steps}")
    add_test(NAME "${name}"
      COMMAND ${CMAKE_COMMAND} -DGRADER=$<TARGET_FILE:headwise_transplant_${stem}> -DID=${id}
        -DGRADETOOL=$<TARGET_FILE:headwise_gradetool> -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DSUBJECT_ARGS=--subject|${patched}
        -DREPORT=${PROJECT_BINARY_DIR}/grade/transplant_${stem}.json -DEXPECT=${spec} "-DCHECK_ARGS=${steps}"
        -P ${PROJECT_SOURCE_DIR}/tests/grade/check_grader.cmake)
    set_tests_properties("${name}" PROPERTIES LABELS "meta" TIMEOUT 300)
  endforeach()
endfunction()

# One grader binary of <id>: the test cases, the catalogue and the search's variants, with the
# subject's sources (SOURCES) and the files that register them, compiled as the subject is (see
# the top of this file) against INCLUDES (default: the solution's directories). MUTANTS: the
# variants' library instead of headwise_grade_<id>_mutants.
function(_headwise_grader target id)
  cmake_parse_arguments(arg "" "MUTANTS" "SOURCES;INCLUDES" ${ARGN})
  _headwise_exercise_get(${id} dir DIR pch PCH objects OBJECTS)
  if(NOT arg_MUTANTS)
    set(arg_MUTANTS headwise_grade_${id}_mutants)  # the search's variants (cmake/HeadwiseMutants.cmake)
  endif()
  if(NOT arg_INCLUDES)
    set(arg_INCLUDES ${PROJECT_SOURCE_DIR}/exercises/${dir} ${PROJECT_SOURCE_DIR}/exercises/common)
  endif()
  add_executable(${target} EXCLUDE_FROM_ALL ${arg_SOURCES})
  set_target_properties(${target} PROPERTIES HEADWISE_LEARNER_CODE ON)  # no -Werror (HeadwiseTargets.cmake)
  target_include_directories(${target} PRIVATE ${arg_INCLUDES} ${PROJECT_SOURCE_DIR}/tests/grade/${id})
  target_link_libraries(${target} PRIVATE
    headwise_grade_${id}_cases headwise_grade_${id}_mistakes ${arg_MUTANTS} headwise_grade_support headwise_grade_deps
    headwise_grade_main headwise_catch_session headwise::gradekit headwise_grade_${id}_subject ${objects})
  target_precompile_headers(${target} REUSE_FROM ${pch})
endfunction()

# One subject of an exercise's meta grader: its files compiled in the namespace <id>_<key> (as
# the catalogue's mistakes are), registered under <key>. Sets <out_var> to its block of a unity
# source (cmake/HeadwiseUnity.cmake), or for the solution to its own wrappers: it keeps the
# exercise's own namespace, in a translation unit of its own (its warnings shown). An
# unoptimised build keeps the cases' unused bind_<id>(), which names <id>:: functions. Only the
# solution shows its warnings: the stub's and the mistakes' are their own (a learner's are shown
# by `headwise grade`).
function(_headwise_meta_subject id key subject_files out_var)
  _headwise_exercise_get(${id} dir DIR gen GEN)
  string(MAKE_C_IDENTIFIER "${key}" name)
  if(NOT key STREQUAL "solution")
    _headwise_unity_block(${id} ${name} block FILES ${subject_files}
      REGISTER "headwise::grade::add_subject(bind_${id}(), \"${key}\")")
    set(${out_var} "${block}" PARENT_SCOPE)
    return()
  endif()
  set(made "")
  set(registration "#include \"${dir}.hpp\"
namespace {
[[maybe_unused]] const bool registered = headwise::grade::add_subject(bind_${id}(), \"${key}\");
}  // namespace
")
  foreach(file IN LISTS subject_files)
    get_filename_component(file_name "${file}" NAME_WE)
    set(wrapper "${gen}/meta/${name}_${file_name}.cpp")
    file(CONFIGURE OUTPUT "${wrapper}" @ONLY CONTENT
"// Generated by cmake/HeadwiseExercises.cmake: the meta-tests' subject \"${key}\", in the exercise's namespace.
#include \"${file}\"
${registration}")
    set(registration "")
    list(APPEND made "${wrapper}")
  endforeach()
  set(${out_var} ${made} PARENT_SCOPE)
endfunction()

# A meta-test: run the exercise's meta grader on one subject through headwise-gradetool's run
# step (as `headwise grade` does) and check its report (tests/grade/check_grader.cmake: `expect`
# is solution, stub or the subject's .mistake). ARGN: more -D options for the script.
function(_headwise_meta_test id subject name subject_files expect)
  set(subject_args "")
  foreach(file IN LISTS subject_files)
    list(APPEND subject_args --subject "${file}")
  endforeach()
  string(REPLACE ";" "|" subject_args "${subject_args}")
  add_test(NAME "${name}"
    COMMAND ${CMAKE_COMMAND} -DGRADER=$<TARGET_FILE:headwise_meta_${id}> -DGRADER_ARGS=--grade-subject=${subject}
      -DID=${id} -DGRADETOOL=$<TARGET_FILE:headwise_gradetool> -DSOURCE_DIR=${PROJECT_SOURCE_DIR} "-DSUBJECT_ARGS=${subject_args}"
      -DREPORT=${PROJECT_BINARY_DIR}/grade/meta/${id}_${subject}.json -DEXPECT=${expect} ${ARGN}
      -P ${PROJECT_SOURCE_DIR}/tests/grade/check_grader.cmake)
  set_tests_properties("${name}" PROPERTIES LABELS "meta" TIMEOUT 120)
endfunction()
