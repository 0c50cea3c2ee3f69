"""Seeds from O*NET: (occupation, DWA task type, requirement, execution pattern, file family,
cited evidence), kept only for digital task types and only when the cited text supports them.

Digital proxy: AI4Work's DIGITAL labels are not available offline; a task counts as digital when
GPTs-are-GPTs rates it E1 (an LLM alone) or E2 (an LLM with tools). Requirement: the O*NET task
statement itself, cited by Task ID; it is kept only if the execution pattern's cue and the
requirement's content words are found in the cited text (`supported`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from pathlib import Path

from agentmill.grounded import onet
from agentmill.grounded.patterns import classify
from agentmill.grounded.records import Evidence, Seed
from agentmill.grounded.words import FUNCTION_WORDS

DIGITAL = {"E1", "E2"}
_WORD = re.compile(r"[a-z][a-z'-]{3,}")


def content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in FUNCTION_WORDS}


def supported(requirement: str, evidence_text: str, cue: str | None = None, min_recall: float = 0.8) -> bool:
    """A requirement is supported when most of its content words occur in the cited text (and
    the pattern's cue does). Never relaxed to fill a quota."""
    words = content_words(requirement)
    if not words:
        return False
    cited = content_words(evidence_text)
    recall = len(words & cited) / len(words)
    cue_ok = cue is None or re.search(r"\b" + re.escape(cue), evidence_text, re.IGNORECASE) is not None
    return recall >= min_recall and cue_ok


def seed_id(code: str, task_id: str, dwa_id: str) -> str:
    return hashlib.sha256(f"{code}|{task_id}|{dwa_id}".encode()).hexdigest()[:12]


def candidate_seeds(data_dir: Path = onet.DATA, *, stats: dict | None = None) -> list[Seed]:
    """Every (occupation, task, DWA) row of O*NET that passes the digital proxy, gets a pattern
    and has a supported requirement. `stats` receives the funnel counts."""
    exposure = onet.exposure_by_task(data_dir)
    occupations = {r["O*NET-SOC Code"]: r["Title"] for r in onet.rows("occupation_data", data_dir)}
    counts = {"rows": 0, "not_digital": 0, "no_pattern": 0, "unsupported": 0, "seeds": 0}
    out: list[Seed] = []
    for r in onet.rows("tasks_to_dwas", data_dir):
        counts["rows"] += 1
        code, task_id = r["O*NET-SOC Code"], r["Task ID"]
        if exposure.get(task_id) not in DIGITAL:
            counts["not_digital"] += 1
            continue
        hit = classify(r["DWA Title"], r["Task"])
        if hit is None:
            counts["no_pattern"] += 1
            continue
        pattern, cue = hit
        evidence = Evidence(task_id=task_id, task=r["Task"], dwa_id=r["DWA ID"], dwa_title=r["DWA Title"])
        requirement = r["Task"].strip()
        if not supported(requirement, f"{evidence.task} {evidence.dwa_title}", cue):
            counts["unsupported"] += 1
            continue
        out.append(
            Seed(
                seed_id=seed_id(code, task_id, evidence.dwa_id),
                occupation_code=code,
                occupation=occupations.get(code, r["Title"]),
                sector=onet.sector(code),
                task_type=evidence.dwa_title,
                requirement=requirement,
                pattern=pattern.name,
                file_family=pattern.file_family,
                evidence=evidence,
            )
        )
    counts["seeds"] = len(out)
    if stats is not None:
        stats.update(counts)
    return out


def greedy_cover(items: Iterable, keys, k: int) -> list:
    """Greedy selection by marginal coverage gain: each pick adds the most (dimension, value)
    pairs not yet covered; ties go to the earlier item. Stops at k picks or when nothing adds
    coverage. `keys(item)` -> {dimension: value or list of values}. Lazy evaluation: gains only
    shrink as coverage grows, so a stale upper bound that still tops the heap is re-checked."""
    import heapq

    items = list(items)
    feats = []
    for item in items:
        f = set()
        for dim, value in keys(item).items():
            for v in value if isinstance(value, (list, tuple, set, frozenset)) else [value]:
                f.add((dim, v))
        feats.append(f)
    heap = [(-len(f), i) for i, f in enumerate(feats)]
    heapq.heapify(heap)
    covered: set = set()
    chosen: list = []
    while heap and len(chosen) < k:
        neg, i = heapq.heappop(heap)
        gain = len(feats[i] - covered)
        if gain == 0:
            continue
        if gain == -neg:
            chosen.append(items[i])
            covered |= feats[i]
        else:
            heapq.heappush(heap, (-gain, i))
    return chosen


def select_seeds(seeds: list[Seed], k: int) -> list[Seed]:
    return greedy_cover(seeds, Seed.coverage_keys, k)


def real_family_keys(seed: Seed, input_files: list[str], output_files: list[str]) -> dict:
    """Coverage keys of a materialised task: the seed's, with the expected file family replaced by
    the families of its real input files and its deliverables' formats."""
    from agentmill.grounded.patterns import FORMAT_FAMILY

    def fams(paths):
        return sorted({FORMAT_FAMILY.get(p.rsplit(".", 1)[-1].lower(), "other") for p in paths})

    keys = seed.coverage_keys()
    del keys["file_family"]
    return {**keys, "input_family": fams(input_files), "output_family": fams(output_files)}
