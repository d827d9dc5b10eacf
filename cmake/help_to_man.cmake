# cmake/help_to_man.cmake — writes a roff manual page from the steno CLI's help text.
#   cmake -DSTENO=<steno binary> -DVERSION=<x.y.z> -DOUT=<steno.1> -P cmake/help_to_man.cmake
# The main help's "commands:" block names the verbs; each verb's `--help` becomes a subsection.
# Help text is kept as preformatted blocks (.nf/.fi) with roff's special characters escaped, so
# its alignment survives. Fails with one line when a help cannot be produced.
foreach(v STENO VERSION OUT)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "help_to_man.cmake: -D${v}=... is required")
  endif()
endforeach()

function(steno_help out)
  execute_process(COMMAND ${STENO} ${ARGN} --help OUTPUT_VARIABLE text ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR text STREQUAL "")
    string(REPLACE "\n" " " err "${err}")
    message(FATAL_ERROR "help_to_man.cmake: '${STENO} ${ARGN} --help' failed (status ${rc}): ${err}")
  endif()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# roff: a backslash is \e, a dash \- (a minus, so options can be searched for and copied), and a
# line starting with . or ' would be a request: \& in front makes it text.
function(roff_block out text)
  string(REPLACE "\\" "\\e" text "${text}")
  string(REPLACE "-" "\\-" text "${text}")
  string(REGEX REPLACE "\n([.'])" "\n\\\\&\\1" text "\n${text}")
  string(REGEX REPLACE "^\n" "" text "${text}")
  string(REGEX REPLACE "\n+$" "" text "${text}")
  set(${out} ".nf\n${text}\n.fi\n" PARENT_SCOPE)
endfunction()

steno_help(main)
string(FIND "${main}" "\ncommands:\n" at)
if(at EQUAL -1)
  message(FATAL_ERROR "help_to_man.cmake: 'steno --help' has no \"commands:\" block")
endif()
math(EXPR at "${at} + 11")
string(SUBSTRING "${main}" ${at} -1 block)
string(FIND "${block}" "\n\n" end)
string(SUBSTRING "${block}" 0 ${end} block)
string(REGEX MATCHALL "(^|\n)  [a-z][a-z0-9-]*" verbs "${block}")

roff_block(body "${main}")
# The help holds UTF-8 (the default punctuation sets): the first line tells man's preconv so.
string(CONCAT page ".\\\" -*- coding: UTF-8 -*-\n"
                   ".\\\" steno.1, generated from the CLI's help by cmake/help_to_man.cmake; do not edit.\n")
string(APPEND page ".TH STENO 1 \"\" \"steno ${VERSION}\" \"User Commands\"\n"
                   ".SH NAME\nsteno \\- local speech\\-to\\-text (Whisper) and LLM inference engine\n"
                   ".SH SYNOPSIS\n.B steno\n\\fIcommand\\fR [\\fIoptions\\fR] [\\fIargs\\fR]\n"
                   ".SH DESCRIPTION\n${body}.SH COMMANDS\n")
foreach(v ${verbs})
  string(STRIP "${v}" v)
  steno_help(help ${v})
  roff_block(body "${help}")
  string(APPEND page ".SS \"steno ${v}\"\n${body}")
endforeach()
string(APPEND page ".SH SEE ALSO\nREADME.md and docs/ in the source tree (docs/API.md: the C library).\n")
file(WRITE "${OUT}.tmp" "${page}")
file(RENAME "${OUT}.tmp" "${OUT}")
