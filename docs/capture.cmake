# Runs PROGRAM with ARGS and writes what it printed to OUT; fails when the
# program fails, so that the docs never show a failed run.
separate_arguments(args UNIX_COMMAND "${ARGS}")
execute_process(COMMAND ${PROGRAM} ${args} OUTPUT_VARIABLE out ERROR_VARIABLE err
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} ${ARGS} failed (${rc}):\n${out}${err}")
endif()
# The SVG lines name the build folder; keep the page independent of it.
string(REGEX REPLACE "wrote [^\n]*/([a-z0-9_]+\\.svg)" "wrote \\1" out "${out}")
file(WRITE ${OUT} "${out}")
