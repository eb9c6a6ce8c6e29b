# posenc-config-version.cmake: the version of this posenc package, read from the package itself (_version.py,
# the single source of posenc's version), for find_package(posenc <version> [EXACT] CONFIG) and version ranges.
#
# Compatible: this version or newer with the same major version (the same minor too while the major is 0, when a
# minor release may change what a function takes). posenc runs on the build machine, so the target's pointer size
# does not matter.

set(PACKAGE_VERSION "")
file(STRINGS "${CMAKE_CURRENT_LIST_DIR}/../_version.py" _posenc_line REGEX "^__version__ = " LIMIT_COUNT 1)
if(_posenc_line MATCHES "^__version__ = [\"']([0-9]+([.][0-9]+)*)")
  set(PACKAGE_VERSION "${CMAKE_MATCH_1}")
endif()
if(PACKAGE_VERSION STREQUAL "")
  set(PACKAGE_VERSION "0")
  set(PACKAGE_VERSION_UNSUITABLE TRUE)  # a broken installation: no version to compare
  return()
endif()

function(_posenc_compatible out_var wanted)
  string(REGEX MATCH "^[0-9]+" _major "${PACKAGE_VERSION}")
  string(REGEX MATCH "^[0-9]+" _wanted_major "${wanted}")
  set(_ok FALSE)
  if(NOT PACKAGE_VERSION VERSION_LESS wanted AND _major STREQUAL _wanted_major)
    set(_ok TRUE)
    if(_major STREQUAL "0")
      string(REGEX MATCH "^[0-9]+[.]?([0-9]*)" _minor "${PACKAGE_VERSION}")
      set(_minor "${CMAKE_MATCH_1}")
      string(REGEX MATCH "^[0-9]+[.]?([0-9]*)" _wanted_minor "${wanted}")
      set(_wanted_minor "${CMAKE_MATCH_1}")
      if(NOT _wanted_minor STREQUAL "" AND NOT _minor STREQUAL _wanted_minor)
        set(_ok FALSE)
      endif()
    endif()
  endif()
  set(${out_var} "${_ok}" PARENT_SCOPE)
endfunction()

set(PACKAGE_VERSION_COMPATIBLE FALSE)
set(PACKAGE_VERSION_EXACT FALSE)
if(DEFINED PACKAGE_FIND_VERSION_RANGE AND NOT PACKAGE_FIND_VERSION_RANGE STREQUAL "")
  # A range (CMake 3.19+): any version inside it.
  if(NOT PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION_MIN
     AND ((PACKAGE_FIND_VERSION_RANGE_MAX STREQUAL "INCLUDE" AND NOT PACKAGE_VERSION VERSION_GREATER
           PACKAGE_FIND_VERSION_MAX)
          OR (PACKAGE_FIND_VERSION_RANGE_MAX STREQUAL "EXCLUDE" AND PACKAGE_VERSION VERSION_LESS
              PACKAGE_FIND_VERSION_MAX)))
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
  endif()
elseif(NOT DEFINED PACKAGE_FIND_VERSION OR PACKAGE_FIND_VERSION STREQUAL "")
  set(PACKAGE_VERSION_COMPATIBLE TRUE)  # no version asked for
else()
  _posenc_compatible(PACKAGE_VERSION_COMPATIBLE "${PACKAGE_FIND_VERSION}")
  if(PACKAGE_VERSION VERSION_EQUAL PACKAGE_FIND_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
