"""A ``bitwuzla`` command for yosys-smtbmc, over the ``bitwuzla`` wheel's Python bindings.

The wheel on PyPI ships the solver as a Python module, without the ``bitwuzla`` executable
that smtbmc runs (``bitwuzla --lang smt2``, SMT-LIB 2 over a pipe, one answer per command).
This script is that executable: it answers ``--help`` as the real one does (smtbmc reads it to
pick the command line), then feeds each complete top-level command it reads on standard input
to one ``bitwuzla.Parser``, which keeps the solver's state from one command to the next and
prints the answers. The parser reading a file or standard input itself waits for its buffer to
fill, which would deadlock smtbmc's request-and-answer protocol, hence one command at a time;
the C library's output buffer is flushed after each (the parser writes through C++ streams that
Python's ``sys.stdout`` does not see).

It imports nothing of this project, so smtbmc runs it as a plain file.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Iterable, Iterator

HELP = """usage: bitwuzla [options] [file]
  --lang smt2   input language (the only one this wrapper takes)
(the bitwuzla wheel's Python bindings behind the command line that yosys-smtbmc expects)
"""


def commands(lines: Iterable[str]) -> Iterator[str]:
    """Each complete top-level S-expression of ``lines``, comments dropped, as soon as it closes.

    Parentheses inside ``|quoted symbols|`` and ``"strings"`` do not count; a ``;`` outside
    them starts a comment to the end of the line."""
    depth = 0
    buf: list[str] = []
    in_bar = in_str = False
    for line in lines:
        start = 0
        i = 0
        n = len(line)
        while i < n:
            ch = line[i]
            if in_bar:
                in_bar = ch != "|"
            elif in_str:
                in_str = ch != '"'
            elif ch == "|":
                in_bar = True
            elif ch == '"':
                in_str = True
            elif ch == ";":
                buf.append(line[start:i])
                start = i = n
                break
            elif ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth == 0:
                    buf.append(line[start:i + 1])
                    yield "".join(buf).strip()
                    buf = []
                    start = i + 1
            i += 1
        if depth > 0 or in_bar or in_str:
            buf.append(line[start:])


def main(argv: list[str]) -> int:
    if "--help" in argv or "-h" in argv:
        sys.stdout.write(HELP)
        return 0
    try:
        import bitwuzla
    except ImportError:
        sys.stderr.write("the bitwuzla wheel is not installed: pip install bitwuzla (or pip install 'vdla[formal]')\n")
        return 1
    libc = ctypes.CDLL(None)
    tm = bitwuzla.TermManager()
    opts = bitwuzla.Options()
    opts.set(bitwuzla.Option.PRODUCE_MODELS, True)
    parser = bitwuzla.Parser(tm, opts)
    for cmd in commands(sys.stdin):
        if cmd == "(exit)":
            break
        parser.parse(cmd, False, False)
        libc.fflush(None)
    libc.fflush(None)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
