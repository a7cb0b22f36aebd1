"""`check` announces protocol "2"."""
import sys

from common import behave, emit, first_call

mode = sys.argv[1]
if mode == "check" and first_call():
    emit({"ok": True, "count": 2, "protocol": "2"})
    sys.exit(0)
sys.exit(behave(mode))
