# Every exercise on a lesson's page can be checked by running something:
# each "Check: `build/...`" command on lesson LESSON's page in
# docs/pages/lessons.dox runs here from the build folder BIN and must exit 0,
# or the code its "(exits N)" names; and the page has two or three exercises.
# One test per lesson, so that they run side by side.
#   cmake -DPAGES=docs/pages/lessons.dox -DBIN=build -DLESSON=05_softmax -P exercises.cmake
cmake_minimum_required(VERSION 3.25)
file(READ "${PAGES}" text)
string(SUBSTRING "${LESSON}" 0 2 nn)
string(FIND "${text}" "\\page lesson${nn} " at)
if(at EQUAL -1)
  message(FATAL_ERROR "no page for lesson ${LESSON}")
endif()
string(SUBSTRING "${text}" ${at} -1 rest)
string(FIND "${rest}" "*/" end)
string(SUBSTRING "${rest}" 0 ${end} page)
string(REGEX MATCHALL "Check: `build/[^`]+`( \\(exits [0-9]+\\))?" checks "${page}")
list(LENGTH checks n)
if(n LESS 2 OR n GREATER 3)
  message(FATAL_ERROR "lesson ${LESSON}'s page has ${n} exercises, not 2 or 3")
endif()
set(stdin "${BIN}/exercises.${LESSON}.stdin")
file(WRITE "${stdin}" "")
set(done "")
foreach(check IN LISTS checks)
  if(check IN_LIST done)  # the same command for two exercises runs once
    continue()
  endif()
  list(APPEND done "${check}")
  string(REGEX MATCH "`build/([^`]+)`" _ "${check}")
  separate_arguments(command UNIX_COMMAND "${BIN}/${CMAKE_MATCH_1}")
  set(want 0)
  if(check MATCHES "\\(exits ([0-9]+)\\)")
    set(want ${CMAKE_MATCH_1})
  endif()
  execute_process(COMMAND ${command} INPUT_FILE "${stdin}"
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL want)
    message(FATAL_ERROR "${check}: exit ${rc}, the page says ${want}\n${out}${err}")
  endif()
endforeach()
message(STATUS "lesson ${LESSON}: ${n} exercise checks ran")
