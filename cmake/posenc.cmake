# posenc.cmake: generate positional-encoding tables with posenc at build time.
#
# Usage
#
#   list(APPEND CMAKE_MODULE_PATH "<posenc checkout>/cmake")   # or -DCMAKE_MODULE_PATH=<posenc checkout>/cmake
#   include(posenc)
#
#   add_executable(app main.c)
#   posenc_add_table(app SEQ_LEN 2048 D_MODEL 512)              # main.c: #include "pe.h"
#   posenc_add_table(app SEQ_LEN 4096 D_MODEL 768 BASE 500000 DTYPE float64 NAME pe_long FORMAT c)
#
#   posenc_add_table(app SEQ_LEN 512 D_MODEL 64 DTYPE q15 PRESET fairseq NAME pe_q15 ARGS --align 16)
#
#   posenc_add_table(<target> SEQ_LEN <n> D_MODEL <d>
#                    [BASE <b>] [DTYPE float32|float64|float16|bfloat16|q15|q7|int8 [SCALE <s>] [ZERO_POINT <z>]]
#                    [PRESET <name>] [NAME <c-name>] [OUTPUT_DIR <dir>] [FORMAT h|c] [ARGS <posenc options>...]
#                    [INPUTS <files>...])
#   posenc_add_table(<target> COMMAND rope|alibi|sincos2d|relative|window ARGS <its options>...
#                    [DTYPE <type>] [NAME <c-name>] [OUTPUT_DIR <dir>] [FORMAT h|c] [INPUTS <files>...])
#
#   posenc_add_table(app COMMAND rope NAME rope ARGS --config ${CMAKE_CURRENT_SOURCE_DIR}/llama -n 8192
#                    INPUTS llama/config.json)                  # RoPE caches from the model's config.json
#
# Options
#
#   <target>    An executable or a static, shared, module or object library created in the same directory
#               (CMakeLists.txt) as the call: CMake gives a custom command's rule only to targets of its directory.
#   SEQ_LEN     Number of positions (rows). Required.
#   D_MODEL     Model dimension (columns). Required.
#   BASE        Wavelength base, a number > 1. Default 10000.
#   DTYPE       The element type: float32 (C float), float64 (double), float16/bfloat16 (uint16_t bit patterns),
#               q15 (int16_t), q7 or int8 (int8_t). Default float32.
#   SCALE       int8 only (required with it): the real value of one quantisation step.
#   ZERO_POINT  int8 only: the integer that stands for 0.0. Default 0.
#   PRESET      A framework convention of `posenc generate --preset` (`posenc presets` lists them).
#   NAME        The C symbol, and the stem of the generated files. Default pe. Macros are <NAME>_SEQ_LEN and
#               <NAME>_D_MODEL with NAME upper-cased. Tables generated into one directory need distinct names.
#   OUTPUT_DIR  Where the files are generated; a relative path is relative to CMAKE_CURRENT_BINARY_DIR.
#               Default ${CMAKE_CURRENT_BINARY_DIR}/posenc.
#   FORMAT      h: one self-contained header, <NAME>.h, with a static const table (one copy per translation unit
#               that uses it). c: <NAME>.c defines the table once and <NAME>.h declares it (extern), for tables
#               used by several translation units. Default h.
#   ARGS        Any further options of `posenc generate`, passed as they are (--align 16, --float-literal hex,
#               --lang c++ --namespace model, --start 2, --c-half-type __fp16, ...); a change regenerates the table.
#   COMMAND     The posenc command that makes the table: generate (the default, with SEQ_LEN and D_MODEL), or
#               rope, alibi, sincos2d, relative, window, whose options go in ARGS (SEQ_LEN, D_MODEL, BASE and
#               PRESET are generate's). The C symbols are <NAME>_<array> for tables of several arrays.
#   INPUTS      Files the table is made from (a config.json given to --config, a checkpoint given to --bias),
#               relative to CMAKE_CURRENT_SOURCE_DIR: the table is regenerated when one of them changes.
#
# What it creates
#
#   - A custom command that runs `posenc generate` at build time (never at configure time) and writes
#     <OUTPUT_DIR>/<NAME>.h, or <OUTPUT_DIR>/<NAME>.c and <OUTPUT_DIR>/<NAME>.h, before <target> is compiled.
#   - target_include_directories(<target> ... <OUTPUT_DIR>), so that `#include "<NAME>.h"` just works: PRIVATE
#     for an executable; PUBLIC (in the build tree only, $<BUILD_INTERFACE:...>) for a library, so that a target
#     linking the library includes the header too, and uses the library's one definition of a FORMAT c table
#     (calling posenc_add_table for it as well would define the table twice).
#   - target_sources(<target> PRIVATE ...): the generated header and, for FORMAT c, the generated .c, which is
#     compiled into <target> (as C++ when the project enables CXX but not C; the .c is valid C++ too).
#   - A custom target posenc_<NAME> (posenc_<NAME>_<hash> if that name is taken) that generates the table, and
#     add_dependencies(<target> posenc_<NAME>). Calling posenc_add_table again with the same parameters for another
#     target of the same directory shares the table: it is generated once. The same files with other parameters,
#     or from another directory, are a configure error.
#
# When it reruns
#
#   The parameters, the posenc command and its version are written at configure time to a small file in the
#   build tree, only when they changed; the custom command depends on that file (and on the posenc executable
#   when it is a file). So changing a parameter (or upgrading posenc) regenerates the table at the next build, and
#   a build with nothing changed runs nothing: no posenc, no compilation, no link. Under Ninja an output that
#   comes out byte-identical keeps its time stamp, so nothing that includes it is recompiled; other generators
#   touch the outputs so that make does not rerun posenc at every build.
#
# How posenc is found (once per configure)
#
#   1. The cache variable POSENC_EXECUTABLE (find_program(posenc) by default; -DPOSENC_EXECUTABLE=<path> to
#      choose one), if `<it> --version` says posenc.
#   2. Otherwise `${Python3_EXECUTABLE} -m posenc_cli`, if find_package(Python3 COMPONENTS Interpreter) finds a
#      Python in which posenc_cli is importable (-DPython3_EXECUTABLE=<python> to choose one).
#   3. Otherwise a FATAL_ERROR that says what was tried and how to fix it.
#   The same posenc must be runnable, with the same environment, when the build runs.

if(CMAKE_VERSION VERSION_LESS 3.16)
  message(FATAL_ERROR "posenc.cmake needs CMake 3.16 or newer; this is CMake ${CMAKE_VERSION}")
endif()
include_guard(GLOBAL)

find_program(POSENC_EXECUTABLE posenc DOC "posenc program for posenc_add_table (fallback: python -m posenc_cli)")

# Sets <out_var> to the version printed by `<command...> --version` ("posenc X.Y.Z"), or to "" when the command
# does not run or is not posenc; <err_var> gets a one-line reason.
function(_posenc_probe out_var err_var)
  list(JOIN ARGN " " _shown)
  execute_process(
    COMMAND ${ARGN} --version
    RESULT_VARIABLE _rc
    OUTPUT_VARIABLE _out
    ERROR_VARIABLE _err
    TIMEOUT 120)
  string(STRIP "${_out}" _out)
  string(STRIP "${_err}" _err)
  if(_rc STREQUAL "0" AND _out MATCHES "^posenc ([^ \r\n]+)")
    set(${out_var} "${CMAKE_MATCH_1}" PARENT_SCOPE)
    set(${err_var} "" PARENT_SCOPE)
    return()
  endif()
  if(_rc STREQUAL "0")
    set(_why "it printed '${_out}' instead of 'posenc <version>'")
  elseif(_rc MATCHES "^[0-9]+$")
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
  set(${err_var} "`${_shown} --version` failed (${_why})" PARENT_SCOPE)
endfunction()

# Finds posenc once per configure; sets <cmd_var> (a list: the command) and <version_var>.
function(_posenc_command cmd_var version_var)
  get_property(_known GLOBAL PROPERTY _POSENC_COMMAND SET)
  if(NOT _known)
    set(_cmd "")
    set(_version "")
    set(_tried "")
    if(POSENC_EXECUTABLE)
      _posenc_probe(_version _exe_why "${POSENC_EXECUTABLE}")
      if(_version)
        set(_cmd "${POSENC_EXECUTABLE}")
      else()
        list(APPEND _tried "POSENC_EXECUTABLE=${POSENC_EXECUTABLE}: ${_exe_why}")
      endif()
    else()
      list(APPEND _tried "POSENC_EXECUTABLE: no `posenc` on PATH")
    endif()
    if(NOT _cmd)
      if(NOT Python3_EXECUTABLE)
        find_package(Python3 COMPONENTS Interpreter QUIET)
      endif()
      if(Python3_EXECUTABLE)
        _posenc_probe(_version _why "${Python3_EXECUTABLE}" -m posenc_cli)
        if(_version)
          set(_cmd "${Python3_EXECUTABLE}" -m posenc_cli)
          if(POSENC_EXECUTABLE)
            message(WARNING "posenc: POSENC_EXECUTABLE=${POSENC_EXECUTABLE} does not run: ${_exe_why}; "
                            "using ${Python3_EXECUTABLE} -m posenc_cli instead")
          endif()
        else()
          list(APPEND _tried "Python3_EXECUTABLE=${Python3_EXECUTABLE}: ${_why}")
        endif()
      else()
        list(APPEND _tried "Python3: no Python 3 interpreter found")
      endif()
    endif()
    if(NOT _cmd)
      list(JOIN _tried "\n  " _tried)
      message(FATAL_ERROR
        "posenc_add_table: cannot run posenc. Tried:\n  ${_tried}\n"
        "Install posenc (pip install . in a posenc checkout), or pass -DPOSENC_EXECUTABLE=<path to posenc>, or "
        "-DPython3_EXECUTABLE=<a python in which `import posenc_cli` works>.")
    endif()
    list(JOIN _cmd " " _shown)
    message(STATUS "posenc: ${_shown} (posenc ${_version})")
    set_property(GLOBAL PROPERTY _POSENC_COMMAND "${_cmd}")
    set_property(GLOBAL PROPERTY _POSENC_VERSION "${_version}")
  endif()
  get_property(_cmd GLOBAL PROPERTY _POSENC_COMMAND)
  get_property(_version GLOBAL PROPERTY _POSENC_VERSION)
  set(${cmd_var} "${_cmd}" PARENT_SCOPE)
  set(${version_var} "${_version}" PARENT_SCOPE)
endfunction()

function(posenc_add_table target)
  set(_fn "posenc_add_table(${target})")
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
  if(NOT DEFINED _pe_COMMAND)
    set(_pe_COMMAND generate)
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
  if(NOT _pe_COMMAND STREQUAL "generate")
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
  elseif(NOT _pe_DTYPE MATCHES "^(float32|float64|float16|bfloat16|q15|q7|int8)$")
    message(FATAL_ERROR "${_fn}: DTYPE must be one of float32, float64, float16, bfloat16, q15, q7, int8, not "
                        "'${_pe_DTYPE}'")
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
    if(NOT _pe_PRESET MATCHES "^[a-z0-9-]+$")
      message(FATAL_ERROR "${_fn}: PRESET must be a preset name (posenc presets lists them), not '${_pe_PRESET}'")
    endif()
    list(APPEND _element --preset ${_pe_PRESET})
  endif()
  set(_what "${_pe_SEQ_LEN} x ${_pe_D_MODEL} ${_pe_DTYPE}")
  _posenc_rule(generate -n ${_pe_SEQ_LEN} -d ${_pe_D_MODEL} --base ${_pe_BASE} ${_element})
endfunction()

# posenc_add_table for COMMAND other than generate: the kind's own options go in ARGS (checked by posenc when it
# runs); DTYPE, SCALE and ZERO_POINT are passed on as given. A macro: it sets the caller's _pe_* variables.
macro(_posenc_other_command)
  foreach(_key SEQ_LEN D_MODEL BASE PRESET)
    if(DEFINED _pe_${_key})
      message(FATAL_ERROR "${_fn}: ${_key} is for COMMAND generate; give ${_pe_COMMAND}'s options in ARGS")
    endif()
  endforeach()
  set(_element "")
  if(DEFINED _pe_DTYPE)
    if(NOT _pe_DTYPE MATCHES "^(float32|float64|float16|bfloat16|q15|q7|int8|int16|int32|int64)$")
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

  # The target: a real, compiled target of this directory.
  if(NOT TARGET "${target}")
    message(FATAL_ERROR "${_fn}: there is no target '${target}'; call posenc_add_table after add_executable "
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
    message(FATAL_ERROR "${_fn}: the target must be an executable or a static, shared, module or object library "
                        "built by this project (it is: ${_type})")
  endif()
  get_target_property(_target_dir "${target}" SOURCE_DIR)
  if(NOT _target_dir STREQUAL CMAKE_CURRENT_SOURCE_DIR)
    message(FATAL_ERROR "${_fn}: the target is created in ${_target_dir}; call posenc_add_table in that "
                        "directory's CMakeLists.txt (CMake attaches a custom command only to targets of its own "
                        "directory)")
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

  _posenc_command(_posenc _version)
  set(_command ${_posenc} ${_table_args} --format ${_pe_FORMAT} --name ${_pe_NAME} ${_pe_ARGS} --quiet
               -o "${_primary}")

  # One rule per table, driven by a custom target that every target using the table depends on: so the table is
  # generated once even when several targets of this directory use it (make would otherwise run the rule in each
  # target, concurrently, and the later run would make the earlier targets out of date).
  string(REPLACE ";" " " _extra "${_table_args};${_pe_ARGS};${_inputs}")
  set(_key "${_pe_NAME};${_pe_FORMAT};${_extra}")
  set(_owner "${CMAKE_CURRENT_SOURCE_DIR}|${_key}")
  set(_new TRUE)
  foreach(_file IN LISTS _outputs)
    get_property(_previous GLOBAL PROPERTY "_POSENC_RULE:${_file}")
    if(_previous STREQUAL _owner)
      set(_new FALSE)
    elseif(_previous)
      message(FATAL_ERROR "${_fn}: ${_file} is already generated by another posenc_add_table call with other "
                          "parameters or in another directory; give this table another NAME or OUTPUT_DIR")
    endif()
  endforeach()

  if(_new)
    foreach(_file IN LISTS _outputs)
      set_property(GLOBAL PROPERTY "_POSENC_RULE:${_file}" "${_owner}")
    endforeach()
    file(MAKE_DIRECTORY "${_dir}")

    # The parameters file: rewritten only when its content changes, so its time stamp says "parameters changed".
    string(MD5 _hash "${_primary}")
    string(SUBSTRING "${_hash}" 0 8 _hash)
    set(_params "${CMAKE_CURRENT_BINARY_DIR}/CMakeFiles/posenc/${_pe_NAME}-${_hash}.params")
    string(REPLACE ";" " " _line "${_command}")
    set(_content "posenc ${_version}\n${_line}\n")
    set(_old "")
    if(EXISTS "${_params}")
      file(READ "${_params}" _old)
    endif()
    if(NOT _old STREQUAL _content)
      file(WRITE "${_params}" "${_content}")
    endif()

    set(_depends "${_params}" ${_inputs})
    list(GET _posenc 0 _program)
    if(_program STREQUAL POSENC_EXECUTABLE AND EXISTS "${_program}" AND NOT IS_DIRECTORY "${_program}")
      list(APPEND _depends "${_program}")
    endif()

    # Ninja restats outputs (an unchanged file keeps its time stamp and nothing is recompiled); make compares
    # time stamps only, so its outputs are touched, or an unchanged output would rerun posenc at every build.
    set(_touch "")
    if(NOT CMAKE_GENERATOR MATCHES "Ninja")
      set(_touch COMMAND "${CMAKE_COMMAND}" -E touch_nocreate ${_outputs})
    endif()

    file(RELATIVE_PATH _shown "${CMAKE_BINARY_DIR}" "${_primary}")
    if(_shown MATCHES "^[.][.]/")
      set(_shown "${_primary}")  # outside the build tree
    endif()
    add_custom_command(
      OUTPUT ${_outputs}
      COMMAND "${CMAKE_COMMAND}" -E make_directory "${_dir}"
      COMMAND ${_command}
      ${_touch}
      DEPENDS ${_depends}
      COMMENT "Generating posenc table ${_shown} (${_what})"
      VERBATIM)

    set(_driver "posenc_${_pe_NAME}")
    if(TARGET "${_driver}")
      set(_driver "posenc_${_pe_NAME}_${_hash}")
    endif()
    add_custom_target("${_driver}" DEPENDS ${_outputs})
    set_property(GLOBAL PROPERTY "_POSENC_DRIVER:${_primary}" "${_driver}")
  endif()

  get_property(_driver GLOBAL PROPERTY "_POSENC_DRIVER:${_primary}")
  add_dependencies("${target}" "${_driver}")
  if(_type STREQUAL "EXECUTABLE")
    target_include_directories("${target}" PRIVATE "${_dir}")
  else()
    target_include_directories("${target}" PUBLIC "$<BUILD_INTERFACE:${_dir}>")
  endif()
  target_sources("${target}" PRIVATE ${_outputs})
  if(_pe_FORMAT STREQUAL "c")
    get_property(_languages GLOBAL PROPERTY ENABLED_LANGUAGES)
    if(NOT "C" IN_LIST _languages AND "CXX" IN_LIST _languages)
      set_source_files_properties("${_primary}" PROPERTIES LANGUAGE CXX)
    endif()
  endif()
endmacro()
