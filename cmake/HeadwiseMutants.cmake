# cmake/HeadwiseMutants.cmake -- the grader's search for the learner's own edit (tests/grade/search.hpp).
#
#   headwise_add_mutants(<id> <dir>)   (called by headwise_add_exercise, whose variables it reads)
#
# With tests/grade/mutants/<id>.mutants (the variants' data, gradekit/mutants.hpp) it makes:
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
# and headwise_add_search_meta_tests(<id> <sources var>) makes, in the exercise's meta grader:
#   subject search_<key>               a meta-test per learner-style mistake written by hand for
#                                      the search (tests/grade/mutants/hand/<id>_<key>.mistake,
#                                      checked like tests/grade/learner_mistakes/: where the search
#                                      names the edit, an "expect-shown:" line says which; a mistake
#                                      of two edits says "expect_not: behaves exactly like")
# Without the data file (or for an exercise of several .cpp files), an empty library: no search.
function(headwise_add_mutants id dir)
  set(data "${HEADWISE_GRADE_DIR}/mutants/${id}.mutants")
  file(GLOB present CONFIGURE_DEPENDS "${HEADWISE_GRADE_DIR}/mutants/${id}.mutants")
  if(NOT present OR NOT source_count EQUAL 1)
    add_library(headwise_grade_${id}_mutants INTERFACE)
    return()
  endif()
  set(solution "${solution_dir}/${first_source}")
  foreach(kind grade all)
    if(kind STREQUAL "all")
      set(target headwise_mutants_${id}_all)
      set(flag --all)
    else()
      set(target headwise_grade_${id}_mutants)
      set(flag "")
    endif()
    set(out "${gen}/mutants/${id}_${kind}.cpp")
    add_custom_command(OUTPUT "${out}"
      COMMAND headwise_gradetool mutants schemata ${id} ${solution} ${dir}.hpp ${data} ${out} ${flag}
      DEPENDS "${data}" "${solution}" headwise_gradetool
      COMMENT "Making the search's variants of ${id} (${kind})")
    # The graders' schemata is built by `all`: it depends on the solution and the data only, never
    # on the learner's code, and compiling it (~25 s on 2 loaded cores for ex01's 380 variants)
    # would otherwise fall on the learner's first grade. The --all one is for the script only.
    if(kind STREQUAL "all")
      add_library(${target} OBJECT EXCLUDE_FROM_ALL "${out}")
    else()
      add_library(${target} OBJECT "${out}")
    endif()
    set_target_properties(${target} PROPERTIES HEADWISE_LEARNER_CODE ON)
    target_include_directories(${target} PRIVATE ${solution_includes})
    target_link_libraries(${target} PRIVATE headwise_grade_deps)
    # Compiled exactly like the subject: a variant and a learner's identical code give identical numbers.
    target_compile_options(${target} PRIVATE ${subject_options} -w)
    target_precompile_headers(${target} REUSE_FROM ${subject_pch})
  endforeach()
  _headwise_grader(headwise_mutants_${id}_fingerprint ${id} SOURCES "${solution}" "${gen}/subject.cpp" INCLUDES ${solution_includes}
    MUTANTS headwise_mutants_${id}_all)
  add_test(NAME "the search's variants of ${id} are up to date with solutions/${dir} and its grader"
    COMMAND headwise_gradetool mutants check ${solution} ${HEADWISE_GRADE_DIR}/${dir}.cpp ${data})
  set_tests_properties("the search's variants of ${id} are up to date with solutions/${dir} and its grader"
    PROPERTIES LABELS "meta")
endfunction()

# The search's hand-written single edits of <id>, each a subject of the exercise's meta grader
# (appended to <out_var>, a list of its sources) with its meta-test; none without the data file.
function(headwise_add_search_meta_tests id out_var)
  if(NOT EXISTS "${HEADWISE_GRADE_DIR}/mutants/${id}.mutants" OR NOT source_count EQUAL 1)
    return()
  endif()
  set(solution "${solution_dir}/${first_source}")
  file(GLOB hand CONFIGURE_DEPENDS "${HEADWISE_GRADE_DIR}/mutants/hand/${id}_*.mistake")
  list(SORT hand)
  foreach(spec IN LISTS hand)
    get_filename_component(stem "${spec}" NAME_WE)
    string(REGEX REPLACE "^${id}_" "" key "${stem}")
    set(patched "${gen}/search/${stem}.cpp")
    add_custom_command(OUTPUT "${patched}"
      COMMAND headwise_gradetool patch ${spec} ${solution} ${patched}
      DEPENDS "${spec}" "${solution}" headwise_gradetool
      COMMENT "Making the hand-written single edit ${stem}")
    _headwise_meta_subject(${id} ${dir} search_${key} "${patched}" ${out_var})
    set(timeout 10)
    if(DEFINED HEADWISE_GRADE_TIMEOUT_${id})
      set(timeout ${HEADWISE_GRADE_TIMEOUT_${id}})
    endif()
    _headwise_meta_test(${id} search_${key} "the grader's search on ${id}'s hand-written edit '${key}'" "${patched}"
      -DEXPECT=learner -DSUBJECT=${spec} -DTIMEOUT=${timeout})
  endforeach()
  set(${out_var} ${${out_var}} PARENT_SCOPE)
endfunction()
