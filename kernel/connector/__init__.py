"""The connector path: running connector programs and reading what they print.

``runner`` speaks the protocol (``check``, ``list``, ``fetch``, ``changed``) and checks each
reply against ``schemas/``; ``io`` starts a program with an empty environment and limits;
``lines`` reads its JSON Lines. Spawning and ending a program is the child-program driver's
(``kernel/program/``), which the command embedder shares.
Nothing here knows about indexes or questions.
"""
