"""Runs the Python example of the manual's Python chapter (docs/manual/python.md, its first ```python block) as it is,
with share/python on the module path as the manual's PYTHONPATH puts it; python_readme_2 compares its line with the
manual's."""
import os
import re
import sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
chapter = open(os.path.join(root, "docs", "manual", "python.md")).read()
code = re.search(r"```python\n(.*?)```", chapter, re.S).group(1)
sys.path.insert(0, os.path.join(root, "share", "python"))
exec(compile(code, "docs/manual/python.md (Python example)", "exec"), {"__name__": "__main__"})
