#!/usr/bin/env bash
# Opt-in live test: the Wikipedia connector against a real MediaWiki on this machine.
#
# Installs Debian's `mediawiki` package when it is missing (needs root and apt), sets up a
# throw-away wiki with SQLite in a temporary folder, serves it with PHP's built-in web server on
# 127.0.0.1, writes a few pages (a category with a subcategory, a redirect, sections in English
# and German, references), then runs the connector's check, list and fetch against its api.php
# and the connector contract check. Nothing is installed into the system's web server, and the
# wiki, its database and the PHP server are gone when the script ends.
#
#   sudo connectors/wikipedia/tests/real_mediawiki.sh        # from the repository root, or anywhere
#
# Not part of `uv run pytest`: it needs Debian packages and a few minutes.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
mediawiki=/usr/share/mediawiki
work="$(mktemp -d /tmp/passageway-mediawiki.XXXXXX)"
server_pid=""

cleanup() {
    if [[ -n "$server_pid" ]]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n== %s\n' "$*"; }

# -- 1. MediaWiki and PHP --------------------------------------------------------------------
# (php's module list is read whole first: `grep -q` on a pipe could end php early under pipefail.)
php_modules="$(php -m 2>/dev/null || true)"
if [[ ! -f "$mediawiki/api.php" ]] || ! grep -qix 'pdo_sqlite' <<<"$php_modules"; then
    step "installing Debian's mediawiki package"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    # No recommends: no database server, no Apache configuration is needed for this.
    apt-get install -y -q --no-install-recommends \
        mediawiki php-cli php-sqlite3 php-intl php-mbstring php-xml >/dev/null
fi
printf 'MediaWiki %s, %s\n' \
    "$(dpkg-query -W -f '${Version}' mediawiki 2>/dev/null || echo '?')" "$(php -r 'echo "PHP ", PHP_VERSION;')"

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
base="http://127.0.0.1:$port"
# MediaWiki reads its settings from here instead of /var/lib/mediawiki (BootstrapHelperFunctions).
export MW_CONFIG_FILE="$work/LocalSettings.php"

# -- 2. A throw-away wiki --------------------------------------------------------------------
step "installing a wiki with SQLite in $work"
mkdir -p "$work/data" "$work/cache"
php "$mediawiki/maintenance/install.php" \
    --dbtype=sqlite --dbpath="$work/data" --dbname=passageway \
    --server="$base" --scriptpath="" --lang=en \
    --confpath="$work" --pass="local-test-only-$(date +%s)" \
    "Passageway Test Wiki" Admin | tail -n 2
cat >>"$work/LocalSettings.php" <<'PHP'
wfLoadExtension( 'Cite' );
$wgCacheDirectory = getenv( 'PASSAGEWAY_MW_CACHE' );
$wgEnableUploads = false;
$wgJobRunRate = 0;
PHP
export PASSAGEWAY_MW_CACHE="$work/cache"

# -- 3. Pages ---------------------------------------------------------------------------------
step "writing pages"
page() {  # page TITLE < wikitext
    php "$mediawiki/maintenance/edit.php" --user Admin --summary "passageway test" "$1" >/dev/null
    printf '  %s\n' "$1"
}
page "Category:Optimization" <<'WIKI'
Methods that minimise a loss.
[[Category:Deep learning]]
WIKI
page "Backpropagation" <<'WIKI'
In machine learning, '''backpropagation''' computes the gradient of a loss function with respect to the weights of a network.<ref>Rumelhart, Hinton, Williams (1986).</ref>

== History ==
The method was described several times before it became popular.

=== 19th century ===
Its precursors are the chain rule of [[calculus]].

== Algorithm ==
{| class="wikitable"
| a table cell || that is left out
|}
Apply the chain rule layer by layer, from the output back to the input.
* forward pass
* backward pass

== See also ==
* [[Gradient descent]]

== References ==
<references />

[[Category:Deep learning]]
WIKI
page "Gradient descent" <<'WIKI'
'''Gradient descent''' follows the negative gradient to a minimum.

== Step size ==
A step that is too large overshoots; one that is too small is slow.

[[Category:Optimization]]
WIKI
page "Backprop" <<'WIKI'
#REDIRECT [[Backpropagation]]
[[Category:Deep learning]]
WIKI
page "Neuronales Netz" <<'WIKI'
Ein '''neuronales Netz''' ist ein Netz aus künstlichen Neuronen.

== Geschichte ==
Die ersten Modelle entstanden in den 1940er Jahren.

== Siehe auch ==
* [[Backpropagation]]

== Einzelnachweise ==
<references />

== Weblinks ==
* Eine Seite
WIKI
php "$mediawiki/maintenance/runJobs.php" --quiet >/dev/null || true

# -- 4. Serve it on loopback ------------------------------------------------------------------
step "serving $base with php -S"
php -S "127.0.0.1:$port" -t "$mediawiki" >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 50); do
    if curl -fsS "$base/api.php?action=query&meta=siteinfo&format=json" >/dev/null 2>&1; then
        break
    fi
    sleep 0.2
done

# -- 5. The connector -------------------------------------------------------------------------
cd "$repo"
connector=(uv run --quiet python -m passageway_connector_wikipedia)
settings=(
    "API_URL=$base/api.php" "PAGE_URL=$base/index.php/" "PAUSE_SECONDS=0"
    "CATEGORIES=Deep learning" "TITLES=Backprop|Neuronales Netz|No such page"
    "CONTACT=passageway real MediaWiki test"
)
run_connector() {  # run_connector MODE [stdin]
    env -i PATH="$PATH" HOME="$HOME" PASSAGEWAY_PROTOCOL=1 "${settings[@]}" "${connector[@]}" "$@"
}

step "check"
run_connector check
step "list (Backpropagation and Gradient descent from the category, Neuronales Netz by title; not the redirect)"
listing="$(run_connector list)"
printf '%s\n' "$listing"
step "fetch"
cat >"$work/show.py" <<'PY'
import json
import sys

for line in sys.stdin:
    item = json.loads(line)
    print(f"{item['id']} {item['title']!r} version {item['version']} {item['url']}")
    for section in item["sections"]:
        text = section["text"].replace("\n", " / ")
        print(f"    [{section.get('heading') or '(lead)'}] {text[:100]}")
        # Reference markers and lists, tables and edit links are not prose.
        for noise in ("[1]", "Rumelhart", "table cell", "[edit]", "Eine Seite"):
            if noise in section["text"]:
                sys.exit(f"unexpected {noise!r} in {item['title']!r}")
PY
printf '%s\n' "$listing" | python3 -c '
import json, sys
for line in sys.stdin:
    print(json.dumps({"id": json.loads(line)["id"]}))' | run_connector fetch | python3 "$work/show.py"

step "a category that does not exist (expect exit 1)"
set +e
env -i PATH="$PATH" HOME="$HOME" "API_URL=$base/api.php" "CATEGORIES=No such category" "${connector[@]}" list
echo "exit code $?"
set -e

step "contract check"
env_options=()
for pair in "${settings[@]}"; do env_options+=(--env "$pair"); done
uv run --quiet passageway check-connector --name real-mediawiki "${env_options[@]}" -- \
    "$(uv run --quiet python -c 'import sys; print(sys.executable)')" -m passageway_connector_wikipedia
