# The dependencies of tunekit::tunekit, found the same way in the source tree and by the installed
# package config: `tunekit_find` is find_package(... REQUIRED) in a build, find_dependency in the
# config file.
if(NOT COMMAND tunekit_find)
  macro(tunekit_find)
    find_package(${ARGN} REQUIRED)
  endmacro()
endif()
tunekit_find(Eigen3 3.3 NO_MODULE)
tunekit_find(Boost 1.74)
tunekit_find(OpenMP COMPONENTS CXX)
tunekit_find(nlohmann_json 3.10)
