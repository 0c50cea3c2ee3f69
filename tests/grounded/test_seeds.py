"""Seeds: the digital proxy, the pattern vocabulary, support of requirements, greedy coverage."""

from agentmill.grounded import onet
from agentmill.grounded.patterns import PATTERN_NAMES, classify
from agentmill.grounded.seeds import candidate_seeds, greedy_cover, real_family_keys, select_seeds, supported


def test_greedy_coverage_on_a_hand_checked_example():
    # dims: occupation o, task type t, pattern p, family f
    items = {
        "A": {"o": "o1", "t": "t1", "p": "p1", "f": "f1"},  # 4 new
        "B": {"o": "o1", "t": "t1", "p": "p1", "f": "f2"},  # after A: 1 new (f2)
        "C": {"o": "o2", "t": "t2", "p": "p1", "f": "f1"},  # after A: 2 new (o2, t2)
        "D": {"o": "o2", "t": "t3", "p": "p2", "f": "f2"},  # after A: 4 new
        "E": {"o": "o3", "t": "t2", "p": "p2", "f": "f1"},  # after A, D: 2 new (o3, t2)
    }
    # by hand: A (4 new; ties with D, A comes first), then D (4 new), then E ({o3, t2}) beats C ({t2})
    # and B ({}); after E, C and B add nothing, so selection stops at three.
    picked = greedy_cover(list(items), lambda k: items[k], k=10)
    assert picked == ["A", "D", "E"]
    assert greedy_cover(list(items), lambda k: items[k], k=2) == ["A", "D"]


def test_greedy_counts_list_valued_dimensions_value_by_value():
    items = {"x": {"files": ["csv", "pdf"]}, "y": {"files": ["csv"]}, "z": {"files": ["xlsx", "pdf", "docx"]}}
    assert greedy_cover(list(items), lambda k: items[k], k=5) == ["z", "x"]


def test_unsupported_requirements_are_refused():
    cited = "Prepare budget reports by analyzing spending data for each department."
    assert supported("Analyzing spending data for each department", cited, cue="budget")
    assert not supported("Negotiate vendor contracts and manage procurement", cited)  # not in the cited text
    assert not supported("Prepare budget reports", "Inspect equipment for wear.", cue="budget")
    assert not supported("", cited)


def test_candidate_seeds_over_all_of_onet():
    stats = {}
    seeds = candidate_seeds(stats=stats)
    assert stats["rows"] == 23851 and stats["seeds"] == len(seeds) > 1000
    assert stats["not_digital"] > 0 and stats["no_pattern"] > 0
    exposure = onet.exposure_by_task()
    assert all(exposure[s.evidence.task_id] in {"E1", "E2"} for s in seeds)
    assert {s.pattern for s in seeds} == set(PATTERN_NAMES) and len(PATTERN_NAMES) == 16
    s = seeds[0]
    assert s.requirement == s.evidence.task and s.sector == onet.sector(s.occupation_code)
    chosen = select_seeds(seeds, 200)
    assert len(chosen) == 200 and len({x.seed_id for x in chosen}) == 200
    # greedy covers every pattern well before 200 picks
    assert {x.pattern for x in chosen[:60]} == set(PATTERN_NAMES)


def test_reapplied_on_real_file_families():
    seeds = select_seeds(candidate_seeds(), 2)
    a, b = seeds
    same = b.model_copy(update={"occupation_code": a.occupation_code, "evidence": a.evidence, "pattern": a.pattern})
    tasks = [
        (a, ["t/x.csv"], ["out.md"]),
        (same, ["t/y.csv"], ["out.md"]),
        (same, ["t/z.xlsx", "doc.pdf"], ["out.xlsx"]),
    ]
    kept = greedy_cover(tasks, lambda t: real_family_keys(*t), k=3)
    # the second task adds nothing over the first (same seed keys, same real families); the third adds
    # spreadsheet and document inputs and a spreadsheet output
    assert kept == [tasks[2], tasks[0]]
    assert real_family_keys(*tasks[2])["input_family"] == ["document", "spreadsheet"]


def test_pattern_classification_uses_cue_words():
    p, cue = classify("Analyze market or industry conditions.", "")
    assert p.name == "data analysis and reporting" and cue == "analy"
    assert classify("Operate forklifts.", "Drive trucks to sites.") is None
