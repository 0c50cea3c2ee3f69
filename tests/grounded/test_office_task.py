"""A grounded task on office files, run for real in the sandbox: the scripted teacher reads the
core .xlsx with openpyxl and writes an .xlsx whose total is a formula and a .docx memo; with the
right numbers every check passes and the rubric judge (a scripted judge on a real local server)
passes it; with a wrong year the compiled fact checks fail it with no judge configured at all (the
format checks alone would pass both). Without a judge the right numbers are `unjudged`, never
`passed` (grounded/verifier.py), so "passes" needs the judge.

The image is the task's own office environment (grounded/environment.py): built from Debian's
packages with AGENTMILL_IMAGES=debian (tests/grounded/test_office_debian.py); here, as in the rest
of the suite, the host builder stands in with the same Debian packages installed by
scripts/setup.sh."""

import asyncio
import json
import os

import pytest

from agentmill.agents.terminus import TerminusAgent
from agentmill.grounded.corpus import build_corpus
from agentmill.grounded.teacher import run_teacher
from agentmill.images import ImageBuilder
from agentmill.models import ModelClient
from agentmill.verify.fence import unfence
from tests.conftest import sandbox, scratch_cache
from tests.grounded import office, scripted
from tests.helpers.chat_server import ChatServer, Reply, terminus_json

pytestmark = sandbox


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return build_corpus(tmp_path_factory.mktemp("corpus") / "corpus", bulk=False)


def teach(script: str):
    def policy(request):
        turns = sum(1 for m in request["messages"] if m["role"] == "assistant")
        if turns == 0:
            return Reply(terminus_json([(f"bash <<'AGENTMILL_EOF'\n{script}AGENTMILL_EOF\necho WROTE $?\n", 15)]))
        screens = [m["content"] for m in request["messages"] if m["role"] == "user"][1:]
        if not any("WROTE" in s for s in screens):  # a loaded machine: wait for the script as a teacher would
            return Reply(terminus_json([("", 20)]))
        return Reply(terminus_json([], complete=True))

    return policy


def run(task, builder, script, folder):
    async def go(url):
        c = ModelClient(base_url=url, model="teacher", max_retries=0)
        try:
            return await run_teacher(task, TerminusAgent(c, max_turns=6), builder, folder)
        finally:
            await c.close()

    with ChatServer(teach(script)) as srv:
        return asyncio.run(go(srv.base_url)), srv.requests


def checks(result) -> dict[str, bool]:
    return {
        ln[5:].split(": ", 2)[0] + ": " + ln[5:].split(": ", 2)[1]: ln.startswith("PASS")
        for ln in result.verifier_stdout.splitlines()
        if ln[:5] in ("PASS ", "FAIL ")
    }


def test_teacher_on_office_files_passes_and_a_wrong_number_fails_without_a_judge(tmp_path, corpus, monkeypatch):
    for var in ("AGENTMILL_JUDGE_MODEL", "AGENTMILL_JUDGE_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    task = office.office_task(tmp_path, corpus)
    dockerfile = (task / "environment" / "Dockerfile").read_text()
    assert "python3-openpyxl" in dockerfile and "python3-docx" in dockerfile and "poppler-utils" in dockerfile
    facts = {f["id"]: f for d in json.loads((task / "tests" / "checks.json").read_text()) for f in d["facts"]}
    assert (
        facts["total:number"]["basis"] == "sum of anchors"
        and facts["share:number"]["basis"] == "share of the anchors' total"
    )
    assert (
        facts["unit:text"]["value"] == "thousand megawatthours"
        and facts["cite:cite:iowa-electricity.xlsx"]["kind"] == "cite"
    )
    builder = ImageBuilder(cache=scratch_cache(tmp_path))

    with scripted.judge_configured(monkeypatch) as judge:
        good, requests = run(task, builder, office.RIGHT, tmp_path / "runs" / "right-a0")
    screen = "\n".join(m["content"] for r in requests for m in r["messages"] if m["role"] == "user")
    assert "WROTE 0" in screen, screen[-2000:]
    assert good.result.reward == 1.0 and good.result.outcome.value == "passed", good.result.verifier_stdout
    assert "rubric: quality 1.000" in good.result.verifier_stdout
    # the judge read the office files as text rendered in the sandbox: the formula's value, the memo's prose
    [asked] = judge.requests
    shown = unfence(asked["messages"][-1]["content"])[1]
    assert "56476" in shown["summary.xlsx"] and "38.8%" in shown["memo.docx"]
    passed = checks(good.result)
    assert all(passed.values()) and {
        "summary.xlsx: total:number",
        "memo.docx: share:number",
        "memo.docx: unit:text",
        "memo.docx: cite:cite:iowa-electricity.xlsx",
        "summary.xlsx: formulas",
    } <= set(passed)
    # what the teacher left: a real workbook whose total is a formula (no cached value: openpyxl wrote it)
    import openpyxl

    book = openpyxl.load_workbook(good.deliverables / "summary.xlsx")
    assert book["Summary"]["B5"].value == "=SUM(B2:B4)"

    assert "AGENTMILL_JUDGE_MODEL" not in os.environ  # no judge from here on: the fact checks alone fail it
    bad, _ = run(task, builder, office.WRONG, tmp_path / "runs" / "wrong-a0")
    assert bad.result.reward == 0.0 and bad.result.outcome.value == "failed"
    failed = {k for k, ok in checks(bad.result).items() if not ok}
    assert failed == {"summary.xlsx: total:number", "memo.docx: share:number"}, bad.result.verifier_stdout
