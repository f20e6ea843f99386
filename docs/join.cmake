# Joins FILES (a list) into OUT: the explorer's data.js from each lesson's explorer.js.
file(WRITE ${OUT} "// The attention explorer's data, written by the docs build from the lessons' --dump.\n")
foreach(f IN LISTS FILES)
  file(READ ${f} text)
  file(APPEND ${OUT} "${text}")
endforeach()
