# cmake/man.cmake — steno.1, the manual page, generated at build time from the built CLI's own help
# (`steno --help` and `steno <command> --help` for every command it lists) by
# cmake/help_to_man.cmake, so the page never drifts from the options. Installed by cmake/install.cmake.
set(STENO_MAN_PAGE ${CMAKE_BINARY_DIR}/steno.1)
add_custom_command(
  OUTPUT ${STENO_MAN_PAGE}
  COMMAND ${CMAKE_COMMAND} -DSTENO=$<TARGET_FILE:steno> -DVERSION=${PROJECT_VERSION} -DOUT=${STENO_MAN_PAGE}
          -P ${CMAKE_SOURCE_DIR}/cmake/help_to_man.cmake
  DEPENDS steno ${CMAKE_SOURCE_DIR}/cmake/help_to_man.cmake
  COMMENT "Generating steno.1 from the CLI's help"
  VERBATIM)
add_custom_target(steno_man ALL DEPENDS ${STENO_MAN_PAGE})
