"""Runs lessons/pytorch/NN_stage.py for several lessons in one Python, so
that PyTorch is imported once, not once per lesson (about 1.5 s each).

    /usr/bin/python3 tests/pytorch/side_by_side.py DUMP_DIR NN_stage [NN_stage ...]

Each script runs as if called alone on DUMP_DIR. Exit 0 when every one
passes, 1 when one fails (its output says where), 77 (skipped) without PyTorch.
"""
import os
import runpy
import sys

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lessons", "pytorch")
sys.path.insert(0, HERE)
try:
    import common  # noqa: F401  (imports torch and numpy, or exits 77)
except ImportError as e:
    print(f"skipped: needs Debian's python3-torch and python3-numpy ({e})")
    sys.exit(77)

if len(sys.argv) < 3:
    sys.exit(f"usage: {sys.argv[0]} DUMP_DIR NN_stage [NN_stage ...]")
dump, names, failed = sys.argv[1], sys.argv[2:], []
for name in names:
    script = os.path.join(HERE, name + ".py")
    sys.argv = [script, dump]
    try:
        runpy.run_path(script, run_name="__main__")
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    print(f"\n---- {name}: exit {code}\n", flush=True)
    if code != 0:
        failed.append(f"{name} (exit {code})")
if failed:
    print(f"side by side: {len(failed)} of {len(names)} failed: {', '.join(failed)}")
else:
    print(f"side by side: all {len(names)} lessons agree with PyTorch")
sys.exit(1 if failed else 0)
