"""`list` prints one line of 10 MiB (valid JSON padded with spaces)."""
import sys

from common import behave, first_call

mode = sys.argv[1]
if mode == "list" and first_call():
    sys.stdout.write('{"id": "a", "version": "1"' + " " * (10 * 1024 * 1024) + "}\n")
    sys.exit(0)
sys.exit(behave(mode))
