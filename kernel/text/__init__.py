"""The ground floor: the pure text rules both data paths share, and that builtins and plugins may
import beside the ``passageway`` door.

``stopwords`` holds the word rules (content words, the language of a text), ``keyword_text`` what
goes into a keyword index and the terms of a question, ``chunking`` the blocks of a section, the
passages cut from them and their digests, ``windows`` the windows a long passage is cut into for
excerpts, and ``not_unicode`` the rule for text that cannot be UTF-8. Nothing here reads a store,
runs an embedder or awaits; nothing here imports a path folder (``tests/test_layout.py``).
"""
