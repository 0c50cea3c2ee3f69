"""BM25 over the contents of real files (rank-bm25), exposed to the assembling model as a tool."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from agentmill.grounded import readers

_TOKEN = re.compile(r"[a-z0-9]+")


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


@dataclass
class Hit:
    path: str  # relative to the source root
    score: float
    snippet: str


class FileIndex:
    """One source folder's readable files, indexed by content (path words count too)."""

    def __init__(self, root: Path, *, chars_per_file: int = 50_000):
        from rank_bm25 import BM25Okapi

        self.root = Path(root)
        self.paths: list[str] = []
        self.texts: list[str] = []
        self.skipped: list[str] = []  # unreadable files: reported, not fatal
        for path in sorted(p for p in self.root.rglob("*") if p.is_file() and not p.is_symlink()):
            if path.suffix.lower() not in readers.READABLE or path.name == "MANIFEST.json":
                continue
            try:
                text = readers.plain_text(path, limit=chars_per_file)
            except readers.UnreadableFile as e:
                self.skipped.append(str(e))
                continue
            rel = path.relative_to(self.root).as_posix()
            self.paths.append(rel)
            self.texts.append(text)
        self._bm25 = BM25Okapi([tokens(p.replace("/", " ").replace("-", " ")) * 3 + tokens(t) for p, t in zip(self.paths, self.texts)]) if self.paths else None

    def search(self, query: str, k: int = 8) -> list[Hit]:
        if self._bm25 is None:
            return []
        scores = self._bm25.get_scores(tokens(query))
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], self.paths[i]))[:k]
        return [Hit(self.paths[i], float(scores[i]), re.sub(r"\s+", " ", self.texts[i][:240])) for i in order if scores[i] > 0]
