# Builds and runs tests/consumer against tunekit, in MODE find_package (after cmake --install to a
# private prefix) or add_subdirectory. Usage: cmake -DSOURCE_DIR=.. -DWORK_DIR=.. -DMODE=.. -P this
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "consumer (${MODE}): command failed (${rc}): ${cmd}")
  endif()
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(consumer_args -DTUNEKIT_CONSUMER_MODE=${MODE} -DCMAKE_BUILD_TYPE=Release)
if(MODE STREQUAL "find_package")
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/tunekit-build -DCMAKE_INSTALL_PREFIX=${WORK_DIR}/prefix
      -DTUNEKIT_BUILD_TESTS=OFF -DTUNEKIT_BUILD_TOOLS=OFF -DTUNEKIT_BUILD_EXAMPLES=OFF -DTUNEKIT_BUILD_BENCH=OFF
      -DTUNEKIT_PYTHON=OFF)
  run(${CMAKE_COMMAND} --install ${WORK_DIR}/tunekit-build)
  list(APPEND consumer_args -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix)
else()
  list(APPEND consumer_args -DTUNEKIT_SOURCE_DIR=${SOURCE_DIR})
endif()
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/consumer -B ${WORK_DIR}/consumer-build ${consumer_args})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/consumer-build)
run(${WORK_DIR}/consumer-build/consumer)
