"""`list` prints the same id twice."""
import sys

from common import behave, emit, first_call

mode = sys.argv[1]
if mode == "list" and first_call():
    emit({"id": "a", "version": "1"})
    emit({"id": "a", "version": "1"})
    sys.exit(0)
sys.exit(behave(mode))
