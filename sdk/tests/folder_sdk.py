#!/usr/bin/env python3
"""The guide's folder connector written with the SDK: every .txt file under FOLDER is one item."""
import hashlib
from pathlib import Path

from passageway_sdk import Connector, SettingsError


class TextFolder(Connector):
    name = "folder connector"

    def __init__(self, env):
        self.root = Path(env.get("FOLDER", "")).resolve()
        if not self.root.is_dir():
            raise SettingsError("FOLDER must be an existing folder")

    def files(self):
        found = sorted(self.root.rglob("*.txt"))
        return {path.relative_to(self.root).as_posix(): path for path in found}

    def version(self, path):
        return hashlib.sha256(path.read_bytes()).hexdigest()[:12]

    def versions(self):
        return {item_id: self.version(path) for item_id, path in self.files().items()}

    def fetch(self, ids):
        for item_id, path in self.files().items():
            if item_id in ids:
                text = path.read_text(encoding="utf-8")
                yield {"id": item_id, "title": path.stem, "url": path.as_uri(),
                       "version": self.version(path), "sections": [{"heading": None, "text": text}]}


TextFolder.main()
