"""mkdocs hooks (``hooks:`` in mkdocs.yml): the repository files that pages link to outside ``docs/``.

The pages link to files that live elsewhere in the repository: the README, the READMEs of the
connectors, embedders, store plugins, other plugins and the SDK, and the JSON Schemas. In the repository those
links work; on the site they would lead nowhere. These hooks publish each such file under
``repository/`` on the site (a README becomes a page, a schema a file) and rewrite every link
that points at one, in the pages and in the published READMEs alike, so that it works in both
places. A link out of ``docs/`` to any other file is left alone, and the strict build
(``validation.links.not_found: warn``) fails on it.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files, InclusionLevel

ROOT = Path(__file__).resolve().parent
PREFIX = "repository"
PUBLISHED = (
    "README.md", "sdk/README.md", "stores/*/README.md", "connectors/*/README.md",
    "embedders/*/README.md", "schemas/*.json", "schemas/examples/*.json",
    "plugins/*/README.md", "plugins/*/*/schemas/*.json", "bench/README.md",
)
LINK = re.compile(r"(\]\()([^)\s#]+)(#[^)\s]*)?(\))")


def published() -> list[str]:
    """The repository paths (``a/b/README.md``) of the files put on the site."""
    return sorted({path.relative_to(ROOT).as_posix() for pattern in PUBLISHED for path in ROOT.glob(pattern)})


def on_files(files: Files, config: Any) -> Files:
    for path in published():
        files.append(File.generated(
            config, f"{PREFIX}/{path}", abs_src_path=str(ROOT / path), inclusion=InclusionLevel.NOT_IN_NAV,
        ))
    return files


def repository_path(src_uri: str) -> str:
    """Where the page of ``src_uri`` (relative to docs/) lives in the repository."""
    if src_uri.startswith(f"{PREFIX}/"):
        return src_uri.removeprefix(f"{PREFIX}/")
    return f"docs/{src_uri}"


def site_link(target: str, src_uri: str, files: frozenset[str]) -> str | None:
    """The link from the page ``src_uri`` to ``target`` as it must read on the site, or ``None``
    when it needs no change (an address, an anchor, or a file neither in docs/ nor published)."""
    if "://" in target or target.startswith(("/", "mailto:")):
        return None
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(repository_path(src_uri)), target))
    if resolved.startswith("docs/"):
        on_site = resolved.removeprefix("docs/")
    elif resolved in files:
        on_site = f"{PREFIX}/{resolved}"
    else:
        return None
    rewritten = posixpath.relpath(on_site, posixpath.dirname(src_uri) or ".")
    return None if rewritten == target else rewritten


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    names = frozenset(published())
    src_uri = page.file.src_uri

    def rewrite(match: re.Match[str]) -> str:
        link = site_link(match.group(2), src_uri, names)
        if link is None:
            return match.group(0)
        return f"{match.group(1)}{link}{match.group(3) or ''}{match.group(4)}"

    return LINK.sub(rewrite, markdown)
