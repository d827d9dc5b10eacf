# embed.cmake — writes IN as a C array NAME (and NAME_len) into OUT, so the web page is served from
# the binary with no file beside it. Run by the build (CMakeLists.txt), never committed output.
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR bytes "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
file(WRITE ${OUT} "#include <stddef.h>\nconst unsigned char ${NAME}[] = {${body}0x00};\nconst size_t ${NAME}_len = ${bytes};\n")
