# posenc-config.cmake: posenc's CMake package, for find_package(posenc CONFIG).
#
#   cmake -S . -B build -Dposenc_DIR="$(posenc --cmake-dir)"       # the folder of this file, in the installed package
#
#   find_package(posenc 0.1 CONFIG REQUIRED)
#   add_executable(app main.c)
#   posenc_add_table(app SEQ_LEN 2048 D_MODEL 512)                 # posenc.cmake documents both functions
#   posenc_add_manifest(app posenc.toml)
#
# Loads posenc.cmake (posenc_add_table, posenc_add_manifest) and finds the posenc program this package belongs to,
# as posenc.cmake's "How posenc is found" says: nothing is recorded at install time; the program is looked for
# beside the package's site-packages folder (a virtual environment's bin/posenc, without activating it), then on
# PATH, and taken only if its `--cmake-dir` is this folder. -DPOSENC_EXECUTABLE=<path> chooses one.
#
# Sets
#   posenc_FOUND      TRUE when the program runs (else find_package fails, with the reason).
#   posenc_VERSION    The package's version (posenc-config-version.cmake).
#   POSENC_COMMAND    The command that runs posenc, a list: <venv>/bin/posenc, or <python>;-m;posenc_cli.

include("${CMAKE_CURRENT_LIST_DIR}/posenc.cmake")

_posenc_find(POSENC_COMMAND _posenc_found_version _posenc_error)
if(NOT POSENC_COMMAND)
  set(posenc_FOUND FALSE)
  set(posenc_NOT_FOUND_MESSAGE "${_posenc_error}")
  return()
endif()
# posenc_VERSION comes from posenc-config-version.cmake (the numbers of _version.py): the program must agree.
string(REGEX MATCH "^[0-9]+([.][0-9]+)*" _posenc_numbers "${_posenc_found_version}")
if(DEFINED posenc_VERSION AND NOT _posenc_numbers STREQUAL posenc_VERSION)
  set(posenc_FOUND FALSE)
  set(posenc_NOT_FOUND_MESSAGE
      "the posenc program is version ${_posenc_found_version} and its package files in ${CMAKE_CURRENT_LIST_DIR} "
      "say ${posenc_VERSION}: the installation is inconsistent; reinstall posenc")
  return()
endif()
set(posenc_FOUND TRUE)
