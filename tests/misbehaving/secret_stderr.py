"""`check` prints its secret TOKEN on stderr (and in a bad stdout line), then fails."""
import os
import sys

from common import behave, first_call

mode = sys.argv[1]
if mode == "check" and first_call():
    token = os.environ["TOKEN"]
    print(f"login failed with token {token}", file=sys.stderr)
    print(f"not json {token}")
    sys.exit(1)
sys.exit(behave(mode))
