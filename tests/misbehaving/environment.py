"""`check` writes its whole environment as JSON to the file $DUMP, then answers well."""
import json
import os
import sys

from common import behave

if sys.argv[1] == "check":
    with open(os.environ["DUMP"], "w") as handle:
        json.dump(dict(os.environ), handle)
sys.exit(behave(sys.argv[1]))
