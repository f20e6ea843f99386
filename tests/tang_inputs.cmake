# The poem lessons' bad input, each refused with one line naming it and exit 2,
# before anything else is printed (the line's width is not checked: it holds
# a path): invalid UTF-8, an empty corpus, a corpus too short for one window,
# too few poems to split, and (for 24_poem_model, which loads a checkpoint) a
# checkpoint folder whose config.json lacks a size or is missing, or whose
# vocab.json is cut short. Called as
#   cmake -DCHECK=check_lesson -DLESSON=build/lessons/24_poem_model -DNAME=24_poem_model
#         -DWORK=dir -P tang_inputs.cmake
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/bad_vocab" "${WORK}/no_size")
string(ASCII 255 ff)
file(WRITE "${WORK}/bad.txt" "床前明月光\n\n${ff}\n")
file(WRITE "${WORK}/empty.txt" "")
set(short "")
foreach(i RANGE 11)
  string(APPEND short "明月${i}\n\n")
endforeach()
file(WRITE "${WORK}/short.txt" "${short}")
file(WRITE "${WORK}/few.txt" "床前明月光\n\n疑是地上霜\n")
file(WRITE "${WORK}/no_size/config.json" "{\"vocab\": 3}")
file(WRITE "${WORK}/bad_vocab/config.json"
     "{\"vocab\": 3, \"t_max\": 4, \"embed_dim\": 2, \"num_heads\": 1, \"ff_dim\": 2, "
     "\"num_layers\": 1, \"batch\": 1, \"steps\": 1, \"lr\": 0.001, \"clip\": 1, "
     "\"eval_every\": 1, \"patience\": 1, \"seed\": 1, \"best_step\": 0, \"best_val\": 1}")
file(WRITE "${WORK}/bad_vocab/vocab.json" "[\"<unk>\", \"<poem>\"")
set(cases
  "--corpus ${WORK}/bad.txt|bad.txt: invalid UTF-8 at byte 17"
  "--corpus ${WORK}/empty.txt|empty.txt: no poem in it"
  "--corpus ${WORK}/short.txt|short.txt: 52 tokens, not one window"
  "--corpus ${WORK}/few.txt|few.txt: fewer than 10 poems to split")
if(NAME STREQUAL "24_poem_model")
  list(APPEND cases
  "--model ${WORK}/no_size|no_size/config.json: no \"t_max\""
  "--model ${WORK}/bad_vocab|bad_vocab/vocab.json: expected"
  "--model ${WORK}/nothing|nothing: no config.json")
endif()
foreach(case IN LISTS cases)
  string(FIND "${case}" "|" bar)
  string(SUBSTRING "${case}" 0 ${bar} args)
  math(EXPR after "${bar} + 1")
  string(SUBSTRING "${case}" ${after} -1 message)
  separate_arguments(args UNIX_COMMAND "${args}")
  execute_process(COMMAND ${CHECK} --exit 2 --max-lines 1 --max-width 300 --expect "${message}" -- ${LESSON} ${args}
                  OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(out MATCHES "skipped: needs")
    message(STATUS "skipped: needs fortunes-zh")
    return()
  endif()
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "'${args}': expected exit 2 and one line with '${message}', got:\n${out}")
  endif()
endforeach()
