# Build speed on 2-core machines: ccache for every compiler, lld for every link
# (a tool linking many dialects links in ~1 s with lld instead of ~7 s with ld.bfd).
find_program(FERRY_CCACHE ccache)
if(FERRY_CCACHE)
  set(CMAKE_C_COMPILER_LAUNCHER ${FERRY_CCACHE})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${FERRY_CCACHE})
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${FERRY_CCACHE})
endif()

find_program(FERRY_LLD NAMES ld.lld)
if(FERRY_LLD)
  add_link_options("-fuse-ld=lld")
  # LLVM's own helpers read this one.
  set(LLVM_USE_LINKER lld CACHE STRING "" FORCE)
endif()

add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-Wall;-Wextra;-Wno-unused-parameter>")
