"""An embedder program for OpenAI-compatible embedding services (Ollama, LM Studio, vLLM, OpenAI) and Voyage.

Run it as ``python -m passageway_embedder_openai``; it speaks passageway's embedder protocol on
stdin and stdout and reads its settings (``MODEL``, ``BASE_URL``, ``API_KEY``, ...) from the
environment. See README.md.
"""

from passageway_embedder_openai.client import EmbeddingClient, EmbeddingFailed
from passageway_embedder_openai.program import EmbedderProgram, main, run
from passageway_embedder_openai.settings import Settings, SettingsError, load_settings

__all__ = [
    "EmbedderProgram",
    "EmbeddingClient",
    "EmbeddingFailed",
    "Settings",
    "SettingsError",
    "load_settings",
    "main",
    "run",
]
