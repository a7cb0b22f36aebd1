"""A synthetic LLM wiki kept the trilium-llm-wiki way, for the in-test ETAPI.

The tree (note ids in brackets)::

    root
    ├── LLM Wiki [llmwiki01]                     a plain folder
    │   ├── Wiki [areawiki]                      #llmWikiPart=wiki
    │   │   ├── Concepts [concepts1]
    │   │   │   ├── Backpropagation [backprop1]  #wikiType #wikiTopic #wikiStatus ~relatesTo
    │   │   │   ├── Gradient descent [graddesc1]
    │   │   │   └── Summary: Attention paper [summary01]  ~wikiSource -> attnsrc01
    │   │   └── Küche [kueche001]
    │   │       └── Sauerteigbrot backen [sauerteig]   in German
    │   ├── Schema [areaschema]                  #llmWikiPart=schema
    │   │   └── Note conventions [convention]
    │   ├── Sources [areasource]                 #llmWikiPart=sources
    │   │   └── Attention Is All You Need [attnsrc01]   h2/h3 sections, a table, a list
    │   ├── Locks [arealocks]                    #llmWikiPart=locks     (left out)
    │   │   └── sync lock [lock00001]
    │   ├── Templates [areatmpl1]                #llmWikiPart=templates (left out)
    │   │   └── Concept template [tmplcncpt]     #template
    │   └── Views [areaviews]                    #llmWikiPart=views     (left out)
    │       └── All concepts [viewall01]
    ├── Journal [journal01]                      #calendarRoot
    │   └── 2026 [year2026]
    │       └── 2026-11-02 [day110201]
    ├── Old meeting notes [archived1]           #archived              (left out)
    ├── Deploy script [deploysh1]                a code note
    ├── Huge export [hugenote1]                  larger than a small MAX_NOTE_BYTES
    ├── Diary [diary0001]                        protected              (left out)
    ├── A picture [picture01]                    an image note          (left out)
    └── Hidden subtree [_hidden]                 Trilium's own          (left out)
        └── Options [_options]
"""

from __future__ import annotations

from typing import Any

BACKPROP = """
<p>Backpropagation computes the gradient of the loss with respect to every weight of a neural
network, layer by layer, with the chain rule. See <a class="reference-link"
href="#root/llmwiki01/areawiki/concepts1/graddesc1">Gradient descent</a>.</p>
<h2>How it works</h2>
<p>A forward pass stores the activations; the backward pass multiplies local derivatives from
the output layer back to the input layer.</p>
<h3>Vanishing gradients</h3>
<p>With saturating activations such as the sigmoid, gradients shrink exponentially with depth,
which is why deep networks use ReLU and residual connections.</p>
<h2>History</h2>
<p>Rumelhart, Hinton and Williams popularised the method in 1986.</p>
"""

GRADIENT = """
<p>Gradient descent updates each weight a small step against its gradient. The learning rate
sets the step size; too large a rate diverges, too small a rate crawls.</p>
<h2>Variants</h2>
<ul><li>Stochastic gradient descent uses one mini-batch per step<ul>
<li>with momentum it keeps a running average</li></ul></li><li>Adam adapts the rate per parameter</li></ul>
"""

SUMMARY = """
<p>The transformer replaces recurrence with self-attention: every token attends to every other
token, so training parallelises across the sequence.</p>
"""

SOURCE = """
<p>Paper notes on Vaswani et al., 2017.</p>
<h2>Architecture</h2>
<p>An encoder and a decoder, each a stack of six layers.</p>
<h3>Multi-head attention</h3>
<p>Eight heads attend to different representation subspaces; each uses scaled dot-product
attention, dividing by the square root of the key dimension.</p>
<h2>Results</h2>
<figure class="table"><table><thead><tr><th>Task</th><th>BLEU</th></tr></thead>
<tbody><tr><td>English to German</td><td>28.4</td></tr>
<tr><td>English to French</td><td>41.8</td></tr></tbody></table></figure>
<h2>Training</h2>
<ol><li>Eight P100 GPUs</li><li>Twelve hours for the base model</li></ol>
"""

GERMAN = """
<p>Für ein Sauerteigbrot wird der Anstellgut am Vorabend aufgefrischt. Der Teig ruht über Nacht
im Kühlschrank.</p>
<h2>Backen</h2>
<p>Den Ofen mit dem gusseisernen Topf auf 250 Grad vorheizen, zwanzig Minuten mit Deckel und
weitere fünfundzwanzig Minuten ohne Deckel backen.</p>
"""

CONVENTIONS = """
<p>Every wiki note carries a wikiType label (concept, summary or howto) and a wikiStatus label
(draft or stable). A summary points at its source with a wikiSource relation.</p>
"""

JOURNAL = """
<p>Met the infrastructure team about the certificate rotation; the new internal CA goes live in
December and every service must trust it.</p>
"""

DEPLOY = """#!/bin/sh
# Build the container image
docker build -t notes-app .

# Push it to the registry
docker push registry.example.org/notes-app

# Restart the service on the server
ssh deploy@notes systemctl restart notes-app
"""


def build_wiki(fake: Any, note: Any) -> None:
    """Fill ``fake`` (a FakeTrilium) with the tree above; ``note`` is its note class."""
    add = fake.add
    add(note("llmwiki01", "LLM Wiki", ["root"], type="book"))
    add(
        note(
            "areawiki",
            "Wiki",
            ["llmwiki01"],
            labels={"llmWikiPart": "wiki"},
            content="<p>The wiki's index.</p>",
        )
    )
    add(note("concepts1", "Concepts", ["areawiki"], content=""))
    add(
        note(
            "backprop1",
            "Backpropagation",
            ["concepts1"],
            content=BACKPROP,
            labels={"wikiType": "concept", "wikiTopic": "training", "wikiStatus": "stable"},
            relations=[("relatesTo", "graddesc1"), ("internalLink", "graddesc1"), ("template", "tmplcncpt")],
        )
    )
    add(
        note(
            "graddesc1",
            "Gradient descent",
            ["concepts1"],
            content=GRADIENT,
            labels={"wikiType": "concept"},
            relations=[("relatesTo", "lock00001")],
        )
    )
    add(
        note(
            "summary01",
            "Summary: Attention paper",
            ["concepts1"],
            content=SUMMARY,
            labels={"wikiType": "summary", "wikiStatus": "draft"},
            relations=[("wikiSource", "attnsrc01")],
        )
    )
    add(note("kueche001", "Küche", ["areawiki"], type="book"))
    add(
        note("sauerteig", "Sauerteigbrot backen", ["kueche001"], content=GERMAN, labels={"wikiType": "howto"})
    )
    add(note("areaschema", "Schema", ["llmwiki01"], type="book", labels={"llmWikiPart": "schema"}))
    add(note("convention", "Note conventions", ["areaschema"], content=CONVENTIONS))
    add(note("areasource", "Sources", ["llmwiki01"], type="book", labels={"llmWikiPart": "sources"}))
    add(note("attnsrc01", "Attention Is All You Need", ["areasource"], content=SOURCE))
    add(note("arealocks", "Locks", ["llmwiki01"], type="book", labels={"llmWikiPart": "locks"}))
    add(note("lock00001", "sync lock", ["arealocks"], content="<p>held by the nightly job</p>"))
    add(note("areatmpl1", "Templates", ["llmwiki01"], type="book", labels={"llmWikiPart": "templates"}))
    add(
        note(
            "tmplcncpt",
            "Concept template",
            ["areatmpl1"],
            labels={"template": ""},
            content="<h2>Definition</h2>",
        )
    )
    add(note("areaviews", "Views", ["llmwiki01"], type="book", labels={"llmWikiPart": "views"}))
    add(note("viewall01", "All concepts", ["areaviews"], content="<p>a saved view</p>"))
    add(note("journal01", "Journal", ["root"], type="book", labels={"calendarRoot": ""}))
    add(note("year2026", "2026", ["journal01"], content=""))
    add(note("day110201", "2026-11-02", ["year2026"], content=JOURNAL))
    add(note("archived1", "Old meeting notes", ["root"], labels={"archived": ""}, content="<p>stale</p>"))
    add(note("deploysh1", "Deploy script", ["root"], type="code", mime="text/x-sh", content=DEPLOY))
    add(note("hugenote1", "Huge export", ["root"], content="<p>" + "many words here " * 2500 + "</p>"))
    add(note("diary0001", "Diary", ["root"], protected=True, content="<p>private</p>"))
    add(note("picture01", "A picture", ["root"], type="image", mime="image/png", content="PNG"))
    add(note("_hidden", "Hidden subtree", ["root"], type="book"))
    add(note("_options", "Options", ["_hidden"], content="<p>settings</p>"))
