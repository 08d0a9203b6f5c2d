"""Runs the Python example of README.md ("### Python (petsc4py)", its ```python block) as it is, with share/python on
the module path as the README's PYTHONPATH puts it; python_readme_2 compares its line with the README's."""
import os
import re
import sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
readme = open(os.path.join(root, "README.md")).read()
section = readme[readme.index("### Python (petsc4py)"):]
code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
sys.path.insert(0, os.path.join(root, "share", "python"))
exec(compile(code, "README.md (Python example)", "exec"), {"__name__": "__main__"})
