"""The teacher's run in the sandbox: deliverables are collected even when the agent times out, links
are not followed out of /app/output, and a finished run is reused without asking the model."""

import asyncio
import shutil

from agentmill.agents.terminus import TerminusAgent
from agentmill.grounded.admission import checks_passed
from agentmill.grounded.corpus import build_corpus
from agentmill.grounded.graph import GraphDraft, check_facts
from agentmill.grounded.records import Spec, Workspace
from agentmill.grounded.seeds import candidate_seeds
from agentmill.grounded.task_folder import write_grounded_task
from agentmill.grounded.teacher import run_teacher
from agentmill.images import ImageBuilder
from agentmill.models import ModelClient
from agentmill.verify import Outcome
from tests.conftest import sandbox, scratch_cache
from tests.grounded import scripted
from tests.helpers.chat_server import ChatServer, Reply, terminus_json

pytestmark = sandbox


def test_timeout_still_collects_and_links_are_not_followed(tmp_path):
    corpus = build_corpus(tmp_path / "corpus", bulk=False)
    ws_dir = tmp_path / "ws"
    (ws_dir / scripted.CSV).parent.mkdir(parents=True)
    shutil.copyfile(corpus / scripted.CSV, ws_dir / scripted.CSV)
    shutil.copytree(corpus / "energy", ws_dir / "energy", dirs_exist_ok=True)
    ws = Workspace(
        seed=candidate_seeds()[0],
        files=[
            {"path": scripted.CSV, "source": "c", "role": "core", "sha256": "-"},
            {"path": scripted.ABOUT, "source": "c", "role": "supporting", "sha256": "-"},
        ],
    )
    graph = check_facts(ws, ws_dir, GraphDraft.model_validate({**scripted.GRAPH, "nodes": scripted.GRAPH["nodes"][:5]}))
    task = write_grounded_task(
        tmp_path / "task", ws, ws_dir, graph, Spec.model_validate(scripted.SPEC), agent_timeout=6
    )
    script = scripted.GOOD + "ln -s /etc/passwd /app/output/passwd.txt\nln -s /app /app/output/app\n"

    def policy(request):
        turns = sum(1 for m in request["messages"] if m["role"] == "assistant")
        if turns == 0:
            return Reply(terminus_json([(f"bash <<'AGENTMILL_EOF'\n{script}AGENTMILL_EOF\n", 0.8)]))
        return Reply(terminus_json([("sleep 50\n", 50)]))  # never finishes: the agent times out

    async def go(url, folder):
        c = ModelClient(base_url=url, model="t", max_retries=0)
        try:
            return await run_teacher(
                task, TerminusAgent(c, max_turns=5), ImageBuilder(cache=scratch_cache(tmp_path)), folder
            )
        finally:
            await c.close()

    with ChatServer(policy) as srv:
        run = asyncio.run(go(srv.base_url, tmp_path / "runs" / "x-a0"))
        asked = len(srv.requests)
        again = asyncio.run(go(srv.base_url, tmp_path / "runs" / "x-a0"))
    # verified anyway: the checks passed, and the rubric waits for a judge (admission's), so no reward yet
    assert run.result.outcome is Outcome.AGENT_TIMEOUT and run.result.reward is None and checks_passed(run.result)
    assert sorted(p.name for p in run.deliverables.iterdir()) == ["memo.md", "summary.csv"]  # no links
    assert "Total,56476" in (run.deliverables / "summary.csv").read_text()
    assert again.reused and len(srv.requests) == asked and again.result.outcome is Outcome.AGENT_TIMEOUT
