"""BM25 over the contents of real files (rank-bm25), exposed to the assembling model as a tool.

One index over every source folder: BM25's term weights depend on the whole collection, so scores
from separate small indexes (a user folder of three files) would not be comparable."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from agentmill.grounded import readers

_TOKEN = re.compile(r"[a-z0-9]+")


def _prebuilt(path: Path) -> dict:
    """A corpus's prebuilt text index (corpus.py), or {} when there is none or it is unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


@dataclass
class Hit:
    path: str  # "<source name>/<path inside it>"
    score: float
    snippet: str


class FileIndex:
    """The readable files of named source folders, indexed by content (path words count too)."""

    def __init__(self, roots: dict[str, Path], *, chars_per_file: int = 50_000):
        from rank_bm25 import BM25Okapi

        self.roots = {name: Path(root) for name, root in roots.items()}
        self.paths: list[str] = []
        self.texts: list[str] = []
        self.skipped: dict[str, list[str]] = {name: [] for name in roots}  # unreadable files: reported, not fatal
        self.counts: dict[str, int] = {name: 0 for name in roots}
        from agentmill.grounded.corpus import INDEX_NAME, META_NAMES

        for name, root in self.roots.items():
            known = _prebuilt(root / INDEX_NAME)
            for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
                if path.suffix.lower() not in readers.READABLE or path.name in META_NAMES:
                    continue
                rel = path.relative_to(root).as_posix()
                try:
                    cached = known.get(rel)
                    if cached and cached["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest():
                        text = cached["text"][:chars_per_file]  # the corpus's own text index, still this file's
                    else:
                        text = readers.plain_text(path, limit=chars_per_file)
                except readers.UnreadableFile as e:
                    self.skipped[name].append(str(e))
                    continue
                self.paths.append(f"{name}/{rel}")
                self.texts.append(text)
                self.counts[name] += 1
        self._known = set(self.paths)
        docs = [tokens(p.replace("/", " ").replace("-", " ")) * 3 + tokens(t) for p, t in zip(self.paths, self.texts)]
        self._bm25 = BM25Okapi(docs) if docs else None

    def search(self, query: str, k: int = 8) -> list[Hit]:
        if self._bm25 is None:
            return []
        scores = self._bm25.get_scores(tokens(query))
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], self.paths[i]))[:k]
        return [
            Hit(self.paths[i], float(scores[i]), re.sub(r"\s+", " ", self.texts[i][:240]))
            for i in order
            if scores[i] > 0
        ]

    def resolve(self, path: str) -> Path | None:
        """The file behind an indexed path; None for anything not indexed."""
        if path not in self._known:
            return None
        name, _, rel = path.partition("/")
        return self.roots[name] / rel
