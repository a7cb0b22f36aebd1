"""The embedder protocol loop: one JSON request per stdin line, one reply per stdout line."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from typing import Any, TextIO

from passageway_embedder_openai.client import EmbeddingClient, EmbeddingFailed
from passageway_embedder_openai.settings import Settings, SettingsError, load_settings

PROGRAM = "openai embedder"
PROBE_WORD = "passageway"


class RequestError(Exception):
    """This request cannot be answered; the reply says why and the process goes on."""


class Masker:
    """Replaces the API key wherever it would appear in text meant for stdout or stderr."""

    def __init__(self, secret: str) -> None:
        self._secrets = [secret] if secret else []
        if secret:
            escaped = json.dumps(secret)[1:-1]
            if escaped != secret:
                self._secrets.append(escaped)

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text


class EmbedderProgram:
    """Answers ``info`` and ``embed`` requests for one configured model."""

    def __init__(self, settings: Settings, stdout: TextIO, stderr: TextIO, **client_options: Any) -> None:
        self.settings = settings
        self._stdout = stdout
        self._stderr = stderr
        self._mask = Masker(settings.api_key)
        self._client = EmbeddingClient(settings, log=self.log, **client_options)
        # Known from DIMENSIONS, else learned from the first answer (the probe or an embed).
        self.dim: int | None = settings.dimensions
        self._dimension_confirmed = False

    def log(self, message: str) -> None:
        self._stderr.write(self._mask(f"{PROGRAM}: {message}") + "\n")
        self._stderr.flush()

    def _reply(self, reply: Mapping[str, Any]) -> None:
        line = json.dumps(reply, ensure_ascii=True, allow_nan=False)
        self._stdout.write(self._mask(line) + "\n")
        self._stdout.flush()

    def _check_dimension(self, vectors: list[list[float]]) -> None:
        for position, vector in enumerate(vectors):
            if self.dim is None:
                self.dim = len(vector)
                self._dimension_confirmed = True
            if len(vector) != self.dim:
                if self.settings.dimensions is not None and not self._dimension_confirmed:
                    raise RequestError(
                        f"the service answered vectors of {len(vector)} numbers but DIMENSIONS is "
                        f"{self.settings.dimensions}; set DIMENSIONS to {len(vector)} or leave it out"
                    )
                raise RequestError(
                    f"vector {position} has {len(vector)} numbers, the model's others have {self.dim}"
                )
            if not any(vector):
                raise RequestError(f"the service answered a vector of zero length for text {position}")
        self._dimension_confirmed = True

    def _embed(self, texts: list[str], kind: str) -> list[list[float]]:
        prefix = self.settings.query_prefix if kind == "query" else self.settings.passage_prefix
        try:
            vectors = self._client.embed([prefix + text for text in texts], kind)
        except EmbeddingFailed as error:
            raise RequestError(str(error)) from None
        self._check_dimension(vectors)
        return vectors

    def handle(self, request: Any) -> dict[str, Any]:
        if not isinstance(request, dict):
            raise RequestError("a request must be a JSON object with an 'op'")
        operation = request.get("op")
        if operation == "info":
            if self.dim is None:
                self._embed([PROBE_WORD], "passage")
            return {"name": self.settings.name, "dim": self.dim, "protocol": "1"}
        if operation == "embed":
            kind = request.get("kind")
            texts = request.get("texts")
            if kind not in ("query", "passage"):
                raise RequestError("'kind' must be 'query' or 'passage'")
            if not isinstance(texts, list) or not all(isinstance(text, str) for text in texts):
                raise RequestError("'texts' must be a list of strings")
            if not texts:
                return {"vectors": []}
            return {"vectors": self._embed(texts, kind)}
        raise RequestError(f"unknown op {operation!r}; expected 'info' or 'embed'")

    def serve(self, stdin: TextIO) -> int:
        for line in stdin:
            if not line.strip():
                continue
            try:
                request = json.loads(line)
            except ValueError:
                # The line itself is not quoted: it may hold a question.
                self._reply({"error": "the request is not a JSON object on one line"})
                continue
            try:
                reply = self.handle(request)
            except RequestError as error:
                self.log(str(error))
                reply = {"error": str(error)}
            self._reply(reply)
        return 0


def run(
    env: Mapping[str, str],
    stdin: TextIO,
    stdout: TextIO,
    stderr: TextIO,
    **client_options: Any,
) -> int:
    """Read settings from ``env`` and serve requests until stdin closes; return the exit code.

    ``client_options`` (``first_wait``, ``max_wait``, ``sleep``, ``clock``) are for tests.
    """
    try:
        settings = load_settings(env)
    except SettingsError as error:
        stderr.write(Masker(env.get("API_KEY", "").strip())(f"{PROGRAM}: {error}") + "\n")
        stderr.flush()
        return 2
    program = EmbedderProgram(settings, stdout, stderr, **client_options)
    note = f", DIMENSIONS {settings.dimensions}" if settings.dimensions else ""
    program.log(f"{settings.name}: POST {settings.endpoint} (TIMEOUT {settings.timeout:g} s{note})")
    return program.serve(stdin)


def main() -> None:
    try:
        code = run(os.environ, sys.stdin, sys.stdout, sys.stderr)
    except KeyboardInterrupt:
        code = 130
    sys.exit(code)
