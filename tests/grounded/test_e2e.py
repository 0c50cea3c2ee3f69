"""Grounded synthesis end to end with scripted model roles (each a real local HTTP server) over the
bundled real-file corpus, with the teacher in the real sandbox:
seeds -> workspace with roles -> graph (a planted unrecoverable fact dropped) -> spec (a leaking
statement refused) -> teacher run -> revision (criteria changed, run reused) -> admission (one
admitted, one rejected by a deterministic format check, one by the compiled fact checks (wrong
numbers), one by the judge's score)."""

import asyncio
import json
import re
from contextlib import ExitStack
from pathlib import Path

import pytest

from agentmill.grounded.assemble import Sources
from agentmill.grounded.corpus import build_corpus
from agentmill.grounded.pipeline import GroundSettings, ground_seed
from agentmill.grounded.roles import ROLE_NAMES, Endpoint, Roles
from agentmill.grounded.seeds import candidate_seeds, select_seeds
from agentmill.images import ImageBuilder
from tests.conftest import sandbox, scratch_cache
from tests.grounded import scripted
from tests.helpers.chat_server import ChatServer

pytestmark = sandbox
NODE_IDS = [n["id"] for n in scripted.GRAPH["nodes"]]
ROLE_WORDS = re.compile(r"\b(core|supporting|confuser|ambient)\b", re.IGNORECASE)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return build_corpus(tmp_path_factory.mktemp("corpus") / "corpus", bulk=False)


@pytest.fixture(scope="module")
def seed():
    seeds = select_seeds(candidate_seeds(), 60)
    return next(s for s in seeds if s.pattern == "data analysis and reporting")


def run_ground(tmp_path, corpus, seed, policies, *, attempts):
    with ExitStack() as stack:
        servers = {role: stack.enter_context(ChatServer(policies[role], model=f"scripted-{role}")) for role in policies}
        roles = Roles(
            **{
                r: Endpoint(base_url=servers[r].base_url, model=f"scripted-{r}", max_retries=1)
                for r in ROLE_NAMES
                if r in servers
            }
        )
        store = tmp_path / "store"
        outcome = asyncio.run(
            ground_seed(
                seed,
                Sources({"corpus": corpus}),
                roles,
                store,
                ImageBuilder(cache=scratch_cache(tmp_path)),
                GroundSettings(attempts=attempts, max_turns=6),
            )
        )
    return outcome, store, {r: s.requests for r, s in servers.items()}


def policies(teacher_scripts, reviser_statement=None):
    return {
        "assembler": scripted.assembler_policy(),
        "grapher": _const(scripted.GRAPH),
        "compiler": scripted.compiler_policy(),
        "teacher": scripted.teacher_policy(teacher_scripts),
        "reviser": scripted.reviser_policy(reviser_statement),
        "judge": scripted.judge_policy(),
    }


def _const(obj):
    from tests.helpers.chat_server import Reply

    return lambda _r: Reply(json.dumps(obj))


def test_seed_to_admission_end_to_end(tmp_path, corpus, seed):
    outcome, store, requests = run_ground(
        tmp_path,
        corpus,
        seed,
        policies([scripted.GOOD, scripted.NO_METHOD, scripted.WRONG, scripted.USES_2001]),
        attempts=4,
    )
    assert outcome.stage == "done", outcome.error
    # workspace: real files copied byte for byte, each with its hidden role
    assert outcome.files == {
        scripted.CSV: "core",
        scripted.ABOUT: "supporting",
        scripted.STOCKS: "ambient",
        "weather/seattle-weather-about.md": "ambient",
    }
    work = store / "work" / seed.seed_id
    assert (work / "workspace" / scripted.CSV).read_bytes() == (corpus / scripted.CSV).read_bytes()
    # graph: the planted fact (and its edge) dropped with the reason; the rest kept with roles from the workspace
    graph = json.loads((work / "graph.json").read_text())
    assert (outcome.nodes_kept, outcome.nodes_dropped) == (6, 1)
    assert any(d.get("id") == "fplanted" and "'35991'" in d["reason"] for d in graph["dropped"])
    assert any(d.get("edge") == "fplanted->f2001fossil" for d in graph["dropped"])
    assert {n["id"]: n["role"] for n in graph["nodes"]}["fstock"] == "ambient"
    # the first selection called stock prices a confuser of electricity data: sent back to the assembler
    refused = requests["assembler"][4]["messages"][-1]["content"]
    assert "confuser corpus/markets/stocks.csv shares no subject with the core files" in refused
    # spec: the first draft revealed a node id and a role word; it went back to the compiler
    assert len(requests["compiler"]) == 2
    assert "reveals node id 'f2017renew'" in requests["compiler"][1]["messages"][-1]["content"]
    # revision: only the criteria changed, so the statement hash held and the first run was reused
    assert outcome.revised == ["criteria"] and not outcome.statement_changed
    assert [a.reused for a in outcome.attempts] == [True, False, False, False]
    first_turns = [r for r in requests["teacher"] if not any(m["role"] == "assistant" for m in r["messages"])]
    assert len(first_turns) == 4  # initial run + three more attempts, no rerun after the revision
    # admission: admitted / rejected by a deterministic check / rejected by the judge's score
    gates = [(a.admission.gate, a.admission.admitted) for a in outcome.attempts]
    assert gates == [("admitted", True), ("checks", False), ("checks", False), ("judge", False)]
    assert outcome.attempts[0].admission.quality == 1.0
    assert (
        "memo.md: sections" in outcome.attempts[1].admission.reason and "Method" in outcome.attempts[1].admission.reason
    )
    # wrong numbers in the right format: the fact checks compiled from the graph fail them, no judge asked
    assert "summary.csv: c1:number: 56476 not found" in outcome.attempts[2].admission.reason
    assert outcome.attempts[2].admission.verdict is None
    forbidden = outcome.attempts[3].admission
    assert forbidden.quality < 0.9 and any(v.id == "x1" and v.proven for v in forbidden.verdict.violations)
    # the judge was given the anchors (cited facts) and the deliverables
    assert "[f2017renew]" in requests["judge"][0]["messages"][-1]["content"]
    assert "Total,56476" in requests["judge"][0]["messages"][-1]["content"]
    # the admitted task: a plain Harbor folder with the revised rubric under tests/
    task = Path(outcome.task)
    rubric = json.loads((task / "tests" / "rubric.json").read_text())
    assert "Summary names the unit" in rubric["criteria"][2]["verification"]
    env_files = sorted(
        p.relative_to(task / "environment").as_posix() for p in (task / "environment").rglob("*") if p.is_file()
    )
    assert env_files == ["Dockerfile"] + sorted(f"workspace/{f}" for f in outcome.files)


def test_roles_and_node_ids_never_reach_the_agent(tmp_path, corpus, seed):
    outcome, store, requests = run_ground(tmp_path, corpus, seed, policies([scripted.GOOD]), attempts=1)
    assert outcome.stage == "done", outcome.error
    seen_by_agent = "\n".join(
        m["content"] for r in requests["teacher"] for m in r["messages"] if m["role"] != "assistant"
    )
    for node_id in NODE_IDS:
        assert node_id not in seen_by_agent
    assert not ROLE_WORDS.search(seen_by_agent), ROLE_WORDS.search(seen_by_agent)
    # what the agent's sandbox held: the workspace files only; no tests, no solution, no graph
    listing = next(
        m["content"]
        for r in requests["teacher"]
        for m in r["messages"]
        if "LISTED" in m["content"] and m["role"] == "user"
    )
    files = sorted(set(re.findall(r"^/app/(\S+)$", listing, re.MULTILINE)))
    assert files == sorted(outcome.files)
    assert "/tests" in listing and "No such file" in listing
    instruction = (Path(outcome.task) / "instruction.md").read_text()
    assert not any(n in instruction for n in NODE_IDS) and not ROLE_WORDS.search(instruction)


def test_a_changed_statement_runs_the_teacher_again(tmp_path, corpus, seed):
    new = scripted.SPEC["statement"] + " Keep the memo under one page."
    outcome, store, requests = run_ground(
        tmp_path, corpus, seed, policies([scripted.GOOD, scripted.GOOD], new), attempts=1
    )
    assert outcome.stage == "done", outcome.error
    assert set(outcome.revised) == {"statement", "criteria"} and outcome.statement_changed
    assert [a.reused for a in outcome.attempts] == [False]
    first_turns = [r for r in requests["teacher"] if not any(m["role"] == "assistant" for m in r["messages"])]
    assert len(first_turns) == 2
    assert "under one page" in first_turns[1]["messages"][1]["content"]
    assert "under one page" not in first_turns[0]["messages"][1]["content"]


def test_an_interrupted_seed_resumes_from_its_last_finished_step(tmp_path, corpus, seed):
    """The judge is down on the first run: the seed stops at admission. The second run asks no
    model role again for the steps that finished (workspace, graph, spec, revision, the teacher's
    run): only the judge. Planted (checkpoints never loaded): the assembler is asked again, caught."""
    from tests.helpers.chat_server import Reply

    down = policies([scripted.GOOD])
    down["judge"] = lambda _r: Reply(status=500, error="judge is down")
    first, store, _ = run_ground(tmp_path, corpus, seed, down, attempts=1)
    assert first.error and first.fault == "endpoint:judge" and first.stage == "admission"
    stages: list[str] = []
    with ExitStack() as stack:
        servers = {
            role: stack.enter_context(ChatServer(p, model=f"scripted-{role}"))
            for role, p in policies([scripted.GOOD]).items()
        }
        roles = Roles(
            **{
                r: Endpoint(base_url=servers[r].base_url, model=f"scripted-{r}", max_retries=1)
                for r in ROLE_NAMES
                if r in servers
            }
        )
        again = asyncio.run(
            ground_seed(
                seed,
                Sources({"corpus": corpus}),
                roles,
                store,
                ImageBuilder(cache=scratch_cache(tmp_path)),
                GroundSettings(attempts=1, max_turns=6),
                on_stage=stages.append,
            )
        )
        asked = {r: len(s.requests) for r, s in servers.items()}
    assert again.stage == "done" and again.task, again.error
    assert asked == {"assembler": 0, "grapher": 0, "compiler": 0, "teacher": 0, "reviser": 0, "judge": 1}
    assert stages[:4] == ["assemble (resumed)", "graph (resumed)", "spec (resumed)", "teacher (first run)"]
    assert "revise (resumed)" in stages and stages[-1] == "admission (attempt 1/1: judge)"
