"""`fetch` prints an item record without `title`."""
import sys

from common import ITEMS, behave, emit, first_call, requested_ids

mode = sys.argv[1]
if mode == "fetch" and first_call():
    for item_id in requested_ids():
        record = dict(ITEMS[item_id])
        del record["title"]
        emit(record)
    sys.exit(0)
sys.exit(behave(mode))
