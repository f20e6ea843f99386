# Runs one lesson with bad argument lists ("ARGS|what the error says");
# each must exit 2 with one line, at most 90 columns, that names the problem.
# Called as
#   cmake -DCHECK=check_lesson -DLESSON=lesson -DNAME=05_softmax -P bad_flags.cmake
set(cases
  "--bogus|unknown flag '--bogus'"
  "--time|--time needs a value"
  "--time 0|--time must be between 1 and"
  "--time -3|--time must be between 1 and"
  "--time ten|--time takes a whole number, not 'ten'"
  "--batch 2.5|--batch takes a whole number"
  "--time 1000000|--time must be between 1 and 4096"
  "--d-model 8 --heads 16|--heads 16 is more than --d-model 8"
  "--tiny --time 10|--tiny sets the sizes: give it alone"
  "--batch 4096 --time 4096|GB, over the 4 GB limit"
  "--batch 4096 --time 4096 --d-model 8192 --heads 8192|6760897 GB, over the 4 GB limit"
  "--seed x|--seed takes a whole number"
  "--svg|--svg needs a folder"
  "--dump|--dump needs a folder"
  "--dump /proc/mha|--dump: cannot write to the folder '/proc/mha'")
# Lesson 08 shows a head count that does not divide d_model; every other
# lesson refuses one, naming the nearest that fit.
if(NAME STREQUAL "08_indivisible_heads")
  list(APPEND cases "--d-model 512 --heads 8|--heads 8 divides --d-model 512: pick one")
else()
  # (the message's own ';' would split this CMake list: its two halves)
  list(APPEND cases "--d-model 512 --heads 7|not divisible by num_heads 7"
                    "--d-model 512 --heads 7|try 4 or 8")
endif()
# Lesson 19's own flags; every other lesson takes none of them.
if(NAME STREQUAL "19_heads_learn")
  list(APPEND cases "--steps 3|--steps must be between 4 and 100000, not 3"
                    "--steps|--steps needs a value"
                    "--lr fast|--lr takes a number, not 'fast'"
                    "--lr inf|--lr takes a number, not 'inf'"
                    "--lr 0|--lr must be between 1e-06 and 1, not 0"
                    "--vocab 1|--vocab must be between 2 and 1000, not 1")
elseif(NAME MATCHES "^2[12]_induction_")
  list(APPEND cases "--steps 9|--steps must be between 10 and 100000, not 9"
                    "--lr 2|--lr must be between 1e-06 and 1, not 2"
                    "--vocab 54|--vocab must be between 3 and 53, not 54"
                    "--ff 0|--ff must be between 1 and 8, not 0"
                    "--vocab 5|--vocab must be at least --time + 1 = 13")
elseif(NAME STREQUAL "23_tang_poems")
  list(APPEND cases "--steps 10|unknown flag '--steps'"
                    "--corpus|--corpus needs FILE"
                    "--corpus /nonexistent/poems.txt|/nonexistent/poems.txt: cannot be read")
elseif(NAME STREQUAL "24_poem_model")
  list(APPEND cases "--steps 9|--steps must be between 10 and 20000, not 9"
                    "--temperature -1|--temperature must be between 0 and 5, not -1"
                    "--top-k 0|--top-k must be between 1 and 100000, not 0"
                    "--corpus|--corpus needs FILE"
                    "--save|--save needs DIR"
                    "--corpus /nonexistent/poems.txt|/nonexistent/poems.txt: cannot be read")
else()
  list(APPEND cases "--steps 10|unknown flag '--steps'")
endif()
# Lesson 30 turns nothing at T = 1 and needs two pairs that turn apart.
if(NAME STREQUAL "30_rope")
  list(APPEND cases "--time 1|--time must be at least 2: at T = 1 nothing turns"
                    "--d-model 6 --heads 2|D must be even and at least 4, not 3"
                    "--d-model 4 --heads 2|D must be even and at least 4, not 2")
endif()
if(NAME STREQUAL "31_window_sinks")  # RoPE turns pairs
  list(APPEND cases "--d-model 6 --heads 2|D must be even (RoPE turns pairs), not 3")
endif()
foreach(case IN LISTS cases)
  string(FIND "${case}" "|" bar)
  string(SUBSTRING "${case}" 0 ${bar} args)
  math(EXPR after "${bar} + 1")
  string(SUBSTRING "${case}" ${after} -1 message)
  separate_arguments(parts UNIX_COMMAND "${args}")
  execute_process(COMMAND ${CHECK} --exit 2 --max-width 90 --expect "${message}" -- ${LESSON} ${parts}
                  OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  string(STRIP "${out}" out)
  string(FIND "${out}" "\n" newline)
  if(NOT rc EQUAL 0 OR NOT newline EQUAL -1)
    message(FATAL_ERROR "bad flags '${parts}': expected exit 2 and one line "
                        "containing '${message}', got:\n${out}")
  endif()
endforeach()
