# Every Python script the suite runs skips cleanly (exit 77) on a machine
# whose python3 has no PyTorch, NumPy or Selenium (most Debian installs):
#   cmake -DBIN=build -DRUNNER=tests/pytorch/run.sh -DSOURCE=. -DDIR=folder -P without_python_deps.cmake
#
# The scripts are found from ctest itself (every test whose command is
# RUNNER), so a script added later is covered too. Each runs with a folder
# first on PYTHONPATH whose torch, numpy and selenium raise ImportError.
cmake_minimum_required(VERSION 3.25)

file(REMOVE_RECURSE "${DIR}")
foreach(module torch numpy selenium)
  file(WRITE "${DIR}/${module}.py"
       "raise ImportError('${module} made unimportable by without_python_deps.cmake')\n")
endforeach()

execute_process(COMMAND ${CMAKE_CTEST_COMMAND} --show-only=json-v1
                WORKING_DIRECTORY "${BIN}" OUTPUT_VARIABLE json RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ctest --show-only failed (${rc})")
endif()
# Only the tests run through RUNNER are read as JSON, each alone: string(JSON)
# over the whole list, once per test, took 13 s. Each command's arguments are
# paths and names, without a "]"; every RUNNER in the list must be one found.
string(REGEX MATCHALL "\"command\"[ \n]*:[ \n]*\\[[^]]*\\],[ \n]*\"name\"[ \n]*:[ \n]*\"[^\"]*\""
       entries "${json}")
string(REGEX MATCHALL "\"${RUNNER}\"" runners "${json}")
list(LENGTH runners expected)
set(found 0)
set(ran 0)
set(bad "")
foreach(entry IN LISTS entries)
  string(JSON n ERROR_VARIABLE no_command LENGTH "{${entry}}" command)
  if(no_command OR n LESS 2)
    continue()
  endif()
  string(JSON exe GET "{${entry}}" command 0)
  if(NOT exe STREQUAL RUNNER)
    continue()
  endif()
  math(EXPR found "${found} + 1")
  string(JSON name GET "{${entry}}" name)
  set(command "")
  math(EXPR lastarg "${n} - 1")
  foreach(a RANGE ${lastarg})
    string(JSON arg GET "{${entry}}" command ${a})
    list(APPEND command "${arg}")
  endforeach()
  # Each command, its arguments joined by "|". side_by_side.py runs several
  # lessons/pytorch/NN_stage.py in one Python; a student runs each alone, so
  # each is also tried alone.
  list(JOIN command "|" joined)
  set(commands "${joined}")
  list(GET command 1 script)
  if(script MATCHES "side_by_side.py$")
    list(SUBLIST command 3 -1 lessons)
    foreach(lesson IN LISTS lessons)
      list(APPEND commands "${RUNNER}|${SOURCE}/lessons/pytorch/${lesson}.py|${DIR}")
    endforeach()
  endif()
  foreach(c IN LISTS commands)
    string(REPLACE "|" ";" c "${c}")
    execute_process(COMMAND ${CMAKE_COMMAND} -E env "PYTHONPATH=${DIR}" ${c}
                    WORKING_DIRECTORY "${DIR}" OUTPUT_VARIABLE out ERROR_VARIABLE err
                    RESULT_VARIABLE rc)
    math(EXPR ran "${ran} + 1")
    if(NOT rc EQUAL 77)
      list(GET c 1 what)
      string(APPEND bad "${name}: ${what}: exit ${rc}, not 77 (skipped)\n${out}${err}\n")
    endif()
  endforeach()
endforeach()
if(NOT found EQUAL expected)
  message(FATAL_ERROR "ctest lists ${expected} commands run through ${RUNNER}, this read ${found}")
endif()
if(ran LESS 10)
  message(FATAL_ERROR "found only ${ran} tests run through ${RUNNER}; expected the side-by-side "
                      "scripts and the PyTorch checks")
endif()
if(NOT bad STREQUAL "")
  message(FATAL_ERROR "without PyTorch these do not skip:\n${bad}")
endif()
message(STATUS "${ran} Python scripts skip cleanly without PyTorch, NumPy and Selenium")
