"""Reading one HTML page: the main content and the chrome dropped inside it, where the fast paths
(a walk that skips ``<pre>`` and chrome, rules looked up by tag, one query for ``role``) must
choose exactly what the rules say."""

from __future__ import annotations

import pytest
from passageway_passage_index.html_page import read_page
from passageway_passage_index.html_site import read_html_site


def text_of(html: str) -> str:
    page = read_page(f"<html><head><title>T</title></head><body>{html}</body></html>".encode())
    return "\n\n".join(section.text for section in page.sections)


def test_a_pre_marked_as_chrome_goes_and_what_is_inside_a_pre_stays():
    text = text_of('<main><p>Kept.</p><pre class="sr-only">hidden</pre>'
                   '<pre>code<span class="headerlink">#</span><button>run</button></pre></main>')
    assert "hidden" not in text
    assert "code#run" in text and "Kept." in text


def test_main_content_that_is_a_pre_keeps_everything_inside_it():
    text = text_of('<nav>Menu</nav><pre role="main">plain <span class="headerlink">mark</span></pre>')
    assert text == "plain mark"


def test_role_main_on_any_element_ranks_above_article_and_body_and_below_a_div():
    assert text_of('<article>Article.</article><section role="main">Section.</section>') == "Section."
    assert text_of('<section role="main">Section.</section><div role="main">Div.</div>') == "Div."
    assert text_of("<p>Body.</p>") == "Body."


def test_the_first_element_of_the_best_rule_wins_in_document_order():
    html = ('<div class="vp-doc">VitePress.</div><article class="md-content__inner">First.</article>'
            '<article class="md-content__inner">Second.</article>')
    assert text_of(html) == "First."


def test_tab_lists_and_nested_chrome_go_with_the_text_around_them_kept():
    text = text_of('<main><div role="tablist"><span>Tab A</span></div>'
                   '<p>one <button>x</button>two <span class="sr-only"><a class="headerlink">#</a></span>'
                   "three</p></main>")
    assert text == "one two three"


def test_the_text_after_dropped_chrome_is_kept_in_order():
    text = text_of('<main><p>a<button>x</button>b<button>y</button>c<span class="headerlink">#</span>d'
                   '<em>e</em>f<button>z</button>g</p></main>')
    assert text == "abcdefg"
    assert text_of("<main><p><button>x</button>start</p></main>") == "start"


def test_a_long_run_of_chrome_with_text_between_is_read_in_linear_time():
    # 38.4: each removal appended its tail to the growing text before it (100,000 buttons: 224 s).
    import time

    started = time.process_time()
    text = text_of("<main><p>" + "<button>x</button>t " * 100_000 + "</p></main>")
    assert time.process_time() - started < 20  # generous: about 0.2 s; quadratic, minutes
    assert text.count("t") == 100_000 and "x" not in text


def test_a_ragged_table_pads_only_its_header_row():
    # 38.4: every row was padded to the widest one: a row of N cells over N rows of one cell grew
    # as N squared (N = 5,000: 432 MB of chunks).
    cells = 2_000
    text = text_of("<main><table><tr>" + "<td>c</td>" * cells + "</tr>" + "<tr><td>r</td></tr>" * cells
                   + "</table></main>")
    lines = text.split("\n")
    assert lines[0].count("|") == cells + 1 and lines[1] == "|" + "---|" * cells
    assert lines[2] == "| r |" and len(text) < 20 * cells


HEAD = b"<html><head><title>T</title></head><body>"
DEEP = HEAD + b"<div>" * 300 + b"<p>Deep.</p>" + b"</div>" * 300 + b"</body></html>"
LONG_TEXT = HEAD + b"<p>" + b"word " * 2_200_000 + b"</p></body></html>"


@pytest.mark.parametrize("content", [DEEP, LONG_TEXT], ids=["deep", "long text"])
def test_a_page_past_the_parsers_limits_is_named_and_skipped_not_read_as_empty(tmp_path, content):
    # Issue 38.7: such a page read as empty, and no line said which page or why.
    (tmp_path / "good.html").write_bytes(HEAD + b"<p>Good.</p></body></html>")
    (tmp_path / "big.html").write_bytes(content)
    problems: list[str] = []
    pages, _ = read_html_site(tmp_path, lambda problem: problems.append(str(problem)))
    assert [page.url for page in pages] == ["/good.html"]
    [problem] = problems
    assert problem.startswith("big.html ") and "limits" in problem and "split the page" in problem
    with pytest.raises(ValueError, match="libxml2"):
        read_page(content)
