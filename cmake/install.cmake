# cmake/install.cmake — what `cmake --install` (and so cpack) puts under the prefix, by GNUInstallDirs:
#   lib/libsteno.so.X.Y.Z (+ .so.N, .so)  the shared library, public API only (cmake/steno.map)
#   lib/libsteno.a                        the static library (its dependencies: steno.pc's private fields)
#   include/steno.h, include/steno_llm.h  the public headers
#   lib/pkgconfig/steno.pc                pkg-config (--static adds the static library's dependencies)
#   lib/cmake/steno/                      find_package(steno): steno::steno (shared), steno::steno_static
#   bin/steno, share/man/man1/steno.1     the CLI and its manual page
#   share/doc/steno/                      README.md and docs/*.md (the manual page cites them)
include(CMakePackageConfigHelpers)
set(STENO_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/steno)

install(TARGETS steno_shared EXPORT stenoTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS steno_lib EXPORT stenoStaticTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS steno RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${STENO_PUBLIC_HEADERS} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${STENO_MAN_PAGE} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
file(GLOB STENO_DOCS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/docs/*.md)
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${STENO_DOCS} DESTINATION ${CMAKE_INSTALL_DOCDIR})

# The CMake package: two export sets, so that a consumer of the shared library needs none of the
# static library's dependencies (stenoConfig.cmake loads the static one only when they are found).
install(EXPORT stenoTargets NAMESPACE steno:: DESTINATION ${STENO_CMAKE_DIR})
install(EXPORT stenoStaticTargets NAMESPACE steno:: DESTINATION ${STENO_CMAKE_DIR})
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/stenoConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/cmake-package/stenoConfig.cmake
                              INSTALL_DESTINATION ${STENO_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake-package/stenoConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cmake-package/stenoConfig.cmake
              ${CMAKE_BINARY_DIR}/cmake-package/stenoConfigVersion.cmake
        DESTINATION ${STENO_CMAKE_DIR})

# steno.pc is written at install time, because its prefix is the one installed to (which
# `cmake --install --prefix` and cpack choose then), not the one configured. The intermediate file
# is named after the destination, so that installs to different prefixes never share it.
install(CODE "
  set(STENO_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  set(STENO_PC_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
  set(STENO_PC_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
  set(STENO_PC_VERSION \"${PROJECT_VERSION}\")
  string(MD5 _steno_pc_dir \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}\")
  set(_steno_pc \"${CMAKE_BINARY_DIR}/pkgconfig/\${_steno_pc_dir}/steno.pc\")
  configure_file(\"${CMAKE_SOURCE_DIR}/cmake/steno.pc.in\" \"\${_steno_pc}\" @ONLY)
  file(INSTALL \"\${_steno_pc}\" DESTINATION \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig\")")
