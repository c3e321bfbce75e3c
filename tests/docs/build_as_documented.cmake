# Builds docs/getting-started.md's program as its "Compiling your program" says: the g++ line as
# written (TUNEKIT the checkout) on the program of the page's cpp blocks, then runs it; and the
# page's CMake project with find_package (tunekit installed to a private prefix) and with
# add_subdirectory (the comment's line in place of find_package), each on a small stand-in
# transpose.cpp (the whole program takes minutes to compile, and docs.getting_started builds it
# through CMake already).
# Usage: cmake -DDOC=.. -DPROGRAM_SOURCE=.. -DSOURCE_DIR=.. -DWORK_DIR=.. -P build_as_documented.cmake
function(run dir)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY ${dir} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "command failed (${rc}) in ${dir}: ${cmd}\n${out}\n${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
file(READ ${DOC} doc)
string(FIND "${doc}" "### Compiling your program" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${DOC}: no section 'Compiling your program'")
endif()
string(SUBSTRING "${doc}" ${at} -1 section)
if(NOT section MATCHES "```sh\n(g\\+\\+ [^\n]*)\n```")
  message(FATAL_ERROR "${DOC}: no ```sh block with a g++ line in 'Compiling your program'")
endif()
set(gxx "${CMAKE_MATCH_1}")
if(NOT section MATCHES "```cmake\n([^`]*)\n```")
  message(FATAL_ERROR "${DOC}: no ```cmake block in 'Compiling your program'")
endif()
set(project "${CMAKE_MATCH_1}\n")
if(NOT project MATCHES "# or, [^:\n]*: (add_subdirectory\\([^)]*\\))")
  message(FATAL_ERROR "${DOC}: the CMake block has no '# or, ...: add_subdirectory(...)' line")
endif()
set(add_subdirectory_line "${CMAKE_MATCH_1}")

# The g++ line, on the whole program.
file(MAKE_DIRECTORY ${WORK_DIR}/gxx)
configure_file(${PROGRAM_SOURCE} ${WORK_DIR}/gxx/transpose.cpp COPYONLY)
message("g++ line: ${gxx}")
run(${WORK_DIR}/gxx ${CMAKE_COMMAND} -E env TUNEKIT=${SOURCE_DIR} sh -c "${gxx}")
run(${WORK_DIR}/gxx ${WORK_DIR}/gxx/transpose 20)
if(NOT out MATCHES "(^|\n)best [^\n]* after 20 trials")
  message(FATAL_ERROR "the program built by the g++ line printed no 'best ... after 20 trials':\n${out}")
endif()

set(stand_in "#include <tunekit/space/search_space.hpp>\n#include <cstdio>\n\nint main() {
  tunekit::SearchSpace s;
  s.add(tunekit::Knob::power_of_two(\"tile\", 1, 256));
  std::printf(\"%zu configs\\n\", static_cast<std::size_t>(s.count_valid()));
}\n")
# The CMake project with find_package, tunekit installed to a private prefix.
run(${WORK_DIR} ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/tunekit-build -DCMAKE_INSTALL_PREFIX=${WORK_DIR}/prefix
    -DTUNEKIT_BUILD_TESTS=OFF -DTUNEKIT_BUILD_TOOLS=OFF -DTUNEKIT_BUILD_EXAMPLES=OFF -DTUNEKIT_BUILD_BENCH=OFF
    -DTUNEKIT_PYTHON=OFF -DTUNEKIT_CUDA=OFF -DTUNEKIT_MPI=OFF)
run(${WORK_DIR} ${CMAKE_COMMAND} --install ${WORK_DIR}/tunekit-build)
# With add_subdirectory: the checkout beside the project, as ../tunekit.
file(CREATE_LINK ${SOURCE_DIR} ${WORK_DIR}/tunekit SYMBOLIC)
string(REPLACE "find_package(tunekit CONFIG REQUIRED)" "${add_subdirectory_line}" project_sub "${project}")
foreach(mode find_package add_subdirectory)
  set(dir ${WORK_DIR}/${mode})
  if(mode STREQUAL "find_package")
    file(WRITE ${dir}/CMakeLists.txt "${project}")
    set(args -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix)
  else()
    file(WRITE ${dir}/CMakeLists.txt "${project_sub}")
    set(args)
  endif()
  file(WRITE ${dir}/transpose.cpp "${stand_in}")
  run(${dir} ${CMAKE_COMMAND} -S ${dir} -B ${dir}/build -DCMAKE_BUILD_TYPE=Release ${args})
  run(${dir} ${CMAKE_COMMAND} --build ${dir}/build)
  run(${dir} ${dir}/build/transpose)
  if(NOT out STREQUAL "9 configs\n")
    message(FATAL_ERROR "the ${mode} build printed '${out}', not '9 configs'")
  endif()
  message("${mode}: ${out}")
endforeach()
