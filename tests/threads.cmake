# The same answer on any machine: tests/threads_check.cpp's results with
# MHA_THREADS = 1, 2, 3, with the packed kernels on (the same bits, as the
# engine promises: no row depends on its neighbours) and off (BLAS, within
# 1e-6 of the largest value), and the two paths within 1e-5 of each other:
# their sums run in other orders, forward and backward, and 30 Adam steps
# grow the difference (0.97e-6 to 2.3e-6 of the largest weight so far).
#   cmake -DCHECK=threads_check -DDIR=folder -P threads.cmake
foreach(packed 1 0)
  foreach(n 1 2 3)
    execute_process(COMMAND ${CMAKE_COMMAND} -E env MHA_THREADS=${n} MHA_PACKED=${packed}
                            ${CHECK} write ${DIR}/p${packed}_t${n}.bin RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "threads_check write, MHA_THREADS=${n} MHA_PACKED=${packed}: exit ${rc}")
    endif()
  endforeach()
endforeach()
set(pairs "p1_t1 p1_t2 0" "p1_t1 p1_t3 0" "p0_t1 p0_t2 1e-6" "p0_t1 p0_t3 1e-6" "p1_t1 p0_t1 1e-5")
foreach(pair IN LISTS pairs)
  separate_arguments(p UNIX_COMMAND "${pair}")
  list(GET p 0 a)
  list(GET p 1 b)
  list(GET p 2 tol)
  message(STATUS "${a} against ${b}, tolerance ${tol}:")
  execute_process(COMMAND ${CHECK} compare ${DIR}/${a}.bin ${DIR}/${b}.bin ${tol}
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${a} and ${b} differ beyond ${tol}")
  endif()
endforeach()
