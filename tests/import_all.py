"""Import every public name and every module of one package, as installed: ``python tests/import_all.py pt2kit.kdiff``
(or a single module: ``pt2kit_portable``). stdlib only.

The floors and newest sessions run it in a virtualenv that holds the package, what it declares (at its floors,
or the newest) and its test extra, nothing else: a module that imports something undeclared fails here, not on
a user's machine. (The test command's `suite` runs every package's tests in one environment, where a sibling
installed for another package would hide such an import.)

A module whose import fails because a package it names is missing passes only where that package is one the
module treats as optional: a name in an optional-dependency group (an extra) of the package, or one of
``ELSEWHERE`` (installed with torch on some machines only). Not checked: imports inside functions (they run
where the tests reach them) and a package's ``__main__`` (importing it runs the command).
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

# import names that come with torch on some machines only (Triton with a CUDA build), or with a notebook
ELSEWHERE = {"triton", "IPython"}


def main(package: str, optional: list[str]) -> int:
    root = importlib.import_module(package)
    for name in getattr(root, "__all__", ()):  # a public name that fails to resolve raises: exit 1
        getattr(root, name)
    if not hasattr(root, "__path__"):  # a single module (pt2kit_portable): its import above is the whole check
        print(f"import_all: {package}: one module, imported")
        return 0
    allowed = ELSEWHERE | set(optional)
    bad, skipped, seen = [], [], 0
    for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
        if info.name.rsplit(".", 1)[-1] == "__main__":
            continue
        seen += 1
        try:
            importlib.import_module(info.name)
        except ModuleNotFoundError as e:
            missing = e.name or ""
            optional_here = any(missing == n or missing.startswith(f"{n}.") for n in allowed)
            (skipped if optional_here else bad).append(f"{info.name}: needs {missing}")
    for line in bad:
        print(f"import_all: {line}, which {package} does not declare", file=sys.stderr)
    print(f"import_all: {package}: {seen - len(bad) - len(skipped)} of {seen} modules imported"
          + (f"; {len(skipped)} need what is optional here ({', '.join(skipped)})" if skipped else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print("usage: python tests/import_all.py PACKAGE [OPTIONAL_IMPORT_NAME ...]", file=sys.stderr)
        raise SystemExit(2)
    raise SystemExit(main(sys.argv[1], sys.argv[2:]))
