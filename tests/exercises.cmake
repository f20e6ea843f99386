# Every exercise on a lesson's page can be checked by running something:
# each "Check: `build/...`" command on lesson LESSON's page in
# docs/pages/lessons.dox runs here from the build folder BIN and must exit 0,
# or the code its "(exits N)" names; and the page has two or three exercises.
# One test per lesson, so that they run side by side; a command that two
# exercises share runs once.
#
# The numbers in an exercise (its question and its answer) are true for the
# run it names: a number quoted from a run is written \printed{...} (a Doxygen
# alias, docs/Doxyfile.in) and must appear in what the Check: command printed,
# line breaks and runs of spaces read as one space. Any other decimal number
# must be worked out where it stands ("= 0.153"), and no training step past 9
# is named by hand: a number typed from an earlier run goes stale. Code in backticks and
# formulas are not read.
# With -DRUNS=folder, the lesson alone and the lesson with --tiny alone are
# not run again: their output is read from RUNS/LESSON.default.txt and
# RUNS/LESSON.tiny.txt, saved by the tests lesson.LESSON.default and .tiny
# (check_lesson --save: "exit N", then stdout and stderr) in the same ctest run.
#   cmake -DPAGES=docs/pages/lessons.dox -DBIN=build -DLESSON=05_softmax -P exercises.cmake
cmake_minimum_required(VERSION 3.25)
file(READ "${PAGES}" text)
string(SUBSTRING "${LESSON}" 0 2 nn)
string(FIND "${text}" "\\page lesson${nn} " at)
if(at EQUAL -1)
  message(FATAL_ERROR "no page for lesson ${LESSON}")
endif()
string(SUBSTRING "${text}" ${at} -1 page)
string(FIND "${page}" "*/" end)
string(SUBSTRING "${page}" 0 ${end} page)
string(REGEX MATCHALL "Check: `" mine "${page}")
list(LENGTH mine k)
if(k LESS 2 OR k GREATER 3)
  message(FATAL_ERROR "lesson ${LESSON}'s page has ${k} exercises, not 2 or 3")
endif()
set(stdin "${BIN}/exercises.${LESSON}.stdin")
file(WRITE "${stdin}" "")
set(n 0)
set(quoted 0)
set(rest "${page}")
while(TRUE)
  string(FIND "${rest}" "Check: `build/" at)
  if(at EQUAL -1)
    break()
  endif()
  # The exercise: its question's line, through the end of its answer.
  string(SUBSTRING "${rest}" 0 ${at} before)
  string(FIND "${before}" "\n" start REVERSE)
  math(EXPR start "${start} + 1")
  string(SUBSTRING "${rest}" ${at} -1 from_check)
  string(FIND "${from_check}" "\\htmlonly</details>" end)
  if(end EQUAL -1)
    string(FIND "${from_check}" "\n" end)
  endif()
  math(EXPR length "${at} - ${start} + ${end}")
  string(SUBSTRING "${rest}" ${start} ${length} exercise)
  string(SUBSTRING "${from_check}" ${end} -1 rest)
  math(EXPR n "${n} + 1")

  string(REGEX MATCH "Check: `build/([^`]+)`( \\(exits ([0-9]+)\\))?" check "${exercise}")
  set(command_line "${CMAKE_MATCH_1}")
  set(want 0)
  if(NOT "${CMAKE_MATCH_3}" STREQUAL "")
    set(want ${CMAKE_MATCH_3})
  endif()
  string(MD5 key "${command_line}")
  set(saved "")
  if(DEFINED RUNS AND command_line STREQUAL "lessons/${LESSON}")
    set(saved "${RUNS}/${LESSON}.default.txt")
  elseif(DEFINED RUNS AND command_line STREQUAL "lessons/${LESSON} --tiny")
    set(saved "${RUNS}/${LESSON}.tiny.txt")
  endif()
  if(DEFINED ran_${key})  # run once for every exercise that names it
    set(out "${out_${key}}")
    set(err "${err_${key}}")
    set(rc "${rc_${key}}")
  elseif(NOT saved STREQUAL "" AND EXISTS "${saved}")
    file(READ "${saved}" out)
    string(REGEX MATCH "^exit ([0-9]+)\n" head "${out}")
    if(head STREQUAL "")
      message(FATAL_ERROR "${saved}: no 'exit N' line: rerun lesson.${LESSON}'s tests")
    endif()
    set(rc ${CMAKE_MATCH_1})
    string(LENGTH "${head}" skip)
    string(SUBSTRING "${out}" ${skip} -1 out)
    set(err "")
    set(ran_${key} 1)
    set(out_${key} "${out}")
    set(err_${key} "")
    set(rc_${key} "${rc}")
    message(STATUS "`build/${command_line}`: read from its run in ${saved}")
  else()
    separate_arguments(command UNIX_COMMAND "${BIN}/${command_line}")
    execute_process(COMMAND ${command} INPUT_FILE "${stdin}"
                    OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
    set(ran_${key} 1)
    set(out_${key} "${out}")
    set(err_${key} "${err}")
    set(rc_${key} "${rc}")
  endif()
  if(NOT rc EQUAL want)
    message(FATAL_ERROR "${check}: exit ${rc}, the page says ${want}\n${out}${err}")
  endif()

  # Each \printed{...} is in what the command printed.
  string(REGEX REPLACE "[ \t\r\n]+" " " printed "${out}${err}")
  set(left "${exercise}")
  while(TRUE)
    string(FIND "${left}" "\\printed{" p)
    if(p EQUAL -1)
      break()
    endif()
    math(EXPR p "${p} + 9")
    string(SUBSTRING "${left}" ${p} -1 left)
    string(FIND "${left}" "}" close)
    string(SUBSTRING "${left}" 0 ${close} quote)
    string(REGEX REPLACE "[ \t\r\n]+" " " quote "${quote}")
    string(FIND "${printed}" "${quote}" found)
    if(found EQUAL -1)
      message(FATAL_ERROR "'${quote}' is quoted from `build/${command_line}`, "
                          "which did not print it:\n${out}${err}")
    endif()
    math(EXPR quoted "${quoted} + 1")
  endwhile()

  # No other number typed from a run: a decimal not worked out ("= 0.153"),
  # or a step.
  string(REGEX REPLACE "\\\\printed{[^}]*}" "" prose "${exercise}")
  string(REGEX REPLACE "`[^`]*`" "" prose "${prose}")
  string(REGEX REPLACE "\\\\f\\$[^$]*\\\\f\\$" "" prose "${prose}")
  string(REGEX REPLACE "= -?[0-9][0-9.]*(e[-+]?[0-9]+)?" "=" prose "${prose}")
  string(REGEX MATCH "[0-9]\\.[0-9]+|[0-9]e-[0-9]+|step [0-9][0-9]+" typed "${prose}")
  if(NOT typed STREQUAL "")
    message(FATAL_ERROR "'${typed}' in an exercise is typed by hand: quote it as "
                        "\\printed{...} from what `build/${command_line}` prints, "
                        "or work it out (= ...):\n${exercise}")
  endif()
endwhile()
message(STATUS "lesson ${LESSON}: ${n} exercise checks ran, ${quoted} quoted numbers "
               "found in their output")
