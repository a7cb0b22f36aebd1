"""`passageway index` on real documentation sites as their generators built them (issue 31's targets).

    uv run python bench/sites.py --site pluggy=BUILD[,REBUILD] --site uvicorn=... --site vitepress=... \
        [--cases bench/sites/cases.toml] [--baseline b353ef5]

For each site (a build output folder, and optionally a second clean build of the same sources):

* **anchors**: every passage link with a ``#`` names an id that exists in that page's HTML;
* **chrome**: no passage holds a generator phrase ("Edit this page", "¶", "Skip to content", …)
  outside code and quotation marks, or three link texts in a row of a ``<nav>`` list of its page
  (a copied sidebar);
* **rebuild**: the passages' ids, links and digests are identical on the second build;
* **speed**: CPU seconds of reading and chunking, best of five, against the index of
  ``--baseline`` (the code before this change, which reads only the build contract) on the same
  pages written as a build contract: each page's sections as a Markdown twin and its anchors as
  ``search-index.json``, side by side in this one process.

With ``--cases`` it then serves the sites through ``connectors/site`` and runs ``passageway
eval`` with the built-in model: the right page in the top 3 (hit@3) and silence.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lxml import html
from passageway_passage_index import build_index, chunks_document

from passageway.kernel.text.fences import FENCE_RUN

ROOT = Path(__file__).resolve().parents[1]
CLI = "import sys; from passageway.kernel.cli import main; sys.exit(main(sys.argv[1:]))"
CODE = re.compile(FENCE_RUN + r".*?\1|`[^`\n]*`|\"[^\"\n]{0,80}\"", re.DOTALL)
"""Code and quoted words are the author's: a site about a site generator writes about its
"Edit this page" link."""
CHROME_PHRASES = (
    "Skip to content", "Edit this page", "Edit on GitHub", "¶", "On this page", "Table of contents",
    "Copy to clipboard", "Made with", "Powered by", "Back to top", "Initializing search", "Quick search",
    "Show Source", "Previous page", "Next page", "Search Ctrl", "Return to top",
)


def page_file(site: Path, url: str) -> Path:
    path = url.split("#")[0].lstrip("/")
    return site / (path + "index.html" if path.endswith("/") or not path else path)


def nav_runs(document: Any) -> list[tuple[str, str, str]]:
    """Three link texts in a row from each ``<nav>`` of a page: a copied sidebar would hold them."""
    runs = []
    for nav in document.iter("nav"):
        texts = [" ".join(link.text_content().split()) for link in nav.iter("a")]
        texts = [text for text in texts if len(text) > 2]
        runs.extend(zip(texts, texts[1:], texts[2:], strict=False))
    return runs


def check(site: Path) -> dict[str, Any]:
    reading, document = chunks_document(site)
    chunks = document["chunks"]
    anchored = resolved = chrome = 0
    pages: dict[str, Any] = {}
    for chunk in chunks:
        file = page_file(site, chunk["url"])
        if file not in pages:
            pages[file] = html.parse(str(file)).getroot()
        page = pages[file]
        if "#" in chunk["url"]:
            anchored += 1
            resolved += page.get_element_by_id(chunk["url"].split("#", 1)[1], None) is not None
        prose = CODE.sub(" ", chunk["text"])
        flat = " ".join(chunk["search"]["paragraphs"])  # plain text: code marks are gone here
        if any(phrase in prose for phrase in CHROME_PHRASES) or any(
            f"{a} {b} {c}" in flat for a, b, c in nav_runs(page)
        ):
            chrome += 1
    return {"generator": reading.generator, "pages": len(reading.pages), "passages": len(chunks),
            "anchored": anchored, "resolved": resolved, "with_chrome": chrome}


def keys(site: Path) -> list[tuple[str, str, str]]:
    return [(c["id"], c["url"], c["digest"]) for c in chunks_document(site)[1]["chunks"]]


def as_contract(site: Path, target: Path) -> None:
    """The pages read from ``site``'s HTML written as the build contract in ``target``."""
    reading, _ = chunks_document(site)
    documents, search_pages = [], []
    for page in reading.pages:
        twin = f"/{page.id.replace('.', '/')}.md"
        lines, headings = [], []
        for section in page.sections or ():
            if section.level:
                lines.append(f"{'#' * section.level} {section.name}")
                if section.anchor:
                    headings.append({"level": section.level, "text": section.name, "id": section.anchor})
            lines.append(section.text)
        path = target / twin.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n\n".join(lines), encoding="utf-8")
        url = page.url.rstrip("/") or "/"
        documents.append({"id": page.id, "title": page.title, "type": "page", "url": url,
                          "markdownUrl": twin,
                          "publication": {"channel": "production", "version": "current", "language": "en"},
                          "digest": page.digest})
        search_pages.append({"url": url, "headings": headings})
    (target / "documents.json").write_text(json.dumps({"schemaVersion": 1, "documents": documents}))
    (target / "search-index.json").write_text(json.dumps({"schemaVersion": 1, "pages": search_pages}))


def baseline(ref: str, into: Path) -> Any:
    """The passage index of commit ``ref`` as an importable package (its schemas from this one)."""
    package = into / "baseline_passage_index"
    package.mkdir()
    folder = f"{ref}:builtin/passage_index"
    listing = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "--name-only", folder],
                             check=True, capture_output=True, text=True).stdout.split()
    for name in listing:
        if name.endswith(".py"):
            source = subprocess.run(["git", "-C", str(ROOT), "show", f"{ref}:builtin/passage_index/{name}"],
                                    check=True, capture_output=True, text=True).stdout
            source = source.replace("passageway.builtin.passage_index", "baseline_passage_index")
            source = source.replace("passageway.kernel.chunking", "passageway.kernel.text.chunking")
            source = source.replace("from passageway.kernel.records import schema_errors",
                                    "from passageway_passage_index.files import schema_errors")
            (package / name).write_text(source)
    sys.path.insert(0, str(into))
    return importlib.import_module("baseline_passage_index.build")


def cpu_seconds(function: Any, site: Path) -> float:
    best = float("inf")
    for _ in range(5):
        start = time.process_time()
        function(site)
        best = min(best, time.process_time() - start)
    return best


def recall(sites: dict[str, Path], cases: Path, work: Path) -> dict[str, Any]:
    config = work / "passageway.toml"
    blocks = ['[embedder]\nkind = "onnx"\n']
    for name, site in sites.items():
        blocks.append(f'[[connector]]\nname = "{name}"\ncommand = ["{sys.executable}", "-m", '
                      f'"passageway_connector_site"]\nenv = {{ SITE_DIR = "{site}" }}\n')
    config.write_text("\n".join(blocks), encoding="utf-8")
    env = {**os.environ, "PASSAGEWAY_DATA_DIR": str(work / "data")}
    out = work / "eval"
    done = subprocess.run([sys.executable, "-c", CLI, "eval", str(cases), "--config", str(config),
                           "--out", str(out), "--include-cases"], env=env, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise SystemExit(f"passageway eval failed: {done.stderr.strip()[-2000:]}")
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    answerable = [case for case in report["cases"] if case["expect_id"]]
    silent = [case for case in report["cases"] if not case["expect_id"]]

    def right_in_top_3(case: dict[str, Any]) -> bool:
        # The three sites all have a page "/": a hit counts only from the case's own site.
        return any(hit["source"] == case["group"] and hit["item_id"] in case["expect_id"]
                   for hit in case["found"][:3])

    misses = [case["query"] for case in answerable if not right_in_top_3(case)]
    loud = [case["query"] for case in silent if case["found"]]
    return {"hit_at_3": f"{len(answerable) - len(misses)}/{len(answerable)}",
            "silence": f"{len(silent) - len(loud)}/{len(silent)}", "misses": misses, "not_silent": loud}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--site", action="append", required=True, metavar="NAME=BUILD[,REBUILD]")
    parser.add_argument("--cases", type=Path)
    parser.add_argument("--baseline", default="b353ef5", help="the commit whose index is 'today's'")
    args = parser.parse_args()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-sites-") as folder:
        work = Path(folder)
        old = baseline(args.baseline, work)
        served: dict[str, Path] = {}
        for entry in args.site:
            name, _, builds = entry.partition("=")
            first, _, second = builds.partition(",")
            site = work / name
            shutil.copytree(first, site, ignore=shutil.ignore_patterns("ai"))
            served[name] = site
            result = check(site)
            if second:
                rebuilt = work / f"{name}-rebuilt"
                shutil.copytree(second, rebuilt, ignore=shutil.ignore_patterns("ai"))
                result["rebuild_identical"] = keys(site) == keys(rebuilt)
            contract = work / f"{name}-contract"
            contract.mkdir()
            as_contract(site, contract)
            result["cpu_s_html"] = round(cpu_seconds(chunks_document, site), 3)
            result["cpu_s_baseline_contract"] = round(cpu_seconds(old.chunks_document, contract), 3)
            result["cpu_s_contract_now"] = round(cpu_seconds(chunks_document, contract), 3)
            results[name] = result
            print(name, json.dumps(result), flush=True)
        for site in served.values():
            build_index(site)
        if args.cases:
            results["recall"] = recall(served, args.cases, work)
            print("recall", json.dumps(results["recall"]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
