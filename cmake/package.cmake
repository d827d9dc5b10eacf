# cmake/package.cmake — the Debian package: `cpack -G DEB` in the build folder writes
# steno_<version>_<arch>.deb holding everything cmake/install.cmake installs, under /usr.
# Runtime dependencies come from dpkg-shlibdeps when it is present (dpkg-dev), else from the list
# below (Debian 12's sonames; keep it in step with deploy/Dockerfile's runtime packages).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME steno)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "steno")
set(CPACK_PACKAGE_CONTACT "steno maintainers <steno@localhost>")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "steno maintainers <steno@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "local speech-to-text (Whisper) and LLM inference engine")
# The long description only (CPack puts the summary above it); one string: several quoted
# arguments would be joined with ';'.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "steno transcribes audio with OpenAI's Whisper models and generates text with \
small LLMs (GGUF, llama2.c) on the CPU. This package holds the steno command, its manual page, the C library \
(libsteno.so, libsteno.a), its headers, steno.pc and the CMake package.")
set(CPACK_DEBIAN_PACKAGE_SECTION sound)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES OFF)
find_program(STENO_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(STENO_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
else()
  set(CPACK_DEBIAN_PACKAGE_DEPENDS
      "libavformat59, libavcodec59, libswresample4, libavutil57, libopenblas0-pthread | libopenblas0, libcjson1, libpcre2-8-0, zlib1g, libmicrohttpd12, libssl3, libcurl4, libc6")
endif()
set(CPACK_SOURCE_IGNORE_FILES "/build.*/" "/\\\\.git/")
include(CPack)
