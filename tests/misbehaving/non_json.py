"""`list` prints a line that is not JSON."""
import sys

from common import behave, emit, first_call

mode = sys.argv[1]
if mode == "list" and first_call():
    emit({"id": "a", "version": "1"})
    print("hello, this is not JSON")
    sys.exit(0)
sys.exit(behave(mode))
