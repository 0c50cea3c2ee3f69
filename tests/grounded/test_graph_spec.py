"""Fact checks at every locator kind, the spec validator's gates, the assembler's retrieval gate,
contamination checks and the recipe-source loader."""

import asyncio
import json
import shutil

import pytest

from agentmill.errors import AgentmillError
from agentmill.grounded.ask import ModelReplyError
from agentmill.grounded.assemble import Sources, assemble
from agentmill.grounded.contamination import check as contamination
from agentmill.grounded.corpus import build_corpus
from agentmill.grounded.graph import GraphDraft, check_facts
from agentmill.grounded.locate import extract, same_value
from agentmill.grounded.records import Locator, Spec, Workspace
from agentmill.grounded.seeds import candidate_seeds
from agentmill.grounded.source import load_grounded_tasks
from agentmill.grounded.spec import instruction, leaks, validate
from agentmill.grounded.task_folder import write_grounded_task
from agentmill.models import ModelClient
from agentmill.tasks import load_task, write_task
from tests.grounded import scripted
from tests.helpers.chat_server import ChatServer, Reply


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return build_corpus(tmp_path_factory.mktemp("c") / "corpus", bulk=False)


def test_every_locator_kind_is_checked_against_the_file(corpus, tmp_path):
    book = corpus / "energy" / "iowa-electricity.xlsx"
    assert extract(book, Locator(kind="cell", sheet="iowa-electricity", cell="C2")) == "35361"
    assert extract(book, Locator(kind="row_field", row=17, field="net_generation")) == "29329"
    assert extract(book, Locator(kind="cell", sheet="nope", cell="C2")) is None
    about = corpus / "energy" / "iowa-electricity-about.docx"
    assert extract(about, Locator(kind="span", text="thousand  megawatthours")) is not None  # whitespace-insensitive
    assert extract(about, Locator(kind="span", text="million megawatthours")) is None
    pdf = corpus / "weather" / "seattle-weather-about.pdf"  # read with pypdf
    assert extract(pdf, Locator(kind="span", text="recorded daily in Seattle from 2012 to 2015")) is not None
    assert extract(pdf, Locator(kind="span", text="recorded daily in Seattle from 2012 to 2016")) is None
    (tmp_path / "x.json").write_text(json.dumps({"a": [{"b": 7}]}))
    assert extract(tmp_path / "x.json", Locator(kind="json_path", path="a.0.b")) == "7"
    assert same_value("35361", "35,361.0") and not same_value("35361", "35362") and not same_value(None, "1")


def workspace(corpus, tmp_path):
    ws_dir = tmp_path / "ws"
    roles = {scripted.CSV: "core", scripted.ABOUT: "supporting", scripted.STOCKS: "confuser"}
    for rel in roles:
        (ws_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(corpus / rel, ws_dir / rel)
    ws = Workspace(
        seed=candidate_seeds()[0], files=[{"path": p, "source": p, "role": r, "sha256": "x"} for p, r in roles.items()]
    )
    return ws, ws_dir


def test_spec_gates_catch_leaks_and_dangling_anchors(corpus, tmp_path):
    ws, ws_dir = workspace(corpus, tmp_path)
    graph = check_facts(ws, ws_dir, GraphDraft.model_validate(scripted.GRAPH))
    spec = Spec.model_validate(scripted.SPEC)
    validate(spec, graph)
    assert leaks(spec, graph) == []
    for planted, expect in [
        ("See f2017fossil first.", "node id 'f2017fossil'"),
        ("Ignore the confuser tables.", "role word 'confuser'"),
        ("Use the core file.", "role word 'core file'"),
    ]:
        with pytest.raises(ValueError, match=expect):
            validate(spec.model_copy(update={"statement": spec.statement + " " + planted}), graph)
    dangling = json.loads(json.dumps(scripted.SPEC))
    dangling["criteria"][0]["anchors"] = ["fplanted"]  # dropped by the fact check: not a node
    with pytest.raises(ValueError, match="not graph nodes"):
        validate(Spec.model_validate(dangling), graph)
    escaping = json.loads(json.dumps(scripted.SPEC))
    escaping["deliverables"][0]["path"] = "../etc/x.csv"
    with pytest.raises(ValueError, match="plain relative name"):
        validate(Spec.model_validate(escaping), graph)
    assert "/app/output/memo.md (md; sections: Summary, Method)" in instruction(spec)


def test_the_assembler_may_only_pick_files_its_searches_returned(corpus, tmp_path):
    hallucinated = json.dumps({"action": "select", "files": [{"path": "corpus/energy/secret.xlsx", "role": "core"}]})
    with ChatServer(lambda r: Reply(hallucinated)) as srv:

        async def go():
            c = ModelClient(base_url=srv.base_url, model="a", max_retries=0)
            try:
                await assemble(candidate_seeds()[0], Sources({"corpus": corpus}), c, tmp_path / "w")
            finally:
                await c.close()

        with pytest.raises(ModelReplyError, match="not returned: corpus/energy/secret.xlsx"):
            asyncio.run(go())
    assert "could not be used" in srv.requests[1]["messages"][-1]["content"]
    assert not (tmp_path / "w" / "workspace").exists()


def test_contamination_by_identical_file_and_shared_ngrams(corpus, tmp_path):
    ws, ws_dir = workspace(corpus, tmp_path)
    graph = check_facts(ws, ws_dir, GraphDraft.model_validate(scripted.GRAPH))
    task = write_grounded_task(
        tmp_path / "store" / "tasks" / "t1", ws, ws_dir, graph, Spec.model_validate(scripted.SPEC)
    )
    clean = tmp_path / "bench-clean"
    write_task(
        clean / "b1", instruction="Sort the numbers in /app/in.txt and write them to /app/out.txt.", test_sh="true\n"
    )
    assert contamination([task], [str(clean)]) == {}
    dirty = tmp_path / "bench-dirty"
    write_task(
        dirty / "b2",
        instruction="Plot it.",
        test_sh="true\n",
        environment_files={"data.csv": (corpus / scripted.CSV).read_bytes()},
    )
    assert "identical" in contamination([task], [str(dirty)])[str(task)]
    about = (corpus / scripted.ABOUT).read_text()
    words = about.split()
    text_bench = tmp_path / "bench-text"
    write_task(text_bench / "b3", instruction=" ".join(words[5:25]), test_sh="true\n")
    assert "13-word n-gram" in contamination([task], [str(text_bench)])[str(task)]
    # the grounded task is a plain Harbor task; the source loader finds it
    assert load_task(task).config.metadata["source"] == "grounded"
    assert load_grounded_tasks(tmp_path / "store") == [task]
    with pytest.raises(AgentmillError, match="not a ground store"):
        load_grounded_tasks(tmp_path / "nowhere")


def test_user_folders_are_searched_and_a_broken_file_is_reported_not_fatal(corpus, tmp_path):
    mine = tmp_path / "mine"
    (mine / "q3").mkdir(parents=True)
    shutil.copyfile(corpus / "labor" / "us-employment.xlsx", mine / "q3" / "employment.xlsx")
    (mine / "q3" / "broken.xlsx").write_bytes(b"not a zip")
    (mine / "notes.bin").write_bytes(b"\0\1")  # not a readable format: ignored
    sources = Sources({"mine": mine, "corpus": corpus})
    assert (
        len(sources.skipped["mine"]) == 1
        and "broken.xlsx" in sources.skipped["mine"][0]
        and sources.counts["mine"] == 1
    )
    hits = sources.search_reply("nonfarm manufacturing employment")
    assert "mine/q3/employment.xlsx" in [h["path"] for h in hits]
    assert sources.resolve("mine/q3/employment.xlsx") == mine / "q3" / "employment.xlsx"
    assert sources.resolve("mine/../etc/passwd") is None and sources.resolve("other/x") is None
