set(_IOMIMIC_CMAKE_DIR ${CMAKE_CURRENT_LIST_DIR})

# iomimic_add_plugin(<name> KIND <storage|format> SOURCES <files...>
#                    [LIBRARIES <targets...>] [TESTS <files...>] [NO_CONFORMANCE])
#
# Builds a plugin as a MODULE library named iomimic_<kind>_<name>, placed in
# the plugin folder beside the iomimic binary (build and install trees alike).
# Plugins see only the SDK headers (target iomimic::sdk); -Wl,--no-undefined
# makes a missing symbol a link error instead of a load-time surprise.
#
# TESTS are doctest files linked with the plugin's sources into one test
# executable registered with ctest (needs doctest::doctest; without it the
# function says so and registers nothing).
#
# Out of tree (through find_package(iomimic)), the conformance suites of the
# installed iomimic (iomimic-conformance, docs/plugins.md) are registered too,
# as the ctest test conformance.<name>, unless NO_CONFORMANCE is given. In
# this source tree tests/conformance registers them for every plugin.
function(iomimic_add_plugin name)
  cmake_parse_arguments(ARG "NO_CONFORMANCE" "KIND" "SOURCES;LIBRARIES;TESTS" ${ARGN})
  if(NOT ARG_KIND MATCHES "^(storage|format)$")
    message(FATAL_ERROR "iomimic_add_plugin(${name}): KIND must be storage or format")
  endif()
  set(target iomimic_${ARG_KIND}_${name})
  # Out of tree (through find_package(iomimic)) plugins land in the build
  # folder and install into the same relative plugin folder as the core's.
  if(NOT IOMIMIC_PLUGIN_OUTPUT_DIR)
    set(IOMIMIC_PLUGIN_OUTPUT_DIR ${CMAKE_CURRENT_BINARY_DIR})
  endif()
  if(NOT IOMIMIC_PLUGIN_RELDIR)
    set(IOMIMIC_PLUGIN_RELDIR lib/iomimic/plugins)
  endif()
  add_library(${target} MODULE ${ARG_SOURCES})
  if(IOMIMIC_UNITY_BUILD)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON)
  endif()
  target_link_libraries(${target} PRIVATE iomimic::sdk ${ARG_LIBRARIES})
  if(TARGET iomimic_warnings)
    target_link_libraries(${target} PRIVATE iomimic_warnings)
  endif()
  set_target_properties(${target} PROPERTIES
    LIBRARY_OUTPUT_DIRECTORY ${IOMIMIC_PLUGIN_OUTPUT_DIR}
    PREFIX "lib"
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  # Sanitizer builds (scripts/sanitize.sh) leave the sanitizer runtime to
  # the executable, so plugins have undefined __asan_/__tsan_ symbols there.
  if(NOT CMAKE_CXX_FLAGS MATCHES "-fsanitize=")
    target_link_options(${target} PRIVATE -Wl,--no-undefined)
  endif()
  install(TARGETS ${target} LIBRARY DESTINATION ${IOMIMIC_PLUGIN_RELDIR})
  if(ARG_TESTS AND (IOMIMIC_BUILD_TESTS OR NOT DEFINED IOMIMIC_BUILD_TESTS))
    if(NOT TARGET doctest::doctest)
      message(WARNING "iomimic_add_plugin(${name}): TESTS not built: doctest was not found "
                      "(install doctest-dev, or point CMAKE_PREFIX_PATH at a doctest install)")
    else()
      add_executable(${target}_test ${ARG_TESTS} ${ARG_SOURCES}
                     ${_IOMIMIC_CMAKE_DIR}/doctest_main.cpp)
      target_compile_definitions(${target}_test PRIVATE IOMIMIC_PLUGIN_UNDER_TEST=1)
      target_link_libraries(${target}_test PRIVATE iomimic::sdk doctest::doctest ${ARG_LIBRARIES})
      if(COMMAND doctest_discover_tests)
        doctest_discover_tests(${target}_test TEST_PREFIX "${ARG_KIND}.${name}.")
      else()
        add_test(NAME ${ARG_KIND}.${name} COMMAND ${target}_test)
      endif()
    endif()
  endif()
  if(IOMIMIC_CONFORMANCE_EXECUTABLE AND NOT ARG_NO_CONFORMANCE)
    add_test(NAME conformance.${name}
             COMMAND ${IOMIMIC_CONFORMANCE_EXECUTABLE} --plugin-dir ${IOMIMIC_PLUGIN_OUTPUT_DIR}
                     --plugin ${name})
  endif()
endfunction()
