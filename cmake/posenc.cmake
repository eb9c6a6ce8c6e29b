# The CMake module lives in the package (posenc_cli/cmake/, shipped in wheels; `posenc --cmake-dir` prints where):
# this file keeps `include(posenc)` with CMAKE_MODULE_PATH=<posenc checkout>/cmake working.
include("${CMAKE_CURRENT_LIST_DIR}/../posenc_cli/cmake/posenc.cmake")
