# What `cmake --install` puts where, and the .deb CPack builds from the same rules.
include(GNUInstallDirs)

install(TARGETS netbox RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${PROJECT_SOURCE_DIR}/packaging/netbox.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/completions/netbox.bash
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME netbox)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/completions/_netbox
        DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)

# The service's policy and config: /etc/netbox/{policy,proxy}.json for a /usr install (in
# the .deb they are conffiles: dpkg keeps the administrator's edits on upgrade and asks
# before replacing them), PREFIX/etc/netbox/{policy,proxy}.json for any other prefix;
# created only when missing, never over an existing one. (file(INSTALL) puts DESTDIR in
# front of its destination itself; EXISTS needs it spelled.)
# The config names the policy, and the unit the installed binary and the config, so both
# are written at install time for the prefix given then (`cmake --install --prefix P`
# included). Nothing is installed to an absolute path.
install(FILES ${PROJECT_SOURCE_DIR}/packaging/policy.json DESTINATION ${CMAKE_INSTALL_DATADIR}/netbox)
install(CODE "
  set(_prefix \"\${CMAKE_INSTALL_PREFIX}\")
  set(NETBOX_BINDIR \"\${_prefix}/${CMAKE_INSTALL_BINDIR}\")
  if(_prefix STREQUAL \"/usr\")
    set(_etc /etc/netbox)
  else()
    set(_etc \"\${_prefix}/etc/netbox\")
  endif()
  set(NETBOX_POLICY \"\${_etc}/policy.json\")
  set(NETBOX_CONFIG \"\${_etc}/proxy.json\")
  set(_share \"\$ENV{DESTDIR}\${_prefix}/${CMAKE_INSTALL_DATADIR}/netbox\")
  message(STATUS \"Installing: \${_share}/proxy.json\")
  configure_file(\"${PROJECT_SOURCE_DIR}/packaging/proxy.json.in\" \"\${_share}/proxy.json\" @ONLY)
  if(NOT EXISTS \"\$ENV{DESTDIR}\${NETBOX_POLICY}\")
    file(INSTALL \"${PROJECT_SOURCE_DIR}/packaging/policy.json\" DESTINATION \"\${_etc}\"
         FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ)
  endif()
  if(NOT EXISTS \"\$ENV{DESTDIR}\${NETBOX_CONFIG}\")
    file(INSTALL \"\${_share}/proxy.json\" DESTINATION \"\${_etc}\"
         FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ)
  endif()
  set(_unit \"\$ENV{DESTDIR}\${_prefix}/lib/systemd/system/netbox-proxy.service\")
  message(STATUS \"Installing: \${_unit}\")
  configure_file(\"${PROJECT_SOURCE_DIR}/packaging/netbox-proxy.service\" \"\${_unit}\" @ONLY)
")

install(FILES ${PROJECT_SOURCE_DIR}/policy/schema/netbox-policy.schema.json DESTINATION ${CMAKE_INSTALL_DATADIR}/netbox)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/ DESTINATION ${CMAKE_INSTALL_DATADIR}/netbox/examples)
install(FILES ${PROJECT_SOURCE_DIR}/dashboards/grafana/netbox.json ${PROJECT_SOURCE_DIR}/dashboards/grafana/provisioning.yaml
        DESTINATION ${CMAKE_INSTALL_DATADIR}/netbox/grafana)
install(FILES ${PROJECT_SOURCE_DIR}/dashboards/prometheus/netbox-alerts.yml
        DESTINATION ${CMAKE_INSTALL_DATADIR}/netbox/prometheus)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/SECURITY.md ${PROJECT_SOURCE_DIR}/CHANGELOG.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME copyright)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs FILES_MATCHING PATTERN "*.md"
        PATTERN "*.png")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME netbox)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "run AI agents confined, behind an auditing egress proxy")
set(CPACK_PACKAGE_DESCRIPTION "netbox launch runs an agent in its own namespaces whose only route is an \
HTTP/CONNECT proxy that decides every request against a policy and records it in an SQLite audit store.")
set(CPACK_PACKAGE_CONTACT "netbox developers <maintainers@netbox.invalid>")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_LICENSE Apache-2.0)
# The runtime libraries come from dpkg-shlibdeps, so the Depends line is exactly what the
# binary links; adduser makes the netbox group in postinst.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
# The proxy verifies upstream certificates (inspected hosts) against the system's trust
# store: without it every inspected host fails verification, which is safe but useless.
# libpq5: netbox loads libpq only for a postgresql:// audit store (audit/libpq/libpq.cpp), so
# dpkg-shlibdeps no longer sees it; without it such a store is refused with a message that
# names the package, and everything else works.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "ca-certificates, libpq5 (>= 9.0~)")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/packaging/debian/conffiles
    ${PROJECT_SOURCE_DIR}/packaging/debian/postinst
    ${PROJECT_SOURCE_DIR}/packaging/debian/postrm)
# Debian's layout inside the staged tree: docs and the man page compressed, the changelog
# as changelog.gz (packaging/debian/compress_docs.cmake).
set(CPACK_PRE_BUILD_SCRIPTS ${PROJECT_SOURCE_DIR}/packaging/debian/compress_docs.cmake)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_STRIP_FILES ON)
include(CPack)
