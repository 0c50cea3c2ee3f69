import io
import json
import math

import pytest
from rich.console import Console

from agentmill.errors import AgentmillError
from agentmill.recipe.table import compute_table, load_results, render_table, render_text

# Hand-computed example. Three variants, three benchmarks; b3 is a tie (all 1.0).
RESULTS = {
    "A": {"b1": [40, 60], "b2": [0, 0], "b3": [1.0]},
    "B": {"b1": [20], "b2": [5, 10, 15], "b3": [1.0]},
    "C": {"b1": [10, 30], "b2": [5, 5], "b3": [1.0]},
}
# Per-benchmark mean ± SE (sample std / sqrt(n)):
#   A b1: mean 50, std sqrt((100+100)/1)=14.1421, se 14.1421/sqrt(2) = 10       b2: 0 ± 0
#   B b1: 20 ± 0 (one score)                        b2: mean 10, std sqrt((25+0+25)/2)=5, se 5/sqrt(3) = 2.88675
#   C b1: mean 20, se 10                            b2: 5 ± 0
# z-scores with the population std of the variants' means:
#   b1 means 50, 20, 20: mu 30, sd sqrt((400+100+100)/3) = sqrt(200) = 14.1421 -> A +1.41421, B -0.70711, C -0.70711
#   b2 means 0, 10, 5:   mu 5,  sd sqrt((25+25+0)/3) = 4.08248           -> A -1.22474, B +1.22474, C 0
#   b3 means all 1:      tie -> z = 0 for everyone
# normalised = mean of z over 3 benchmarks:
#   A (1.41421 - 1.22474 + 0)/3 = 0.063156   B (-0.70711 + 1.22474 + 0)/3 = 0.172546   C (-0.70711 + 0 + 0)/3 = -0.235702
# raw average: A (50+0+1)/3 = 17, B (20+10+1)/3 = 10.3333, C (20+5+1)/3 = 8.6667
# So B ranks first on the normalised score though A has the higher raw average.


def test_hand_computed_example():
    rows = compute_table(RESULTS)
    assert [r.variant for r in rows] == ["B", "A", "C"]
    assert [r.rank for r in rows] == [1, 2, 3]
    by = {r.variant: r for r in rows}
    assert by["A"].cells["b1"].mean == pytest.approx(50) and by["A"].cells["b1"].se == pytest.approx(10)
    assert by["B"].cells["b1"].se == 0.0 and by["B"].cells["b1"].n == 1
    assert by["B"].cells["b2"].mean == pytest.approx(10) and by["B"].cells["b2"].se == pytest.approx(2.88675, abs=1e-5)
    assert by["A"].z["b1"] == pytest.approx(1.41421, abs=1e-5)
    assert by["C"].z["b2"] == pytest.approx(0.0)
    assert by["A"].z["b2"] == pytest.approx(-1.22474, abs=1e-5)
    assert all(r.z["b3"] == 0.0 for r in rows)
    assert by["A"].normalized == pytest.approx(0.063156, abs=1e-6)
    assert by["B"].normalized == pytest.approx(0.172546, abs=1e-6)
    assert by["C"].normalized == pytest.approx(-0.235702, abs=1e-6)
    assert by["A"].raw_average == pytest.approx(17)
    assert by["B"].raw_average == pytest.approx(10.33333, abs=1e-5)
    assert by["C"].raw_average == pytest.approx(8.66667, abs=1e-5)


def test_normalised_ties_are_broken_by_raw_average():
    # Two variants: z is +1/-1 on each benchmark whatever the scale, so both normalise to 0.
    # raw: X (10+0)/2 = 5, Y (0+20)/2 = 10 -> Y first.
    rows = compute_table({"X": {"b1": [10], "b2": [0]}, "Y": {"b1": [0], "b2": [20]}})
    assert [(r.variant, r.normalized) for r in rows] == [("Y", 0.0), ("X", 0.0)]


def test_single_variant_and_missing_benchmark():
    [only] = compute_table({"solo": {"b1": [0.5, 1.0]}})
    assert only.normalized == 0.0 and only.raw_average == pytest.approx(0.75)
    rows = compute_table({"full": {"b1": [1.0], "b2": [0.0]}, "part": {"b1": [0.0]}})
    part = next(r for r in rows if r.variant == "part")
    # b1 means 1, 0 -> z +1, -1; b2 only "full" -> tie -> 0. part averages over its one benchmark.
    assert part.missing == ["b2"] and part.normalized == pytest.approx(-1.0) and part.raw_average == 0.0
    assert "part *" in render_text(rows) and "—" in render_text(rows)


def test_renderings():
    rows = compute_table(RESULTS)
    text = render_text(rows)
    lines = text.splitlines()
    assert lines[0].split() == ["Rank", "Variant", "b1", "b2", "b3", "Raw", "Avg", "Normalized"]
    assert lines[2].split() == [
        "1",
        "B",
        "20.00",
        "±",
        "0.00",
        "10.00",
        "±",
        "2.89",
        "1.00",
        "±",
        "0.00",
        "10.33",
        "+0.17",
    ]
    assert "50.00 ± 10.00" in lines[3] and lines[4].endswith("-0.24")
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(render_table(rows, title="Mixing"))
    assert "Mixing" in out.getvalue() and "2.89" in out.getvalue() and "+0.06" in out.getvalue()


def test_load_results_names_bad_key(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"A": {"b1": [1, "x"]}}))
    with pytest.raises(AgentmillError, match="'A'.*'b1'"):
        load_results(path)
    path.write_text(json.dumps({"A": {"b1": [1, 0.5]}}))
    assert load_results(path) == {"A": {"b1": [1, 0.5]}}
    assert math.isclose(compute_table(load_results(path))[0].raw_average, 0.75)
