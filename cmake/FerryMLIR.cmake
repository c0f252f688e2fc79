# MLIR/LLVM 22 for the compiler side. Debian's package lives in /usr/lib/llvm-22.
find_package(MLIR CONFIG HINTS /usr/lib/llvm-22/lib/cmake/mlir)
if(NOT MLIR_FOUND OR NOT LLVM_VERSION_MAJOR EQUAL 22)
  message(FATAL_ERROR
    "FERRY_BUILD_COMPILER is ON but MLIR 22 was not found.\n"
    "Fix: run scripts/install-deps.sh (installs libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools), "
    "pass -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir, or build the runtime alone with -DFERRY_BUILD_COMPILER=OFF.")
endif()
message(STATUS "Using MLIR ${LLVM_PACKAGE_VERSION} from ${MLIR_DIR}")

list(APPEND CMAKE_MODULE_PATH "${MLIR_CMAKE_DIR}" "${LLVM_CMAKE_DIR}")
set(LLVM_RUNTIME_OUTPUT_INTDIR ${CMAKE_BINARY_DIR}/bin)
set(LLVM_LIBRARY_OUTPUT_INTDIR ${CMAKE_BINARY_DIR}/lib)
set(MLIR_BINARY_DIR ${CMAKE_BINARY_DIR})
include(TableGen)
include(AddLLVM)
include(AddMLIR)
include(HandleLLVMOptions)

include_directories(SYSTEM ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
# HandleLLVMOptions already defines _GLIBCXX_USE_CXX11_ABI; a second definition
# from LLVM_DEFINITIONS only produces "redefined" warnings.
separate_arguments(_ferry_llvm_definitions NATIVE_COMMAND "${LLVM_DEFINITIONS}")
list(FILTER _ferry_llvm_definitions EXCLUDE REGEX "_GLIBCXX_USE_CXX11_ABI")
add_definitions(${_ferry_llvm_definitions})

# lit ships as /usr/lib/llvm-22/bin/lit (there is no llvm-lit); FileCheck and friends beside it.
find_program(FERRY_LIT lit HINTS ${LLVM_TOOLS_BINARY_DIR} /usr/lib/llvm-22/bin NO_DEFAULT_PATH)
find_program(FERRY_FILECHECK FileCheck HINTS ${LLVM_TOOLS_BINARY_DIR} /usr/lib/llvm-22/bin NO_DEFAULT_PATH)
if(NOT FERRY_LIT OR NOT FERRY_FILECHECK)
  message(FATAL_ERROR "lit or FileCheck not found in ${LLVM_TOOLS_BINARY_DIR}. Fix: apt-get install llvm-22-tools.")
endif()
set(LLVM_EXTERNAL_LIT ${FERRY_LIT})

# Generated dialect docs collect under build/docs/ (AddMLIR's target mlir-doc;
# ferry-docs builds them with `all` so the docs test can compare them).
add_custom_target(ferry-docs ALL)
