# Is workbook/NAME.cpp still the shipped stub? The as-shipped tests build the
# stubs kept in tests/workbook/shipped/ and never a student's file, so that a
# class's checkout, solutions committed or not, passes the suite; this test
# keeps the two copies the same wherever the workbook is untouched:
#   cmake -DWORKBOOK=workbook -DSHIPPED=tests/workbook/shipped -DNAME=05_softmax
#         -P tests/workbook/same_as_shipped.cmake
# The same bytes: passes. Different: a student's work (or a stub changed in one
# copy only): one line, and the test is skipped (SKIP_REGULAR_EXPRESSION), except
# with MHA_WORKBOOK_AS_SHIPPED=1 in the environment (.ci/run, on a clean clone of
# main, where the workbook must be as shipped), where it fails.
cmake_minimum_required(VERSION 3.25)
set(file "${WORKBOOK}/${NAME}.cpp")
set(stub "${SHIPPED}/${NAME}.cpp")
file(READ "${stub}" want)
set(got "")
if(EXISTS "${file}")
  file(READ "${file}" got)
endif()
if(got STREQUAL want)
  message(STATUS "${NAME}.cpp is the shipped stub")
elseif("$ENV{MHA_WORKBOOK_AS_SHIPPED}" STREQUAL "1")
  message(FATAL_ERROR "${file} differs from ${stub}: a stub changed in one copy "
                      "only? (MHA_WORKBOOK_AS_SHIPPED=1: they must be the same)")
else()
  message(STATUS "${NAME}.cpp differs from the shipped stub (a student's work): "
                 "not compared; the as-shipped test checks ${stub}")
endif()
