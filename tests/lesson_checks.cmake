# Checks of the lessons' frame that need more than one run or a terminal:
#   cmake -DMODE=... -DLESSON=program [-DOTHER=program] -DDIR=folder -P lesson_checks.cmake
#
# MODE dump_names  LESSON and OTHER dump into one folder, each into its own
#                  subfolder: neither overwrites the other's score.npy, and
#                  masks are saved as bool.
# MODE dump_size   what LESSON --help says a default-size dump takes is what
#                  it writes (within 1% or 0.6 MB, the help's rounding).
#                  DUMP_ARGS (--steps 10) cut a training: the tensors shown
#                  and their sizes are the same, its closing checks may fail.
#                  With DUMPED (a folder LESSON --dump wrote at the default
#                  sizes, as the test lesson.NN.default does) nothing is run:
#                  DUMPED is weighed, then removed.
# MODE pause_tty   --pause on a terminal clears the screen before each section
#                  (ESC [H ESC [2J) and prints the lesson's title and sizes
#                  lines on top of each, and never clears when stdout is not a
#                  terminal.
# MODE claims_last LESSON prints its OK lines only after the section WHERE.
# MODE same_files  the FILES in DIR hold the same bytes.
# MODE timing_verdicts  every row of LESSON's (15_cost) timing table calls a
#                  way faster only when its middle runs lie apart from the
#                  other's, the ratio is that of the medians, and the closing
#                  count matches the rows. ARGS: the lesson's flags.
# MODE decode_flops  LESSON's (16_kv_cache) cost table at ARGS, d_model E:
#                  a cached step 8 E^2 + 4 T E, recomputing the causal forward
#                  8 T E^2 + 2 T (T + 1) E (only the scores a query may see),
#                  for T = 1 ... 2048, and said to be at B = 1.
# MODE first_frames  LESSON (19_heads_learn) draws the heads at the step S where
#                  a head's weight on the anti-diagonal first passes P, for
#                  P = 0.25, 0.50, 0.90: training is deterministic, so with
#                  --steps S it draws that frame and with --steps S-1 it says
#                  no head passed P (its closing checks may fail so early).
# MODE sooner      LESSON (19_heads_learn) with FIRST's flags passes 90% accuracy
#                  at an earlier step than with SECOND's: what lesson 19's
#                  exercises say of --lr 0.01 and of --heads 1.
#                  For both: with SAVED (the lesson's default run saved by
#                  check_lesson --save, as lesson.NN.default does), the run
#                  without flags is read from it, not run again.
# MODE seeds       LESSON with ARGS and --seed FIRST .. COUNT-1 (FIRST 0 unless
#                  given) passes all its self-checks (exit 0, no FAILED line) for
#                  at least NEED seeds: training that holds for most seeds, not
#                  only the one shown. With THREADS_SEED, that seed also runs with
#                  2 and 3 workers (MHA_THREADS; the others with 1), passes and
#                  prints the same as with 1, EXPECT included. With THREADS_ARGS
#                  (--steps 100: the workers split each step as in a full run)
#                  the seed's full run must print EXPECT and the comparison of
#                  1, 2 and 3 workers runs with those flags added, its closing
#                  checks allowed to fail (exit 1) so early, the same exit for all.
cmake_minimum_required(VERSION 3.25)

function(run_lesson out)
  execute_process(COMMAND ${ARGN} OUTPUT_VARIABLE o ERROR_VARIABLE e RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${ARGN} failed (${rc}):\n${o}${e}")
  endif()
  set(${out} "${o}" PARENT_SCOPE)
endfunction()

function(saved_run out)  # SAVED's output: "exit 0", then what the run printed
  file(READ "${SAVED}" o)
  if(NOT o MATCHES "^exit 0\n")
    message(FATAL_ERROR "${SAVED}: not a passing saved run: rerun its lesson.NN.default")
  endif()
  string(REGEX REPLACE "^exit 0\n" "" o "${o}")
  set(${out} "${o}" PARENT_SCOPE)
endfunction()

function(npy_dtype file out)  # the header is text after binary bytes
  file(STRINGS "${file}" head REGEX "'descr'" LIMIT_COUNT 1)
  string(REGEX MATCH "'descr': '([^']*)'" _ "${head}")
  set(${out} "${CMAKE_MATCH_1}" PARENT_SCOPE)
endfunction()

if(MODE STREQUAL "dump_names")
  file(REMOVE_RECURSE "${DIR}")
  run_lesson(o ${LESSON} --tiny --dump ${DIR})
  run_lesson(o ${OTHER} --tiny --dump ${DIR})
  get_filename_component(a ${LESSON} NAME)
  get_filename_component(b ${OTHER} NAME)
  foreach(f "${DIR}/${a}/score.npy" "${DIR}/${b}/score.npy" "${DIR}/${a}/mask.npy")
    if(NOT EXISTS "${f}")
      message(FATAL_ERROR "--dump did not write ${f}")
    endif()
  endforeach()
  file(SHA256 "${DIR}/${a}/score.npy" ha)
  file(SHA256 "${DIR}/${b}/score.npy" hb)
  if(ha STREQUAL hb)
    message(FATAL_ERROR "${a} and ${b} wrote the same score.npy")
  endif()
  npy_dtype("${DIR}/${a}/mask.npy" dtype)
  if(NOT dtype STREQUAL "|b1")
    message(FATAL_ERROR "${a}/mask.npy has dtype '${dtype}', not bool '|b1'")
  endif()
  npy_dtype("${DIR}/${a}/score.npy" dtype)
  if(NOT dtype STREQUAL "<f4")
    message(FATAL_ERROR "${a}/score.npy has dtype '${dtype}', not float32 '<f4'")
  endif()

elseif(MODE STREQUAL "dump_size")
  run_lesson(help ${LESSON} --help)
  if(DEFINED DUMPED)  # written by the default run
    set(DIR "${DUMPED}")
  else()
    file(REMOVE_RECURSE "${DIR}")
    separate_arguments(cut UNIX_COMMAND "${DUMP_ARGS}")
    if(help MATCHES "saves nothing")
      set(run ${LESSON} --tiny --dump ${DIR} ${cut})  # at any size: it has no dump() call
    else()
      set(run ${LESSON} --dump ${DIR} ${cut})
    endif()
    if(cut)
      execute_process(COMMAND ${run} OUTPUT_VARIABLE o ERROR_VARIABLE e RESULT_VARIABLE rc)
      if(NOT rc EQUAL 0 AND NOT rc EQUAL 1)  # 1: a check failed, so few steps in
        message(FATAL_ERROR "${run} failed (${rc}):\n${o}${e}")
      endif()
    else()
      run_lesson(o ${run})
    endif()
  endif()
  file(GLOB_RECURSE files "${DIR}/*")
  set(bytes 0)
  foreach(f IN LISTS files)
    file(SIZE "${f}" n)
    math(EXPR bytes "${bytes} + ${n}")
  endforeach()
  file(REMOVE_RECURSE "${DIR}")
  if(help MATCHES "saves nothing")
    if(NOT bytes EQUAL 0)
      message(FATAL_ERROR "--help says nothing is saved, but ${bytes} bytes were")
    endif()
  elseif(help MATCHES "\\(under 0.1 MB at the default sizes\\)")
    if(bytes EQUAL 0 OR bytes GREATER 100000)
      message(FATAL_ERROR "--help says under 0.1 MB, but ${bytes} bytes were saved")
    endif()
  elseif(help MATCHES "\\(([0-9.]+) MB at the default sizes\\)")
    set(said ${CMAKE_MATCH_1})
    # MB with one decimal, as fixed point in kB: CMake's math is integer.
    string(REPLACE "." ";" parts "${said}")
    list(GET parts 0 whole)
    list(LENGTH parts np)
    set(tenth 0)
    if(np GREATER 1)
      list(GET parts 1 tenth)
    endif()
    math(EXPR said_kb "${whole} * 1000 + ${tenth} * 100")
    math(EXPR got_kb "${bytes} / 1000")
    math(EXPR diff "${got_kb} - ${said_kb}")
    if(diff LESS 0)
      math(EXPR diff "-${diff}")
    endif()
    math(EXPR allowed "${said_kb} / 100")
    if(allowed LESS 600)
      set(allowed 600)
    endif()
    if(diff GREATER allowed)
      message(FATAL_ERROR "--help says ${said} MB, the dump took ${got_kb} kB")
    endif()
  else()
    message(FATAL_ERROR "--help does not say what --dump saves:\n${help}")
  endif()

elseif(MODE STREQUAL "pause_tty")
  # script(1) gives the lesson a terminal; Enter is answered from a file.
  # Containers and build chroots may have no pseudo-terminal to give.
  execute_process(COMMAND script -qec true /dev/null RESULT_VARIABLE rc
                  OUTPUT_VARIABLE o ERROR_VARIABLE e)
  if(NOT rc EQUAL 0)
    message(STATUS "skipped: no pseudo-terminal here for script(1) (${rc}: ${e})")
    return()
  endif()
  file(WRITE "${DIR}.enter" "\n\n\n\n\n\n\n\n\n\n")
  execute_process(COMMAND script -qec "${LESSON} --tiny --pause" /dev/null
                  INPUT_FILE "${DIR}.enter" OUTPUT_VARIABLE tty RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${LESSON} --tiny --pause on a terminal failed (${rc}):\n${tty}")
  endif()
  string(ASCII 27 esc)
  set(clear "${esc}[H${esc}[2J")
  string(FIND "${tty}" "${clear}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "--pause on a terminal did not clear the screen:\n${tty}")
  endif()
  # Every screen opens with the lesson's title and sizes lines.
  get_filename_component(name ${LESSON} NAME)
  set(screens 0)
  while(NOT at EQUAL -1)
    string(LENGTH "${clear}" n)
    math(EXPR at "${at} + ${n}")
    string(SUBSTRING "${tty}" ${at} -1 tty)
    string(FIND "${tty}" "${clear}" at)
    string(SUBSTRING "${tty}" 0 ${at} screen)
    math(EXPR screens "${screens} + 1")
    if(NOT screen MATCHES "^${name}: [^\n]*\n[\r]?sizes: batch B = 1, ")
      message(FATAL_ERROR "screen ${screens} of --pause does not open with the title and "
                          "sizes lines:\n${screen}")
    endif()
  endwhile()
  if(screens LESS 2)
    message(FATAL_ERROR "--pause on a terminal cleared ${screens} screen(s), not one per section")
  endif()
  execute_process(COMMAND ${LESSON} --tiny --pause INPUT_FILE "${DIR}.enter"
                  OUTPUT_VARIABLE piped RESULT_VARIABLE rc)
  string(FIND "${piped}" "${esc}[" at)
  if(NOT rc EQUAL 0 OR NOT at EQUAL -1)
    message(FATAL_ERROR "--pause into a pipe must not send escapes (exit ${rc}):\n${piped}")
  endif()

elseif(MODE STREQUAL "claims_last")
  run_lesson(o ${LESSON})
  string(FIND "${o}" "${WHERE}" section)
  string(FIND "${o}" "\nOK, " first_ok)
  if(section EQUAL -1 OR first_ok LESS section)
    message(FATAL_ERROR "an OK line comes before '${WHERE}':\n${o}")
  endif()

elseif(MODE STREQUAL "same_files")  # FILES, in DIR, hold the same bytes
  set(first "")
  foreach(f IN LISTS FILES)
    file(SHA256 "${DIR}/${f}" h)
    if(first STREQUAL "")
      set(first ${h})
      set(first_name ${f})
    elseif(NOT h STREQUAL first)
      message(FATAL_ERROR "${f} differs from ${first_name}")
    endif()
  endforeach()

elseif(MODE STREQUAL "seeds")
  separate_arguments(args UNIX_COMMAND "${ARGS}")
  if(NOT DEFINED FIRST)
    set(FIRST 0)
  endif()
  math(EXPR last "${COUNT} - 1")
  math(EXPR count "${COUNT} - ${FIRST}")
  set(passed 0)
  set(report "")
  foreach(seed RANGE ${FIRST} ${last})
    execute_process(COMMAND ${CMAKE_COMMAND} -E env MHA_THREADS=1 ${LESSON} ${args} --seed ${seed}
                    OUTPUT_VARIABLE o ERROR_VARIABLE e RESULT_VARIABLE rc)
    if(DEFINED THREADS_SEED AND seed EQUAL THREADS_SEED)
      if(NOT rc EQUAL 0)
        message(FATAL_ERROR "--seed ${seed}, MHA_THREADS=1: exit ${rc}\n${o}${e}")
      endif()
      string(FIND "${o}" "${EXPECT}" at)
      if(at EQUAL -1)
        message(FATAL_ERROR "--seed ${seed}: no '${EXPECT}', no training ran:\n${o}")
      endif()
      set(o1 "${o}")
      set(rc1 0)
      set(short "")
      if(DEFINED THREADS_ARGS)
        separate_arguments(short UNIX_COMMAND "${THREADS_ARGS}")
        execute_process(COMMAND ${CMAKE_COMMAND} -E env MHA_THREADS=1 ${LESSON} ${args}
                                --seed ${seed} ${short} OUTPUT_VARIABLE o1 RESULT_VARIABLE rc1)
        if(NOT rc1 EQUAL 0 AND NOT rc1 EQUAL 1)
          message(FATAL_ERROR "--seed ${seed} ${THREADS_ARGS}, MHA_THREADS=1: exit ${rc1}\n${o1}")
        endif()
      endif()
      foreach(n 2 3)
        execute_process(COMMAND ${CMAKE_COMMAND} -E env MHA_THREADS=${n} ${LESSON} ${args}
                                --seed ${seed} ${short} OUTPUT_VARIABLE on RESULT_VARIABLE rcn)
        if(NOT rcn EQUAL rc1)
          message(FATAL_ERROR "--seed ${seed} ${THREADS_ARGS}, MHA_THREADS=${n}: exit ${rcn}, "
                              "with 1 worker ${rc1}\n${on}")
        elseif(NOT on STREQUAL o1)
          message(FATAL_ERROR "--seed ${seed} ${THREADS_ARGS}: MHA_THREADS=${n} printed "
                              "something else than MHA_THREADS=1:\n${on}")
        endif()
      endforeach()
      string(APPEND report "--seed ${seed} ${THREADS_ARGS}: the same with 1, 2 and 3 workers\n")
    endif()
    string(REGEX MATCHALL "\n(OK|FAILED), [^\n]*" claims "${o}")
    string(FIND "${o}" "\nFAILED, " failed)
    if(rc EQUAL 0 AND failed EQUAL -1 AND claims)
      math(EXPR passed "${passed} + 1")
    endif()
    string(REPLACE ";" "" claims "${claims}")
    string(APPEND report "--seed ${seed}: exit ${rc}${claims}${e}\n")
  endforeach()
  message(STATUS "${passed} of ${count} seeds passed every check:\n${report}")
  if(passed LESS NEED)
    message(FATAL_ERROR "only ${passed} of ${count} seeds passed, ${NEED} needed")
  endif()

elseif(MODE STREQUAL "same_across_threads")  # ARGS give the same stdout with 1, 2, 3 workers
  separate_arguments(args UNIX_COMMAND "${ARGS}")
  set(first "")
  foreach(n 1 2 3)
    execute_process(COMMAND ${CMAKE_COMMAND} -E env MHA_THREADS=${n} ${LESSON} ${args}
                    OUTPUT_VARIABLE o RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "MHA_THREADS=${n}: exit ${rc}\n${o}")
    endif()
    if(first STREQUAL "")
      set(first "${o}")
    elseif(NOT o STREQUAL first)
      message(FATAL_ERROR "MHA_THREADS=${n} printed something else than MHA_THREADS=1:\n${o}")
    endif()
  endforeach()
  if(NOT DEFINED EXPECT)
    set(EXPECT "accuracy on 1000 fresh sequences")  # lesson 19's last line
  endif()
  string(FIND "${first}" "${EXPECT}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "no training ran:\n${first}")
  endif()

elseif(MODE STREQUAL "timing_verdicts")
  separate_arguments(args UNIX_COMMAND "${ARGS}")
  run_lesson(o ${LESSON} ${args})
  set(num "([0-9.]+)")
  set(spread "${num} \\(${num}-${num}\\) +")
  string(REGEX MATCHALL "\n +[0-9]+ +[0-9]+  ${spread}${spread}[^\n]*" rows "${o}")
  set(n 0)
  foreach(row IN LISTS rows)
    if(row MATCHES "  ${spread}${spread}too short to time$")
      if(NOT CMAKE_MATCH_1 LESS 0.1 AND NOT CMAKE_MATCH_4 LESS 0.1)
        message(FATAL_ERROR "both medians are 0.1 ms or more, yet too short to time:${row}")
      endif()
      continue()
    endif()
    if(NOT row MATCHES "  ${spread}${spread}([0-9.]+)x (view faster|copy faster|within noise)$")
      message(FATAL_ERROR "a timed row without a ratio and verdict:${row}")
    endif()
    set(vm ${CMAKE_MATCH_1})
    set(vlo ${CMAKE_MATCH_2})
    set(vhi ${CMAKE_MATCH_3})
    set(cm ${CMAKE_MATCH_4})
    set(clo ${CMAKE_MATCH_5})
    set(chi ${CMAKE_MATCH_6})
    set(ratio ${CMAKE_MATCH_7})
    set(said "${CMAKE_MATCH_8}")
    if(vhi LESS clo)
      set(want "view faster")
    elseif(chi LESS vlo)
      set(want "copy faster")
    else()
      set(want "within noise")
    endif()
    # Ranges that touch at the printed 2 decimals (0.59 and 0.59) were apart or not in
    # the lesson's unrounded numbers: either verdict follows from what is printed.
    set(tie OFF)
    if(vhi EQUAL clo OR chi EQUAL vlo)
      set(tie ON)
    endif()
    if(NOT said STREQUAL want AND NOT (tie AND (said STREQUAL "within noise" OR want STREQUAL "within noise")))
      message(FATAL_ERROR "the row says '${said}', its runs give '${want}':${row}")
    endif()
    # ratio x median(view) = median(copy), in hundredths (CMake's math is integer),
    # within what rounding each of the three to 0.01 can give.
    foreach(x vm cm ratio)
      string(REPLACE "." "" ${x} "${${x}}")
      string(REGEX REPLACE "^0+([0-9])" "\\1" ${x} "${${x}}")
    endforeach()
    math(EXPR off "${ratio} * ${vm} - ${cm} * 100")
    math(EXPR allowed "(${vm} + ${ratio}) / 2 + 60")
    if(off GREATER allowed OR off LESS -${allowed})
      message(FATAL_ERROR "the ratio is not the medians' (off by ${off}e-4):${row}")
    endif()
    math(EXPR n "${n} + 1")
  endforeach()
  string(REGEX MATCHALL "view faster" v "${rows}")
  string(REGEX MATCHALL "copy faster" c "${rows}")
  list(LENGTH v nv)
  list(LENGTH c nc)
  math(EXPR nn "${n} - ${nv} - ${nc}")
  string(REGEX REPLACE "[ \n]+" " " prose "${o}")
  set(count "Of the ${n} sizes timed, the view was faster at ${nv}, the copy at ${nc}; at ${nn} ")
  if(n EQUAL 0 OR NOT prose MATCHES "${count}")
    message(FATAL_ERROR "no timed rows, or not '${count}' after them:\n${o}")
  endif()

elseif(MODE STREQUAL "decode_flops")
  separate_arguments(args UNIX_COMMAND "${ARGS}")
  run_lesson(o ${LESSON} ${args})
  if(NOT o MATCHES "d_model E = ([0-9]+)")
    message(FATAL_ERROR "no 'd_model E = ' in:\n${o}")
  endif()
  set(E ${CMAKE_MATCH_1})
  if(NOT o MATCHES "== [^\n]*at B = 1[^\n]*==")
    message(FATAL_ERROR "the cost table's section does not say B = 1:\n${o}")
  endif()
  foreach(T 1 2 4 8 16 32 64 128 256 512 1024 2048)
    if(NOT o MATCHES "\n +${T} +([0-9.e+]+) +([0-9.e+]+) ")
      message(FATAL_ERROR "no cost row for T = ${T}:\n${o}")
    endif()
    set(printed ${CMAKE_MATCH_1} ${CMAKE_MATCH_2})
    math(EXPR with "8 * ${E} * ${E} + 4 * ${T} * ${E}")
    math(EXPR without "8 * ${T} * ${E} * ${E} + 2 * ${T} * (${T} + 1) * ${E}")
    foreach(pair "0;${with}" "1;${without}")
      list(GET pair 0 i)
      list(GET pair 1 want)
      list(GET printed ${i} got)
      math(EXPR lo "${want} - ${want} / 200")  # printed to 3 digits: within 0.5%
      math(EXPR hi "${want} + ${want} / 200")
      if(got LESS lo OR got GREATER hi)
        message(FATAL_ERROR "T = ${T}: printed ${got} FLOPs, the count gives ${want}")
      endif()
    endforeach()
  endforeach()

elseif(MODE STREQUAL "first_frames")
  if(DEFINED SAVED)
    saved_run(o)
  else()
    run_lesson(o ${LESSON})
  endif()
  set(last 0)
  foreach(p 0.25 0.50 0.90)
    if(NOT o MATCHES "\nstep ([0-9]+), a head past ${p}: ")
      message(FATAL_ERROR "no frame for a head past ${p}:\n${o}")
    endif()
    set(s ${CMAKE_MATCH_1})
    if(s LESS last)
      message(FATAL_ERROR "the frame past ${p} (step ${s}) comes before the last (${last})")
    endif()
    set(last ${s})
    # Stopped that early its closing checks may fail (exit 1): only what it drew counts.
    execute_process(COMMAND ${LESSON} --steps ${s} OUTPUT_VARIABLE at)
    if(NOT at MATCHES "\nstep ${s}, a head past ${p}: ")
      message(FATAL_ERROR "with --steps ${s} no frame past ${p} at step ${s}:\n${at}")
    endif()
    math(EXPR before "${s} - 1")
    if(before GREATER_EQUAL 4)  # --steps takes 4 and more
      execute_process(COMMAND ${LESSON} --steps ${before} OUTPUT_VARIABLE early)
      if(NOT early MATCHES "No head passed ${p} in ${before} steps")
        message(FATAL_ERROR "a head passed ${p} before step ${s}:\n${early}")
      endif()
    endif()
  endforeach()

elseif(MODE STREQUAL "sooner")
  set(at)
  foreach(flags "${FIRST}" "${SECOND}")
    separate_arguments(args UNIX_COMMAND "${flags}")
    if(DEFINED SAVED AND NOT args)
      saved_run(o)
    else()
      execute_process(COMMAND ${LESSON} ${args} OUTPUT_VARIABLE o)  # its checks may fail
    endif()
    string(REGEX REPLACE "[ \n]+" " " o "${o}")
    if(NOT o MATCHES "Accuracy first passed 90% at step ([0-9]+),")
      message(FATAL_ERROR "with '${flags}' accuracy never passed 90%:\n${o}")
    endif()
    list(APPEND at ${CMAKE_MATCH_1})
  endforeach()
  list(GET at 0 first)
  list(GET at 1 second)
  if(NOT first LESS second)
    message(FATAL_ERROR "'${FIRST}' passed 90% at step ${first}, not before '${SECOND}' (${second})")
  endif()

else()
  message(FATAL_ERROR "lesson_checks.cmake: unknown MODE '${MODE}'")
endif()
