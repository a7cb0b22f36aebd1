"""Reading one HTML page: the main content and the chrome dropped inside it, where the fast paths
(a walk that skips ``<pre>`` and chrome, rules looked up by tag, one query for ``role``) must
choose exactly what the rules say."""

from __future__ import annotations

from passageway_passage_index.html_page import read_page


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
