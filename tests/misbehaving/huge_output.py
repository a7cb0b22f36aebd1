"""`list` streams 200 MiB: 200 lines of 1 MiB, each a valid entry padded with spaces.

With $FINISHED_FILE set, it creates that file once everything is written.
"""
import os
import sys

from common import behave, first_call

mode = sys.argv[1]
if mode == "list" and first_call():
    padding = " " * (1024 * 1024)
    for number in range(200):
        sys.stdout.write(f'{{"id": "item-{number}", "version": "1"{padding}}}\n')
    sys.stdout.flush()
    if os.environ.get("FINISHED_FILE"):
        with open(os.environ["FINISHED_FILE"], "w") as handle:
            handle.write("all written\n")
    sys.exit(0)
sys.exit(behave(mode))
