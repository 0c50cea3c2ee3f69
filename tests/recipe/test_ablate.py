import json
import sys
import tomllib
from pathlib import Path

import pytest

from agentmill.errors import AgentmillError
from agentmill.recipe.ablate import expand_matrix, run_ablation, set_dotted
from agentmill.recipe.table import compute_table, load_results

BASE = """
name = "base"
[mix]
top_n = 4
sources = ["swe-smith", "superuser"]
[teacher]
model = "glm-4.7"
[[filters]]
kind = "min_turns"
min = 5
"""


def write(tmp_path: Path, matrix: str, base: str = BASE) -> Path:
    (tmp_path / "recipes").mkdir(exist_ok=True)
    (tmp_path / "recipes" / "recipe.toml").write_text(base)
    path = tmp_path / "matrix.toml"
    path.write_text(matrix)
    return path


EVAL = 'eval = "python score.py {dataset} {results}"\n'


def test_explicit_variants_override_nested_keys(tmp_path):
    path = write(
        tmp_path,
        'base = "recipes/recipe.toml"\n'
        + EVAL
        + """
[[variants]]
name = "baseline"
[[variants]]
name = "top1 kimi"
set = { "mix.top_n" = 1, "teacher.model" = "kimi-k2.5", "filters.0.min" = 3, "rollout.attempts" = 2 }
""",
    )
    base, v = expand_matrix(path)
    assert base.name == "baseline" and base.recipe == tomllib.loads(BASE)
    assert v.recipe["mix"] == {"top_n": 1, "sources": ["swe-smith", "superuser"]}  # siblings kept
    assert v.recipe["teacher"]["model"] == "kimi-k2.5"
    assert v.recipe["filters"] == [{"kind": "min_turns", "min": 3}]  # index into an array of tables
    assert v.recipe["rollout"] == {"attempts": 2}  # a new section is created
    assert v.folder == "top1_kimi"
    assert base.recipe["mix"]["top_n"] == 4  # variants do not share the base dict


def test_grid_is_a_product_with_derived_names(tmp_path):
    path = write(
        tmp_path,
        'base = "recipes/recipe.toml"\n'
        + EVAL
        + """
[grid]
"mix.top_n" = [1, 4]
"teacher.model" = ["glm-4.7", "gpt/5"]
"filters.0.enabled" = [true]
""",
    )
    variants = expand_matrix(path)
    assert [v.name for v in variants] == [
        "top_n=1,model=glm-4.7,enabled=true",
        "top_n=1,model=gpt/5,enabled=true",
        "top_n=4,model=glm-4.7,enabled=true",
        "top_n=4,model=gpt/5,enabled=true",
    ]
    assert variants[1].folder == "top_n=1,model=gpt_5,enabled=true"
    assert variants[3].recipe["mix"]["top_n"] == 4 and variants[3].recipe["teacher"]["model"] == "gpt/5"
    assert variants[0].overrides == {"mix.top_n": 1, "teacher.model": "glm-4.7", "filters.0.enabled": True}
    # axes ending in the same word keep their full dotted keys
    path = write(
        tmp_path, 'base = "recipes/recipe.toml"\n' + EVAL + '[grid]\n"mix.model" = ["a"]\n"teacher.model" = ["b"]\n'
    )
    assert [v.name for v in expand_matrix(path)] == ["mix.model=a,teacher.model=b"]


@pytest.mark.parametrize(
    "matrix, key",
    [
        ('eval = "x {results}"\n[grid]\na = [1]\n', "base"),
        ('base = "missing.toml"\neval = "x {results}"\n[grid]\na = [1]\n', "base"),
        ('base = "recipes/recipe.toml"\n[grid]\na = [1]\n', "eval"),
        ('base = "recipes/recipe.toml"\neval = "x {dataset}"\n[grid]\na = [1]\n', "eval"),
        ('base = "recipes/recipe.toml"\neval = "x {results} {model}"\n[grid]\na = [1]\n', "eval"),
        ('base = "recipes/recipe.toml"\neval = "x {results}"\ntimeout = -1\n[grid]\na = [1]\n', "timeout"),
        ('base = "recipes/recipe.toml"\neval = "x {results}"\n[grid]\n"mix.top_n" = []\n', "grid.'mix.top_n'"),
        ('base = "recipes/recipe.toml"\neval = "x {results}"\n', "variants"),
        ('base = "recipes/recipe.toml"\neval = "x {results}"\n[[variants]]\nset = {a = 1}\n', "variants[0].name"),
        (
            'base = "recipes/recipe.toml"\neval = "x {results}"\n[[variants]]\nname = "a"\nsett = {}\n',
            "variants[0].sett",
        ),
        (
            'base = "recipes/recipe.toml"\neval = "x {results}"\n[[variants]]\nname = "a"\n[[variants]]\nname = "a"\n',
            "variant 'a'",
        ),
        (
            'base = "recipes/recipe.toml"\neval = "x {results}"\n[[variants]]\nname = "a"\nset = {"name.x" = 1}\n',
            "variant 'a'",
        ),
        (
            'base = "recipes/recipe.toml"\neval = "x {results}"\n[[variants]]\nname = "a"\nset = {"filters.3.min" = 1}\n',
            "variant 'a'",
        ),
        ('base = "recipes/recipe.toml"\neval = "x {results}"\nvariant = []\n', "variant"),
    ],
)
def test_matrix_errors_name_the_key(tmp_path, matrix, key):
    with pytest.raises(AgentmillError) as e:
        expand_matrix(write(tmp_path, matrix))
    assert f"matrix.toml: {key}:" in str(e.value)


def test_set_dotted_refuses_to_descend_into_a_value():
    recipe = {"mix": {"top_n": 4}}
    with pytest.raises(ValueError, match="'mix.top_n' is a int"):
        set_dotted(recipe, "mix.top_n.x", 1)


# The eval: reads the dataset the stub build wrote, fails for one variant, writes {benchmark: [scores]}.
SCORE_PY = """
import json, pathlib, sys
dataset, variant, out = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
top_n = json.loads((dataset / "recipe.json").read_text())["mix"]["top_n"]
print("scoring", variant)
if top_n == 8:
    sys.exit("boom: top 8 is broken")
json.dump({"swe": [top_n * 10.0, top_n * 10.0 + 2], "tb": [30.0 - top_n]}, open(out, "w"))
"""


def test_run_ablation_with_stub_build_and_eval_script(tmp_path):
    (tmp_path / "score.py").write_text(SCORE_PY)
    path = write(
        tmp_path,
        'base = "recipes/recipe.toml"\n'
        f'eval = "{sys.executable} score.py {{dataset}} {{variant}} {{results}}"\ntimeout = 60\n'
        '[grid]\n"mix.top_n" = [1, 2, 8]\n"teacher.model" = ["glm", "broken"]\n',
    )
    built = []

    def build(name: str, recipe: dict, variant_dir: Path) -> Path:
        built.append(name)
        if recipe["teacher"]["model"] == "broken" and recipe["mix"]["top_n"] == 2:
            raise RuntimeError("teacher unreachable")
        data = variant_dir / "dataset with space"
        data.mkdir(exist_ok=True)
        (data / "recipe.json").write_text(json.dumps(recipe))
        return data

    out = tmp_path / "out"
    messages = []
    results = run_ablation(path, out, build, log=messages.append)
    assert len(built) == 6
    assert set(results) == {"top_n=1,model=glm", "top_n=1,model=broken", "top_n=2,model=glm"}
    assert results["top_n=2,model=glm"] == {"swe": [20.0, 22.0], "tb": [28.0]}
    assert load_results(out / "results.json") == results
    failures = json.loads((out / "failures.json").read_text())
    assert failures["top_n=2,model=broken"] == "build failed: RuntimeError: teacher unreachable"
    assert "exited with status 1" in failures["top_n=8,model=glm"]
    assert "boom: top 8 is broken" in (out / "top_n=8,model=glm" / "eval.log").read_text()
    assert "scoring top_n=1,model=glm" in (out / "top_n=1,model=glm" / "eval.log").read_text()
    assert tomllib.loads((out / "top_n=2,model=glm" / "recipe.toml").read_text())["mix"]["top_n"] == 2
    assert sum("left out" in m for m in messages) == 3
    rows = compute_table(results)
    # swe means 11, 11, 21; tb 29, 29, 28: top_n=2 wins swe by more than it loses tb
    assert rows[0].variant == "top_n=2,model=glm"
    assert rows[0].raw_average == pytest.approx((21 + 28) / 2)


def test_eval_timeout_and_bad_results_are_not_fatal(tmp_path):
    (tmp_path / "slow.py").write_text(
        "import sys, time, json\n"
        "if sys.argv[1] == 'slow': time.sleep(30)\n"
        "json.dump({'b': [1, 'x']} if sys.argv[1] == 'bad' else {'b': [1]}, open(sys.argv[2], 'w'))\n"
    )
    path = write(
        tmp_path,
        'base = "recipes/recipe.toml"\n'
        f'eval = "{sys.executable} slow.py {{variant}} {{results}}"\ntimeout = 2\n'
        '[[variants]]\nname = "slow"\n[[variants]]\nname = "bad"\n[[variants]]\nname = "ok"\n',
    )
    results = run_ablation(path, tmp_path / "out", lambda n, r, d: d, log=lambda m: None)
    assert results == {"ok": {"b": [1]}}
    failures = json.loads((tmp_path / "out" / "failures.json").read_text())
    assert "timed out after 2s" in failures["slow"]
    assert "benchmark 'b': expected a list of numbers" in failures["bad"]


RECIPE = """
[recipe]
name = "shared"
[[sources]]
name = "text"
sample = true
tasks = ["top-word-frequencies"]
[rollout]
agent = "oracle"
[trace_filters]
min_turns = 1
"""


def test_ablate_reuses_the_stage_cache_of_an_earlier_run(tmp_path):
    """`ablate --cache DIR` over the cache of `run --cache DIR`: a variant equal to the run builds nothing new."""
    import subprocess

    (tmp_path / "recipe.toml").write_text(RECIPE)
    (tmp_path / "score.py").write_text("import json, sys\njson.dump({'b': [1.0]}, open(sys.argv[2], 'w'))\n")
    (tmp_path / "matrix.toml").write_text(
        f'base = "recipe.toml"\neval = "{sys.executable} score.py {{dataset}} {{results}}"\n'
        '[[variants]]\nname = "same"\n'
    )
    cache = tmp_path / "cache"
    cli = [sys.executable, "-m", "agentmill.cli"]
    run = subprocess.run(
        [*cli, "run", "recipe.toml", "--out", "run", "--cache", str(cache)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    stages = sorted(p.name for p in cache.iterdir())
    ablate = subprocess.run(
        [*cli, "ablate", "matrix.toml", "--out", "abl", "--cache", str(cache)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert ablate.returncode == 0, ablate.stderr
    assert sorted(p.name for p in cache.iterdir()) == stages  # every stage reused, none built again
    assert not (tmp_path / "abl" / "cache").exists()
    assert json.loads((tmp_path / "abl" / "results.json").read_text())["same"] == {"b": [1.0]}
