# cmake/HeadwiseCourse.cmake -- course.json, read once at configure time: the one list of lessons
# and exercises that the build, the runner and the tests share.
#
# Sets, in the including scope:
#   HEADWISE_LESSONS                 lesson names in course order ("01_single_head" ...)
#   HEADWISE_LESSON_<name>_LIBS      extra libraries the lesson links (course.json "libs"), may be empty
#   HEADWISE_LESSON_<name>_NEEDS_MODEL  ON when it runs the cached trained model ("needs_model")
#   HEADWISE_LESSON_<name>_DRAWS_AT_DEFAULTS  ON when it draws its figures at its defaults ("figures": [])
#   HEADWISE_EXERCISES               exercise ids in course order ("ex01" ...)
#   HEADWISE_EXERCISE_<id>_DIR       its directory under exercises/ and solutions/
#   HEADWISE_EXERCISE_<id>_LIBS      extra libraries its grader links (course.json "libs"), may be empty
#   HEADWISE_EXERCISE_<id>_TIMEOUT   seconds a learner-style mistake's grade may take ("grading": {"timeout"}), or ""
#   HEADWISE_EXERCISE_<id>_OPTIONS   options its subject compiles with beyond every exercise's ("grading": {"options"})
#   HEADWISE_EXERCISE_<id>_UNSANITIZED  ON when its subject compiles without the sanitizers ("grading": {"sanitize": false})
#
# Each entry is checked against the files it names, so a typo in course.json fails the configure
# with the entry and the missing file, not later with a linker error.

set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/course.json")
file(READ "${PROJECT_SOURCE_DIR}/course.json" _headwise_course)

# _headwise_course_get(<out> <json> <path...>): a member of course.json, or "" when it is absent.
function(_headwise_course_get out json)
  string(JSON value ERROR_VARIABLE err GET "${json}" ${ARGN})
  if(err)
    set(value "")
  endif()
  set(${out} "${value}" PARENT_SCOPE)
endfunction()

# _headwise_course_strings(<out> <json> <path...>): a JSON array of strings as a CMake list.
function(_headwise_course_strings out json)
  set(items "")
  string(JSON count ERROR_VARIABLE err LENGTH "${json}" ${ARGN})
  if(NOT err AND count GREATER 0)
    math(EXPR last "${count} - 1")
    foreach(i RANGE ${last})
      string(JSON item GET "${json}" ${ARGN} ${i})
      list(APPEND items "${item}")
    endforeach()
  endif()
  set(${out} "${items}" PARENT_SCOPE)
endfunction()

function(_headwise_course_fail index message)
  message(FATAL_ERROR "course.json, lessons[${index}]: ${message}")
endfunction()

set(HEADWISE_LESSONS "")
set(HEADWISE_EXERCISES "")
string(JSON _headwise_count LENGTH "${_headwise_course}" lessons)
if(_headwise_count GREATER 0)
  math(EXPR _headwise_last "${_headwise_count} - 1")
  foreach(_i RANGE ${_headwise_last})
    _headwise_course_get(_name "${_headwise_course}" lessons ${_i} name)
    if(NOT _name MATCHES "^[0-9][0-9]_[a-z0-9_]+$")
      _headwise_course_fail(${_i} "\"name\" must look like 07_topic (two digits, an underscore, lower case), not '${_name}'")
    endif()
    if(NOT EXISTS "${PROJECT_SOURCE_DIR}/lessons/${_name}.cpp")
      _headwise_course_fail(${_i} "lessons/${_name}.cpp does not exist")
    endif()
    if(NOT EXISTS "${PROJECT_SOURCE_DIR}/tests/lessons/${_name}.expected")
      _headwise_course_fail(${_i} "tests/lessons/${_name}.expected (the shape lines its test checks) does not exist")
    endif()
    list(APPEND HEADWISE_LESSONS "${_name}")
    _headwise_course_strings(HEADWISE_LESSON_${_name}_LIBS "${_headwise_course}" lessons ${_i} libs)
    _headwise_course_get(HEADWISE_LESSON_${_name}_NEEDS_MODEL "${_headwise_course}" lessons ${_i} needs_model)
    string(JSON _figure_flags ERROR_VARIABLE _no_figures LENGTH "${_headwise_course}" lessons ${_i} figures)
    if(NOT _no_figures AND _figure_flags EQUAL 0)
      set(HEADWISE_LESSON_${_name}_DRAWS_AT_DEFAULTS ON)
    else()
      set(HEADWISE_LESSON_${_name}_DRAWS_AT_DEFAULTS OFF)
    endif()

    _headwise_course_get(_id "${_headwise_course}" lessons ${_i} exercise id)
    if(_id)
      _headwise_course_get(_dir "${_headwise_course}" lessons ${_i} exercise dir)
      foreach(_tree solutions exercises)
        if(NOT IS_DIRECTORY "${PROJECT_SOURCE_DIR}/${_tree}/${_dir}")
          _headwise_course_fail(${_i} "exercise ${_id}: ${_tree}/${_dir}/ does not exist")
        endif()
      endforeach()
      if(NOT EXISTS "${PROJECT_SOURCE_DIR}/tests/grade/${_id}/${_dir}.cpp")
        _headwise_course_fail(${_i} "exercise ${_id}: its grader tests/grade/${_id}/${_dir}.cpp does not exist")
      endif()
      list(APPEND HEADWISE_EXERCISES "${_id}")
      set(HEADWISE_EXERCISE_${_id}_DIR "${_dir}")
      _headwise_course_strings(HEADWISE_EXERCISE_${_id}_LIBS "${_headwise_course}" lessons ${_i} exercise libs)
      _headwise_course_get(HEADWISE_EXERCISE_${_id}_TIMEOUT "${_headwise_course}" lessons ${_i} exercise grading timeout)
      _headwise_course_strings(HEADWISE_EXERCISE_${_id}_OPTIONS "${_headwise_course}" lessons ${_i} exercise grading options)
      _headwise_course_get(_sanitize "${_headwise_course}" lessons ${_i} exercise grading sanitize)
      set(HEADWISE_EXERCISE_${_id}_UNSANITIZED OFF)
      if(_sanitize STREQUAL "OFF")
        set(HEADWISE_EXERCISE_${_id}_UNSANITIZED ON)
      endif()
    endif()
  endforeach()
endif()
unset(_headwise_course)
