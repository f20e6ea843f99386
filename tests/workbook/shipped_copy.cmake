# A class's checkout, where a student has solved exercise 05, leaves the
# as-shipped tests reading the shipped file: workbook/check/shipped.cmake run
# on copies of the workbook.
#   cmake -DSOURCE=. -DSOLVED=tests/workbook/solved/05_softmax.cpp -DDIR=folder
#         [-DGIT=/usr/bin/git] -P tests/workbook/shipped_copy.cmake
# 1. a git checkout: the solution written over the file, uncommitted: the copy
#    is the committed stub; 2. the same after `git add` (staged, not
#    committed): still the stub; 3. no git (a tarball as unpacked): the file.
cmake_minimum_required(VERSION 3.25)
set(name 05_softmax)
set(script "${SOURCE}/workbook/check/shipped.cmake")
file(REMOVE_RECURSE "${DIR}")
file(READ "${SOURCE}/workbook/${name}.cpp" stub)
file(READ "${SOLVED}" solved)
if(stub STREQUAL solved)
  message(FATAL_ERROR "${SOLVED} is the shipped file itself")
endif()

function(copy_of source out want what)
  execute_process(COMMAND ${CMAKE_COMMAND} -DSOURCE=${source} -DOUT=${out} -DNAMES=${name}
                          -DGIT=${ARGN} -P ${script} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what}: shipped.cmake failed (${rc})")
  endif()
  file(READ "${out}/${name}.cpp" got)
  if(NOT got STREQUAL want)
    message(FATAL_ERROR "${what}: ${out}/${name}.cpp is not the shipped file:\n${got}")
  endif()
  message(STATUS "${what}: the shipped file")
endfunction()

if(GIT)
  set(repo "${DIR}/checkout")
  file(WRITE "${repo}/workbook/${name}.cpp" "${stub}")
  set(g ${GIT} -c user.name=test -c user.email=test@example.com)
  execute_process(COMMAND ${GIT} init -q . WORKING_DIRECTORY "${repo}")
  execute_process(COMMAND ${g} add workbook WORKING_DIRECTORY "${repo}")
  execute_process(COMMAND ${g} commit -q -m shipped WORKING_DIRECTORY "${repo}"
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "git commit in ${repo} failed (${rc})")
  endif()
  file(WRITE "${repo}/workbook/${name}.cpp" "${solved}")
  copy_of("${repo}" "${DIR}/out1" "${stub}" "solved, not committed" ${GIT})
  execute_process(COMMAND ${g} add workbook WORKING_DIRECTORY "${repo}")
  copy_of("${repo}" "${DIR}/out2" "${stub}" "solved and staged" ${GIT})
else()
  message(STATUS "no git: the checkout cases are not run")
endif()
file(WRITE "${DIR}/tarball/workbook/${name}.cpp" "${stub}")
copy_of("${DIR}/tarball" "${DIR}/out3" "${stub}" "a tarball, no git")
