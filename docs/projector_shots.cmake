# The front page's screenshots of three lesson pages at 1024 x 768 and
# 1920 x 1080, taken in headless Chromium by the pages' browser test (which
# also checks those pages), then placed on index.html by postprocess.py.
# Where Chromium cannot start the site builds without them and says so on
# the page and here; under CI, which has Chromium, they must be taken.
#   cmake -DCHECK=pages_check.py -DPOST=postprocess.py -DHTML=html -DPAGES=a,b,c -P projector_shots.cmake
set(shots ${HTML}/projector)
file(REMOVE_RECURSE ${shots})
execute_process(COMMAND /usr/bin/python3 ${CHECK} ${HTML} --pages ${PAGES} --screenshots ${shots}
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 AND "$ENV{CI}" STREQUAL "true")
  message(FATAL_ERROR "the lesson pages' screenshots failed (${rc}):\n${out}${err}")
endif()
if(rc EQUAL 1)
  message(WARNING "docs: the lesson pages do not fit the window (tests/browser/pages_check.py):\n${out}")
elseif(NOT rc EQUAL 0)
  message(STATUS "docs: no screenshots of the lesson pages (headless Chromium failed, "
                 "exit ${rc}); the site builds without them")
endif()
execute_process(COMMAND /usr/bin/python3 ${POST} ${HTML} --front ${PAGES} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "postprocess.py --front failed (${rc})")
endif()
