# cmake/HeadwiseLibraryFrom.cmake -- what another build tree compiled, linked here in place of src/
# (HEADWISE_LIBRARY_FROM: that tree's headwise-library.cmake, which the top-level CMakeLists.txt
# exports in every build): the library, the grading tool, Catch2's session and the graders' support.
#
# tests/course/add_a_lesson.cmake configures a copy of the repository with a lesson added, to prove
# that a lesson is its files plus one course.json entry. Adding a lesson changes none of those
# files, so the copy links the build that runs the test instead of compiling them again; it
# compiles its precompiled headers, the new lesson and its grader (and, for the lessons and graders
# that name them, the CPU emulator and kernels). Included from the top-level CMakeLists.txt: the
# imported targets are seen by lessons/ and tests/ below it.

find_package(Catch2 2.13 REQUIRED)  # named by Catch2's session and the graders' support
include("${HEADWISE_LIBRARY_FROM}")
foreach(part base fast reference inference io model train core lesson gradekit)
  add_library(headwise::${part} ALIAS headwise_built::headwise_${part})
endforeach()
foreach(name catch_session grade_support grade_main)
  add_library(headwise_${name} ALIAS headwise_built::headwise_${name})
endforeach()
add_executable(headwise_gradetool ALIAS headwise_built::headwise_gradetool)

headwise_add_pch(headwise_pch)  # for bench/, configured but not built here
headwise_add_pch(headwise_lesson_pch OPTIONS ${HEADWISE_LIGHT_OPTIMIZE})  # the lessons' (src/CMakeLists.txt)
add_subdirectory(src/emulator)
add_subdirectory(src/kernels)
