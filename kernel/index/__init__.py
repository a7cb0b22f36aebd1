"""The index path: keeping each source's index current.

``sync`` builds, reconciles and polls a source (with ``fetch_run`` for the fetch batches,
``item_updates`` for chunking and embedding each batch, ``reconcile_plan`` for what a reconcile
changes and the deletion guard, ``sync_passes`` for the embedding after a store took the
passages, and ``sync_health`` for what ``/health`` says of it); ``window_vectors`` embeds the
windows excerpts are chosen from; ``sources`` and ``replicas`` hold the server's view of its
sources. Chunking, digests and the cutting of windows are on the ground floor (``kernel/text/``).
This path never imports the query path (``tests/test_layout.py`` checks it).
"""
