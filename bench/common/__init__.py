"""What the benchmark scripts share (bench/README.md lists the scripts).

A script run as ``uv run python bench/<script>.py`` has ``bench/`` on its import path, so it
imports these modules as ``common.<module>``; no script imports another script.

* :mod:`common.measure`: percentiles, milliseconds, progress lines, the commit measured;
* :mod:`common.corpus`: the sample corpus, its questions and an instance on it;
* :mod:`common.synthetic`: the synthetic index of a million passages and its questions;
* :mod:`common.replay`: the gate replayed over recorded candidates (gate levels, windows);
* :mod:`common.tokenizer`: the e5 tokenizer through ``tokenizers``;

and the larger parts of one script, kept apart so that no file passes about 400 lines:

* :mod:`common.e5_shaped`: ``embed.py``'s random-weight model of e5-small's shape;
* :mod:`common.gather`, :mod:`common.recall_scale`: ``recall.py``'s row-cache comparison and its
  synthetic indexes;
* :mod:`common.transfer_recording`: ``gate_transfer.py``'s candidates, recorded and replayed;
* :mod:`common.first_run`: ``first_run.py``'s model conversions and its ratios between engines.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The repository."""
