"""The Ray executor on a real multi-node Ray cluster started on this machine (a head and worker nodes,
each with its own raylet, object store and agentmill cache): same ledger as the local executor, each
node building its own images, the endpoint and key reaching the workers, and exactly-once records
when a node's raylet is killed mid-run."""

import asyncio
import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import pytest
import ray
from ray.cluster_utils import Cluster

from agentmill.agents import agent_class
from agentmill.errors import AgentmillError
from agentmill.images.layers import remove_tree
from agentmill.models.client import ModelClient
from agentmill.rollout.config import RolloutConfig
from agentmill.rollout.executor import make_executor
from agentmill.rollout.executors.ray import RayExecutor
from agentmill.rollout.executors.task_files import PackedTask, land_task, pack_task
from agentmill.rollout.ledger import Ledger
from agentmill.rollout.runner import run_rollout
from agentmill.runtime.paths import scratch_dir
from agentmill.tasks.dataset import load_dataset, sample_dataset_path, sample_tools_path
from agentmill.tasks.io import load_task
from agentmill.verify.toolkit import ensure_toolkit, toolkit_path
from tests.conftest import sandbox, simple_task
from tests.helpers.chat_server import ChatServer, solving_policy

pytestmark = sandbox
CLI = [sys.executable, "-m", "agentmill.cli"]
MB = 1 << 20
# Lean on 2 shared cores: one CPU per node, no dashboard, small object stores; a dead node is noticed fast.
HEAD = {
    "num_cpus": 1,
    "include_dashboard": False,
    "object_store_memory": 80 * MB,
    "_system_config": {
        "health_check_initial_delay_ms": 500,
        "health_check_period_ms": 500,
        "health_check_failure_threshold": 3,
    },
}
NODE = {"num_cpus": 1, "object_store_memory": 80 * MB}


def node_cache(name: str) -> Path:
    """A node's own agentmill cache (images, landed tasks) that sandbox uids can reach. The offline
    verifier toolkit is linked from the shared cache: building it again per node would only cost time."""
    path = scratch_dir() / "test-cache" / f"ray-{name}-{os.getpid()}"
    path.mkdir(parents=True, exist_ok=True)
    for p in (path, path.parent):
        p.chmod(0o711)
    link = path / "toolkit"
    if not link.exists():
        link.symlink_to(toolkit_path().parent)
    NODE_CACHES.append(path)
    return path


NODE_CACHES: list[Path] = []


@contextmanager
def node_env(cache: Path):
    """Processes a node starts (its raylet, hence its workers) inherit this environment."""
    old = os.environ.get("AGENTMILL_CACHE")
    os.environ["AGENTMILL_CACHE"] = str(cache)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("AGENTMILL_CACHE", None)
        else:
            os.environ["AGENTMILL_CACHE"] = old


@pytest.fixture(scope="module", autouse=True)
def ray_auth_mode():
    """One authentication mode for every Ray process of this module (nodes, drivers, CLI runs): a local
    `ray.init()` would otherwise switch its own process to token mode and write ~/.ray/auth_token,
    which later clusters on the machine would pick up while this module's cluster does not."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAY_AUTH_MODE", "disabled")
        yield


@pytest.fixture(scope="module")
def cluster(request, ray_auth_mode):
    assert ensure_toolkit(build=True) is not None
    caches = {"head": node_cache("head"), "second": node_cache("second")}
    holder = {}

    def teardown():  # always: a failing test must not leave raylets behind
        if ray.is_initialized():
            ray.shutdown()
        if "cluster" in holder:
            holder["cluster"].shutdown()
        for cache in NODE_CACHES:
            remove_tree(cache)

    request.addfinalizer(teardown)
    with node_env(caches["head"]):
        holder["cluster"] = Cluster(initialize_head=True, head_node_args=HEAD)
    with node_env(caches["second"]):
        holder["cluster"].add_node(**NODE)
    holder["cluster"].wait_for_nodes()
    holder["cluster"].caches = caches
    return holder["cluster"]


def sample_tasks(names):
    ds = load_dataset(sample_dataset_path(), names=list(names))
    return ds, sorted(ds.tasks, key=lambda t: t.name)


def oracle_config(ds, tasks, *, attempts=1, concurrency=2) -> RolloutConfig:
    return RolloutConfig(
        dataset=str(ds.root),
        agent="oracle",
        agent_version=agent_class("oracle").version,
        attempts=attempts,
        concurrency=concurrency,
    )


def ledger_rows(run: Path) -> dict[str, tuple]:
    ledger = Ledger(run / "ledger.sqlite")
    try:
        return {r["trial_id"]: (r["task"], r["attempt"], r["state"], r["outcome"], r["reward"]) for r in ledger.rows()}
    finally:
        ledger.close()


def trial_folders(run: Path) -> list[str]:
    return sorted(p.name for p in (run / "trials").iterdir())


FIRST = ["access-log-top-clients", "csv-revenue-by-region", "extract-email-addresses", "json-users-to-csv"]


def test_ray_executor_records_what_the_local_executor_records(cluster, tmp_path):
    ds, tasks = sample_tasks(FIRST)
    config = oracle_config(ds, tasks)
    asyncio.run(run_rollout(config, tasks, tmp_path / "local"))
    executor = RayExecutor(2, address=cluster.address)
    recorded = Counter()
    report = asyncio.run(
        run_rollout(config, tasks, tmp_path / "ray", executor=executor, on_done=lambda r: recorded.update([r.trial_id]))
    )

    local, remote = ledger_rows(tmp_path / "local"), ledger_rows(tmp_path / "ray")
    assert remote == local and len(remote) == len(tasks)
    assert {row[3] for row in remote.values()} == {"passed"}  # the oracle solves every sample task
    assert recorded == Counter({tid: 1 for tid in local}) and report.ran == len(tasks)
    assert trial_folders(tmp_path / "ray") == sorted(local)
    # every node that ran trials ran them from its own landed copy of the task and its own image
    # cache (which nodes get work depends on when each came up: on a loaded machine one may take all)
    nodes = {n["NodeID"]: n for n in ray_nodes(cluster)}
    ran_on = set(executor.ran_on.values())
    assert ran_on and ran_on <= set(nodes) and len(nodes) == 2
    used = {
        name: cache
        for name, cache in cluster.caches.items()
        if (cache / "shipped-tasks").is_dir()
        and any(not p.name.startswith(".") for p in (cache / "shipped-tasks").iterdir())
    }
    assert len(used) == len(ran_on)
    for name, cache in used.items():
        landed = {p.name for p in (cache / "shipped-tasks").iterdir() if not p.name.startswith(".")}
        assert landed <= {t.content_hash for t in tasks}, name
        assert any((cache / "images").glob("*/rootfs")), f"{name} built no image of its own"
    # the trial folders (written by the driver) say where the driver found each task
    for tid, row in remote.items():
        record = json.loads((tmp_path / "ray" / "trials" / tid / "trial.json").read_text())
        assert record["task_path"] == str(sample_dataset_path().resolve() / row[0])


def test_tool_tasks_run_on_ray_as_they_run_locally(cluster, tmp_path):
    ds = load_dataset(sample_tools_path())
    tasks = sorted(ds.tasks, key=lambda t: t.name)[:2]  # one gym each side: every node seeds its own databases
    config = oracle_config(ds, tasks)
    asyncio.run(run_rollout(config, tasks, tmp_path / "local"))
    asyncio.run(run_rollout(config, tasks, tmp_path / "ray", executor=RayExecutor(1, address=cluster.address)))
    local, remote = ledger_rows(tmp_path / "local"), ledger_rows(tmp_path / "ray")
    assert remote == local and {row[3] for row in remote.values()} == {"passed"}


def test_a_task_that_cannot_be_shipped_ends_as_a_typed_failure_and_the_rest_run(cluster, tmp_path):
    simple_task(tmp_path / "ds", "fine")
    simple_task(tmp_path / "ds", "leaky", solve_sh="echo hello > /app/out.txt  # leaky\n")
    (tmp_path / "ds" / "leaky" / "environment" / "hosts").symlink_to("/etc/hosts")  # a link out of the task
    ds = load_dataset(tmp_path / "ds")
    tasks = sorted(ds.tasks, key=lambda t: t.name)
    report = asyncio.run(
        run_rollout(
            oracle_config(ds, tasks, concurrency=1),
            tasks,
            tmp_path / "run",
            executor=RayExecutor(1, address=cluster.address),
            keep_results=True,
        )
    )
    by_task = {r.task: r for r in report.results}
    assert by_task["fine"].outcome.value == "passed"
    assert (
        by_task["leaky"].outcome.value == "sandbox_error"
        and "could not be unpacked on node" in by_task["leaky"].exception
    )
    rows = ledger_rows(tmp_path / "run")
    assert sorted(row[3] for row in rows.values()) == ["passed", "sandbox_error"] and trial_folders(
        tmp_path / "run"
    ) == sorted(rows)


def ray_nodes(cluster):
    ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
    try:
        return [n for n in ray.nodes() if n["Alive"]]
    finally:
        ray.shutdown()


def test_a_node_joining_then_killed_mid_run_reruns_its_trials_and_each_is_recorded_once(cluster, tmp_path):
    for i in range(6):  # each trial takes at least 2 s: the new node joins, and is killed, mid-run
        simple_task(tmp_path / "ds", f"slow{i}", solve_sh=f"sleep 2; echo hello > /app/out.txt  # {i}\n")
    ds = load_dataset(tmp_path / "ds")
    tasks = sorted(ds.tasks, key=lambda t: t.name)
    config = oracle_config(ds, tasks, attempts=2, concurrency=1)
    executor = RayExecutor(1, address=cluster.address, refresh_seconds=0.5)
    holder = {}

    async def join_then_kill():  # a third node joins the running cluster; once it has finished a trial
        await asyncio.sleep(1)  # and has another in flight, its raylet is killed
        with node_env(node_cache("doomed")):  # (Ray starts nodes from the main thread only: here, in the loop)
            holder["doomed"] = doomed = cluster.add_node(**NODE)
        while not (doomed.node_id in executor.ran_on.values() and executor.busy().get(doomed.node_id, 0) > 0):
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)  # mid-trial
        doomed.kill_raylet()

    recorded = Counter()
    run = tmp_path / "run"

    async def go():
        killer = asyncio.create_task(join_then_kill())
        try:
            return await run_rollout(
                config, tasks, run, executor=executor, on_done=lambda r: recorded.update([r.trial_id])
            )
        finally:
            killer.cancel()

    try:
        report = asyncio.run(go())
    finally:
        if "doomed" in holder:
            cluster.remove_node(holder["doomed"], allow_graceful=False)
    doomed = holder["doomed"]
    assert doomed.node_id in executor.ran_on.values(), "the node that joined mid-run got no work"
    assert executor.requeued, "the doomed node was killed with no trial in flight: nothing tested"
    rows = ledger_rows(run)
    assert len(rows) == report.planned == 12
    assert {row[2] for row in rows.values()} == {"done"} and {row[3] for row in rows.values()} == {"passed"}
    assert recorded == Counter({tid: 1 for tid in rows})  # recorded once each, lost ones included
    assert trial_folders(run) == sorted(rows)  # one folder per trial, no half-written leftovers
    for i in executor.requeued:  # what the dead node had in flight finished on a surviving node
        assert executor.ran_on[i] != doomed.node_id


class Crashing:
    """Generic jobs: 'crash' takes its worker process down with it, every time."""

    async def __call__(self, job):
        if job == "crash":
            os._exit(1)
        return job * 2

    def failure(self, job, message):
        return f"failed: {message}"


def test_a_job_that_keeps_killing_its_worker_ends_as_a_failure_and_the_others_finish(cluster):
    executor = RayExecutor(1, address=cluster.address, node_losses=2, refresh_seconds=0.2)
    out = asyncio.run(executor.map(Crashing(), ["a", "b", "crash", "c"]))
    assert out[:2] == ["aa", "bb"] and out[3] == "cc"
    assert out[2].startswith("failed: its Ray node died 2 times while running it")
    assert executor.requeued.count(2) == 1


def test_the_endpoint_and_its_key_reach_the_workers(cluster, tmp_path, monkeypatch):
    simple_task(tmp_path / "ds", "hello")
    task = load_task(tmp_path / "ds" / "hello")
    # set in the driver only: the raylets (and their workers) started before it, so the key must travel
    monkeypatch.setenv("AGENTMILL_RAY_TEST_KEY", "sekrit-key")
    with ChatServer(solving_policy({"hello": "echo hello > /app/out.txt\n"})) as srv:
        seen = []
        handler = srv._httpd.RequestHandlerClass

        class Recording(handler):
            def do_POST(self):
                seen.append(self.headers.get("authorization"))
                super().do_POST()

        srv._httpd.RequestHandlerClass = Recording
        config = RolloutConfig(
            dataset=str(tmp_path / "ds"),
            agent="terminus",
            agent_version=agent_class("terminus").version,
            model="scripted",
            base_url=srv.base_url,
            api_key_env="AGENTMILL_RAY_TEST_KEY",
            concurrency=1,
        )

        async def go():
            client = ModelClient.from_env(base_url=srv.base_url, model="scripted", api_key_env="AGENTMILL_RAY_TEST_KEY")
            try:
                return await run_rollout(
                    config,
                    [task],
                    tmp_path / "run",
                    client=client,
                    executor=RayExecutor(1, address=cluster.address),
                    keep_results=True,
                )
            finally:
                await client.close()

        report = asyncio.run(go())
    assert [r.outcome.value for r in report.results] == ["passed"], report.results[0].exception
    assert seen and set(seen) == {"Bearer sekrit-key"}
    assert report.results[0].tokens["prompt"] > 0  # counted on the node, carried back in the result


def test_rollout_cli_runs_on_a_cluster_by_address(cluster, tmp_path):
    run = tmp_path / "run"
    r = subprocess.run(
        [
            *CLI,
            "rollout",
            "--sample",
            "--task",
            "git-tag-release-branch",
            "--task",
            "ini-to-env-file",
            "--agent",
            "oracle",
            "--executor",
            "ray",
            "--address",
            cluster.address,
            "--out",
            str(run),
            "-c",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert "2 trials run" in r.stderr and "progress: 2/2 trials done" in r.stderr
    assert {row[3] for row in ledger_rows(run).values()} == {"passed"}
    # the executor is not identity: the same command run locally resumes the cluster's run
    r = subprocess.run(
        [
            *CLI,
            "rollout",
            "--sample",
            "--task",
            "git-tag-release-branch",
            "--task",
            "ini-to-env-file",
            "--agent",
            "oracle",
            "--out",
            str(run),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0 and "0 trials run, 2 already done" in r.stderr, r.stderr


def test_ctrl_c_on_the_driver_loses_only_trials_in_flight_and_the_resume_finishes(cluster, tmp_path):
    for i in range(4):
        simple_task(tmp_path / "ds", f"slow{i}", solve_sh=f"sleep 2; echo hello > /app/out.txt  # {i}\n")
    run = tmp_path / "run"
    cmd = [
        *CLI,
        "rollout",
        str(tmp_path / "ds"),
        "--agent",
        "oracle",
        "--executor",
        "ray",
        "--address",
        cluster.address,
        "--out",
        str(run),
        "-c",
        "1",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not any(not p.name.startswith(".") for p in (run / "trials").glob("*")):
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted:" in err and "resume with:" in err
    rows = ledger_rows(run)
    done = {tid for tid, row in rows.items() if row[2] == "done"}
    assert done and len(done) < 4 and set(trial_folders(run)) == done  # folders only for what was recorded
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert f"{4 - len(done)} trials run, {len(done)} already done" in r.stderr
    rows = ledger_rows(run)
    assert len(rows) == 4 and {row[3] for row in rows.values()} == {"passed"} and trial_folders(run) == sorted(rows)


def test_rollout_cli_refuses_bad_executor_options(tmp_path):
    r = subprocess.run(
        [*CLI, "rollout", "--sample", "--agent", "oracle", "--out", str(tmp_path / "a"), "--address", "10.0.0.1:6379"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and "--address: only with --executor ray" in r.stderr
    r = subprocess.run(
        [*CLI, "rollout", "--sample", "--agent", "oracle", "--out", str(tmp_path / "b"), "--executor", "slurm"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and "unknown executor 'slurm' (known: local, processes, ray)" in r.stderr


def test_an_unreachable_cluster_is_one_clear_error_before_anything_starts(tmp_path):
    with pytest.raises(AgentmillError, match="--address 127.0.0.1:1: could not join a Ray cluster: nothing answers"):
        make_executor("ray", concurrency=1, address="127.0.0.1:1")
    # through the CLI: refused before the embedded model would start, with a word on loopback endpoints
    r = subprocess.run(
        [
            *CLI,
            "rollout",
            "--sample",
            "--model",
            "local",
            "--out",
            str(tmp_path / "run"),
            "--executor",
            "ray",
            "--address",
            "127.0.0.1:1",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and "could not join a Ray cluster" in r.stderr
    assert "only Ray nodes on this machine reach it" in r.stderr and "starting the embedded model" not in r.stderr
    assert not (tmp_path / "run").exists()


def test_a_node_with_other_agentmill_code_is_left_out_with_the_reason(cluster):
    executor = RayExecutor(1, address=cluster.address, wait_for_nodes=1, driver_code="0" * 64)  # as if the driver's
    with pytest.raises(AgentmillError) as err:  # checkout differed from every node's
        asyncio.run(executor.map(Crashing(), ["a"]))
    assert "ray: no node to run on for 1s; 1 trial(s) not run" in str(err.value)
    assert str(err.value).count("its agentmill code differs from the driver's (code hash") == 2  # both nodes, named
    assert executor.ran_on == {}


def test_a_cluster_with_no_node_to_run_on_stops_the_run_with_a_message():
    executor = RayExecutor(
        1, address="local", wait_for_nodes=1, init_options={"num_cpus": 0, "object_store_memory": 80 * MB}
    )  # a Ray with no CPU
    with pytest.raises(AgentmillError, match=r"ray: no node to run on for 1s; 2 trial\(s\) not run"):
        asyncio.run(executor.map(Crashing(), ["a", "b"]))
    assert not ray.is_initialized()  # the Ray it started for the run is gone


# -- task folders shipped to nodes --------------------------------------------------------------------------


def test_a_shipped_task_lands_byte_for_byte(tmp_path):
    simple_task(tmp_path / "ds", "hello")
    (tmp_path / "ds" / "hello" / "__pycache__").mkdir()
    (tmp_path / "ds" / "hello" / "__pycache__" / "x.pyc").write_bytes(b"cache")  # not content: left out
    task = load_task(tmp_path / "ds" / "hello")
    landed = land_task(task, pack_task(task), root=tmp_path / "node")
    assert landed.content_hash == task.content_hash and landed.name == "hello"
    assert landed.path == tmp_path / "node" / task.content_hash / "hello"
    assert os.access(landed.path / "solution" / "solve.sh", os.X_OK)
    assert not (landed.path / "__pycache__").exists()
    assert land_task(task, PackedTask("unused", b"not read again"), root=tmp_path / "node").path == landed.path  # once


def test_two_tasks_with_the_same_content_and_other_names_land_side_by_side(tmp_path):
    # the content hash leaves the folder's name out: a node must not take one for the other
    simple_task(tmp_path / "ds", "hello")
    simple_task(tmp_path / "ds", "hello-again")
    first, second = load_task(tmp_path / "ds" / "hello"), load_task(tmp_path / "ds" / "hello-again")
    assert first.content_hash == second.content_hash
    a = land_task(first, pack_task(first), root=tmp_path / "node")
    b = land_task(second, pack_task(second), root=tmp_path / "node")
    assert (a.name, b.name) == ("hello", "hello-again") and a.path != b.path and b.path.is_dir()


def test_a_shipped_task_that_does_not_match_its_hash_is_refused(tmp_path):
    simple_task(tmp_path / "ds", "hello")
    task = load_task(tmp_path / "ds" / "hello")
    buf = io.BytesIO()
    with (
        tarfile.open(fileobj=io.BytesIO(pack_task(task).data), mode="r:gz") as src,
        tarfile.open(fileobj=buf, mode="w:gz") as dst,
    ):
        for info in src.getmembers():
            data = src.extractfile(info).read() if info.isfile() else None
            if info.name.endswith("solve.sh"):
                data = b"#!/bin/bash\necho planted > /app/out.txt\n"
                info.size = len(data)
            dst.addfile(info, io.BytesIO(data) if data is not None else None)
    with pytest.raises(AgentmillError, match="does not match its content hash"):
        land_task(task, PackedTask(pack_task(task).folder_hash, buf.getvalue()), root=tmp_path / "node")
    home = tmp_path / "node" / task.content_hash
    assert not home.exists() or list(home.iterdir()) == []  # nothing half-landed is left to reuse
    # a landed copy edited on the node afterwards is refused too
    landed = land_task(task, pack_task(task), root=tmp_path / "node")
    (landed.path / "tests" / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
    with pytest.raises(AgentmillError, match="does not hash as the driver's"):
        land_task(task, pack_task(task), root=tmp_path / "node")


def test_a_tar_that_escapes_its_folder_is_refused(tmp_path):
    simple_task(tmp_path / "ds", "hello")
    task = load_task(tmp_path / "ds" / "hello")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("hello/../../escaped.txt")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"bad"))
    with pytest.raises(tarfile.FilterError):
        land_task(task, PackedTask(pack_task(task).folder_hash, buf.getvalue()), root=tmp_path / "node")
    assert not (tmp_path / "escaped.txt").exists() and not (tmp_path / "node" / "escaped.txt").exists()


RECIPE = """
[[sources]]
name = "hello"
path = "ds"

[rollout]
agent = "oracle"
concurrency = 1
{where}

[trace_filters]
min_turns = 0

[[exports]]
format = "trl"
file = "trl.jsonl"
"""


def run_recipe(tmp_path, where: str, out: str):
    recipe = tmp_path / f"{out}.toml"
    recipe.write_text(RECIPE.format(where=where))
    return subprocess.run(
        [*CLI, "run", str(recipe), "--out", str(tmp_path / out), "--cache", str(tmp_path / "cache")],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "250"},
    )


def test_a_recipe_runs_its_rollout_on_ray_and_the_executor_is_not_identity(cluster, tmp_path):
    for i in range(3):
        simple_task(tmp_path / "ds", f"t{i}", solve_sh=f"echo hello > /app/out.txt  # {i}\n")
    r = run_recipe(tmp_path, f'executor = "ray"\naddress = "{cluster.address}"', "on-ray")
    assert r.returncode == 0, r.stderr
    assert "rollout: 3 trials (3 run now, 0 reused from earlier runs, 0 already done)" in r.stderr
    rows = ledger_rows((tmp_path / "on-ray" / "rollout").resolve())
    assert len(rows) == 3 and {row[3] for row in rows.values()} == {"passed"}
    # the same recipe run locally reuses every trial: where trials ran is not part of their identity
    r = run_recipe(tmp_path, "", "local")
    assert r.returncode == 0, r.stderr
    assert "3 run now" not in r.stderr and ledger_rows((tmp_path / "local" / "rollout").resolve()) == rows
    r = run_recipe(tmp_path, 'address = "10.0.0.1:6379"', "bad")
    assert r.returncode != 0 and 'address: only with executor = "ray"' in r.stderr, r.stderr


def test_without_ray_installed_the_executor_names_the_extra(monkeypatch):
    from agentmill.rollout import executor as registry

    registry.EXECUTORS.unregister("ray")  # back to its lazy target, imported on the next lookup
    monkeypatch.setitem(sys.modules, "agentmill.rollout.executors.ray", None)  # as if `import ray` failed
    with pytest.raises(ValueError, match=r"executor 'ray' needs the 'ray' extra: pip install 'agentmill\[ray\]'"):
        make_executor("ray", concurrency=1)
