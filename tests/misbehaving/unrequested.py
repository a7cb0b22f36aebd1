"""`fetch` also returns an id that was not asked for."""
import sys

from common import ITEMS, behave, emit, first_call, requested_ids

mode = sys.argv[1]
if mode == "fetch" and first_call():
    for item_id in requested_ids():
        emit(ITEMS[item_id])
    emit(ITEMS["b"])
    sys.exit(0)
sys.exit(behave(mode))
