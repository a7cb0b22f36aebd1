"""The connector path: running connector programs and reading what they print.

``runner`` speaks the protocol (``check``, ``list``, ``fetch``, ``changed``) and checks each
reply against ``schemas/``; ``io`` starts a program with an empty environment and limits;
``lines`` reads its JSON Lines; ``processes`` ends a program and everything it started.
Nothing here knows about indexes or questions.
"""
