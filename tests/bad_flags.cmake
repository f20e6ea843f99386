# Runs one lesson with bad argument lists ("ARGS|what the error says");
# each must exit 2 with one line that names the problem. Called as
#   cmake -DCHECK=check_lesson -DLESSON=lesson -P bad_flags.cmake
set(cases
  "--bogus|unknown flag '--bogus'"
  "--time|--time needs a value"
  "--time 0|--time must be between 1 and"
  "--time -3|--time must be between 1 and"
  "--time ten|--time takes a whole number, not 'ten'"
  "--batch 2.5|--batch takes a whole number"
  "--time 1000000|--time must be between 1 and 4096"
  "--d-model 512 --heads 7|not divisible by num_heads 7"
  "--d-model 8 --heads 16|--heads 16 is more than --d-model 8"
  "--tiny --time 10|--tiny sets the sizes itself"
  "--batch 4096 --time 4096|GB, over the 4 GB limit"
  "--seed x|--seed takes a whole number"
  "--dump|--dump needs a folder"
  "--dump /proc/mha|--dump: cannot write to the folder '/proc/mha'")
foreach(case IN LISTS cases)
  string(FIND "${case}" "|" bar)
  string(SUBSTRING "${case}" 0 ${bar} args)
  math(EXPR after "${bar} + 1")
  string(SUBSTRING "${case}" ${after} -1 message)
  separate_arguments(parts UNIX_COMMAND "${args}")
  execute_process(COMMAND ${CHECK} --exit 2 --max-width 400 --expect "${message}" -- ${LESSON} ${parts}
                  OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  string(STRIP "${out}" out)
  string(FIND "${out}" "\n" newline)
  if(NOT rc EQUAL 0 OR NOT newline EQUAL -1)
    message(FATAL_ERROR "bad flags '${parts}': expected exit 2 and one line "
                        "containing '${message}', got:\n${out}")
  endif()
endforeach()
