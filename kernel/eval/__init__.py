"""The evaluation harness behind ``passageway eval``.

* :mod:`.cases` reads cases files strictly and matches a hit against a case.
* :mod:`.metrics` scores outcomes: hit@1, hit@3, MRR, silence, false silence, answer in passage,
  latency, each rate with its 95 % Wilson interval.
* :mod:`.runner` is the seam to the kernel (:class:`~.runner.Engine`) and the loop over cases.
* :mod:`.engine` is the real engine: an in-process kernel on a throwaway index.
* :mod:`.report` renders a run or a comparison as JSON and markdown.
* :mod:`.page` writes the marked block of a page and keeps its history.

Nothing here imports the kernel's heavy parts at module level except :mod:`.engine`.
"""
