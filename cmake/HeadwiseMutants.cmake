# cmake/HeadwiseMutants.cmake -- the grader's search for the learner's own edit (tests/grade/search.hpp).
#
#   headwise_add_mutants(<id>)   (called by headwise_add_exercise, after _headwise_exercise_settings)
#
# With tests/grade/<id>/search/variants.mutants (the variants' data, gradekit/mutants.hpp) it makes:
#   headwise_grade_<id>_mutants        the schemata: the solution with its single-edit variants
#                                      marked ok behind one runtime selector, and their data;
#                                      compiled once, like the catalogue (own namespace, sanitized
#                                      like the subject), and linked into every grader of <id>
#   headwise_mutants_<id>_all          the same with every variant that compiles, and
#   headwise_mutants_<id>_fingerprint  the solution's grader linked with it: what
#                                      scripts/regenerate-mutants builds and runs to take the
#                                      fingerprints
#   a test (label meta)                the data is up to date with the solution and the grader's
#                                      cases (else: run scripts/regenerate-mutants <id>)
# The search's hand-written edits beside the data (tests/grade/<id>/search/*.mistake) are meta-tests
# of the exercise's meta grader (_headwise_spec_tests, HeadwiseExercises.cmake): where the search
# names the edit, an "expect-shown:" line says which; a mistake of two edits says
# "expect-not: behaves exactly like".
# Without the data file (or for an exercise of several .cpp files), an empty library: no search.
function(headwise_add_mutants id)
  _headwise_exercise_get(${id} dir DIR gen GEN sources SOURCES solution SOLUTION)
  set(data "${PROJECT_SOURCE_DIR}/tests/grade/${id}/search/variants.mutants")
  file(GLOB present CONFIGURE_DEPENDS "${data}")
  list(LENGTH sources source_count)
  if(NOT present OR NOT source_count EQUAL 1)
    add_library(headwise_grade_${id}_mutants INTERFACE)
    return()
  endif()
  foreach(kind grade all)
    set(out "${gen}/mutants/${id}_${kind}.cpp")
    set(flag "")
    if(kind STREQUAL "all")
      set(flag --all)
    endif()
    add_custom_command(OUTPUT "${out}"
      COMMAND headwise_gradetool mutants schemata ${id} ${solution} ${dir}.hpp ${data} ${out} ${flag}
      DEPENDS "${data}" "${solution}" headwise_gradetool
      COMMENT "Making the search's variants of ${id} (${kind})")
  endforeach()
  # The graders' schemata is built by `all`: it depends on the solution and the data only, never
  # on the learner's code, and compiling it (~25 s on 2 loaded cores for ex01's 380 variants)
  # would otherwise fall on the learner's first grade. The --all one is for the script only.
  # Compiled exactly like the subject: a variant and a learner's identical code give identical numbers.
  _headwise_subject_objects(headwise_grade_${id}_mutants ${id} "${gen}/mutants/${id}_grade.cpp")
  _headwise_subject_objects(headwise_mutants_${id}_all ${id} EXCLUDE_FROM_ALL "${gen}/mutants/${id}_all.cpp")
  _headwise_grader(headwise_mutants_${id}_fingerprint ${id} SOURCES "${solution}" "${gen}/subject.cpp"
    MUTANTS headwise_mutants_${id}_all)
  set(name "the search's variants of ${id} are up to date with solutions/${dir} and its grader")
  add_test(NAME "${name}" COMMAND headwise_gradetool mutants check ${solution}
    ${PROJECT_SOURCE_DIR}/tests/grade/${id}/${dir}.cpp ${data})
  set_tests_properties("${name}" PROPERTIES LABELS "meta")
endfunction()
