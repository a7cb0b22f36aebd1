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
