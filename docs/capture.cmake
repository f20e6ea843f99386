# Runs PROGRAM with ARGS and writes what it printed to OUT; fails when the
# program fails, so that the docs never show a failed run.
separate_arguments(args UNIX_COMMAND "${ARGS}")
execute_process(COMMAND ${PROGRAM} ${args} OUTPUT_VARIABLE out ERROR_VARIABLE err
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} ${ARGS} failed (${rc}):\n${out}${err}")
endif()
# The page shows what the lesson taught, not where the build put its pictures:
# the "  wrote DIR/name.svg" lines (--svg's) go, the pictures are on the page.
# Twice: two such lines in a row share the newline between them.
string(REGEX REPLACE "(^|\n)  wrote [^\n]*\\.svg(\n|$)" "\\1" out "${out}")
string(REGEX REPLACE "(^|\n)  wrote [^\n]*\\.svg(\n|$)" "\\1" out "${out}")
file(WRITE ${OUT} "${out}")
