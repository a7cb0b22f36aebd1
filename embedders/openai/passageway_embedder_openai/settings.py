"""The embedder's settings, read from its environment and checked before anything is sent."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

PROVIDERS = ("openai", "voyage")
DEFAULT_BASE_URLS = {
    "openai": "https://api.openai.com/v1",
    "voyage": "https://api.voyageai.com/v1",
}
# Cloud services that refuse every request without a key: catching that at start is kinder
# than a 401 on the first embedding.
HOSTS_THAT_NEED_A_KEY = ("api.openai.com", "api.voyageai.com")
DEFAULT_TIMEOUT = 50.0


class SettingsError(Exception):
    """A setting is missing or wrong; the program exits 2 with this message."""


@dataclass(frozen=True)
class Settings:
    model: str
    base_url: str
    api_key: str
    provider: str
    query_prefix: str
    passage_prefix: str
    dimensions: int | None
    timeout: float
    name: str

    @property
    def endpoint(self) -> str:
        return self.base_url + "/embeddings"


def _default_name(provider: str, model: str, base_url: str, query_prefix: str, passage_prefix: str) -> str:
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    name = f"{provider}:{model}@{host}"
    if query_prefix or passage_prefix:
        # The separator keeps ("a", "bc") and ("ab", "c") apart.
        digest = hashlib.sha256(f"{query_prefix}\x00{passage_prefix}".encode()).hexdigest()[:8]
        name += f"#{digest}"
    return name


def _normalise_base_url(raw: str) -> str:
    url = raw.strip().rstrip("/")
    if url.endswith("/embeddings"):
        url = url[: -len("/embeddings")].rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SettingsError(
            f"BASE_URL must be an http:// or https:// address such as http://localhost:11434/v1, "
            f"not {raw.strip()!r}"
        )
    if parts.username is not None or parts.password is not None:
        # The value is not repeated: it holds a credential.
        raise SettingsError(
            "BASE_URL must not contain a user name or password; put the key in secrets as API_KEY"
        )
    if parts.query or parts.fragment:
        raise SettingsError("BASE_URL must not have a query (?...) or fragment (#...)")
    return url


def load_settings(env: Mapping[str, str]) -> Settings:
    """Read the settings from the environment the core gave this program."""
    model = env.get("MODEL", "").strip()
    if not model:
        raise SettingsError(
            "MODEL is required: the embedding model the service serves, e.g. nomic-embed-text"
        )
    provider = env.get("PROVIDER", "").strip().lower() or "openai"
    if provider not in PROVIDERS:
        raise SettingsError(f"PROVIDER must be 'openai' or 'voyage', not {env.get('PROVIDER')!r}")
    base_url = _normalise_base_url(env.get("BASE_URL", "").strip() or DEFAULT_BASE_URLS[provider])
    api_key = env.get("API_KEY", "").strip()
    host = (urlsplit(base_url).hostname or "").lower()
    if not api_key and host in HOSTS_THAT_NEED_A_KEY:
        raise SettingsError(
            f'{host} needs API_KEY: add secrets = {{ API_KEY = "env:YOUR_VARIABLE" }} '
            "to the [embedder] section"
        )
    dimensions: int | None = None
    raw_dimensions = env.get("DIMENSIONS", "").strip()
    if raw_dimensions:
        try:
            dimensions = int(raw_dimensions)
        except ValueError:
            dimensions = 0
        if not 1 <= dimensions <= 65536:
            raise SettingsError(f"DIMENSIONS must be a whole number from 1 to 65536, not {raw_dimensions!r}")
    timeout = DEFAULT_TIMEOUT
    raw_timeout = env.get("TIMEOUT", "").strip()
    if raw_timeout:
        try:
            timeout = float(raw_timeout)
        except ValueError:
            timeout = math.nan
        if not (math.isfinite(timeout) and timeout > 0):
            raise SettingsError(f"TIMEOUT must be a number of seconds above 0, not {raw_timeout!r}")
    query_prefix = env.get("QUERY_PREFIX", "")
    passage_prefix = env.get("PASSAGE_PREFIX", "")
    name = env.get("NAME", "").strip() or _default_name(
        provider, model, base_url, query_prefix, passage_prefix
    )
    if len(name) > 200:
        raise SettingsError("NAME must be at most 200 characters; set a shorter NAME")
    return Settings(
        model=model,
        base_url=base_url,
        api_key=api_key,
        provider=provider,
        query_prefix=query_prefix,
        passage_prefix=passage_prefix,
        dimensions=dimensions,
        timeout=timeout,
        name=name,
    )
