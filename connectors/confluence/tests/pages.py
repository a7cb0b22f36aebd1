"""A small Confluence site in storage format, for the in-test REST API.

Space OPS: Operations (home) › Runbooks › Rotate certificates (every macro rule), Deploy the app
(label ``howto``), Draft ideas (label ``draft``), and a chain six pages deep for the path; a blog
post that is not indexed. Space HR: Onboarding (label ``howto``). Space EMPTY: no pages.
"""

from __future__ import annotations

from typing import Any

CERTIFICATES = """
<p>Certificates are rotated every year. Status: <ac:structured-macro ac:name="status" ac:schema-version="1">
<ac:parameter ac:name="colour">Green</ac:parameter><ac:parameter ac:name="title">APPROVED</ac:parameter>
</ac:structured-macro> <ac:emoticon ac:name="smile" /></p>
<ac:structured-macro ac:name="toc" ac:schema-version="1"><ac:parameter ac:name="maxLevel">3</ac:parameter>
</ac:structured-macro>
<h1>Before you start</h1>
<ac:structured-macro ac:name="info" ac:schema-version="1">
<ac:parameter ac:name="title">Heads up</ac:parameter><ac:rich-text-body>
<p>The old certificate stays valid for two weeks.</p></ac:rich-text-body></ac:structured-macro>
<ac:structured-macro ac:name="warning"><ac:rich-text-body><p>Never share the private key.</p>
</ac:rich-text-body></ac:structured-macro>
<ac:structured-macro ac:name="jira" ac:schema-version="1"><ac:parameter ac:name="key">OPS-1234</ac:parameter>
<ac:parameter ac:name="server">Jira</ac:parameter></ac:structured-macro>
<h2>Steps</h2>
<ac:task-list><ac:task><ac:task-id>1</ac:task-id><ac:task-status>complete</ac:task-status>
<ac:task-body>Order the new certificate</ac:task-body></ac:task><ac:task><ac:task-id>2</ac:task-id>
<ac:task-status>incomplete</ac:task-status><ac:task-body>Install it on the load balancer</ac:task-body>
</ac:task></ac:task-list>
<ac:structured-macro ac:name="code" ac:schema-version="1"><ac:parameter ac:name="language">bash</ac:parameter>
<ac:plain-text-body><![CDATA[openssl req -new -key site.key -out site.csr
# check it
openssl req -in site.csr -noout -text]]></ac:plain-text-body></ac:structured-macro>
<h3>Checking</h3>
<p>Follow <ac:link><ri:page ri:content-title="Deploy the app" /></ac:link> afterwards, or read
<ac:link><ri:page ri:content-title="Onboarding" ri:space-key="HR" /><ac:plain-text-link-body>
<![CDATA[the onboarding guide]]></ac:plain-text-link-body></ac:link> and
<a href="https://example.org/tls">the TLS notes</a>.</p>
<ac:image ac:height="250"><ri:attachment ri:filename="diagram.png" /></ac:image>
<ac:structured-macro ac:name="expand"><ac:parameter ac:name="title">Details</ac:parameter><ac:rich-text-body>
<p>The chain includes the intermediate certificate.</p></ac:rich-text-body></ac:structured-macro>
<ac:structured-macro ac:name="noformat"><ac:plain-text-body><![CDATA[-----BEGIN CERTIFICATE REQUEST-----
  (placeholder)]]></ac:plain-text-body></ac:structured-macro>
<ac:layout><ac:layout-section ac:type="two_equal"><ac:layout-cell>
<ac:structured-macro ac:name="excerpt"><ac:rich-text-body><p>Rotation takes an hour.</p></ac:rich-text-body>
</ac:structured-macro></ac:layout-cell><ac:layout-cell>
<ac:structured-macro ac:name="panel"><ac:rich-text-body><table><tbody><tr><th>Host</th><th>Expires</th></tr>
<tr><td>www</td><td><time datetime="2027-01-31" /></td></tr></tbody></table></ac:rich-text-body>
</ac:structured-macro></ac:layout-cell></ac:layout-section></ac:layout>
<ac:structured-macro ac:name="section"><ac:rich-text-body><ac:structured-macro ac:name="column">
<ac:rich-text-body><ul><li>Renew<ul><li>in time</li></ul></li></ul></ac:rich-text-body></ac:structured-macro>
</ac:rich-text-body></ac:structured-macro>
<ac:structured-macro ac:name="attachments" />
"""


def build_site(fake: Any, page: Any) -> None:
    """Fill ``fake`` (a FakeConfluence) with the site above; ``page`` is its page class."""
    fake.spaces.update({"OPS": "Operations", "HR": "Human resources", "EMPTY": "Nothing yet"})
    add = fake.add
    add(page("100", "OPS", "Operations", "<p>The operations space.</p>"))
    add(page("101", "OPS", "Runbooks", "<p>How we run things.</p>", parent="100"))
    add(page("102", "OPS", "Rotate certificates", CERTIFICATES, parent="101", labels=["security", "tls"]))
    add(
        page(
            "103",
            "OPS",
            "Deploy the app",
            "<h1>Deploy</h1><p>Run the pipeline.</p>",
            parent="101",
            labels=["howto"],
        )
    )
    add(page("104", "OPS", "Draft ideas", "<p>Not ready.</p>", parent="100", labels=["draft"]))
    parent = "101"
    for number, title in enumerate(["Linux", "Servers", "Kernel", "Patching"], start=105):
        add(page(str(number), "OPS", title, f"<p>{title} notes.</p>", parent=parent))
        parent = str(number)
    add(page("110", "OPS", "Team news", "<p>A blog post.</p>", type="blogpost"))
    add(page("200", "HR", "Onboarding", "<h2>First day</h2><p>Collect your badge.</p>", labels=["howto"]))
