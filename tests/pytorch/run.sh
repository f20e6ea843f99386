#!/bin/sh
# Runs a PyTorch script with Debian's Python (python3-torch lives there);
# without it, exit 77, which ctest reports as skipped.
[ -x /usr/bin/python3 ] || { echo "skipped: no /usr/bin/python3 (Debian's python3-torch)"; exit 77; }
exec /usr/bin/python3 "$@"
