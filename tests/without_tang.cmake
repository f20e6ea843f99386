# The poem lessons on a machine without fortunes-zh, with the package still
# installed: MHA_TANG300 names a file that does not exist, read instead of
# /usr/share/games/fortunes/tang300. Every run (at the defaults, --tiny, and
# lesson 24's --train) prints its banner and one line "skipped: needs FILE
# (fortunes-zh)", nothing more, and exits 77, which ctest counts as skipped.
#   cmake -DCHECK=check_lesson -DBIN=build/lessons -DWORK=dir -P without_tang.cmake
file(REMOVE_RECURSE "${WORK}")
set(ENV{MHA_TANG300} "${WORK}/no_tang300")
foreach(run "23_tang_poems" "23_tang_poems --tiny" "24_poem_model" "24_poem_model --tiny"
            "24_poem_model --train" "25_poem_heads" "25_poem_heads --tiny")
  separate_arguments(args UNIX_COMMAND "${run}")
  list(POP_FRONT args lesson)
  execute_process(COMMAND ${CHECK} --exit 77 --max-lines 3
                          --expect "skipped: needs ${WORK}/no_tang300 (fortunes-zh)"
                          -- ${BIN}/${lesson} ${args}
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    string(SUBSTRING "${out}" 0 600 start)
    message(FATAL_ERROR "'${run}' without the corpus: ${err}it printed:\n${start}")
  endif()
endforeach()
message(STATUS "7 runs skipped cleanly")
