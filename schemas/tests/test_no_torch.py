import subprocess
import sys


def test_importing_the_schema_never_imports_torch():
    code = "import sys, pt2kit.schema, pt2kit.schema.export; assert 'torch' not in sys.modules, 'torch'"
    subprocess.run([sys.executable, "-c", code], check=True)
