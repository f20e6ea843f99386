# scripts/test.sh with a filter that selects no test must fail, saying so:
#   cmake -DTEST_SH=scripts/test.sh -DBIN=build -P empty_filter.cmake
execute_process(COMMAND ${CMAKE_COMMAND} -E env MHA_BUILD_DIR=${BIN}
                        ${TEST_SH} -R "^no_such_test$"
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(rc EQUAL 0)
  message(FATAL_ERROR "scripts/test.sh -R '^no_such_test$' passed:\n${out}${err}")
endif()
if(NOT "${out}${err}" MATCHES "No tests were found")
  message(FATAL_ERROR "scripts/test.sh failed (${rc}), but not for want of tests:\n${out}${err}")
endif()
# A filter that selects only long tests fails too, naming --all.
execute_process(COMMAND ${CMAKE_COMMAND} -E env MHA_BUILD_DIR=${BIN}
                        ${TEST_SH} -R "^lesson\\.22_induction_evidence\\.default$"
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(rc EQUAL 0 OR NOT "${out}${err}" MATCHES "only long tests match; run scripts/test.sh --all")
  message(FATAL_ERROR "scripts/test.sh -R on a long test alone (exit ${rc}):\n${out}${err}")
endif()
