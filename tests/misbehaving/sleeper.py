"""`list` starts a child that writes its pid to $CHILD_PID_FILE, then both sleep past the timeout.

With $NEW_SESSION set, the child starts a session of its own (setsid), leaving the connector's
process group, and keeps the connector's stdout open.
"""
import os
import subprocess
import sys
import time

from common import behave, emit, first_call

mode = sys.argv[1]
if mode == "list" and first_call():
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)"],
        start_new_session=bool(os.environ.get("NEW_SESSION")),
    )
    with open(os.environ["CHILD_PID_FILE"], "w") as handle:
        handle.write(str(child.pid))
    emit({"id": "a", "version": "1"})
    sys.stdout.flush()
    time.sleep(120)
    sys.exit(0)
sys.exit(behave(mode))
