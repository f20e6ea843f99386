# The exercises as shipped, for the tests that check each one fails its check
# (there is work to do): a class's checkout, where students have written the
# bodies in workbook/, must still pass the suite, so those tests never read
# the working tree's files. Run by the target workbook_shipped:
#   cmake -DSOURCE=. -DOUT=build/workbook/shipped -DNAMES=01_linear,05_softmax
#         [-DGIT=/usr/bin/git] -P workbook/check/shipped.cmake
# Writes OUT/NAME.cpp for each NAME: in a git checkout, workbook/NAME.cpp as
# committed at HEAD (`git show HEAD:workbook/NAME.cpp`: a student's edits,
# until committed, are not read); where there is no git or the file is not in
# one (a release tarball), the file as it is, which is then as shipped. A file
# is rewritten only when its text changed, so that nothing rebuilds needlessly.
cmake_minimum_required(VERSION 3.25)
string(REPLACE "," ";" names "${NAMES}")
file(MAKE_DIRECTORY "${OUT}")
foreach(name IN LISTS names)
  set(rc 1)
  if(GIT)
    execute_process(COMMAND ${GIT} show HEAD:./${name}.cpp
                    WORKING_DIRECTORY "${SOURCE}/workbook"
                    OUTPUT_VARIABLE text ERROR_QUIET RESULT_VARIABLE rc)
  endif()
  if(NOT rc EQUAL 0)
    file(READ "${SOURCE}/workbook/${name}.cpp" text)
  endif()
  set(old "")
  if(EXISTS "${OUT}/${name}.cpp")
    file(READ "${OUT}/${name}.cpp" old)
  endif()
  if(NOT old STREQUAL text)
    file(WRITE "${OUT}/${name}.cpp" "${text}")
  endif()
endforeach()
