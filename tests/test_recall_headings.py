"""End to end: a markdown folder indexed by the markdown connector answers with its headings as a
page shows them (``## [Chocolatey](https://chocolatey.org)`` is ``Chocolatey``), not escaped
markup with the link's target."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from passageway.kernel.app import Kernel
from passageway.kernel.config import load_settings
from passageway.kernel.query.rendering import render_answer
from tests.server_helpers import make_kernel, write_instance

INSTALLING = Path(__file__).resolve().parents[1] / "corpus/docs/starship/en/installing/README.md"


async def test_a_recall_answer_shows_the_heading_a_page_shows(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    shutil.copy(INSTALLING, folder / "installing.md")
    config = (
        '[embedder]\nkind = "toy"\n\n'
        '[[connector]]\nname = "docs"\n'
        f'command = [{json.dumps(sys.executable)}, "-m", "passageway_connector_markdown"]\n'
        f"env = {{ FOLDER = {json.dumps(str(folder))} }}\n"
    )
    environ = write_instance(tmp_path, config=config)
    async with Kernel.open(load_settings(environ), make_kernel(environ).manager, environ) as kernel:
        assert await kernel.sync_once() == {"docs": None}
        answer = await kernel.recall("choco install starship chocolatey installation")
    assert answer.hits, "the toy embedder finds the Chocolatey section"
    hit = answer.hits[0]
    assert hit.item_id == "installing.md"
    assert hit.heading == "Chocolatey › Installation"
    rendered = render_answer(answer)
    assert "1. **Advanced Installation › Chocolatey › Installation**" in rendered
    assert "chocolatey.org" not in rendered.split("\n", 1)[0] and "\\[" not in rendered
