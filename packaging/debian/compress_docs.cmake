# Run by CPack on the staged tree before it builds the .deb (CPACK_PRE_BUILD_SCRIPTS), so
# the package follows Debian's layout: the man page and every doc compressed with
# `gzip -9n` (no name or time stamp, so the package is reproducible), the changelog as
# changelog.gz; the copyright file and images stay as they are.
file(GLOB_RECURSE _staged LIST_DIRECTORIES false
     "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/usr/share/doc/netbox/*"
     "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/usr/share/man/*")
if(NOT _staged)
  # Older CPack stages below the package name.
  file(GLOB_RECURSE _staged LIST_DIRECTORIES false
       "${CPACK_TEMPORARY_DIRECTORY}/usr/share/doc/netbox/*" "${CPACK_TEMPORARY_DIRECTORY}/usr/share/man/*")
endif()
if(NOT _staged)
  message(FATAL_ERROR "compress_docs: no staged docs under ${CPACK_TEMPORARY_INSTALL_DIRECTORY}")
endif()
foreach(f ${_staged})
  get_filename_component(_name "${f}" NAME)
  if(_name STREQUAL "copyright" OR _name MATCHES "\\.(png|gz)$")
    continue()
  endif()
  if(_name STREQUAL "CHANGELOG.md")
    get_filename_component(_dir "${f}" DIRECTORY)
    file(RENAME "${f}" "${_dir}/changelog")
    set(f "${_dir}/changelog")
  endif()
  execute_process(COMMAND gzip -9n "${f}" RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "compress_docs: gzip -9n ${f} failed")
  endif()
endforeach()
