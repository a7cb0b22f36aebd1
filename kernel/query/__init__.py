"""The query path: from a question to at most three passages, or silence.

``prompt`` reduces what was asked to the question, ``question_queue`` lets questions go ahead
of indexing, ``recall`` gathers candidates and applies the ranker and gate, ``duplicates``
keeps one slot per content, ``excerpts`` chooses what part of a passage is shown and
``rendering`` fits the answer to its budget. The word rules they share are on the ground floor
(``kernel/text/``).
"""
