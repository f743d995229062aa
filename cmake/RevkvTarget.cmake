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

# revkv_target(<target>): warnings (errors under REVKV_WERROR) and the project include root.
function(revkv_target target)
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
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR})
endfunction()

# revkv_test(<name> [SERIAL] [TIMEOUT s] SOURCES ... LIBS ... [LABELS ...]): one GoogleTest binary;
# each TEST is its own CTest test. SERIAL: timing-sensitive, never run beside another test.
function(revkv_test name)
  cmake_parse_arguments(T "SERIAL" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  revkv_target(${name})
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
