"""Whether a command (``pt2kit capture -- CMD``, ``pt2kit triage -- CMD``) is a Python run, read from its
argv and its first line as the kernel reads it, without running anything: which interpreter, and the
interpreter options that decide whether capture's boot can load (``-I``, ``-E``, ``-S``).

Guarantees: a command is Python when its program's name is ``python``, ``python3``, ``python3.12``...
(found on PATH), or when it is a file whose ``#!`` line names such a program, directly
(``#!/usr/bin/python3 -I``) or as ``env``'s program (``#!/usr/bin/env python3``, ``#!/usr/bin/env -S
python3 -E``). Only that name counts: ``#!/bin/bash`` is bash whatever the line or the file says of
python afterwards, and ``#!/usr/bin/env bash # python`` is bash.

Not guaranteed: what a non-Python command starts (a shell script that runs ``python -I`` is not
Python here), nor a ``pythonw``/``pypy`` (not named ``python``); a launcher that re-executes another
interpreter is read as the one its name says.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass

__all__ = ["PythonRun", "python_run"]

PYTHON = re.compile(r"python[0-9.]*$")
_WITH_VALUE = {"-W", "-X", "--check-hash-based-pycs"}  # interpreter options whose value may be the next word


@dataclass(frozen=True)
class PythonRun:
    exe: str  # the interpreter: found on PATH, or the path the script's first line gives
    options: tuple[str, ...]  # its options before the script, ``-c`` or ``-m`` (the first line's, then argv's)
    shebang: bool  # named by the command's first line (a script, ``torchrun``), not by the command itself

    def ignores(self) -> str:
        """The letters of ``-I``, ``-E``, ``-S`` among the options, in that order ("" for none): what keeps
        PYTHONPATH's sitecustomize from loading (-I and -E ignore PYTHONPATH, -S the site module)."""
        letters = "".join(_flags(opt)[0] for opt in self.options)
        return "".join(ch for ch in "IES" if ch in letters)


def _flags(opt: str) -> tuple[str, bool]:
    """The one-letter flags of a short option word (``-IE``, ``-Ic``), and whether it ends the options
    (``-c``/``-m``: what follows is the code or the module). ``-W``/``-X`` take the rest as their value."""
    if not opt.startswith("-") or opt.startswith("--"):
        return "", False
    flags = ""
    for ch in opt[1:]:
        if ch in "cm":
            return flags, True
        if ch in "WX":
            break
        flags += ch
    return flags, False


def _options(args: list[str]) -> tuple[str, ...]:
    """The interpreter options at the head of ``args``, up to the script, ``-c``/``-m`` or ``--``."""
    out: list[str] = []
    it = iter(args)
    for arg in it:
        if arg in ("--", "-") or not arg.startswith("-"):
            break
        out.append(arg)
        if arg in _WITH_VALUE:
            out.append(next(it, ""))
        elif _flags(arg)[1]:
            break
    return tuple(out)


def _shebang(path: str) -> tuple[str, list[str]] | None:
    """The program a script's ``#!`` line runs (env's program for ``env``) and the words after it."""
    try:
        with open(path, "rb") as f:
            first = f.readline(512)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode(errors="replace").split()
    if not words:
        return None
    program, rest = words[0], words[1:]
    if os.path.basename(program) == "env":
        while rest and rest[0].startswith("-"):  # env's own options (-S splits the rest: it is split already)
            opt = rest.pop(0)
            if opt in ("-u", "--unset", "-C", "--chdir") and rest:
                rest.pop(0)
        if not rest or "=" in rest[0]:  # env NAME=VALUE PROG: too rare to follow; no program known
            return None
        program, rest = rest[0], rest[1:]
    return program, rest


def python_run(command: list[str]) -> PythonRun | None:
    """The Python run ``command`` is (see the module's header), or None where it is no Python."""
    if not command:
        return None
    exe = shutil.which(command[0])
    if exe is None:
        return None
    if PYTHON.match(os.path.basename(command[0])):
        return PythonRun(exe, _options(command[1:]), shebang=False)
    line = _shebang(exe)
    if line is None or not PYTHON.match(os.path.basename(line[0])):
        return None
    program, rest = line
    found = shutil.which(program) if "/" not in program else program
    return PythonRun(found or program, _options(rest), shebang=True)
