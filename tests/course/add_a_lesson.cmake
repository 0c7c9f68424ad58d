# cmake -DSOURCE_DIR=<repo> -DWORK_DIR=<scratch> -DRUNNER=<build/src/headwise>
#       -DLIBRARY=<build/headwise-library.cmake> [-DWERROR=ON] -P tests/course/add_a_lesson.cmake
#
# Proves that adding a lesson is its files plus one course.json entry. In a copy of the
# repository (the files git knows, plus untracked ones not ignored) it adds the throw-away lesson
# of tests/course/throwaway/ -- a lesson, its expected shapes, its doc, an exercise with its
# solution, stub, hints, and its grading folder tests/grade/ex99/ (grader, one catalogued mistake)
# -- and the entry of course-entry.json,
# touching no other file. Then it configures and builds the copy and requires that lesson 99 is
#   listed   by `headwise list`,
#   run      by `headwise run 99` and its own ctest test,
#   graded   by `headwise grade 99`: the stub fails with "not implemented yet", the solution
#            passes, and the grader's meta-tests pass (solution passes, stub fails, mistake named).
# The runner is RUNNER, this build's, pointed at the copy (HEADWISE_SOURCE_DIR, HEADWISE_BINARY_DIR):
# it reads the lessons from course.json when it runs, so a runner built in the copy would prove
# nothing more. Nor would a library compiled again: adding a lesson changes none of its files, so
# the copy links this build's (LIBRARY, cmake/HeadwiseLibraryFrom.cmake) and builds only lesson 99
# and its graders.
cmake_minimum_required(VERSION 3.25)

# The last step's output and exit code are kept as global properties, read by the checks below.
function(run_step what)
  execute_process(COMMAND ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE out RESULT_VARIABLE rc)
  set_property(GLOBAL PROPERTY headwise_step_out "${out}")
  set_property(GLOBAL PROPERTY headwise_step_rc "${rc}")
  message(STATUS "add a lesson: ${what} -> exit ${rc}")
endfunction()

function(fail what)
  get_property(out GLOBAL PROPERTY headwise_step_out)
  message(FATAL_ERROR "add a lesson: ${what}\n--- output ---\n${out}")
endfunction()

# The last step exited 0 (require_success) or did not (require_failure); otherwise fail with `why`.
function(require_success why)
  get_property(rc GLOBAL PROPERTY headwise_step_rc)
  if(NOT rc EQUAL 0)
    fail("${why}")
  endif()
endfunction()
function(require_failure why)
  get_property(rc GLOBAL PROPERTY headwise_step_rc)
  if(rc EQUAL 0)
    fail("${why}")
  endif()
endfunction()

# The last step's output matches `regex`; otherwise fail with `why`.
function(require_output regex why)
  get_property(out GLOBAL PROPERTY headwise_step_out)
  if(NOT out MATCHES "${regex}")
    fail("${why}")
  endif()
endfunction()

set(tree "${WORK_DIR}/tree")
set(build "${tree}/build")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${tree}")

# 1. A copy of the repository as it is (no build outputs).
if(EXISTS "${SOURCE_DIR}/.git")
  execute_process(COMMAND git -C "${SOURCE_DIR}" ls-files -co --exclude-standard
    OUTPUT_FILE "${WORK_DIR}/files.txt" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "add a lesson: git ls-files failed in ${SOURCE_DIR}")
  endif()
  file(STRINGS "${WORK_DIR}/files.txt" files)
  list(FILTER files EXCLUDE REGEX "^build/")
  foreach(f IN LISTS files)
    if(EXISTS "${SOURCE_DIR}/${f}" AND NOT IS_DIRECTORY "${SOURCE_DIR}/${f}")
      get_filename_component(dir "${f}" DIRECTORY)
      file(COPY "${SOURCE_DIR}/${f}" DESTINATION "${tree}/${dir}")
    endif()
  endforeach()
else()
  foreach(part CMakeLists.txt CMakePresets.json course.json cmake src lessons exercises solutions tests docs bench)
    file(COPY "${SOURCE_DIR}/${part}" DESTINATION "${tree}")
  endforeach()
endif()

# 2. The new lesson's files, and its one entry at the end of course.json.
file(GLOB_RECURSE added RELATIVE "${SOURCE_DIR}/tests/course/throwaway" "${SOURCE_DIR}/tests/course/throwaway/*")
list(REMOVE_ITEM added course-entry.json)
foreach(f IN LISTS added)
  if(EXISTS "${tree}/${f}")
    message(FATAL_ERROR "add a lesson: ${f} already exists in the course: the throw-away lesson must only add files")
  endif()
  get_filename_component(dir "${f}" DIRECTORY)
  file(COPY "${SOURCE_DIR}/tests/course/throwaway/${f}" DESTINATION "${tree}/${dir}")
endforeach()
file(READ "${tree}/course.json" course)
file(READ "${SOURCE_DIR}/tests/course/throwaway/course-entry.json" entry)
string(JSON count LENGTH "${course}" lessons)
string(JSON course SET "${course}" lessons ${count} "${entry}")
file(WRITE "${tree}/course.json" "${course}")

# 3. Configure and build what the checks need: this build's library, CUDA off (the throw-away
# lesson has no kernel), and unoptimised (-O0: what is proven is what gets built, listed, run and
# graded, not how fast it runs; the graders' subjects keep their own -Og).
set(env ${CMAKE_COMMAND} -E env "CCACHE_BASEDIR=${tree}")
if(NOT WERROR)
  set(WERROR OFF)
endif()
run_step("configure" ${env} ${CMAKE_COMMAND} -S "${tree}" -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=Release
  -DCMAKE_CXX_FLAGS_RELEASE=-O0 -DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON -DHEADWISE_CUDA=OFF -DHEADWISE_WERROR=${WERROR} -DHEADWISE_LIBRARY_FROM=${LIBRARY})
require_success("the copy with lesson 99 does not configure")
# Two compilers at a time: ctest counts this test as taking two processors (tests/CMakeLists.txt).
run_step("build" ${env} ${CMAKE_COMMAND} --build "${build}" --parallel 2 --target lesson_99_throwaway headwise_meta_ex99)
require_success("lesson 99 and its graders do not build")
set(headwise ${env} HEADWISE_SOURCE_DIR=${tree} HEADWISE_BINARY_DIR=${build} ${RUNNER})

# 4. Listed, run, tested.
run_step("headwise list" ${headwise} list)
require_output("99 +a throw-away lesson added by a test" "headwise list does not show lesson 99")
run_step("headwise run 99" ${headwise} run 99)
require_success("headwise run 99 failed")
require_output("y = 3 x +\\(2, 5, 64\\)" "headwise run 99 did not print the lesson's shapes")
run_step("ctest: lesson 99 and exercise 99's meta-tests" ${env} ${CMAKE_CTEST_COMMAND} --test-dir "${build}"
  -R "99_throwaway|ex99" -LE grade --output-on-failure)
require_success("lesson 99's test or exercise 99's meta-tests failed")
require_output("100% tests passed, 0 tests failed out of [4-9]" "fewer ctest tests for lesson 99 than expected")

# 5. Graded: the stub fails, the solution passes.
run_step("headwise grade 99 on the stub" ${headwise} grade 99)
require_failure("headwise grade 99 passed on the stub")
require_output("not implemented yet" "grading the stub did not say 'not implemented yet'")
# Written, not copied: a copy keeps the old time stamp, and the build would not see the edit.
file(READ "${tree}/solutions/99_throwaway/throwaway.cpp" solved)
file(WRITE "${tree}/exercises/99_throwaway/throwaway.cpp" "${solved}")
run_step("headwise grade 99 on the solution" ${headwise} grade 99)
require_success("headwise grade 99 failed on the solution")
message(STATUS "add a lesson: lesson 99 was built, listed, run and graded from its files and one course.json entry")
