#!/usr/bin/env bash
# passageway prompt hook for Claude Code (UserPromptSubmit).
#
# Reads the hook input (JSON with prompt, session_id and cwd) on stdin, sends it to POST /recall
# of every configured passageway server at once, and prints what they return as additional
# context. Configuration: passageway.json ({"url": ..., "token": ...}) and one
# passageway-<instance>.json per further instance, in $CLAUDE_PLUGIN_DATA or in
# ${CLAUDE_CONFIG_DIR:-~/.claude}/plugin-data/passageway/; a recall.json there (left by
# trilium-recall, same fields) is read only while neither exists.
#
# It never blocks a prompt: after 1.5 s, or on any error (no config, no server, a bad answer),
# it prints nothing and exits 0. The token and the prompt stay inside the Python process (read
# from files and stdin, sent over the socket); neither is ever an argument of a command, so
# neither shows in the process table.

if ! command -v python3 >/dev/null 2>&1; then
  exit 0
fi

HOOK_PROGRAM='
import glob, json, os, sys, threading, time, urllib.request

DEADLINE = time.monotonic() + float(os.environ.get("PASSAGEWAY_HOOK_TIMEOUT", "1.5"))
MAX_PROMPT = 20000


def folders():
    seen = []
    data = os.environ.get("CLAUDE_PLUGIN_DATA")
    if data:
        seen.append(data)
    config_dir = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")
    seen.append(os.path.join(config_dir, "plugin-data", "passageway"))
    return seen


def servers():
    found = []
    for folder in folders():
        names = sorted(glob.glob(os.path.join(folder, "passageway.json")))
        names += sorted(glob.glob(os.path.join(folder, "passageway-*.json")))
        if not names:  # left by trilium-recall, the same fields; used until it is replaced
            names = sorted(glob.glob(os.path.join(folder, "recall.json")))
        for name in names:
            try:
                with open(name, encoding="utf-8") as handle:
                    config = json.load(handle)
                url, token = config["url"], config["token"]
            except Exception:
                continue
            if isinstance(url, str) and isinstance(token, str) and url.startswith(("http://", "https://")):
                found.append((url.rstrip("/"), token))
        if found:
            return found  # the first folder that has a configuration wins
    return found


def ask(url, token, body, results, index):
    remaining = DEADLINE - time.monotonic()
    if remaining <= 0:
        return
    request = urllib.request.Request(
        url + "/recall", data=body, method="POST",
        headers={"Content-Type": "application/json", "Authorization": "Bearer " + token},
    )
    try:
        with urllib.request.urlopen(request, timeout=remaining) as response:
            reply = json.loads(response.read(1_000_000).decode("utf-8"))
        context = reply.get("context") if isinstance(reply, dict) else None
        if isinstance(context, str) and context.strip():
            results[index] = context.strip()
    except Exception:
        pass


def main():
    try:
        event = json.load(sys.stdin)
    except Exception:
        return
    prompt = event.get("prompt") if isinstance(event, dict) else None
    if not isinstance(prompt, str) or not prompt.strip():
        return
    targets = servers()
    if not targets:
        return
    body = json.dumps({
        "prompt": prompt[:MAX_PROMPT],
        "session_id": event.get("session_id") if isinstance(event.get("session_id"), str) else None,
        "cwd": event.get("cwd") if isinstance(event.get("cwd"), str) else None,
    }).encode("utf-8")
    results = [None] * len(targets)
    threads = [threading.Thread(target=ask, args=(url, token, body, results, index), daemon=True)
               for index, (url, token) in enumerate(targets)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(DEADLINE - time.monotonic(), 0))
    contexts = [context for context in results if context]
    if not contexts:
        return
    text = "Passages from your indexed sources (passageway):\n\n" + "\n\n".join(contexts)
    sys.stdout.write(json.dumps({
        "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": text},
    }))
    sys.stdout.flush()


try:
    main()
except Exception:
    pass
os._exit(0)
'

python3 -c "$HOOK_PROGRAM" 2>/dev/null
exit 0
