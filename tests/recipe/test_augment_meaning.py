"""Augmentation keeps the task's meaning: planted bad rewrites (a dropped path, a changed number, a
different task) from a scripted model are rejected with their reason in the funnel; a good one is
kept; the judge's answers are cached."""

import json
import subprocess
import sys

from agentmill.recipe.stages.meaning import Anchor, anchors, lost_anchors, parse_verdict, verifier_text
from agentmill.tasks import sample_dataset_path
from tests.conftest import sandbox
from tests.helpers.chat_server import ChatServer, Reply

AGENTMILL = [sys.executable, "-m", "agentmill.cli"]
JUDGE_QUESTION = "Does the rewritten task ask for exactly what the original asks?"
FRAME = "Ticket from the finance team, filed this morning; they need it before the weekly review:\n\n"


def original(name: str) -> str:
    return (sample_dataset_path() / name / "instruction.md").read_text()


def planted() -> dict[str, str]:
    """Task name -> the scripted model's rewrite of it."""
    return {
        "csv-revenue-by-region": FRAME + original("csv-revenue-by-region"),  # good: everything kept
        "top-word-frequencies": FRAME + original("top-word-frequencies").replace("`/app/top_words.txt`", "a file"),
        "fix-median-calculation": FRAME + original("fix-median-calculation").replace("`2.5`", "`3.5`"),
        "git-revert-bad-commit": FRAME
        + original("git-revert-bad-commit").replace(
            "undo that commit's changes with exactly one new commit on top of `main`",
            "delete that commit from `main` and force-push",
        ),  # every anchor kept; a different task
    }


def test_anchor_check_on_the_planted_rewrites():
    rewrites = planted()
    lost = {
        name: lost_anchors(original(name), text, verifier_text(sample_dataset_path() / name))
        for name, text in rewrites.items()
    }
    assert lost["csv-revenue-by-region"] == [] and lost["git-revert-bad-commit"] == []
    assert Anchor("path", "/app/top_words.txt") in lost["top-word-frequencies"]
    assert Anchor("number", "2.5") in lost["fix-median-calculation"]
    # what the mechanical check looks for, on a small instruction
    found = anchors('Write the 3 largest values as JSON to `/app/out.json`, each as "n=<value>"; read data/in.txt.')
    assert {
        Anchor("number", "3"),
        Anchor("format", "json"),
        Anchor("path", "/app/out.json"),
        Anchor("literal", "n=<value>"),
        Anchor("path", "data/in.txt"),
    } <= set(found)
    # an anchor the tests never mention is not required
    assert lost_anchors("Use 7 workers and write /app/x.txt", "Write /app/x.txt", tests="open('/app/x.txt')") == []


def test_judge_verdicts():
    assert parse_verdict('{"same_task": true, "reason": "same"}') == (True, "same")
    assert parse_verdict('```json\n{"same_task": false, "reason": "asks to delete"}\n```')[0] is False
    assert parse_verdict("No. The rewrite drops the output file.")[0] is False
    assert parse_verdict("I think it is fine")[0] is None  # neither yes nor no: rejected by the stage


def policy(judged: list[dict]):
    rewrites = planted()

    def reply(request):
        text = request["messages"][-1]["content"]
        if JUDGE_QUESTION in text:
            rewrite = text.split("Rewritten task:\n", 1)[1]
            judged.append(
                {"original": text.split("Original task:\n", 1)[1].split("\n\nRewritten task:")[0], "rewrite": rewrite}
            )
            same = "force-push" not in rewrite
            return Reply(
                json.dumps({"same_task": same, "reason": "same outcome" if same else "deletes history instead"})
            )
        if "Rewrite the following task" in text:
            return Reply(next(r for name, r in rewrites.items() if original(name).strip()[:60] in text))
        return Reply("{}")

    return reply


RECIPE = """
[recipe]
name = "meaning"

[model]
name = "scripted"
base_url = "{url}"

[[sources]]
name = "mixed"
sample = true
tasks = ["csv-revenue-by-region", "top-word-frequencies", "fix-median-calculation", "git-revert-bad-commit"]

[augment]
strategies = ["rewrite"]
verify_oracle = {oracle}

[rollout]
agent = "nop"

[trace_filters]
min_turns = 0

[[exports]]
format = "rl"
file = "rl.jsonl"
"""


@sandbox
def test_bad_rewrites_are_rejected_with_reasons_and_good_ones_kept(tmp_path):
    judged: list[dict] = []
    with ChatServer(policy(judged)) as srv:
        recipe = tmp_path / "recipe.toml"
        recipe.write_text(RECIPE.format(url=srv.base_url, oracle="true"))
        r = subprocess.run(
            [*AGENTMILL, "run", str(recipe), "--out", str(tmp_path / "run")],
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert r.returncode == 0, r.stderr
        augment = next(s for s in json.loads((tmp_path / "run" / "funnel.json").read_text()) if s["stage"] == "augment")
        assert (augment["count_in"], augment["count_out"]) == (4, 5)  # 4 originals + the one good rewrite
        reasons = {d["name"]: d["reason"] for d in augment["dropped"]}
        assert (
            "path '/app/top_words.txt'" in reasons["mixed/top-word-frequencies~rewrite0"]
            or "path /app/top_words.txt" in reasons["mixed/top-word-frequencies~rewrite0"]
        )
        assert "the tests check it" in reasons["mixed/top-word-frequencies~rewrite0"]
        assert "number 2.5" in reasons["mixed/fix-median-calculation~rewrite0"]
        assert (
            reasons["mixed/git-revert-bad-commit~rewrite0"]
            == "judge: the rewrite asks for something else (deletes history instead)"
        )
        assert "mixed/csv-revenue-by-region~rewrite0" not in reasons
        tasks = [json.loads(line) for line in (tmp_path / "run" / "tasks.jsonl").read_text().splitlines()]
        kept = [t for t in tasks if t["strategy"] == "rewrite"]
        assert [t["name"] for t in kept] == ["mixed/csv-revenue-by-region~rewrite0"]
        assert kept[0]["instruction"].startswith("Ticket from the finance team")
        # the judge saw both texts, and only rewrites that passed the mechanical check reached it
        assert sorted(j["rewrite"].split("\n")[2][:20] for j in judged) == sorted(
            [original("csv-revenue-by-region")[:20], original("git-revert-bad-commit")[:20]]
        )
        assert all(j["original"].strip() in (original(n).strip() for n in planted()) for j in judged)

        # augment settings change (no oracle check): the stage reruns, every model answer comes from the cache
        requests = len(srv.requests)
        recipe.write_text(RECIPE.format(url=srv.base_url, oracle="false"))
        r = subprocess.run(
            [*AGENTMILL, "run", str(recipe), "--out", str(tmp_path / "run")],
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert r.returncode == 0, r.stderr
        assert "stage augment: running" in r.stderr
        assert len(srv.requests) == requests
