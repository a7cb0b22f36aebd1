"""`list` prints valid entries, then exits 1."""
import sys

from common import behave, first_call

mode = sys.argv[1]
if mode == "list" and first_call():
    behave(mode)
    print("lost the connection half-way", file=sys.stderr)
    sys.exit(1)
sys.exit(behave(mode))
