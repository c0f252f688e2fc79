# The compiler's build identity: version and git hash. It goes into `ferry --version`,
# and later into executables and cache keys.
execute_process(
  COMMAND git -C ${CMAKE_SOURCE_DIR} rev-parse --short=12 HEAD
  OUTPUT_VARIABLE FERRY_GIT_HASH OUTPUT_STRIP_TRAILING_WHITESPACE
  ERROR_QUIET RESULT_VARIABLE _ferry_git_result)
if(NOT _ferry_git_result EQUAL 0 OR FERRY_GIT_HASH STREQUAL "")
  set(FERRY_GIT_HASH "unknown")
endif()
configure_file(${CMAKE_SOURCE_DIR}/cmake/Version.h.in ${CMAKE_BINARY_DIR}/generated/ferry/Version.h @ONLY)
include_directories(${CMAKE_BINARY_DIR}/generated)
