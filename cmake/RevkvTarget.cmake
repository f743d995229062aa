# Compiler settings shared by every revkv target: warnings, sanitizers, debug checks.
#
# REVKV_SANITIZE=address  builds with AddressSanitizer + UndefinedBehaviorSanitizer
# REVKV_SANITIZE=thread   builds with ThreadSanitizer
# The conservative stack scanner is the only code excluded from them (see runtime/port/port.h).

if(REVKV_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
  add_compile_definitions(REVKV_SANITIZER=1 REVKV_DEBUG_CHECKS=1)
elseif(REVKV_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
  add_compile_definitions(REVKV_SANITIZER=1 REVKV_DEBUG_CHECKS=1)
elseif(NOT REVKV_SANITIZE STREQUAL "")
  message(FATAL_ERROR "REVKV_SANITIZE must be '', 'address' or 'thread'")
endif()

if(CMAKE_BUILD_TYPE STREQUAL "Debug")
  add_compile_definitions(REVKV_DEBUG_CHECKS=1)
endif()

# Debug sections compressed with zlib, in the objects and the executables: they are most of a full -g
# build's size (a full tree: 1.1 GB of objects and 1.7 GB of executables uncompressed, 0.67 and 0.69 GB
# compressed, 3.2 GB in all against 1.6), and gdb, perf and addr2line read them compressed. Not in the sanitizer builds: their -g1 is small, and the stacks of
# their reports, which TSan's suppressions match, should not depend on the symbolizer's zlib support.
option(REVKV_COMPRESS_DEBUG_INFO "Compress debug sections (-gz) outside the sanitizer builds" ON)
if(REVKV_COMPRESS_DEBUG_INFO AND REVKV_SANITIZE STREQUAL "")
  include(CheckCXXCompilerFlag)
  check_cxx_compiler_flag(-gz REVKV_HAVE_GZ)
  if(REVKV_HAVE_GZ)
    add_compile_options(-gz)
    add_link_options(-gz)
  endif()
endif()

# Precompiled headers. Most of revkv's sources, and nearly every test, include the same third-party
# headers: gRPC, the etcd messages and stubs Protobuf generates (etcdserverpb/rpc.grpc.pb.h alone parses
# in 5 s), spdlog and GoogleTest. Parsed once per build instead of once per source, they cost a fifth
# of a cold build's CPU (a cold build, or a sanitizer stage, is CPU bound on two cores). Two headers
# (cmake/pch/), precompiled once each by revkv_pch and revkv_test_pch (revkv_add_pch_targets); every
# target made by revkv_target reuses the first, every revkv_test the second. They hold only headers
# outside revkv, so no revkv macro (REVKV_SANITIZER, REVKV_TEST_HOOKS, a mutation switch) can change what
# they mean; GCC checks at each use that the precompiled header was built with the same options and
# macros, and a mismatch is a warning (-Winvalid-pch), an error under REVKV_WERROR. Not in the
# runtime-only build (no gRPC), nor in the fuzz build (clang). A target whose macros change system
# headers (hiredis's _FILE_OFFSET_BITS) sets DISABLE_PRECOMPILE_HEADERS. GCC 12 does not silence every
# warning from a system header that came through a precompiled header: libstdc++'s false positives
# (-Warray-bounds in std::string's inlined copies, which GCC hides when the header is parsed) then
# appear, and a source where one does sets SKIP_PRECOMPILE_HEADERS. -DREVKV_PCH=OFF builds without
# them.
option(REVKV_PCH "Precompile the third-party headers most sources include (gRPC, generated messages, spdlog, GoogleTest)" ON)
set(REVKV_PCH_ENABLED OFF)
if(REVKV_PCH AND NOT REVKV_RUNTIME_ONLY AND NOT REVKV_FUZZ AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  set(REVKV_PCH_ENABLED ON)
endif()

# revkv_target(<target>): warnings (errors under REVKV_WERROR) and the project include root.
function(revkv_target target)
  revkv_warnings(${target})
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR})
  if(REVKV_PCH_ENABLED)
    revkv_use_pch(${target} revkv_pch)
  endif()
endfunction()

# revkv_warnings(<target>): the warnings every revkv source compiles with, errors under REVKV_WERROR.
function(revkv_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wshadow -Wnon-virtual-dtor
                                           -Wno-missing-field-initializers)
  if(REVKV_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(REVKV_SANITIZE AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC's -Wmaybe-uninitialized reports false positives in instrumented code (its manual says so for
    # -fsanitize=address; GCC 12 reports one inside libstdc++'s <regex> at -O1).
    target_compile_options(${target} PRIVATE -Wno-maybe-uninitialized)
  endif()
endfunction()

# revkv_use_pch(<target> <pch target>): <target> compiles with <pch target>'s precompiled header. The
# macros the header's libraries define for their users (spdlog's and fmt's, and _REENTRANT, which
# gRPC's -pthread defines) are given to <target> too: GCC accepts a precompiled header only where they
# are defined as they were when it was built.
function(revkv_use_pch target pch)
  set_property(TARGET ${target} PROPERTY PRECOMPILE_HEADERS_REUSE_FROM ${pch})
  target_compile_options(${target} PRIVATE -pthread)
  target_compile_definitions(${target} PRIVATE
    $<TARGET_PROPERTY:spdlog::spdlog,INTERFACE_COMPILE_DEFINITIONS>
    $<TARGET_PROPERTY:fmt::fmt,INTERFACE_COMPILE_DEFINITIONS>)
endfunction()

# revkv_add_pch_targets(): the precompiled headers' targets, made before the targets that reuse them.
# revkv_proto, which generates the etcd messages' headers, is named before proto/ defines it (a link
# item becomes a target when the build is generated).
function(revkv_add_pch_targets)
  if(NOT REVKV_PCH_ENABLED)
    return()
  endif()
  set(dir ${PROJECT_SOURCE_DIR}/cmake/pch)
  add_library(revkv_pch STATIC ${dir}/empty.cc)
  add_library(revkv_test_pch STATIC ${dir}/empty.cc)
  foreach(pch revkv_pch revkv_test_pch)
    target_link_libraries(${pch} PRIVATE revkv_proto spdlog::spdlog absl::status absl::statusor absl::strings)
    revkv_warnings(${pch})
    target_compile_definitions(${pch} PRIVATE
      $<TARGET_PROPERTY:spdlog::spdlog,INTERFACE_COMPILE_DEFINITIONS>
      $<TARGET_PROPERTY:fmt::fmt,INTERFACE_COMPILE_DEFINITIONS>)
  endforeach()
  target_link_libraries(revkv_test_pch PRIVATE GTest::gtest)
  target_precompile_headers(revkv_pch PRIVATE ${dir}/revkv_pch.h)
  target_precompile_headers(revkv_test_pch PRIVATE ${dir}/revkv_pch.h <gtest/gtest.h>)
endfunction()

# revkv_test(<name> [SERIAL] [TIMEOUT s] SOURCES ... LIBS ... [LABELS ...]): one GoogleTest binary;
# each TEST is its own CTest test. SERIAL: timing-sensitive, never run beside another test.
function(revkv_test name)
  cmake_parse_arguments(T "SERIAL" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  revkv_target(${name})
  if(REVKV_PCH_ENABLED)
    revkv_use_pch(${name} revkv_test_pch)
  endif()
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main Threads::Threads)
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 600)
  endif()
  set(props TIMEOUT ${T_TIMEOUT} LABELS "${T_LABELS}")
  if(T_SERIAL)
    list(APPEND props RUN_SERIAL TRUE)
  endif()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES ${props})
endfunction()
