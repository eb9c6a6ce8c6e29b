# posenc.cmake: generate positional-encoding tables with posenc at build time.
#
# Usage
#
#   # The installed package (pip install posenc): its CMake folder is `posenc --cmake-dir`.
#   #   cmake -S . -B build -Dposenc_DIR="$(posenc --cmake-dir)"
#   find_package(posenc 0.1 CONFIG REQUIRED)                   # loads this module; see posenc-config.cmake
#
#   # Or this file directly: include(<dir>/posenc.cmake), or include(posenc) with <dir> on CMAKE_MODULE_PATH
#   # (a posenc checkout's cmake/ folder holds a posenc.cmake that includes this one).
#
#   add_executable(app main.c)
#   posenc_add_table(app SEQ_LEN 2048 D_MODEL 512)              # main.c: #include "pe.h"
#   posenc_add_table(app SEQ_LEN 4096 D_MODEL 768 BASE 500000 DTYPE float64 NAME pe_long FORMAT c)
#
#   posenc_add_table(app SEQ_LEN 512 D_MODEL 64 DTYPE q15 PRESET fairseq NAME pe_q15 ARGS --align 16)
#
#   posenc_add_table(<target> SEQ_LEN <n> D_MODEL <d>
#                    [BASE <b>] [DTYPE <element type> [SCALE <s>] [ZERO_POINT <z>]]
#                    [PRESET <name>] [NAME <c-name>] [OUTPUT_DIR <dir>] [FORMAT h|c] [ARGS <posenc options>...]
#                    [INPUTS <files>...])
#   posenc_add_table(<target> COMMAND generate|rope|alibi|sincos2d|relative|window ARGS <its options>...
#                    [DTYPE <type>] [NAME <c-name>] [OUTPUT_DIR <dir>] [FORMAT h|c] [INPUTS <files>...])
#
#   posenc_add_table(app COMMAND rope NAME rope ARGS --config ${CMAKE_CURRENT_SOURCE_DIR}/llama -n 8192
#                    INPUTS llama/config.json)                  # RoPE caches from the model's config.json
#
#   posenc_add_manifest(<target> <manifest> [OUTPUT_DIR <dir>]) # every table of a posenc.toml (posenc build)
#   posenc_add_manifest(app posenc.toml)                        # main.c: #include "tables/pe.h"
#
# posenc_add_table options
#
#   <target>    An executable or a static, shared, module or object library created in the same directory
#               (CMakeLists.txt) as the call: CMake gives a custom command's rule only to targets of its directory.
#   SEQ_LEN     Number of positions (rows). Required.
#   D_MODEL     Model dimension (columns). Required.
#   BASE        Wavelength base, a number > 1. Default 10000.
#   DTYPE       The element type: float32 (C float), float64 (double), float16/bfloat16 (uint16_t bit patterns),
#               q31 (int32_t), q15 (int16_t), q7 or int8 (int8_t), fixed<T>.<F> (the narrowest intN_t of T bits).
#               Default float32.
#   SCALE       int8 only (required with it): the real value of one quantisation step.
#   ZERO_POINT  int8 only: the integer that stands for 0.0. Default 0.
#   PRESET      A framework convention of `posenc generate --preset`, checked at configure time against the
#               presets of the posenc that writes the table (`posenc presets` lists them).
#   NAME        The C symbol, and the stem of the generated files. Default pe. Macros are <NAME>_SEQ_LEN and
#               <NAME>_D_MODEL with NAME upper-cased. Tables generated into one directory need distinct names.
#   OUTPUT_DIR  Where the files are generated; a relative path is relative to CMAKE_CURRENT_BINARY_DIR.
#               Default ${CMAKE_CURRENT_BINARY_DIR}/posenc.
#   FORMAT      h: one self-contained header, <NAME>.h, with a static const table (one copy per translation unit
#               that uses it). c: <NAME>.c defines the table once and <NAME>.h declares it (extern), for tables
#               used by several translation units. Default h.
#   ARGS        Any further options of `posenc generate`, passed as they are (--align 16, --float-literal hex,
#               --lang c++ --namespace model, --start 2, --c-half-type __fp16, ...); a change regenerates the table.
#               With --lang c++ (or --lang=c++) the table is C++: the files keep their names (<NAME>.h, and
#               <NAME>.c for FORMAT c), the .c is compiled as C++ (LANGUAGE CXX) even where C is enabled too, and
#               a project that does not enable CXX is a configure error.
#   COMMAND     The posenc command that makes the table: generate (the default, with SEQ_LEN and D_MODEL), or
#               any table command (generate, rope, alibi, sincos2d, relative, window) with all its options in ARGS
#               (SEQ_LEN, D_MODEL, BASE and PRESET are generate's keywords only). The C symbols are
#               <NAME>_<array> for tables of several arrays (rope: <NAME>_cos, <NAME>_sin, <NAME>_inv_freq).
#   INPUTS      Files the table is made from (a config.json given to --config, a checkpoint given to --bias),
#               relative to CMAKE_CURRENT_SOURCE_DIR: the table is regenerated when one of them changes.
#
# posenc_add_manifest options
#
#   <target>    As for posenc_add_table.
#   <manifest>  A posenc.toml (docs/build.md), relative to CMAKE_CURRENT_SOURCE_DIR. Its outputs are relative to
#               OUTPUT_DIR (`posenc build --output-dir`), and are known at configure time: CMake runs
#               `posenc build --list-outputs` then, and again whenever the manifest changes (it is a configure
#               dependency). A bad manifest stops the configure step with posenc's one-line error, and so does an
#               output or input named with a character a build tool would misread ('$', '#', ';', a leading '~',
#               ...): posenc applies one rule to the names it lists, to its depfile and so to this function
#               (docs/build.md, posenc_cli/manifest/names.py).
#   OUTPUT_DIR  Where the outputs go (their folders are created); relative to CMAKE_CURRENT_BINARY_DIR.
#               Default ${CMAKE_CURRENT_BINARY_DIR}/posenc. It is on the target's include path: an output
#               "tables/pe.h" is #include "tables/pe.h".
#   Every output is added to the target's sources: .c/.cpp outputs are compiled into it, headers and data files
#   (.npy, .bin, ...) are listed only. The files an entry reads (a checkpoint given as bias) reach the build through
#   posenc's depfile (DEPFILE): a changed checkpoint rebuilds its tables. Depfiles need Ninja, or Makefiles with
#   CMake 3.20 or newer, or Xcode or Visual Studio with CMake 3.21 or newer; another generator is a configure error.
#
# What it creates
#
#   - A custom command that runs `posenc <command>` (or `posenc build`) at build time (never at configure time,
#     but for the manifest's listing) and writes the outputs before <target> is compiled.
#   - target_include_directories(<target> ... <OUTPUT_DIR>), so that `#include "<NAME>.h"` just works: PRIVATE
#     for an executable; PUBLIC (in the build tree only, $<BUILD_INTERFACE:...>) for a library, so that a target
#     linking the library includes the header too, and uses the library's one definition of a FORMAT c table
#     (calling posenc_add_table for it as well would define the table twice).
#   - target_sources(<target> PRIVATE ...): the generated header and, for FORMAT c, the generated .c, which is
#     compiled into <target> (as C++ when the table is C++, and when the project enables CXX but not C: the .c of
#     a C table is valid C++ too).
#   - A custom target posenc_<NAME> (posenc_<NAME>_<hash> if that name is taken; posenc_<manifest stem> for a
#     manifest) that generates the files, and add_dependencies(<target> posenc_<NAME>). Calling the function again
#     with the same parameters for another target of the same directory shares the files: they are generated once.
#     The same files with other parameters, or from another directory, are a configure error.
#
# When it reruns
#
#   The parameters, the posenc command and its version are written at configure time to a small file in the
#   build tree, only when they changed; the custom command depends on that file (and on the posenc program when it
#   is a file). So changing a parameter (or upgrading posenc) regenerates the files at the next build, and a build
#   with nothing changed runs nothing: no posenc, no compilation, no link. Under Ninja an output that comes out
#   byte-identical keeps its time stamp, so nothing that includes it is recompiled; other generators touch the
#   outputs so that make does not rerun posenc at every build (a plain Makefile uses a stamp instead:
#   `posenc build --stamp`, docs/build.md).
#
# How posenc is found (once per configure)
#
#   1. The cache variable POSENC_EXECUTABLE, if set (-DPOSENC_EXECUTABLE=<path>) and `<it> --version` says posenc.
#   2. The posenc this file belongs to: in an installed package (<prefix>/lib/pythonX.Y/site-packages/posenc_cli/
#      cmake, <prefix>\Lib\site-packages\..., a --user install), the console script <prefix>/bin/posenc
#      (<prefix>\Scripts\posenc.exe), else `<prefix>/bin/python3 -m posenc_cli`. A virtual environment is such a
#      prefix: its posenc runs its own Python, without activating it. Nothing is recorded at install time.
#   3. `posenc` on PATH (find_program), then `${Python3_EXECUTABLE} -m posenc_cli` (find_package(Python3
#      COMPONENTS Interpreter) when Python3_EXECUTABLE is not set): for a checkout or an editable install.
#   Steps 2 and 3 take a posenc only if `<it> --cmake-dir` is the folder of this file, so the module and the
#   program always come from the same installation; another posenc is reported, not used. What they find is
#   kept in the cache and tried first at the next configure (checked again), so a reconfigure started by the
#   build does not depend on PATH.
#   4. Otherwise a FATAL_ERROR that says what was tried and how to fix it.
#   The same posenc must be runnable, with the same environment, when the build runs.

if(CMAKE_VERSION VERSION_LESS 3.16)
  message(FATAL_ERROR "posenc.cmake needs CMake 3.16 or newer; this is CMake ${CMAKE_VERSION}")
endif()
include_guard(GLOBAL)
# include() and find_package() give this file its own policy scope, which the functions below keep: depfile
# paths are relative to the custom command's binary directory (CMake 3.20+), whatever the project's policies.
if(POLICY CMP0116)
  cmake_policy(SET CMP0116 NEW)
endif()

set(POSENC_EXECUTABLE "" CACHE FILEPATH "posenc program for posenc_add_table (empty: the one of this module)")
# The folder of this file: functions see their caller's CMAKE_CURRENT_LIST_DIR, so it is kept here.
set_property(GLOBAL PROPERTY _POSENC_MODULE_DIR "${CMAKE_CURRENT_LIST_DIR}")

# Runs `<command...> <flag>`: <out_var> gets its stripped stdout, or "" when it fails; <why_var> then gets a
# one-line reason (else "").
function(_posenc_ask out_var why_var flag)
  list(JOIN ARGN " " _shown)
  execute_process(
    COMMAND ${ARGN} ${flag}
    RESULT_VARIABLE _rc
    OUTPUT_VARIABLE _out
    ERROR_VARIABLE _err
    TIMEOUT 120)
  string(STRIP "${_out}" _out)
  string(STRIP "${_err}" _err)
  if(_rc STREQUAL "0")
    set(${out_var} "${_out}" PARENT_SCOPE)
    set(${why_var} "" PARENT_SCOPE)
    return()
  endif()
  if(_rc MATCHES "^[0-9]+$")
    set(_why "exit code ${_rc}")
  else()
    set(_why "${_rc}")  # execute_process's own message: no such file, timeout
  endif()
  if(NOT _err STREQUAL "")
    set(_why "${_why}: ${_err}")
  endif()
  string(REGEX REPLACE "[\r\n]+" " " _why "${_why}")
  string(REPLACE ";" "," _why "${_why}")  # a reason is one element of a list
  set(${out_var} "" PARENT_SCOPE)
  set(${why_var} "`${_shown} ${flag}` failed (${_why})" PARENT_SCOPE)
endfunction()

# Sets <version_var> to the version `<command...> --version` prints ("posenc X.Y.Z"), or to "" with a reason in
# <why_var>. With <owned> TRUE the command must first say, through --cmake-dir, that this module is its own.
function(_posenc_try version_var why_var owned)
  set(${version_var} "" PARENT_SCOPE)
  list(JOIN ARGN " " _shown)
  if(owned)
    _posenc_ask(_theirs _why --cmake-dir ${ARGN})
    if(_why)
      set(${why_var} "${_why}" PARENT_SCOPE)
      return()
    endif()
    get_property(_mine GLOBAL PROPERTY _POSENC_MODULE_DIR)
    file(TO_CMAKE_PATH "${_theirs}" _theirs)
    get_filename_component(_theirs "${_theirs}" REALPATH)
    get_filename_component(_mine "${_mine}" REALPATH)
    if(NOT _theirs STREQUAL _mine)
      set(${why_var} "it belongs to another posenc installation (its --cmake-dir is ${_theirs}, not ${_mine})"
          PARENT_SCOPE)
      return()
    endif()
  endif()
  _posenc_ask(_out _why --version ${ARGN})
  if(_why)
    set(${why_var} "${_why}" PARENT_SCOPE)
  elseif(_out MATCHES "^posenc ([^ \r\n]+)")
    set(${version_var} "${CMAKE_MATCH_1}" PARENT_SCOPE)
    set(${why_var} "" PARENT_SCOPE)
  else()
    string(REGEX REPLACE "[\r\n;]+" " " _out "${_out}")
    set(${why_var} "`${_shown} --version` printed '${_out}' instead of 'posenc <version>'" PARENT_SCOPE)
  endif()
endfunction()

# The programs an installed package's posenc may be: the console scripts (<scripts_var>) and the Pythons
# (<pythons_var>) of the prefixes above its site-packages folder, whichever exist. Empty lists when this module
# is not in a site-packages folder (a checkout, an editable install).
function(_posenc_installed scripts_var pythons_var)
  get_property(_dir GLOBAL PROPERTY _POSENC_MODULE_DIR)
  get_filename_component(_site "${_dir}/../.." ABSOLUTE)
  get_filename_component(_name "${_site}" NAME)
  set(_scripts "")
  set(_pythons "")
  if(_name MATCHES "^(site|dist)-packages$")
    # <prefix>/lib/pythonX.Y/site-packages (venv, conda, /usr/local, ~/.local, macOS frameworks),
    # <prefix>/Lib/site-packages (Windows), %APPDATA%/Python/PythonXY/site-packages (Windows --user): the prefix
    # is one, two or three folders up. Every candidate is checked with --cmake-dir before it is used.
    set(_up "${_site}")
    foreach(_level 1 2 3)
      get_filename_component(_up "${_up}" DIRECTORY)
      list(APPEND _scripts "${_up}/bin/posenc" "${_up}/Scripts/posenc.exe")
      list(APPEND _pythons "${_up}/bin/python3" "${_up}/bin/python" "${_up}/Scripts/python.exe" "${_up}/python.exe")
    endforeach()
  endif()
  set(_found_scripts "")
  foreach(_file IN LISTS _scripts)
    if(EXISTS "${_file}" AND NOT IS_DIRECTORY "${_file}")
      list(APPEND _found_scripts "${_file}")
    endif()
  endforeach()
  set(_found_pythons "")
  foreach(_file IN LISTS _pythons)
    if(EXISTS "${_file}" AND NOT IS_DIRECTORY "${_file}")
      list(APPEND _found_pythons "${_file}")
    endif()
  endforeach()
  set(${scripts_var} "${_found_scripts}" PARENT_SCOPE)
  set(${pythons_var} "${_found_pythons}" PARENT_SCOPE)
endfunction()

# Finds posenc (see "How posenc is found"): <cmd_var> gets the command (a list) and <version_var> its version, or
# both "" and <error_var> the message that says what was tried. The result is kept for the rest of the configure.
function(_posenc_find cmd_var version_var error_var)
  get_property(_known GLOBAL PROPERTY _POSENC_COMMAND SET)
  if(_known)
    get_property(_cmd GLOBAL PROPERTY _POSENC_COMMAND)
    get_property(_version GLOBAL PROPERTY _POSENC_VERSION)
    set(${cmd_var} "${_cmd}" PARENT_SCOPE)
    set(${version_var} "${_version}" PARENT_SCOPE)
    set(${error_var} "" PARENT_SCOPE)
    return()
  endif()
  get_property(_mine GLOBAL PROPERTY _POSENC_MODULE_DIR)
  set(_cmd "")
  set(_version "")
  set(_tried "")
  set(_exe_why "")
  if(POSENC_EXECUTABLE)
    _posenc_try(_version _exe_why FALSE "${POSENC_EXECUTABLE}")
    if(_version)
      set(_cmd "${POSENC_EXECUTABLE}")
    else()
      list(APPEND _tried "POSENC_EXECUTABLE=${POSENC_EXECUTABLE}: ${_exe_why}")
    endif()
  endif()
  if(NOT _cmd AND _POSENC_FOUND_FOR STREQUAL _mine AND _POSENC_FOUND)
    # Found by an earlier configure of this build tree: kept if it still runs and is still this module's, so
    # that a reconfigure at build time (a changed CMakeLists.txt or manifest) does not depend on PATH.
    _posenc_try(_version _why TRUE ${_POSENC_FOUND})
    if(_version)
      set(_cmd ${_POSENC_FOUND})
    endif()
  endif()
  if(NOT _cmd)
    _posenc_installed(_scripts _pythons)
    foreach(_script IN LISTS _scripts)
      _posenc_try(_version _why TRUE "${_script}")
      if(_version)
        set(_cmd "${_script}")
        break()
      endif()
      list(APPEND _tried "${_script}: ${_why}")
    endforeach()
    if(NOT _cmd)
      foreach(_python IN LISTS _pythons)
        _posenc_try(_version _why TRUE "${_python}" -m posenc_cli)
        if(_version)
          set(_cmd "${_python}" -m posenc_cli)
          break()
        endif()
        list(APPEND _tried "${_python} -m posenc_cli: ${_why}")
      endforeach()
    endif()
    if(NOT _cmd AND NOT _scripts AND NOT _pythons)
      list(APPEND _tried "beside the package: ${_mine} is not in an installed package's site-packages folder "
                         "(a checkout or an editable install), so posenc is looked for on PATH")
    endif()
  endif()
  if(NOT _cmd)
    unset(_POSENC_ON_PATH CACHE)  # looked up afresh at each configure: PATH may have changed
    find_program(_POSENC_ON_PATH posenc)
    set(_on_path "${_POSENC_ON_PATH}")
    unset(_POSENC_ON_PATH CACHE)
    if(_on_path)
      _posenc_try(_version _why TRUE "${_on_path}")
      if(_version)
        set(_cmd "${_on_path}")
      else()
        list(APPEND _tried "posenc on PATH, ${_on_path}: ${_why}")
      endif()
    else()
      list(APPEND _tried "PATH: no `posenc` program on it")
    endif()
  endif()
  if(NOT _cmd)
    if(NOT Python3_EXECUTABLE)
      find_package(Python3 COMPONENTS Interpreter QUIET)
    endif()
    if(Python3_EXECUTABLE)
      _posenc_try(_version _why TRUE "${Python3_EXECUTABLE}" -m posenc_cli)
      if(_version)
        set(_cmd "${Python3_EXECUTABLE}" -m posenc_cli)
      else()
        list(APPEND _tried "Python3_EXECUTABLE=${Python3_EXECUTABLE}: ${_why}")
      endif()
    else()
      list(APPEND _tried "Python3: no Python 3 interpreter found")
    endif()
  endif()
  if(NOT _cmd)
    list(JOIN _tried "\n  " _tried)
    set(${cmd_var} "" PARENT_SCOPE)
    set(${version_var} "" PARENT_SCOPE)
    string(CONCAT _error
           "cannot run the posenc of ${_mine}. Tried:\n  ${_tried}\n"
           "Install posenc (pip install posenc, or pip install . in a posenc checkout) and point posenc_DIR at "
           "`posenc --cmake-dir` of that installation, or pass -DPOSENC_EXECUTABLE=<path to posenc>, or "
           "-DPython3_EXECUTABLE=<a python in which `import posenc_cli` works>.")
    set(${error_var} "${_error}" PARENT_SCOPE)
    return()
  endif()
  list(JOIN _cmd " " _shown)
  if(_exe_why)
    message(WARNING "posenc: POSENC_EXECUTABLE=${POSENC_EXECUTABLE} does not run: ${_exe_why}; using ${_shown} "
                    "instead")
  endif()
  message(STATUS "posenc: ${_shown} (posenc ${_version})")
  if(NOT _cmd STREQUAL POSENC_EXECUTABLE)
    set(_POSENC_FOUND "${_cmd}" CACHE INTERNAL "The posenc command found for _POSENC_FOUND_FOR")
    set(_POSENC_FOUND_FOR "${_mine}" CACHE INTERNAL "The posenc.cmake folder _POSENC_FOUND was found for")
  endif()
  set_property(GLOBAL PROPERTY _POSENC_COMMAND "${_cmd}")
  set_property(GLOBAL PROPERTY _POSENC_VERSION "${_version}")
  set(${cmd_var} "${_cmd}" PARENT_SCOPE)
  set(${version_var} "${_version}" PARENT_SCOPE)
  set(${error_var} "" PARENT_SCOPE)
endfunction()

# _posenc_find, or a FATAL_ERROR naming the caller <fn>.
function(_posenc_command fn cmd_var version_var)
  _posenc_find(_cmd _version _error)
  if(NOT _cmd)
    message(FATAL_ERROR "${fn}: ${_error}")
  endif()
  set(${cmd_var} "${_cmd}" PARENT_SCOPE)
  set(${version_var} "${_version}" PARENT_SCOPE)
endfunction()

# Checks that <target> (a name or an ALIAS) is a compiled target of this directory; sets <real_var> to the real
# target and <type_var> to its type.
function(_posenc_target fn target real_var type_var)
  if(NOT TARGET "${target}")
    message(FATAL_ERROR "${fn}: there is no target '${target}'; call ${fn_name} after add_executable "
                        "or add_library")
  endif()
  get_target_property(_aliased "${target}" ALIASED_TARGET)
  if(_aliased)
    set(target "${_aliased}")
  endif()
  get_target_property(_imported "${target}" IMPORTED)
  get_target_property(_type "${target}" TYPE)
  if(_imported)
    set(_type "imported ${_type}")
  endif()
  if(NOT _type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY)$")
    message(FATAL_ERROR "${fn}: the target must be an executable or a static, shared, module or object library "
                        "built by this project (it is: ${_type})")
  endif()
  get_target_property(_target_dir "${target}" SOURCE_DIR)
  if(NOT _target_dir STREQUAL CMAKE_CURRENT_SOURCE_DIR)
    message(FATAL_ERROR "${fn}: the target is created in ${_target_dir}; call it in that directory's "
                        "CMakeLists.txt (CMake attaches a custom command only to targets of its own directory)")
  endif()
  set(${real_var} "${target}" PARENT_SCOPE)
  set(${type_var} "${_type}" PARENT_SCOPE)
endfunction()

# Claims <outputs> for the rule <owner> (a string naming the call's parameters and directory): sets <new_var> to
# TRUE when the rule is new, FALSE when the same rule already makes them; another rule is a FATAL_ERROR.
function(_posenc_claim fn owner new_var)
  set(_new TRUE)
  foreach(_file IN LISTS ARGN)
    get_property(_previous GLOBAL PROPERTY "_POSENC_RULE:${_file}")
    if(_previous STREQUAL owner)
      set(_new FALSE)
    elseif(_previous)
      message(FATAL_ERROR "${fn}: ${_file} is already generated by another posenc_add_table or "
                          "posenc_add_manifest call with other parameters or in another directory; give this one "
                          "another NAME or OUTPUT_DIR")
    endif()
  endforeach()
  if(_new)
    foreach(_file IN LISTS ARGN)
      set_property(GLOBAL PROPERTY "_POSENC_RULE:${_file}" "${owner}")
    endforeach()
  endif()
  set(${new_var} "${_new}" PARENT_SCOPE)
endfunction()

# Writes <content> to the parameters file <path> only when it changed, so its time stamp says "parameters changed".
function(_posenc_parameters path content)
  set(_old "")
  if(EXISTS "${path}")
    file(READ "${path}" _old)
  endif()
  if(NOT _old STREQUAL content)
    file(WRITE "${path}" "${content}")
  endif()
endfunction()

# The dependencies every rule has besides its inputs: the parameters file, and the posenc program when it is a
# file (a reinstall touches it).
function(_posenc_depends out_var params)
  get_property(_posenc GLOBAL PROPERTY _POSENC_COMMAND)
  set(_depends "${params}")
  list(GET _posenc 0 _program)
  list(LENGTH _posenc _words)
  if(_words EQUAL 1 AND EXISTS "${_program}" AND NOT IS_DIRECTORY "${_program}")
    list(APPEND _depends "${_program}")
  endif()
  set(${out_var} "${_depends}" PARENT_SCOPE)
endfunction()

# Ninja restats outputs (an unchanged file keeps its time stamp and nothing is recompiled); make compares time
# stamps only, so its outputs are touched, or an unchanged output would rerun posenc at every build.
function(_posenc_touch out_var)
  set(_touch "")
  if(NOT CMAKE_GENERATOR MATCHES "Ninja")
    set(_touch COMMAND "${CMAKE_COMMAND}" -E touch_nocreate ${ARGN})
  endif()
  set(${out_var} "${_touch}" PARENT_SCOPE)
endfunction()

# <path> as the build log shows it: relative to the top folder <base> (the build or source tree) when inside it.
function(_posenc_shown out_var path base)
  file(RELATIVE_PATH _shown "${base}" "${path}")
  if(_shown MATCHES "^[.][.]/")
    set(_shown "${path}")  # outside it
  endif()
  set(${out_var} "${_shown}" PARENT_SCOPE)
endfunction()

# The driver target of one rule: posenc_<stem>, or posenc_<stem>_<hash> when that name is taken.
function(_posenc_driver out_var stem hash key)
  set(_driver "posenc_${stem}")
  if(TARGET "${_driver}")
    set(_driver "posenc_${stem}_${hash}")
  endif()
  add_custom_target("${_driver}" DEPENDS ${ARGN})
  set_property(GLOBAL PROPERTY "_POSENC_DRIVER:${key}" "${_driver}")
  set(${out_var} "${_driver}" PARENT_SCOPE)
endfunction()

# Makes <target> depend on the rule's driver and gives it the files: the include folder <dir>, and <outputs> as
# sources. A .c is compiled as C++ when it holds C++ (<cxx> TRUE: a table written with --lang c++), or when the
# project enables CXX but not C (the .c of a C table is valid C++ too).
function(_posenc_attach target type key dir cxx)
  get_property(_driver GLOBAL PROPERTY "_POSENC_DRIVER:${key}")
  add_dependencies("${target}" "${_driver}")
  if(type STREQUAL "EXECUTABLE")
    target_include_directories("${target}" PRIVATE "${dir}")
  else()
    target_include_directories("${target}" PUBLIC "$<BUILD_INTERFACE:${dir}>")
  endif()
  target_sources("${target}" PRIVATE ${ARGN})
  get_property(_languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(cxx OR (NOT "C" IN_LIST _languages AND "CXX" IN_LIST _languages))
    foreach(_file IN LISTS ARGN)
      if(_file MATCHES "[.]c$")
        set_source_files_properties("${_file}" PROPERTIES LANGUAGE CXX)
      endif()
    endforeach()
  endif()
endfunction()

# Sets <out_var> to the names of posenc generate's presets, as the posenc that builds the tables lists them
# (`posenc presets --json`, asked once per configure): PRESET is checked against posenc's own list, never a copy.
function(_posenc_presets fn out_var)
  get_property(_known GLOBAL PROPERTY _POSENC_PRESETS SET)
  if(NOT _known)
    get_property(_posenc GLOBAL PROPERTY _POSENC_COMMAND)
    _posenc_ask(_json _why --json ${_posenc} presets)
    if(_why)
      message(FATAL_ERROR "${fn}: cannot list posenc's presets to check PRESET: ${_why}")
    endif()
    # One JSON object per preset, printed with an indent of 2: a preset's own keys are indented by 4 spaces
    # (those of its "params" by 6), so this finds the "name" of each preset and nothing else.
    string(REGEX MATCHALL "\n    \"name\": \"[^\"\n]*\"" _found "${_json}")
    set(_presets "")
    foreach(_line IN LISTS _found)
      string(REGEX REPLACE "^\n    \"name\": \"([^\"\n]*)\"$" "\\1" _name "${_line}")
      list(APPEND _presets "${_name}")
    endforeach()
    if(NOT _presets)
      message(FATAL_ERROR "${fn}: `posenc presets --json` listed no preset; cannot check PRESET")
    endif()
    set_property(GLOBAL PROPERTY _POSENC_PRESETS "${_presets}")
  endif()
  get_property(_presets GLOBAL PROPERTY _POSENC_PRESETS)
  set(${out_var} "${_presets}" PARENT_SCOPE)
endfunction()

# Sets <out_var> to TRUE when <args> (posenc options) ask for a C++ table: --lang c++ or --lang=c++, the last
# --lang winning as it does for posenc.
function(_posenc_is_cxx out_var)
  set(_lang c)
  set(_next FALSE)
  foreach(_arg IN LISTS ARGN)
    if(_next)
      set(_lang "${_arg}")
      set(_next FALSE)
    elseif(_arg STREQUAL "--lang")
      set(_next TRUE)
    elseif(_arg MATCHES "^--lang=")
      string(SUBSTRING "${_arg}" 7 -1 _lang)
    endif()
  endforeach()
  if(_lang STREQUAL "c++")
    set(${out_var} TRUE PARENT_SCOPE)
  else()
    set(${out_var} FALSE PARENT_SCOPE)
  endif()
endfunction()

function(posenc_add_table target)
  set(_fn "posenc_add_table(${target})")
  set(fn_name posenc_add_table)
  cmake_parse_arguments(PARSE_ARGV 1 _pe ""
                        "COMMAND;SEQ_LEN;D_MODEL;BASE;DTYPE;SCALE;ZERO_POINT;PRESET;NAME;OUTPUT_DIR;FORMAT"
                        "ARGS;INPUTS")
  if(_pe_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${_fn}: unknown arguments '${_pe_UNPARSED_ARGUMENTS}'; allowed: [COMMAND <command>] "
                        "SEQ_LEN <n> D_MODEL <d> [BASE <b>] [DTYPE <type> [SCALE <s>] [ZERO_POINT <z>]] "
                        "[PRESET <name>] [NAME <c-name>] [OUTPUT_DIR <dir>] [FORMAT h|c] [ARGS <posenc options>...] "
                        "[INPUTS <files>...]")
  endif()
  if(_pe_KEYWORDS_MISSING_VALUES)
    message(FATAL_ERROR "${_fn}: ${_pe_KEYWORDS_MISSING_VALUES} needs a value")
  endif()

  # Arguments: checked here so that a mistake stops the configure step, not the build.
  set(_keywords FALSE)  # generate's own keywords: SEQ_LEN, D_MODEL, BASE, PRESET (else its options go in ARGS)
  foreach(_key SEQ_LEN D_MODEL BASE PRESET)
    if(DEFINED _pe_${_key})
      set(_keywords TRUE)
    endif()
  endforeach()
  if(NOT DEFINED _pe_COMMAND)
    set(_pe_COMMAND generate)
    set(_keywords TRUE)
  elseif(NOT _pe_COMMAND MATCHES "^(generate|rope|alibi|sincos2d|relative|window)$")
    message(FATAL_ERROR "${_fn}: COMMAND must be one of generate, rope, alibi, sincos2d, relative, window, not "
                        "'${_pe_COMMAND}'")
  endif()
  set(_inputs "")
  foreach(_file IN LISTS _pe_INPUTS)
    get_filename_component(_file "${_file}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    if(NOT EXISTS "${_file}" OR IS_DIRECTORY "${_file}")
      message(FATAL_ERROR "${_fn}: INPUTS names ${_file}, which is not a file")
    endif()
    list(APPEND _inputs "${_file}")
  endforeach()
  if(NOT _pe_COMMAND STREQUAL "generate" OR NOT _keywords)
    _posenc_other_command()
    return()
  endif()
  foreach(_key SEQ_LEN D_MODEL)
    if(NOT DEFINED _pe_${_key})
      message(FATAL_ERROR "${_fn}: ${_key} is required (a positive integer)")
    endif()
    if(NOT _pe_${_key} MATCHES "^[1-9][0-9]*$")
      message(FATAL_ERROR "${_fn}: ${_key} must be a positive integer, not '${_pe_${_key}}'")
    endif()
  endforeach()
  if(NOT DEFINED _pe_BASE)
    set(_pe_BASE 10000)
  elseif(NOT _pe_BASE MATCHES "^[+]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][-+]?[0-9]+)?$")
    message(FATAL_ERROR "${_fn}: BASE must be a number > 1, not '${_pe_BASE}'")
  endif()
  if(NOT DEFINED _pe_DTYPE)
    set(_pe_DTYPE float32)
  elseif(NOT _pe_DTYPE MATCHES "^(float32|float64|float16|bfloat16|q7|q15|q31|int8|fixed[0-9]+[.][0-9]+)$")
    message(FATAL_ERROR "${_fn}: DTYPE must be one of float32, float64, float16, bfloat16, q7, q15, q31, int8, "
                        "fixed<T>.<F>, not '${_pe_DTYPE}' (posenc checks the rest when it runs)")
  endif()
  set(_element --dtype ${_pe_DTYPE})
  if(_pe_DTYPE STREQUAL "int8")
    if(NOT DEFINED _pe_SCALE)
      message(FATAL_ERROR "${_fn}: DTYPE int8 needs SCALE (the real value of one quantisation step)")
    endif()
    list(APPEND _element --scale ${_pe_SCALE})
    if(DEFINED _pe_ZERO_POINT)
      list(APPEND _element --zero-point ${_pe_ZERO_POINT})
    endif()
  elseif(DEFINED _pe_SCALE OR DEFINED _pe_ZERO_POINT)
    message(FATAL_ERROR "${_fn}: SCALE and ZERO_POINT are for DTYPE int8 only")
  endif()
  if(DEFINED _pe_PRESET)
    _posenc_command("${_fn}" _posenc _version)
    _posenc_presets("${_fn}" _presets)
    if(NOT _pe_PRESET IN_LIST _presets)
      list(JOIN _presets ", " _shown)
      message(FATAL_ERROR "${_fn}: PRESET must be one of ${_shown} (`posenc presets` says what each one is), "
                          "not '${_pe_PRESET}'")
    endif()
    list(APPEND _element --preset ${_pe_PRESET})
  endif()
  set(_what "${_pe_SEQ_LEN} x ${_pe_D_MODEL} ${_pe_DTYPE}")
  _posenc_rule(generate -n ${_pe_SEQ_LEN} -d ${_pe_D_MODEL} --base ${_pe_BASE} ${_element})
endfunction()

# posenc_add_table with COMMAND and the command's own options in ARGS (checked by posenc when it runs; any table
# command, generate included); DTYPE, SCALE and ZERO_POINT are passed on as given. A macro: it sets the caller's
# _pe_* variables.
macro(_posenc_other_command)
  foreach(_key SEQ_LEN D_MODEL BASE PRESET)
    if(DEFINED _pe_${_key})
      message(FATAL_ERROR "${_fn}: ${_key} is for COMMAND generate; give ${_pe_COMMAND}'s options in ARGS")
    endif()
  endforeach()
  set(_element "")
  if(DEFINED _pe_DTYPE)
    if(NOT _pe_DTYPE MATCHES "^(float32|float64|float16|bfloat16|q7|q15|q31|int8|int16|int32|int64|fixed[0-9]+[.][0-9]+)$")
      message(FATAL_ERROR "${_fn}: DTYPE must be an element type of posenc ${_pe_COMMAND}, not '${_pe_DTYPE}'")
    endif()
    list(APPEND _element --dtype ${_pe_DTYPE})
  endif()
  foreach(_key SCALE ZERO_POINT)
    if(DEFINED _pe_${_key})
      string(TOLOWER "${_key}" _flag)
      string(REPLACE "_" "-" _flag "${_flag}")
      list(APPEND _element --${_flag} ${_pe_${_key}})
    endif()
  endforeach()
  set(_what "posenc ${_pe_COMMAND}")
  _posenc_rule(${_pe_COMMAND} ${_element})
endmacro()

# The rule of one table: <args> are the command and its table options; the rest comes from the caller's _pe_*.
macro(_posenc_rule)
  set(_table_args ${ARGN})
  if(NOT DEFINED _pe_NAME)
    set(_pe_NAME pe)
  elseif(NOT _pe_NAME MATCHES "^[A-Za-z][A-Za-z0-9_]*$")
    message(FATAL_ERROR "${_fn}: NAME must be a C identifier (a letter, then letters, digits and "
                        "underscores), not '${_pe_NAME}'")
  endif()
  if(NOT DEFINED _pe_FORMAT)
    set(_pe_FORMAT h)
  elseif(NOT _pe_FORMAT MATCHES "^(h|c)$")
    message(FATAL_ERROR "${_fn}: FORMAT must be h (one header) or c (a .c and a .h), not '${_pe_FORMAT}'")
  endif()
  if(NOT DEFINED _pe_OUTPUT_DIR)
    set(_pe_OUTPUT_DIR "${CMAKE_CURRENT_BINARY_DIR}/posenc")
  endif()
  get_filename_component(_dir "${_pe_OUTPUT_DIR}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  _posenc_target("${_fn}" "${target}" target _type)
  # A C++ table (--lang c++ in ARGS) keeps the names <NAME>.c and <NAME>.h, so that #include "<NAME>.h" is the
  # same in every project; its .c is compiled as C++ (LANGUAGE CXX), never by the C compiler.
  _posenc_is_cxx(_cxx ${_pe_ARGS})
  get_property(_languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(_cxx AND NOT "CXX" IN_LIST _languages)
    message(FATAL_ERROR "${_fn}: ARGS --lang c++ makes a C++ table, and this project does not enable C++: "
                        "project(<name> C CXX), or enable_language(CXX) before this call")
  endif()

  # The files.
  set(_header "${_dir}/${_pe_NAME}.h")
  if(_pe_FORMAT STREQUAL "c")
    set(_primary "${_dir}/${_pe_NAME}.c")
    set(_outputs "${_primary}" "${_header}")
  else()
    set(_primary "${_header}")
    set(_outputs "${_header}")
  endif()

  _posenc_command("${_fn}" _posenc _version)
  set(_command ${_posenc} ${_table_args} --format ${_pe_FORMAT} --name ${_pe_NAME} ${_pe_ARGS} --quiet
               -o "${_primary}")

  # One rule per table, driven by a custom target that every target using the table depends on: so the table is
  # generated once even when several targets of this directory use it (make would otherwise run the rule in each
  # target, concurrently, and the later run would make the earlier targets out of date).
  string(REPLACE ";" " " _extra "${_table_args};${_pe_ARGS};${_inputs}")
  _posenc_claim("${_fn}" "${CMAKE_CURRENT_SOURCE_DIR}|${_pe_NAME};${_pe_FORMAT};${_extra}" _new ${_outputs})
  if(_new)
    file(MAKE_DIRECTORY "${_dir}")
    string(MD5 _hash "${_primary}")
    string(SUBSTRING "${_hash}" 0 8 _hash)
    set(_params "${CMAKE_CURRENT_BINARY_DIR}/CMakeFiles/posenc/${_pe_NAME}-${_hash}.params")
    string(REPLACE ";" " " _line "${_command}")
    _posenc_parameters("${_params}" "posenc ${_version}\n${_line}\n")
    _posenc_depends(_depends "${_params}")
    _posenc_touch(_touch ${_outputs})
    _posenc_shown(_shown "${_primary}" "${CMAKE_BINARY_DIR}")
    add_custom_command(
      OUTPUT ${_outputs}
      COMMAND "${CMAKE_COMMAND}" -E make_directory "${_dir}"
      COMMAND ${_command}
      ${_touch}
      DEPENDS ${_depends} ${_inputs}
      COMMENT "Generating posenc table ${_shown} (${_what})"
      VERBATIM)
    _posenc_driver(_driver "${_pe_NAME}" "${_hash}" "${_primary}" ${_outputs})
  endif()
  _posenc_attach("${target}" "${_type}" "${_primary}" "${_dir}" "${_cxx}" ${_outputs})
endmacro()

function(posenc_add_manifest target manifest)
  set(_fn "posenc_add_manifest(${target})")
  set(fn_name posenc_add_manifest)
  cmake_parse_arguments(PARSE_ARGV 2 _pm "" "OUTPUT_DIR" "")
  if(_pm_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${_fn}: unknown arguments '${_pm_UNPARSED_ARGUMENTS}'; allowed: <manifest> "
                        "[OUTPUT_DIR <dir>]")
  endif()
  if(_pm_KEYWORDS_MISSING_VALUES)
    message(FATAL_ERROR "${_fn}: ${_pm_KEYWORDS_MISSING_VALUES} needs a value")
  endif()
  get_filename_component(_manifest "${manifest}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  if(NOT EXISTS "${_manifest}" OR IS_DIRECTORY "${_manifest}")
    message(FATAL_ERROR "${_fn}: the manifest ${_manifest} is not a file")
  endif()
  if(NOT DEFINED _pm_OUTPUT_DIR)
    set(_pm_OUTPUT_DIR "${CMAKE_CURRENT_BINARY_DIR}/posenc")
  endif()
  get_filename_component(_dir "${_pm_OUTPUT_DIR}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  _posenc_target("${_fn}" "${target}" target _type)

  # posenc's depfile names the files the entries read; every generator but the old ones reads it.
  set(_depfiles FALSE)
  if(CMAKE_GENERATOR MATCHES "Ninja")
    set(_depfiles TRUE)
  elseif(CMAKE_GENERATOR MATCHES "Makefiles")
    if(NOT CMAKE_VERSION VERSION_LESS 3.20)
      set(_depfiles TRUE)
    endif()
  elseif(NOT CMAKE_VERSION VERSION_LESS 3.21)
    set(_depfiles TRUE)
  endif()
  if(NOT _depfiles)
    message(FATAL_ERROR "${_fn}: the ${CMAKE_GENERATOR} generator of CMake ${CMAKE_VERSION} does not read "
                        "depfiles, which posenc_add_manifest needs: use Ninja, or CMake 3.20 or newer (3.21 for "
                        "Xcode and Visual Studio)")
  endif()
  if(POLICY CMP0116)
    set(_workdir "${CMAKE_CURRENT_BINARY_DIR}")  # CMP0116 NEW (above): depfile paths relative to it
  else()
    set(_workdir "${CMAKE_BINARY_DIR}")  # Ninja before CMake 3.20 reads them relative to the top build folder
  endif()

  _posenc_command("${_fn}" _posenc _version)
  string(MD5 _hash "${_manifest}|${_dir}")
  string(SUBSTRING "${_hash}" 0 8 _hash)
  set(_build ${_posenc} build "${_manifest}" --output-dir "${_dir}")

  # The outputs, known now: the manifest is read again whenever it changes (a configure dependency).
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_manifest}")
  execute_process(
    COMMAND ${_build} --list-outputs --quiet
    WORKING_DIRECTORY "${_workdir}"
    RESULT_VARIABLE _rc
    OUTPUT_VARIABLE _listed
    ERROR_VARIABLE _err
    TIMEOUT 600)
  if(NOT _rc STREQUAL "0")
    string(STRIP "${_err}" _err)
    if(NOT _rc MATCHES "^[0-9]+$")
      set(_err "${_rc} ${_err}")  # execute_process's own message: no such file, timeout
    endif()
    message(FATAL_ERROR "${_fn}: posenc cannot build ${_manifest}:\n${_err}")
  endif()
  # One absolute path a line. posenc refuses, here as in its depfile, every name a build tool would misread
  # (posenc_cli/manifest/names.py: '$', '#', ';', newlines, a leading '~', ...): the one rule, applied by posenc.
  string(REGEX REPLACE "\n$" "" _listed "${_listed}")
  string(REPLACE "\n" ";" _listed "${_listed}")
  set(_outputs "")
  foreach(_file IN LISTS _listed)
    file(TO_CMAKE_PATH "${_file}" _file)
    if(NOT IS_ABSOLUTE "${_file}")
      message(FATAL_ERROR "${_fn}: `posenc build --list-outputs` printed '${_file}', not an absolute path")
    endif()
    list(APPEND _outputs "${_file}")
  endforeach()
  list(LENGTH _outputs _count)
  if(_count EQUAL 1)
    set(_count "1 file")
  else()
    set(_count "${_count} files")
  endif()

  _posenc_claim("${_fn}" "${CMAKE_CURRENT_SOURCE_DIR}|manifest ${_manifest}|${_dir}" _new ${_outputs})
  set(_key "manifest:${_manifest}|${_dir}")
  if(_new)
    file(MAKE_DIRECTORY "${_dir}")
    set(_depfile "${_dir}/.posenc-${_hash}.d")  # inside the output root, where posenc build lets it go
    set(_command ${_build} --make-dirs --depfile "${_depfile}" --quiet)
    get_filename_component(_stem "${_manifest}" NAME_WE)
    string(MAKE_C_IDENTIFIER "${_stem}" _stem)
    set(_params "${CMAKE_CURRENT_BINARY_DIR}/CMakeFiles/posenc/${_stem}-${_hash}.params")
    string(REPLACE ";" " " _line "${_command}")
    string(REPLACE ";" " " _files "${_outputs}")
    _posenc_parameters("${_params}" "posenc ${_version}\n${_line}\n${_files}\n")
    _posenc_depends(_depends "${_params}")
    _posenc_touch(_touch ${_outputs})
    _posenc_shown(_shown "${_manifest}" "${CMAKE_SOURCE_DIR}")
    add_custom_command(
      OUTPUT ${_outputs}
      COMMAND ${_command}
      ${_touch}
      DEPENDS "${_manifest}" ${_depends}
      DEPFILE "${_depfile}"
      WORKING_DIRECTORY "${_workdir}"
      COMMENT "Building posenc manifest ${_shown} (${_count})"
      VERBATIM)
    _posenc_driver(_driver "${_stem}" "${_hash}" "${_key}" ${_outputs})
  endif()
  _posenc_attach("${target}" "${_type}" "${_key}" "${_dir}" FALSE ${_outputs})
endfunction()
