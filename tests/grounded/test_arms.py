"""Selection arms end to end: k student rollouts in the sandbox per admitted task, both judges over
each (real HTTP endpoints), one pick per arm, each arm exportable."""

import asyncio
import json
import shutil
from contextlib import ExitStack

import pytest

from agentmill.grounded.arms import run_arms
from agentmill.grounded.corpus import build_corpus
from agentmill.grounded.graph import GraphDraft, check_facts
from agentmill.grounded.records import Spec, Workspace
from agentmill.grounded.roles import Endpoint, Roles
from agentmill.grounded.seeds import candidate_seeds
from agentmill.grounded.task_folder import write_grounded_task
from agentmill.images import ImageBuilder
from tests.conftest import sandbox, scratch_cache
from tests.grounded import scripted
from tests.helpers.chat_server import ChatServer

pytestmark = sandbox


def test_anchored_unanchored_and_random_arms(tmp_path):
    corpus = build_corpus(tmp_path / "corpus", bulk=False)
    ws_dir = tmp_path / "ws"
    roles_of = {scripted.CSV: "core", scripted.ABOUT: "supporting", scripted.STOCKS: "confuser"}
    for rel in roles_of:
        (ws_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(corpus / rel, ws_dir / rel)
    ws = Workspace(
        seed=candidate_seeds()[0],
        files=[{"path": p, "source": p, "role": r, "sha256": "-"} for p, r in roles_of.items()],
    )
    graph = check_facts(ws, ws_dir, GraphDraft.model_validate(scripted.GRAPH))
    store = tmp_path / "store"
    write_grounded_task(store / "tasks" / "iowa", ws, ws_dir, graph, Spec.model_validate(scripted.SPEC))
    with ExitStack() as stack:
        student = stack.enter_context(
            ChatServer(scripted.teacher_policy([scripted.USES_2001, scripted.GOOD, scripted.NO_METHOD]))
        )
        judge = stack.enter_context(ChatServer(scripted.judge_policy()))
        ep = lambda s: Endpoint(base_url=s.base_url, model="m", max_retries=0)  # noqa: E731
        roles = Roles(
            assembler=ep(judge),
            grapher=ep(judge),
            compiler=ep(judge),
            reviser=ep(judge),
            teacher=ep(judge),
            student=ep(student),
            judge=ep(judge),
        )
        summary = asyncio.run(
            run_arms(store, roles, k=3, max_turns=6, builder=ImageBuilder(cache=scratch_cache(tmp_path)))
        )
    pool = summary["pool"]["iowa"]
    # wrong numbers no longer reach a judge (the compiled fact checks fail them); the forbidden 2001
    # figure is what only the anchored judge (shown the cited facts) can prove
    assert [(c["anchored"], c["unanchored"]) for c in pool] == [(pytest.approx(0.7), 1.0), (1.0, 1.0), (0.0, 0.0)]
    arms = summary["arms"]
    assert arms["anchored"]["iowa"].endswith("s-a1")  # the correct deliverables
    assert arms["unanchored"]["iowa"].endswith("s-a0")  # the rubric text alone cannot tell the forbidden figure
    assert set(arms["random"]) == {"iowa"}
    for arm in ("anchored", "unanchored", "random"):
        trials = list((store / "arms" / arm / "trials").iterdir())
        assert len(trials) == 1 and (trials[0] / "trajectory.json").exists()
    saved = json.loads((store / "arms" / "arms.json").read_text())
    assert saved["k"] == 3 and saved["queries_by_pattern"] == {candidate_seeds()[0].pattern: 1}
    # the unanchored judge never saw anchors or verification instructions
    unanchored = [r for r in judge.requests if "(not provided)" in r["messages"][-1]["content"]]
    assert len(unanchored) == 2 and all("f2017renew" not in r["messages"][-1]["content"] for r in unanchored)
