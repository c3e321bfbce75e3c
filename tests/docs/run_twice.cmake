# Runs a documentation program twice in a fresh directory, as a reader would (the second run
# resumes from the log the first one wrote), and checks that both end with the same "best ..."
# line and that the second run's output matches SECOND (a regular expression), if given.
# Usage: cmake -DPROGRAM=.. -DARGS=a;b -DWORK_DIR=.. [-DSECOND=regex] -P run_twice.cmake
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(best)
foreach(run 1 2)
  execute_process(COMMAND ${PROGRAM} ${ARGS} WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("run ${run}:\n${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "run ${run} of ${PROGRAM} failed (${rc}):\n${err}")
  endif()
  # The best config, without what follows it in parentheses (the second run's count of logged trials).
  if(NOT out MATCHES "(^|\n)(best [^\n(]*)")
    message(FATAL_ERROR "run ${run} printed no 'best ...' line")
  endif()
  string(REPLACE ";" "," line "${CMAKE_MATCH_2}")  # a config reads knob=value;...
  list(APPEND best "${line}")
endforeach()
list(GET best 0 first)
list(GET best 1 second)
if(NOT first STREQUAL second)
  message(FATAL_ERROR "the resumed run ended elsewhere:\n  first:  ${first}\n  second: ${second}")
endif()
if(DEFINED SECOND AND NOT out MATCHES "${SECOND}")
  message(FATAL_ERROR "the second run's output does not match '${SECOND}'")
endif()
