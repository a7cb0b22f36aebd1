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
