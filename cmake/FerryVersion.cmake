# The compiler's build identity: version and git hash. It goes into `ferry --version`,
# and later into executables and cache keys.
execute_process(
  COMMAND git -C ${CMAKE_SOURCE_DIR} rev-parse --short=12 HEAD
  OUTPUT_VARIABLE FERRY_GIT_HASH OUTPUT_STRIP_TRAILING_WHITESPACE
  ERROR_QUIET RESULT_VARIABLE _ferry_git_result)
if(NOT _ferry_git_result EQUAL 0 OR FERRY_GIT_HASH STREQUAL "")
  set(FERRY_GIT_HASH "unknown")
endif()
# Re-configure when HEAD moves (checkout, commit), so the hash never goes stale.
execute_process(COMMAND git -C ${CMAKE_SOURCE_DIR} rev-parse --absolute-git-dir
  OUTPUT_VARIABLE _ferry_git_dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(_ferry_git_dir AND EXISTS "${_ferry_git_dir}/HEAD")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_ferry_git_dir}/HEAD")
  execute_process(COMMAND git -C ${CMAKE_SOURCE_DIR} symbolic-ref -q HEAD
    OUTPUT_VARIABLE _ferry_git_ref OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(_ferry_git_ref AND EXISTS "${_ferry_git_dir}/${_ferry_git_ref}")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_ferry_git_dir}/${_ferry_git_ref}")
  endif()
endif()
configure_file(${CMAKE_SOURCE_DIR}/cmake/Version.h.in ${CMAKE_BINARY_DIR}/generated/ferry/Version.h @ONLY)
include_directories(${CMAKE_BINARY_DIR}/generated)
