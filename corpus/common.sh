# Shared by the corpus scripts: source it after setting ROOT (the repository) and SCRIPT (the
# script's name for messages). It sets PYTHON and defines corpus_source.

PYTHON="$ROOT/.venv/bin/python"
if [ ! -x "$PYTHON" ]; then
    echo "$SCRIPT: $PYTHON is missing; run \`uv sync --all-packages\` first" >&2
    exit 2
fi

# corpus_source LANGUAGE: the [[connector]] table "corpus-LANGUAGE" for corpus/LANGUAGE. Connectors
# run with an empty environment, so the interpreter is named by its full path.
corpus_source() {
    printf '[[connector]]\nname = "corpus-%s"\ncommand = ["%s", "-m", "passageway_connector_markdown"]\nenv = { FOLDER = "%s" }\n\n' \
        "$1" "$PYTHON" "$ROOT/corpus/$1"
}

# docs_sources: the [[connector]] tables of the public documentation set in corpus/docs (see
# corpus/docs/README.md): the starship pages in English and German as two sources, typer, starlette.
docs_sources() {
    for pair in starship-en:starship/en starship-de:starship/de typer:typer starlette:starlette; do
        printf '[[connector]]\nname = "%s"\ncommand = ["%s", "-m", "passageway_connector_markdown"]\nenv = { FOLDER = "%s" }\n\n' \
            "${pair%%:*}" "$PYTHON" "$ROOT/corpus/docs/${pair#*:}"
    done
}

# seed_eval_cache: copy the vectors corpus/serve.sh's server made (.demo/data/vectors) into the
# cache `passageway eval` reads (<shared data folder>/vectors), so that measuring right after the
# quickstart embeds no passage the quickstart already embedded. Prints how many it added.
# DEMO_DATA names another server data folder to take them from.
seed_eval_cache() {
    [ -d "${DEMO_DATA:-$ROOT/.demo/data}/vectors" ] || return 0
    "$PYTHON" - "${DEMO_DATA:-$ROOT/.demo/data}/vectors" <<'PY'
import os, sqlite3, sys
from pathlib import Path
from passageway.kernel.instances import base_data_dir

source, target = Path(sys.argv[1]), base_data_dir(os.environ) / "passageway" / "vectors"
added = 0
for demo in sorted(source.glob("*.db")):
    target.mkdir(parents=True, exist_ok=True, mode=0o700)
    into = target / demo.name
    connection = sqlite3.connect(into, timeout=30)
    os.chmod(into, 0o600)  # the data folder is private, as passageway keeps it
    connection.execute("CREATE TABLE IF NOT EXISTS vectors "
                       "(digest TEXT PRIMARY KEY, vector BLOB NOT NULL) WITHOUT ROWID")
    connection.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    connection.execute("ATTACH DATABASE ? AS demo", (str(demo),))
    mine = dict(connection.execute("SELECT key, value FROM meta"))
    theirs = dict(connection.execute("SELECT key, value FROM demo.meta"))
    if mine and mine != theirs:
        connection.close()
        continue  # another embedder under the same file name: never mix vectors
    with connection:
        if not mine:
            connection.execute("INSERT INTO meta SELECT key, value FROM demo.meta")
        before = connection.execute("SELECT count(*) FROM vectors").fetchone()[0]
        connection.execute("INSERT OR IGNORE INTO vectors SELECT digest, vector FROM demo.vectors")
        added += connection.execute("SELECT count(*) FROM vectors").fetchone()[0] - before
    connection.close()
if added:
    print(f"measure.sh: {added} vectors of the quickstart's server (.demo/data) added to the "
          f"eval cache ({target})", file=sys.stderr)
PY
}
