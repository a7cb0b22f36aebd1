#!/usr/bin/env bash
# Self-test of recall-hook.sh against a stub passageway server (Python's http.server).
#
#   bash hooks/test-recall-hook.sh
#
# Checks: a hit, no hit, a server error, a bad answer, a wrong token, no server, no config, a slow
# server (the hook gives up after 1.5 s), a huge prompt (only the first 20,000 characters are
# sent), both configuration folders, several instances joined, and that neither the token nor
# the prompt shows in the process table while the hook runs. Exit 0 when every check passes.

set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
HOOK="$HERE/recall-hook.sh"
WORK="$(mktemp -d)"
STUB_PIDS=()
FAILURES=0
TOKEN="stub-token-$RANDOM$RANDOM-do-not-leak"
SECOND_TOKEN="second-token-$RANDOM$RANDOM"

cleanup() {
  for pid in "${STUB_PIDS[@]}"; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
  rm -rf "$WORK"
}
trap cleanup EXIT

check() {  # check NAME CONDITION-STATUS
  if [ "$2" -eq 0 ]; then echo "ok   $1"; else echo "FAIL $1"; FAILURES=$((FAILURES + 1)); fi
}

# The stub: answers POST /recall by the word in the prompt (HIT, NOHIT, FAIL, GARBAGE, SLOW) and
# records the last request body it received in $WORK/<name>.last.
start_stub() {  # start_stub NAME TOKEN CONTEXT; the port goes to $WORK/NAME.port
  local name="$1" context="$3"
  (umask 077; printf '%s' "$2" >"$WORK/$name.token")
  python3 - "$WORK" "$name" "$context" >"$WORK/$name.port" 2>/dev/null <<'PYTHON' &
import json, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

work, name, context = sys.argv[1:4]
token = open(f"{work}/{name}.token").read()

class Stub(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with open(f"{work}/{name}.last", "wb") as handle:
            handle.write(body)
        if self.headers.get("Authorization") != "Bearer " + token:
            return self.reply(401, b"{}")
        prompt = json.loads(body)["prompt"]
        if "SLOW" in prompt:  # far longer than the hook waits, even on a machine 10x slower
            time.sleep(30)
        if "FAIL" in prompt:
            return self.reply(500, b"{\"error\": \"boom\"}")
        if "GARBAGE" in prompt:
            return self.reply(200, b"not json at all")
        answer = context if ("HIT" in prompt and "NOHIT" not in prompt) or "SLOW" in prompt else ""
        self.reply(200, json.dumps({"context": answer}).encode())

    def reply(self, status, body):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

server = ThreadingHTTPServer(("127.0.0.1", 0), Stub)
print(server.server_address[1], flush=True)
server.serve_forever()
PYTHON
  STUB_PIDS+=("$!")
  for _ in $(seq 50); do [ -s "$WORK/$name.port" ] && break; sleep 0.1; done
}

start_stub one "$TOKEN" "PASSAGE-ONE"
start_stub two "$SECOND_TOKEN" "PASSAGE-TWO"
PORT="$(cat "$WORK/one.port")"
SECOND_PORT="$(cat "$WORK/two.port")"

CONFIG_HOME="$WORK/claude"
DATA="$CONFIG_HOME/plugin-data/passageway"
mkdir -p "$DATA"
write_config() {  # write_config FILE URL TOKEN
  (umask 077; printf '{"url": "%s", "token": "%s"}\n' "$2" "$3" >"$1")
}
write_config "$DATA/passageway.json" "http://127.0.0.1:$PORT" "$TOKEN"

run_hook() {  # run_hook PROMPT -> stdout of the hook; $WORK/status holds its exit status
  local prompt="$1"
  python3 -c 'import json, sys; print(json.dumps({"prompt": sys.stdin.read(), "session_id": "s-1", "cwd": "/home/me/work/project", "hook_event_name": "UserPromptSubmit"}))' \
    <<<"$prompt" >"$WORK/input.json"
  env -u CLAUDE_PLUGIN_DATA CLAUDE_CONFIG_DIR="$CONFIG_HOME" bash "$HOOK" <"$WORK/input.json"
  echo "$?" >"$WORK/status"
}

output="$(run_hook "a question with HIT in it")"
echo "$output" | python3 -c 'import json, sys; d = json.load(sys.stdin)["hookSpecificOutput"]; assert d["hookEventName"] == "UserPromptSubmit"; assert "PASSAGE-ONE" in d["additionalContext"]' 2>/dev/null
check "a hit becomes additional context" $?
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["session_id"] == "s-1" and d["cwd"] == "/home/me/work/project"' "$WORK/one.last"
check "session id and cwd are sent" $?

output="$(run_hook "a question with NOHIT")"
[ -z "$output" ] && [ "$(cat "$WORK/status")" = 0 ]
check "no hit prints nothing and exits 0" $?

output="$(run_hook "please FAIL")"
[ -z "$output" ] && [ "$(cat "$WORK/status")" = 0 ]
check "a server error prints nothing and exits 0" $?

output="$(run_hook "GARBAGE please")"
[ -z "$output" ] && [ "$(cat "$WORK/status")" = 0 ]
check "a bad answer prints nothing and exits 0" $?

write_config "$DATA/passageway.json" "http://127.0.0.1:$PORT" "wrong-token"
output="$(run_hook "a question with HIT")"
[ -z "$output" ] && [ "$(cat "$WORK/status")" = 0 ]
check "a wrong token prints nothing" $?
write_config "$DATA/passageway.json" "http://127.0.0.1:$PORT" "$TOKEN"

python3 -c 'import json; print(json.dumps({"prompt": "SLOW question", "session_id": "s-1"}))' >"$WORK/input.json"
started=$(date +%s%N)
output="$(CLAUDE_CONFIG_DIR="$CONFIG_HOME" bash "$HOOK" <"$WORK/input.json")"; status=$?
elapsed_ms=$(( ($(date +%s%N) - started) / 1000000 ))
# Its answer carries context: an empty output means the hook gave up before the answer came (no
# tight bound on the elapsed time: a busy machine takes seconds longer to start bash and python).
[ -z "$output" ] && [ "$status" = 0 ] && [ "$elapsed_ms" -lt 20000 ]
check "a slow server is abandoned after 1.5 s (the hook took ${elapsed_ms} ms)" $?

huge="HIT $(python3 -c 'print("x" * 100000)')"
output="$(run_hook "$huge")"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert len(d["prompt"]) == 20000, len(d["prompt"])' "$WORK/one.last" && [ -n "$output" ]
check "a huge prompt is cut to 20,000 characters" $?

# The process table while a (slow) request is in flight: neither token nor prompt appears.
SECRET_PROMPT="SLOW secret-prompt-$RANDOM$RANDOM"
python3 -c 'import json, sys; print(json.dumps({"prompt": sys.argv[1], "session_id": "s-2", "cwd": "/tmp"}))' "$SECRET_PROMPT" >"$WORK/input-secret.json"
env -u CLAUDE_PLUGIN_DATA CLAUDE_CONFIG_DIR="$CONFIG_HOME" bash "$HOOK" <"$WORK/input-secret.json" >/dev/null &
hook_pid=$!
sleep 0.7
ps -eo args >"$WORK/ps.txt"
wait "$hook_pid"
! grep -q -- "$TOKEN" "$WORK/ps.txt" && ! grep -q -- "secret-prompt" "$WORK/ps.txt" && grep -q "recall-hook.sh" "$WORK/ps.txt"
check "neither token nor prompt shows in the process table" $?

rm -f "$DATA/passageway.json"
output="$(run_hook "a question with HIT")"
[ -z "$output" ] && [ "$(cat "$WORK/status")" = 0 ]
check "no configuration prints nothing" $?

PLUGIN_DATA="$WORK/plugin-data-folder"
mkdir -p "$PLUGIN_DATA"
write_config "$PLUGIN_DATA/passageway.json" "http://127.0.0.1:$PORT" "$TOKEN"
python3 -c 'import json; print(json.dumps({"prompt": "HIT from the plugin folder", "session_id": "s-3"}))' >"$WORK/input.json"
output="$(CLAUDE_PLUGIN_DATA="$PLUGIN_DATA" CLAUDE_CONFIG_DIR="$WORK/nowhere" bash "$HOOK" <"$WORK/input.json")"
echo "$output" | grep -q "PASSAGE-ONE"
check "the plugin data folder is read" $?
rm -f "$PLUGIN_DATA/passageway.json"

write_config "$DATA/recall.json" "http://127.0.0.1:$SECOND_PORT" "$SECOND_TOKEN"
output="$(run_hook "a question with HIT, old config only")"
echo "$output" | grep -q "PASSAGE-TWO"
check "a recall.json left by trilium-recall is used while there is no passageway.json" $?
write_config "$DATA/passageway.json" "http://127.0.0.1:$PORT" "$TOKEN"
output="$(run_hook "a question with HIT, both configs")"
echo "$output" | grep -q "PASSAGE-ONE" && ! echo "$output" | grep -q "PASSAGE-TWO"
check "passageway.json replaces recall.json" $?
rm -f "$DATA/recall.json"

write_config "$DATA/passageway-work.json" "http://127.0.0.1:$SECOND_PORT" "$SECOND_TOKEN"
output="$(run_hook "a question with HIT for both")"
echo "$output" | grep -q "PASSAGE-ONE" && echo "$output" | grep -q "PASSAGE-TWO"
check "several instances are asked and joined" $?

kill "${STUB_PIDS[1]}" 2>/dev/null
output="$(run_hook "a question with HIT, one server down")"
echo "$output" | grep -q "PASSAGE-ONE" && [ "$(cat "$WORK/status")" = 0 ]
check "a server that is down does not hide the others" $?

kill "${STUB_PIDS[0]}" 2>/dev/null
rm -f "$DATA/passageway-work.json"
output="$(run_hook "a question with HIT, no server")"
[ -z "$output" ] && [ "$(cat "$WORK/status")" = 0 ]
check "no server prints nothing and exits 0" $?

printf 'not json' | env CLAUDE_CONFIG_DIR="$CONFIG_HOME" bash "$HOOK" >"$WORK/out" ; status=$?
[ ! -s "$WORK/out" ] && [ "$status" = 0 ]
check "broken hook input prints nothing and exits 0" $?

if [ "$FAILURES" -ne 0 ]; then
  echo "$FAILURES check(s) failed"
  exit 1
fi
echo "all checks passed"
