"""How well the corpus serves the seeds: files per family against the families the seeds expect,
and a retrieval hit rate for a sample of seeds (BM25 over the corpus, the seed's requirement as
the query, as the assembler's first search would be).

A sampled seed is a *family hit* when the top k results hold a file of the family it expects
(`mixed` takes any), and a *topical hit* when, in addition, that file shares at least two content
words of the requirement (generic words aside); the second is a rough, lexical stand-in for
"a person would use this file for this task", no more.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

from agentmill.grounded.patterns import FORMAT_FAMILY
from agentmill.grounded.quality import stems
from agentmill.grounded.records import Seed
from agentmill.grounded.retrieval import FileIndex

GENERIC = stems(
    "data information records reports report work task tasks prepare review maintain develop analyze "
    "determine activities materials provide ensure using other related"
)


def family_of(path: str) -> str:
    return FORMAT_FAMILY.get(path.rsplit(".", 1)[-1].lower(), "other")


def coverage(index: FileIndex, seeds: list[Seed]) -> dict:
    files = Counter(family_of(p) for p in index.paths)
    wanted = Counter(s.file_family for s in seeds)
    return {
        "files_by_family": dict(sorted(files.items())),
        "seeds_by_family": dict(sorted(wanted.items())),
        "families_without_files": sorted(f for f in wanted if f != "mixed" and not files.get(f)),
    }


def hit_rate(index: FileIndex, seeds: list[Seed], *, sample: int = 100, k: int = 8, seed: int = 0) -> dict:
    picked = random.Random(seed).sample(seeds, min(sample, len(seeds)))
    family_hits = topical_hits = 0
    examples: list[dict] = []
    for s in picked:
        want = stems(s.requirement) - GENERIC
        hits = index.search(s.requirement, k)
        fam = [h for h in hits if s.file_family == "mixed" or family_of(h.path) == s.file_family]
        topical = [
            h for h in fam if len(want & stems(index.texts[index.paths.index(h.path)][:5000] + " " + h.path)) >= 2
        ]
        family_hits += bool(fam)
        topical_hits += bool(topical)
        if len(examples) < 5:
            examples.append(
                {
                    "seed": s.seed_id,
                    "requirement": s.requirement[:120],
                    "family": s.file_family,
                    "top": topical[0].path if topical else (hits[0].path if hits else None),
                }
            )
    n = len(picked) or 1
    return {
        "sample": len(picked),
        "k": k,
        "family_hit_rate": round(family_hits / n, 3),
        "topical_hit_rate": round(topical_hits / n, 3),
        "examples": examples,
    }


def corpus_report(corpus: Path, seeds: list[Seed], *, sample: int = 100) -> dict:
    index = FileIndex({"corpus": Path(corpus)})
    return {"files": len(index.paths), **coverage(index, seeds), "retrieval": hit_rate(index, seeds, sample=sample)}
