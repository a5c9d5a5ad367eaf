"""What pt2kit-portable guarantees to capture's boot and to every repro.py: the module, copied alone into a
folder (as ``pt2kit capture`` copies it beside its boot), imports in an interpreter where pt2kit, msgspec and
torch cannot be imported, and loads nothing but the standard library; its rules then run (those that need no
torch)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pt2kit_portable

ALONE = """
import sys
for name in ("pt2kit", "msgspec", "torch", "numpy"):
    sys.modules[name] = None  # an import of any of them raises ImportError
before = set(sys.modules)
import pt2kit_portable
loaded = {m.split(".")[0] for m in set(sys.modules) - before} - {"pt2kit_portable"}
print(pt2kit_portable.__file__)
print(sorted(m for m in loaded if m not in sys.stdlib_module_names))
print(pt2kit_portable.blob_path("ab" * 32, ".py"), pt2kit_portable.signal_name(-11), pt2kit_portable.VERSION)
"""


def test_a_copy_of_the_module_imports_with_the_standard_library_alone(tmp_path):
    copy = tmp_path / "lib" / "pt2kit_portable.py"
    copy.parent.mkdir()
    shutil.copyfile(pt2kit_portable.__file__, copy)
    # -I: neither PYTHONPATH nor the user's site-packages; -S: no site-packages at all, so no installed pt2kit
    done = subprocess.run([sys.executable, "-I", "-S", "-c", f"import sys; sys.path.insert(0, {str(copy.parent)!r})"
                           + ALONE], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        str(copy), "[]", f"blobs/ab/{'ab' * 32}.py SIGSEGV {pt2kit_portable.VERSION}"]


def test_its_version_is_the_distributions():
    from importlib.metadata import version

    assert version("pt2kit-portable") == pt2kit_portable.VERSION
