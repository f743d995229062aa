# Installation (`cmake --install`) and the Debian package (`cpack -G DEB`), included last by the top-level
# CMakeLists.txt so that every target exists (or is known not to).
#
# Layout, for the package's prefix /usr (paths below a different --prefix follow it, except /etc):
#   /usr/bin/revkv-server, revkv-healthcheck      component "server"
#   /usr/bin/revkv, revkv-bench                   component "clients" (when those targets exist)
#   /usr/lib/systemd/system/revkv.service         ExecStart points at <prefix>/bin/revkv-server
#   /usr/lib/sysusers.d/revkv.conf                the revkv system user
#   /etc/revkv/revkv.toml                         deploy/revkv.toml; a dpkg conffile (local edits survive upgrades)
#   /usr/share/doc/revkv/                         README, operations and configuration guides, the migration
#                                                 guide, copyright (Debian's format); examples/ holds the
#                                                 Prometheus and Grafana files
#   /usr/share/man/man1/<program>.1.gz            man pages of revkv-server, revkv and revkv-bench, made at
#                                                 build time by help2man from --help and --version
# The package's maintainer scripts (deploy/debian/) create the user and /var/lib/revkv, and enable and
# start the service where systemd runs.
#
#   cmake --build build && cd build && cpack -G DEB        -> build/revkv_<version>_<arch>.deb
#   cmake --install build --component server --prefix /usr  (what the container image does)

include(GNUInstallDirs)
set(_revkv_docdir ${CMAKE_INSTALL_DATAROOTDIR}/doc/revkv)

set(REVKV_CONFIG_DIR "/etc/revkv" CACHE PATH "Where `cmake --install` and the package put revkv.toml")
set(REVKV_PACKAGE_CONTACT "revkv maintainers <revkv-maintainers@localhost>"
    CACHE STRING "Maintainer field of the .deb")

# --- Binaries ----------------------------------------------------------------------------------------
foreach(target revkv-server revkv-healthcheck)
  if(TARGET ${target})
    install(TARGETS ${target} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT server)
  endif()
endforeach()
foreach(target revkv revkv-bench)
  if(TARGET ${target})
    install(TARGETS ${target} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT clients)
  endif()
endforeach()

# --- systemd unit and user -----------------------------------------------------------------------------
# deploy/systemd/revkv.service names /usr/bin and /etc/revkv (the package's layout); at install time the
# copy gets the prefix's bin and doc directories and REVKV_CONFIG_DIR instead, so `--prefix /usr/local`
# still works.
set(_revkv_unit_source ${PROJECT_SOURCE_DIR}/deploy/systemd/revkv.service)
install(CODE "
  file(READ \"${_revkv_unit_source}\" unit)
  string(REPLACE \"/usr/bin/revkv-server\" \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/revkv-server\" unit \"\${unit}\")
  string(REPLACE \"/etc/revkv/\" \"${REVKV_CONFIG_DIR}/\" unit \"\${unit}\")
  string(REPLACE \"/usr/share/doc/revkv/\" \"\${CMAKE_INSTALL_PREFIX}/${_revkv_docdir}/\" unit \"\${unit}\")
  set(dest \"\${CMAKE_INSTALL_PREFIX}/lib/systemd/system/revkv.service\")
  message(STATUS \"Installing: \$ENV{DESTDIR}\${dest}\")
  file(WRITE \"\$ENV{DESTDIR}\${dest}\" \"\${unit}\")
  list(APPEND CMAKE_INSTALL_MANIFEST_FILES \"\${dest}\")
  " COMPONENT server)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/systemd/revkv.sysusers
        DESTINATION lib/sysusers.d RENAME revkv.conf COMPONENT server)

# --- Configuration ------------------------------------------------------------------------------------
install(FILES ${PROJECT_SOURCE_DIR}/deploy/revkv.toml DESTINATION ${REVKV_CONFIG_DIR} COMPONENT server)

# --- Documentation and examples -------------------------------------------------------------------------
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/docs/operations.md
              ${PROJECT_SOURCE_DIR}/docs/configuration.md ${PROJECT_SOURCE_DIR}/docs/migration-from-etcd.md
        DESTINATION ${_revkv_docdir} COMPONENT server)
# Debian's place for the license: /usr/share/doc/<package>/copyright, pointing at the full text Debian
# ships in /usr/share/common-licenses/Apache-2.0 (the repository's LICENSE is that text).
install(FILES ${PROJECT_SOURCE_DIR}/deploy/debian/copyright DESTINATION ${_revkv_docdir} COMPONENT server)

# --- Man pages: help2man runs each program's --help and --version at build time --------------------------
find_program(REVKV_HELP2MAN help2man)
if(NOT REVKV_HELP2MAN)
  message(WARNING "help2man not found: no man pages are built or installed (scripts/setup --build installs it)")
else()
  set(_revkv_man_pages "")
  foreach(entry "revkv-server|server|in-memory key-value server speaking etcd's v3 gRPC API"
                "revkv|clients|command-line client for revkv's and etcd's v3 API"
                "revkv-bench|clients|load generator for etcd's v3 gRPC API")
    string(REPLACE "|" ";" entry "${entry}")
    list(GET entry 0 program)
    list(GET entry 1 component)
    list(GET entry 2 summary)
    if(NOT TARGET ${program})
      continue()
    endif()
    set(page ${PROJECT_BINARY_DIR}/man/${program}.1)
    add_custom_command(
      OUTPUT ${page}.gz
      COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man
      COMMAND ${REVKV_HELP2MAN} --no-info --section=1 "--name=${summary}" --output=${page} $<TARGET_FILE:${program}>
      COMMAND gzip -9nf ${page}
      DEPENDS ${program}
      COMMENT "help2man ${program}"
      VERBATIM)
    list(APPEND _revkv_man_pages ${page}.gz)
    install(FILES ${page}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT ${component})
  endforeach()
  add_custom_target(revkv_man_pages ALL DEPENDS ${_revkv_man_pages})
endif()
install(FILES ${PROJECT_SOURCE_DIR}/deploy/prometheus/prometheus.yml
              ${PROJECT_SOURCE_DIR}/deploy/prometheus/revkv.rules.yml
        DESTINATION ${_revkv_docdir}/examples/prometheus COMPONENT server)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/grafana/revkv-dashboard.json
        DESTINATION ${_revkv_docdir}/examples/grafana COMPONENT server)

# --- CPack: one .deb holding every component -----------------------------------------------------------
set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "revkv")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_VENDOR "revkv")
set(CPACK_PACKAGE_CONTACT "${REVKV_PACKAGE_CONTACT}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "in-memory key-value server speaking etcd's v3 gRPC API")
set(CPACK_PACKAGE_DESCRIPTION
    "revkv runs every request as a software transaction over one graph of immutable revisions, manages\n"
    "its memory with its own generational, mostly-copying garbage collector and logs writes ahead to\n"
    "disk. etcdctl and etcd v3 client libraries work with it unchanged.")
string(JOIN "" CPACK_PACKAGE_DESCRIPTION ${CPACK_PACKAGE_DESCRIPTION})
# Install with DESTDIR into the staging tree, prefix /usr: install(CODE) above then sees the package's
# real prefix, and /etc/revkv lands inside the package rather than on the build machine.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX "/usr")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_STRIP_FILES ON)  # RelWithDebInfo binaries carry ~10x their size in debug info

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # revkv_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION "database")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
# dpkg-shlibdeps derives the shared-library dependencies (libgrpc++1.51, libprotobuf32, libabsl20220623,
# libspdlog1.10, libfmt9, libssl3, libc6, libstdc++6, ...) from the binaries; postinst needs one of
# systemd-sysusers and adduser to create the user.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "systemd | adduser")
file(WRITE ${PROJECT_BINARY_DIR}/packaging/conffiles "${REVKV_CONFIG_DIR}/revkv.toml\n")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_BINARY_DIR}/packaging/conffiles
    ${PROJECT_SOURCE_DIR}/deploy/debian/postinst
    ${PROJECT_SOURCE_DIR}/deploy/debian/prerm
    ${PROJECT_SOURCE_DIR}/deploy/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)

include(CPack)
