"""The judge: quality arithmetic, the anchored/unanchored views, and the sensitivity check (removing
a cited file drops only the criteria that cite it)."""

import asyncio
import json
import shutil

import pytest

from agentmill.grounded.corpus import build_corpus
from agentmill.grounded.graph import GraphDraft, check_facts
from agentmill.grounded.judge import judge, quality
from agentmill.grounded.records import JudgeVerdict, Spec, Workspace
from agentmill.grounded.seeds import candidate_seeds
from agentmill.grounded.sensitivity import sensitivity
from agentmill.models import ModelClient
from tests.grounded import scripted
from tests.helpers.chat_server import ChatServer


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    root = tmp_path_factory.mktemp("case")
    corpus = build_corpus(root / "corpus", bulk=False)
    ws_dir = root / "ws"
    roles = {scripted.CSV: "core", scripted.ABOUT: "supporting", scripted.STOCKS: "confuser"}
    for rel in roles:
        (ws_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(corpus / rel, ws_dir / rel)
    ws = Workspace(
        seed=candidate_seeds()[0], files=[{"path": p, "source": p, "role": r, "sha256": "x"} for p, r in roles.items()]
    )
    graph = check_facts(ws, ws_dir, GraphDraft.model_validate(scripted.GRAPH))
    out = root / "out"
    out.mkdir()
    (out / "summary.csv").write_text(
        "source,net_generation\nFossil Fuels,29329\nNuclear Energy,5214\nRenewables,21933\nTotal,56476\n"
    )
    (out / "memo.md").write_text("# Summary\n56476 thousand megawatthours; 38.8% renewables.\n# Method\nsums\n")
    return Spec.model_validate(scripted.SPEC), graph, ws_dir, out


def test_quality_is_weighted_satisfaction_minus_proven_penalties():
    spec = Spec.model_validate(scripted.SPEC)  # weights c1=2, c2=1, c3=1; x1 penalty 0.3
    v = JudgeVerdict(
        scores=[{"id": "c1", "score": 1}, {"id": "c2", "score": 0}, {"id": "c3", "score": 0.5}],
        violations=[{"id": "x1", "proven": False}],
    )
    assert quality(spec, v) == pytest.approx((2 + 0 + 0.5) / 4)
    v.violations[0].proven = True
    assert quality(spec, v) == pytest.approx(2.5 / 4 - 0.3)
    v.scores = [s.model_copy(update={"score": 0}) for s in v.scores]
    assert quality(spec, v) == 0.0  # never below zero


def run(fn):
    with ChatServer(scripted.judge_policy()) as srv:

        async def go():
            c = ModelClient(base_url=srv.base_url, model="judge", max_retries=0)
            try:
                return await fn(c)
            finally:
                await c.close()

        return asyncio.run(go()), srv.requests


def test_unanchored_judge_gets_no_anchors_or_verification(case):
    spec, graph, ws_dir, out = case
    _, requests = run(lambda c: judge(spec, graph, ws_dir, out, c, mode="unanchored"))
    text = requests[0]["messages"][-1]["content"]
    assert "f2017renew" not in text and "Sum the three 2017 rows" not in text and "(not provided)" in text
    _, requests = run(lambda c: judge(spec, graph, ws_dir, out, c, mode="anchored"))
    text = requests[0]["messages"][-1]["content"]
    assert (
        "[f2017renew]" in text
        and "Sum the three 2017 rows" in text
        and "=== source file: energy/iowa-electricity.csv" in text
    )


@pytest.mark.parametrize(
    "removed, cited", [(scripted.ABOUT, ["c3"]), (scripted.CSV, ["c1", "c2"]), (scripted.STOCKS, [])]
)
def test_sensitivity_drops_only_the_criteria_citing_the_removed_file(case, removed, cited):
    spec, graph, ws_dir, out = case
    report, requests = run(lambda c: sensitivity(spec, graph, ws_dir, out, c, removed))
    assert report.cited == cited
    assert report.before == {"c1": 1.0, "c2": 1.0, "c3": 1.0}
    assert all(report.after[c] == 0.0 for c in cited)
    assert all(report.after[c] == 1.0 for c in report.others)
    assert report.mean_drop_cited == (1.0 if cited else None) and report.mean_abs_change_others == 0.0
    # the second judge call really did not see the removed file's content
    assert f"=== source file: {removed}" in requests[0]["messages"][-1]["content"] or not cited
    assert f"=== source file: {removed}" not in requests[1]["messages"][-1]["content"]


def test_removing_one_sheet_drops_only_the_criteria_citing_that_sheet(tmp_path):
    import openpyxl

    from agentmill.grounded.corpus import csv_to_xlsx

    corpus = build_corpus(tmp_path / "corpus", bulk=False)
    ws_dir = tmp_path / "ws"
    ws_dir.mkdir()
    # one workbook, two real sheets: Iowa electricity and stock prices
    csv_to_xlsx(corpus / scripted.CSV, ws_dir / "book.xlsx", sheet="electricity")
    wb = openpyxl.load_workbook(ws_dir / "book.xlsx")
    stocks = openpyxl.load_workbook(corpus / "markets" / "stocks.xlsx").active
    sheet = wb.create_sheet("stocks")
    for row in stocks.iter_rows(values_only=True):
        sheet.append(row)
    wb.save(ws_dir / "book.xlsx")
    ws = Workspace(
        seed=candidate_seeds()[0], files=[{"path": "book.xlsx", "source": "-", "role": "core", "sha256": "-"}]
    )
    graph = check_facts(
        ws,
        ws_dir,
        GraphDraft.model_validate(
            {
                "nodes": [
                    {
                        "id": "e",
                        "file": "book.xlsx",
                        "field": "2017 renewables",
                        "value": "21933",
                        "locator": {"kind": "cell", "sheet": "electricity", "cell": "C52"},
                    },
                    {
                        "id": "s",
                        "file": "book.xlsx",
                        "field": "MSFT Jan 2000",
                        "value": "39.81",
                        "locator": {"kind": "cell", "sheet": "stocks", "cell": "C2"},
                    },
                ]
            }
        ),
    )
    assert [n.id for n in graph.nodes] == ["e", "s"]
    spec = Spec.model_validate(
        {
            "statement": "Report two figures.",
            "deliverables": [{"path": "out.md", "format": "md"}],
            "criteria": [
                {
                    "id": "c1",
                    "artifact": "out.md",
                    "requirement": "renewables",
                    "expected": "21933",
                    "weight": 1,
                    "anchors": ["e"],
                    "verification": "equals the cell",
                },
                {
                    "id": "c2",
                    "artifact": "out.md",
                    "requirement": "price",
                    "expected": "39.81",
                    "weight": 1,
                    "anchors": ["s"],
                    "verification": "equals the cell",
                },
            ],
        }
    )
    out = tmp_path / "out"
    out.mkdir()
    (out / "out.md").write_text("Renewables 21933; MSFT 39.81\n")
    report, requests = run(lambda c: sensitivity(spec, graph, ws_dir, out, c, "book.xlsx#electricity"))
    assert (report.cited, report.others) == (["c1"], ["c2"])
    assert (
        report.after == {"c1": 0.0, "c2": 1.0}
        and report.mean_drop_cited == 1.0
        and report.mean_abs_change_others == 0.0
    )
    after = requests[1]["messages"][-1]["content"]
    assert (
        "[e] book.xlsx#electricity: (file removed)" in after
        and "[s] book.xlsx" in after
        and "= 21933" not in after
        and "=== source file: book.xlsx" not in after
    )


def test_a_deliverable_cannot_fill_the_prompt_templates_other_slots():
    from agentmill.grounded.prompts import render

    # attack: worker A's text names the template's slot for worker B's deliverables
    text = render("pairwise", statement="Total the year.", a="A wrote {{b}} and {{statement}}", b="B-TEXT")
    assert (
        text.count("B-TEXT") == 1 and text.count("Total the year.") == 1 and "A wrote {{b}} and {{statement}}" in text
    )
    assert render("pairwise", statement="s", a="plain", b="B-TEXT").count("B-TEXT") == 1  # twin


def test_the_rubric_judges_reply_must_be_the_json_object_alone(tmp_path):
    from agentmill.grounded.ask import ModelReplyError, parse_strict_json
    from agentmill.grounded.judge import judge_view
    from tests.helpers.chat_server import Reply

    verdict = {
        "scores": [{"id": c["id"], "score": 1.0, "reason": "x"} for c in scripted.SPEC["criteria"]],
        "violations": [],
    }
    assert parse_strict_json("```json\n" + json.dumps(verdict) + "\n```") == verdict  # twin
    for reply in ("The memo says " + json.dumps(verdict), json.dumps(verdict) + "\nand " + json.dumps(verdict), "[1]"):
        with pytest.raises(ValueError):
            parse_strict_json(reply)
    spec = Spec.model_validate(scripted.SPEC)

    async def ask(url):
        c = ModelClient(base_url=url, model="judge", max_retries=0)
        try:
            return await judge_view(spec, None, tmp_path, "(deliverables)", c, mode="unanchored")
        finally:
            await c.close()

    with ChatServer(lambda _r: Reply("Here is my verdict: " + json.dumps(verdict))) as srv:
        with pytest.raises(ModelReplyError):  # a judge error (the trial's verifier_error), never a verdict
            asyncio.run(ask(srv.base_url))
    assert len(srv.requests) == 3  # asked again with the error, twice, then given up
    with ChatServer(lambda _r: Reply(json.dumps(verdict))) as srv:
        assert asyncio.run(ask(srv.base_url)).scores[0].score == 1.0


@pytest.mark.parametrize("kind", ["numbers", "rows", "citations"])
def test_fine_grained_corruption_drops_only_the_criteria_citing_the_corrupted_facts(case, kind):
    """The file stays in view; only its cited numbers, rows or citations are wrong. A judge that
    recomputes from the evidence drops the criteria citing them and no other. Planted (corrupt()
    returning the graph and workspace unchanged), the drop is 0, caught."""
    spec, graph, ws_dir, out = case
    with ChatServer(scripted.careful_judge_policy()) as srv:

        async def go():
            c = ModelClient(base_url=srv.base_url, model="judge", max_retries=0)
            try:
                return await sensitivity(spec, graph, ws_dir, out, c, scripted.CSV, kind=kind)
            finally:
                await c.close()

        report = asyncio.run(go())
        after = srv.requests[1]["messages"][-1]["content"]
    assert report.removed == f"{kind}:{scripted.CSV}" and report.cited == ["c1", "c2"] and report.others == ["c3"]
    assert report.before == {"c1": 1.0, "c2": 1.0, "c3": 1.0}
    assert report.mean_drop_cited == 1.0 and report.mean_abs_change_others == 0.0
    assert f"=== source file: {scripted.CSV}" in after  # the file itself is still shown
    if kind == "numbers":
        assert "= 21933" not in after and "= 30707" in after  # the fourth cited number: 21933 x 1.4 + 1
    if kind == "citations":
        assert "'row': 52" in after and "= 21933" not in after
    assert (ws_dir / scripted.CSV).read_text().count("21933") == 1  # the real workspace is untouched


def test_sensitivity_command_reports_each_change(case, tmp_path):
    """`agentmill ground sensitivity` over a written task and a run's deliverables, the judge a
    real HTTP endpoint: removal and each fine-grained corruption drop the criteria citing the CSV."""
    import json

    import tomli_w
    from typer.testing import CliRunner

    from agentmill.cli import app
    from agentmill.grounded.roles import ROLE_NAMES
    from agentmill.grounded.task_folder import write_grounded_task

    spec, graph, ws_dir, out = case
    ws = Workspace(
        seed=candidate_seeds()[0],
        files=[
            {"path": p, "source": p, "role": "core", "sha256": "x"}
            for p in (scripted.CSV, scripted.ABOUT, scripted.STOCKS)
        ],
    )
    task = write_grounded_task(tmp_path / "task", ws, ws_dir, graph, spec)
    with ChatServer(scripted.careful_judge_policy()) as srv:
        endpoint = {"base_url": srv.base_url, "model": "judge", "max_retries": 0}
        (tmp_path / "g.toml").write_text(
            tomli_w.dumps({"roles": {r: endpoint for r in ROLE_NAMES if r not in ("pairwise", "student")}})
        )
        res = CliRunner().invoke(
            app,
            [
                "ground",
                "sensitivity",
                str(tmp_path / "g.toml"),
                "--task",
                str(task),
                "--deliverables",
                str(out),
                "--target",
                scripted.CSV,
                "--json",
                str(tmp_path / "s.json"),
            ],
        )
        assert res.exit_code == 0, res.output
        bad = CliRunner().invoke(
            app,
            [
                "ground",
                "sensitivity",
                str(tmp_path / "g.toml"),
                "--task",
                str(task),
                "--deliverables",
                str(out),
                "--target",
                "nothing.csv",
            ],
        )
    reports = json.loads((tmp_path / "s.json").read_text())
    assert [r["removed"] for r in reports] == [scripted.CSV] + [
        f"{k}:{scripted.CSV}" for k in ("numbers", "rows", "citations")
    ]
    assert all(r["mean_drop_cited"] == 1.0 and r["mean_abs_change_others"] == 0.0 for r in reports)
    assert res.output.count("1.000") == 4  # the printed table: one row per change
    assert bad.exit_code == 2 and "cite no fact" in bad.output


def test_an_unusual_but_valid_judge_reply_is_taken_and_an_invalid_one_is_not(case):
    """A judge that adds an overall score and a summary, writes null reasons and gives a score as
    text is answered once; a reply scoring an unknown criterion or out of [0, 1] still goes back."""
    import json

    spec, graph, ws_dir, out = case
    talkative = {
        "overall": 0.93,
        "summary": "fine",
        "scores": [
            {"id": "c1", "score": "1", "reason": None, "confidence": "high"},
            {"id": "c2", "score": 1.0, "reason": None},
            {"id": "c3", "score": 0.5},
        ],
        "violations": [{"id": "x1", "proven": False, "evidence": None}],
    }
    bad = {"scores": [{"id": "c1", "score": 1.5}, {"id": "c2", "score": 1}, {"id": "c3", "score": 1}]}
    from tests.helpers.chat_server import Reply, queue

    with ChatServer(queue(Reply(json.dumps(talkative)))) as srv:

        async def go():
            c = ModelClient(base_url=srv.base_url, model="judge", max_retries=0)
            try:
                return await judge(spec, graph, ws_dir, out, c)
            finally:
                await c.close()

        verdict = asyncio.run(go())
        assert len(srv.requests) == 1
    assert {s.id: s.score for s in verdict.scores} == {"c1": 1.0, "c2": 1.0, "c3": 0.5} and verdict.scores[
        0
    ].reason == ""
    with ChatServer(queue(Reply(json.dumps(bad)), Reply(json.dumps(talkative)))) as srv:
        asyncio.run(go())
        assert len(srv.requests) == 2 and "less than or equal to 1" in srv.requests[1]["messages"][-1]["content"]
