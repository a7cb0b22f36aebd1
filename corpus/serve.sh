#!/bin/sh
# Run the passageway server on the sample corpus: corpus/en and corpus/de as two sources.
#
#   corpus/serve.sh              # listens on 127.0.0.1:8082 (PASSAGEWAY_PORT to change it)
#
# Everything it writes goes to .demo/ in the repository (configuration, password, index), so your
# own ~/.config/passageway is untouched. The password is generated once into .demo/password,
# readable only by you; the script prints how to use it. Stop the server with Ctrl-C.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SCRIPT=serve.sh
. "$ROOT/corpus/common.sh"

DEMO="$ROOT/.demo"
umask 077
mkdir -p "$DEMO"
chmod 700 "$DEMO"  # also one an older version of this script made 755
if [ ! -s "$DEMO/password" ]; then
    "$PYTHON" -c "import secrets; print(secrets.token_urlsafe(24))" > "$DEMO/password"
fi

{ corpus_source en; corpus_source de; } > "$DEMO/passageway.toml"

PORT=${PASSAGEWAY_PORT:-8082}
cat >&2 <<EOT
serve.sh: starting the server on corpus/en and corpus/de. While Python starts, curl cannot connect;
then, while the model loads (seconds; the first start on a machine converts it once, longer),
/health answers "starting" and /recall asks to try again. Once the log says "listening", both
answer, also while it indexes.
  health:  curl http://127.0.0.1:$PORT/health
  recall:  curl -H "Authorization: Bearer \$(cat $DEMO/password)" -H 'Content-Type: application/json' \\
             -d '{"prompt": "How much of the world carbon is stored in the Amazon forest?", "cwd": "/tmp"}' \\
             http://127.0.0.1:$PORT/recall
           (it answers each time: without a session_id nothing is remembered; the hook sends one,
           and the server then leaves out what it already sent to that session)
  MCP:     http://127.0.0.1:$PORT/mcp with the same bearer password
EOT

export PASSAGEWAY_CONFIG="$DEMO/passageway.toml"
export PASSAGEWAY_DATA_DIR="$DEMO/data"
export PASSAGEWAY_LOGIN_PASSWORD_FILE="$DEMO/password"
export PASSAGEWAY_PORT="$PORT"
exec "$ROOT/.venv/bin/passageway" serve
