"""Model endpoints fail loudly and nothing sticks, through the CLI against real HTTP servers.

A dead endpoint (a port nobody listens on) stops `rollout`, `run`, `synth run` and `ground run`
within seconds, with exit code 2 and one line naming the role, the URL and the cause, before
anything is written; the same command, unchanged, completes once a server listens on that port.
An outage during the work is never a final result: the same command redoes what it spoiled.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import pytest
import tomli_w

from tests.conftest import sandbox, simple_task
from tests.helpers.chat_server import ChatServer, Reply, solving_policy

CLI = [sys.executable, "-m", "agentmill.cli"]
HELLO = solving_policy({"hello": "echo hello > /app/out.txt\n"})


def agentmill(*args, env=None, timeout=300):
    return subprocess.run(
        [*CLI, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "250", **(env or {})},
    )


_HELD: dict[int, socket.socket] = {}


def free_ports(n: int) -> list[int]:
    """Ports nobody listens on: bound and held, never listening, so a connection is refused and no
    parallel test can take the port before `serve` listens on it (a released port was taken once)."""
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
        _HELD[s.getsockname()[1]] = s
    return [s.getsockname()[1] for s in socks]


def serve(policy, port: int) -> ChatServer:
    """A chat server listening on a port `free_ports` held."""
    return ChatServer(policy, sock=_HELD.pop(port))


def url(port: int) -> str:
    return f"http://127.0.0.1:{port}/v1"


class At:
    """Where a server will listen (for config files written before it starts)."""

    def __init__(self, port: int):
        self.base_url = url(port)


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def assert_dead_endpoint(r, seconds: float, dead: str, role: str):
    """Exit 2 within seconds, one error line naming the role, the URL and the cause."""
    assert r.returncode == 2, r.stderr
    assert seconds < 30, f"took {seconds:.1f}s"
    lines = error_lines(r.stderr)
    assert len(lines) == 1, r.stderr
    assert role in lines[0] and dead in lines[0] and "cannot connect" in lines[0], lines[0]


def timed(*args, **kw):
    started = time.monotonic()
    r = agentmill(*args, **kw)
    return r, time.monotonic() - started


class Switch:
    """A policy that answers 401 (a key revoked mid-run) until switched on."""

    def __init__(self, policy):
        self.policy, self.up = policy, False

    def __call__(self, request):
        return self.policy(request) if self.up else Reply(status=401, error="invalid api key")


# -- rollout ------------------------------------------------------------------------------------------


def test_rollout_on_a_dead_endpoint_stops_at_once_then_the_same_command_completes(tmp_path):
    for i in range(2):
        simple_task(tmp_path / "ds", f"t{i}", solve_sh=f"echo hello > /app/out.txt  # {i}\n")
    (port,) = free_ports(1)
    run = tmp_path / "run"
    cmd = ["rollout", tmp_path / "ds", "--agent", "terminus", "--model", "m", "--base-url", url(port), "--out", run]
    r, seconds = timed(*cmd)
    assert_dead_endpoint(r, seconds, url(port), "terminus agent's model")
    assert not run.exists()  # nothing written that a later run must undo
    with serve(HELLO, port) as server:
        r = agentmill(*cmd)
    assert r.returncode == 0, r.stderr
    assert "2 trials run, 0 already done" in r.stderr
    assert len(server.probes) == 1 and server.probes[0]["max_tokens"] == 1  # one cheap request, then the work
    assert len(server.requests) >= 2


def test_eval_on_a_dead_endpoint_stops_at_once(tmp_path):
    simple_task(tmp_path / "ds", "t0")
    (port,) = free_ports(1)
    r, seconds = timed(
        "eval", tmp_path / "ds", "--out", tmp_path / "eval", "--label", "ckpt", "--model", "m", "--base-url", url(port)
    )
    assert_dead_endpoint(r, seconds, url(port), "terminus agent's model")
    assert not (tmp_path / "eval").exists()


def test_no_preflight_skips_the_probe(tmp_path):
    simple_task(tmp_path / "ds", "t0")
    with ChatServer(HELLO) as server:
        r = agentmill(
            "rollout",
            tmp_path / "ds",
            "--agent",
            "terminus",
            "--model",
            "m",
            "--base-url",
            server.base_url,
            "--out",
            tmp_path / "run",
            "--no-preflight",
        )
    assert r.returncode == 0, r.stderr
    assert server.probes == [] and server.requests


def test_an_unset_key_names_the_flag_of_the_command(tmp_path):
    simple_task(tmp_path / "ds", "t0")
    r = agentmill(
        "rollout",
        tmp_path / "ds",
        "--agent",
        "terminus",
        "--model",
        "m",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--api-key-env",
        "AGENTMILL_TEST_UNSET_KEY",
        "--out",
        tmp_path / "run",
    )
    assert r.returncode == 2
    assert "--api-key-env: environment variable AGENTMILL_TEST_UNSET_KEY is not set" in r.stderr
    assert not (tmp_path / "run").exists()


def test_synth_and_ground_name_the_config_field_of_an_unset_key(tmp_path):
    config = _synth_config(tmp_path, {role: At(9) for role in _synth_policies()})
    config.write_text(
        config.read_text().replace(
            'model = "scripted-judge"', 'model = "scripted-judge"\napi_key_env = "AGENTMILL_TEST_UNSET_KEY"'
        )
    )
    r = agentmill("synth", "run", config, "--out", tmp_path / "out")
    assert r.returncode == 2
    assert (
        f"[roles.judge] api_key_env in {config}: environment variable AGENTMILL_TEST_UNSET_KEY is not set" in r.stderr
    )
    assert "--api-key-env" not in r.stderr and not (tmp_path / "out").exists()
    ground = tmp_path / "ground.toml"
    roles = {r: {"base_url": "http://127.0.0.1:9/v1", "model": "m"} for r in _ground_policies()}
    roles["teacher"]["api_key_env"] = "AGENTMILL_TEST_UNSET_KEY"
    ground.write_text(tomli_w.dumps({"seeds": 1, "roles": roles}))
    r = agentmill("ground", "run", ground, "--out", tmp_path / "store")
    assert r.returncode == 2
    assert (
        f"[roles.teacher] api_key_env in {ground}: environment variable AGENTMILL_TEST_UNSET_KEY is not set" in r.stderr
    )
    assert "--api-key-env" not in r.stderr and not (tmp_path / "store").exists()


def test_a_resumed_rollout_with_one_task_added_runs_only_the_new_trials(tmp_path):
    data = tmp_path / "ds"
    for i in range(2):
        simple_task(data, f"t{i}", solve_sh=f"echo hello > /app/out.txt  # {i}\n")
    run = tmp_path / "run"
    cmd = ["rollout", data, "--agent", "oracle", "--attempts", "2", "--out", run]
    assert agentmill(*cmd).returncode == 0
    simple_task(data, "t2", solve_sh="echo hello > /app/out.txt  # 2\n")
    r = agentmill(*cmd)
    assert r.returncode == 0, r.stderr
    assert "2 trials run, 4 already done" in r.stderr
    trials = [json.loads((p / "trial.json").read_text())["task"] for p in (run / "trials").iterdir()]
    assert sorted(trials) == ["t0", "t0", "t1", "t1", "t2", "t2"]
    # an edited task is still refused, even though the run grew
    (data / "t0" / "instruction.md").write_text("Write hello into /app/out.txt, now.")
    r = agentmill(*cmd)
    assert r.returncode == 2 and "tasks: 1 edited since the run began (t0)" in r.stderr


# -- run (a recipe) -------------------------------------------------------------------------------

RECIPE = """
[recipe]
name = "outage"
seed = 1

[model]
name = "scripted"
base_url = "{url}"
temperature = 0.0

[[sources]]
name = "hello"
path = "ds"

[rollout]
agent = "terminus"
max_turns = 4

[trace_filters]
min_turns = 1

[[exports]]
format = "trl"
file = "trl.jsonl"
"""


def _recipe(tmp_path: Path, base_url: str) -> Path:
    simple_task(tmp_path / "ds", "t0")
    path = tmp_path / "recipe.toml"
    path.write_text(RECIPE.format(url=base_url))
    return path


def test_run_on_a_dead_endpoint_stops_at_once_then_the_same_command_completes(tmp_path):
    (port,) = free_ports(1)
    recipe = _recipe(tmp_path, url(port))
    cmd = ["run", recipe, "--out", tmp_path / "run"]
    r, seconds = timed(*cmd)
    assert_dead_endpoint(r, seconds, url(port), "stage rollout")
    assert not (tmp_path / "run").exists()
    with serve(HELLO, port):
        r = agentmill(*cmd)
    assert r.returncode == 0, r.stderr
    assert len((tmp_path / "run" / "exports" / "trl.jsonl").read_text().splitlines()) == 1


def test_a_rollout_stage_with_endpoint_failures_is_not_cached_and_the_same_run_retries_them(tmp_path):
    switch = Switch(HELLO)
    with ChatServer(switch) as server:
        recipe = _recipe(tmp_path, server.base_url)
        cmd = ["run", recipe, "--out", tmp_path / "run"]
        r = agentmill(*cmd)
        assert r.returncode == 3, r.stderr
        assert "rollout: 1 of 1 trials ended in endpoint failures" in r.stderr and "HTTP 401" in r.stderr
        assert "drop fewer outcomes" not in r.stderr  # never advice to keep outages in the data
        switch.up = True
        r = agentmill(*cmd)  # the same command, unchanged
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in (tmp_path / "run" / "exports" / "trl.jsonl").read_text().splitlines()]
    assert len(rows) == 1
    s = json.loads(agentmill("status", tmp_path / "run", "--json").stdout)
    assert s["outcomes"] == {"passed": 1}


# -- synth run ------------------------------------------------------------------------------------


def _synth_config(tmp_path: Path, servers: dict, **synth) -> Path:
    from tests.synth.scripted import card_line, config_text

    cards = tmp_path / "cards.jsonl"
    cards.write_text(card_line("good") + "\n")
    text = config_text(servers, cards, outage_pause_s=0.05, outage_retries=1, max_slots=1, **synth)
    path = tmp_path / "synth.toml"
    path.write_text(text.replace("[ballot]", "[ballot]\nenabled = false").replace("max_retries = 1", "max_retries = 0"))
    return path


def _synth_policies():
    from tests.synth.scripted import Generator, critic, judge

    return {"generator": Generator(), "critic": critic, "judge": judge}


@sandbox
def test_synth_run_on_a_dead_endpoint_stops_at_once_then_the_same_command_completes(tmp_path):
    policies = _synth_policies()
    ports = dict(zip(policies, free_ports(len(policies))))
    config = _synth_config(tmp_path, {role: At(p) for role, p in ports.items()})
    cmd = ["synth", "run", config, "--out", tmp_path / "out", "--no-report"]
    r, seconds = timed(*cmd)
    assert r.returncode == 2 and seconds < 30, r.stderr
    (line,) = error_lines(r.stderr)
    for role, port in ports.items():  # every dead role is named, with its URL
        assert f"{role} endpoint {url(port)}" in line
    assert not (tmp_path / "out").exists()
    with ExitStack() as stack:
        for role, policy in policies.items():
            stack.enter_context(serve(policy, ports[role]))
        r = agentmill(*cmd)
    assert r.returncode == 0, r.stderr
    assert "accepted 1 target samples" in r.stderr


def test_synth_run_stops_where_a_json_role_gets_no_json(tmp_path):
    """The critic's endpoint answers, but not in JSON (JSON mode ignored): every critique would fail
    to parse mid-run. Preflight names the role, the URL and the cause; exit 2; nothing written."""
    with ExitStack() as stack:
        servers = {role: stack.enter_context(ChatServer(p)) for role, p in _synth_policies().items()}
        servers["critic"].probe_reply = Reply(content="Looks fine to me.")
        config = _synth_config(tmp_path, servers)
        r, seconds = timed("synth", "run", config, "--out", tmp_path / "out", "--no-report")
        assert all(s.requests == [] for s in servers.values())  # preflight only: no work was asked for
        assert servers["generator"].probes[0]["response_format"]["type"] == "json_schema"
    assert r.returncode == 2 and seconds < 30, r.stderr
    (line,) = error_lines(r.stderr)
    assert f"critic endpoint {servers['critic'].base_url}" in line and "asked for a JSON object" in line, line
    assert "Looks fine to me." in line and "generator" not in line and "judge" not in line
    assert not (tmp_path / "out").exists()


@sandbox
def test_synth_boxes_an_outage_ended_give_their_slot_back_to_the_same_command(tmp_path):
    from tests.synth.scripted import Generator

    policies = _synth_policies()
    switch = Switch(Generator())
    policies["generator"] = switch
    with ExitStack() as stack:
        servers = {role: stack.enter_context(ChatServer(p)) for role, p in policies.items()}
        cmd = ["synth", "run", _synth_config(tmp_path, servers), "--out", tmp_path / "out", "--no-report"]
        r = agentmill(*cmd)
        assert r.returncode == 3, r.stderr
        assert f"{servers['generator'].base_url}: 1 failed; most common: HTTP 401" in r.stderr
        switch.up = True
        r = agentmill(*cmd)  # max_slots = 1 still: the interrupted box gave its slot back
    assert r.returncode == 0, r.stderr
    assert "accepted 1 target samples" in r.stderr


# -- ground run -----------------------------------------------------------------------------------


def _ground_policies():
    from tests.grounded import scripted
    from tests.grounded.test_e2e import _const

    return {
        "assembler": scripted.assembler_policy(),
        "grapher": _const(scripted.GRAPH),
        "compiler": scripted.compiler_policy(leak_first=False),
        "teacher": scripted.teacher_policy([scripted.GOOD]),
        "reviser": scripted.reviser_policy(),
        "judge": scripted.judge_policy(),
    }


def _ground_config(tmp_path: Path, urls: dict[str, str]) -> Path:
    from agentmill.grounded.corpus import build_corpus

    corpus = build_corpus(tmp_path / "corpus")
    config = {
        "seeds": 1,
        "patterns": ["data analysis and reporting"],
        "corpus_dir": str(corpus),
        "settings": {"attempts": 1, "max_turns": 6},
        "roles": {r: {"base_url": u, "model": f"m-{r}", "max_retries": 0} for r, u in urls.items()},
    }
    path = tmp_path / "ground.toml"
    path.write_text(tomli_w.dumps(config))
    return path


@sandbox
def test_ground_run_on_a_dead_endpoint_stops_at_once_then_the_same_command_completes(tmp_path):
    from tests.conftest import scratch_cache

    env = {"AGENTMILL_CACHE": str(scratch_cache(tmp_path))}
    policies = _ground_policies()
    ports = dict(zip(policies, free_ports(len(policies))))
    config = _ground_config(tmp_path, {r: url(p) for r, p in ports.items()})
    cmd = ["ground", "run", config, "--out", tmp_path / "store"]
    r, seconds = timed(*cmd, env=env)
    assert r.returncode == 2 and seconds < 30, r.stderr
    (line,) = error_lines(r.stderr)
    assert f"teacher endpoint {url(ports['teacher'])}" in line and "cannot connect" in line
    assert not (tmp_path / "store").exists()
    with ExitStack() as stack:
        for role, policy in policies.items():
            stack.enter_context(serve(policy, ports[role]))
        r = agentmill(*cmd, env=env)
    assert r.returncode == 0, r.stderr
    assert "1 of 1 seeds admitted" in r.stdout


def test_ground_run_stops_where_a_json_role_gets_no_json_and_not_for_its_agent_roles(tmp_path):
    with ExitStack() as stack:
        servers = {role: stack.enter_context(ChatServer(p)) for role, p in _ground_policies().items()}
        for role in ("judge", "teacher"):  # the teacher plays tasks (terminus): it is not asked for JSON
            servers[role].probe_reply = Reply(content="I think it passes.")
        config = _ground_config(tmp_path, {r: s.base_url for r, s in servers.items()})
        r = agentmill("ground", "run", config, "--out", tmp_path / "store")
        assert "response_format" not in servers["teacher"].probes[0]
    assert r.returncode == 2, r.stdout + r.stderr
    (line,) = error_lines(r.stderr)
    assert f"judge endpoint {servers['judge'].base_url}" in line and "asked for a JSON object" in line, line
    assert "teacher" not in line and not (tmp_path / "store").exists()


@sandbox
def test_ground_seeds_an_endpoint_failed_are_retried_by_the_same_command(tmp_path):
    from tests.conftest import scratch_cache

    env = {"AGENTMILL_CACHE": str(scratch_cache(tmp_path))}
    policies = _ground_policies()
    switch = Switch(policies["teacher"])
    policies["teacher"] = switch
    with ExitStack() as stack:
        servers = {r: stack.enter_context(ChatServer(p)) for r, p in policies.items()}
        cmd = [
            "ground",
            "run",
            _ground_config(tmp_path, {r: s.base_url for r, s in servers.items()}),
            "--out",
            tmp_path / "store",
        ]
        r = agentmill(*cmd, env=env)
        assert r.returncode == 3, r.stdout + r.stderr
        assert "0 of 1 seeds admitted" in r.stdout and "HTTP 401" in r.stderr
        assert not list((tmp_path / "store" / "results").glob("*.json"))  # not a finished seed
        for role, policy in _ground_policies().items():  # the scripts start over (the assembler's is a sequence)
            if role != "teacher":
                servers[role].policy = policy
        switch.up = True
        r = agentmill(*cmd, env=env)
    assert r.returncode == 0, r.stderr
    assert "1 of 1 seeds admitted" in r.stdout, r.stderr


# -- SIGTERM --------------------------------------------------------------------------------------


def _wait_for(predicate, timeout=120.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def _sigint_ignored() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a batch script's `agentmill ... &` starts


@pytest.mark.parametrize("background", [False, True], ids=["foreground", "background-of-a-script"])
def test_sigterm_ends_a_rollout_as_ctrl_c_does(tmp_path, background):
    # the background case: SIGINT inherited ignored, so raising SIGINT alone was lost (planted: the
    # SIGTERM handler raising SIGINT only; the rollout ran to the end and exited 0)
    data = tmp_path / "ds"
    for i in range(4):
        simple_task(data, f"slow{i}", solve_sh=f"sleep 2; echo hello > /app/out.txt  # {i}\n")
    run = tmp_path / "run"
    proc = subprocess.Popen(
        [*CLI, "rollout", str(data), "--agent", "oracle", "--out", str(run), "-c", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_sigint_ignored if background else None,
    )
    try:
        assert _wait_for(
            lambda: (run / "trials").is_dir() and any(p.name[0] != "." for p in (run / "trials").iterdir())
        )
        assert f"running (pid {proc.pid})" in agentmill("status", run).stdout  # a live run, not "unfinished"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 143, err
    assert "terminated (SIGTERM): " in err and "of 4 trials finished" in err
    assert f"resume with: agentmill rollout {data} --agent oracle --out {run} -c 1" in err
    s = json.loads(agentmill("status", run, "--json").stdout)
    assert s["live_pid"] is None and s["done"] < 4  # the lock file stays; its process is gone
    r = agentmill("rollout", data, "--agent", "oracle", "--out", run, "-c", "1")
    assert r.returncode == 0, r.stderr
    assert json.loads(agentmill("status", run, "--json").stdout)["outcomes"] == {"passed": 4}


def test_sigterm_ends_a_recipe_run_as_ctrl_c_does(tmp_path):
    for i in range(4):
        simple_task(tmp_path / "ds", f"slow{i}", solve_sh=f"sleep 2; echo hello > /app/out.txt  # {i}\n")
    recipe = tmp_path / "recipe.toml"
    recipe.write_text(
        '[recipe]\nname = "term"\nseed = 1\n\n[[sources]]\nname = "slow"\npath = "ds"\n\n'
        '[rollout]\nagent = "oracle"\nconcurrency = 1\n\n[trace_filters]\nmin_turns = 0\n\n'
        '[[exports]]\nformat = "trl"\nfile = "trl.jsonl"\n'
    )
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [*CLI, "run", str(recipe), "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert _wait_for(lambda: any(p.name[0] != "." for p in out.glob("stages/rollout/*/run/trials/*")))
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 143, err
    assert "terminated (SIGTERM): finished stages stay cached" in err and "resume with: agentmill run" in err
    r = agentmill("run", recipe, "--out", out)
    assert r.returncode == 0, r.stderr
    assert len((out / "exports" / "trl.jsonl").read_text().splitlines()) == 4


class Slow:
    """A policy that answers after `seconds` while `slow` is set (a long request in flight)."""

    def __init__(self, policy, seconds: float):
        self.policy, self.seconds, self.slow = policy, seconds, True

    def __call__(self, request):
        if self.slow:
            time.sleep(self.seconds)
        return self.policy(request)


def _terminate_when(proc, ready) -> str:
    try:
        assert _wait_for(ready), "the command never got going"
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    return err


@sandbox
def test_sigterm_ends_a_synth_run_as_ctrl_c_does(tmp_path):
    policies = _synth_policies()
    slow = Slow(policies["generator"], 5.0)
    policies["generator"] = slow
    with ExitStack() as stack:
        servers = {role: stack.enter_context(ChatServer(p)) for role, p in policies.items()}
        cmd = ["synth", "run", _synth_config(tmp_path, servers), "--out", tmp_path / "out", "--no-report"]
        proc = subprocess.Popen([*CLI, *map(str, cmd)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        err = _terminate_when(proc, lambda: len(servers["generator"].requests) >= 1)
        assert proc.returncode == 143, err
        assert "terminated (SIGTERM)" in err and "run the same command again to resume" in err
        slow.slow = False
        r = agentmill(*cmd)  # the box in flight gave its slot back
    assert r.returncode == 0, r.stderr
    assert "accepted 1 target samples" in r.stderr


@sandbox
def test_sigterm_ends_a_ground_run_as_ctrl_c_does(tmp_path):
    from tests.conftest import scratch_cache

    env = {"AGENTMILL_CACHE": str(scratch_cache(tmp_path))}
    policies = _ground_policies()
    slow = Slow(policies["grapher"], 5.0)
    policies["grapher"] = slow
    with ExitStack() as stack:
        servers = {r: stack.enter_context(ChatServer(p)) for r, p in policies.items()}
        cmd = [
            "ground",
            "run",
            _ground_config(tmp_path, {r: s.base_url for r, s in servers.items()}),
            "--out",
            tmp_path / "store",
        ]
        proc = subprocess.Popen(
            [*CLI, *map(str, cmd)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **env}
        )
        err = _terminate_when(proc, lambda: len(servers["grapher"].requests) >= 1)
        assert proc.returncode == 143, err
        assert "terminated (SIGTERM): 0 seeds finished and kept" in err and "resume with: agentmill ground run" in err
        for role, policy in _ground_policies().items():
            servers[role].policy = policy
        r = agentmill(*cmd, env=env)
    assert r.returncode == 0, r.stderr
    assert "1 of 1 seeds admitted" in r.stdout, r.stderr


# -- the trial store ---------------------------------------------------------------------------------


def test_a_new_out_beside_an_earlier_one_does_not_pay_the_model_again(tmp_path):
    for i in range(2):
        simple_task(tmp_path / "ds", f"t{i}", solve_sh=f"echo hello > /app/out.txt  # {i}\n")
    with ChatServer(HELLO) as server:

        def rollout(out, *extra):
            return agentmill(
                "rollout",
                tmp_path / "ds",
                "--agent",
                "terminus",
                "--model",
                "m",
                "--base-url",
                server.base_url,
                "--temperature",
                "0",
                "--out",
                tmp_path / "runs" / out,
                *extra,
            )

        assert rollout("a").returncode == 0
        paid = len(server.requests)
        r = rollout("b")
        assert r.returncode == 0, r.stderr
        assert "0 trials run, 0 already done, 0 recovered, 2 reused from earlier runs" in r.stderr
        assert len(server.requests) == paid  # nothing asked again
        s = json.loads(agentmill("status", tmp_path / "runs" / "b", "--json").stdout)
        assert s["outcomes"] == {"passed": 2} and (tmp_path / "runs" / ".trial-store").is_dir()
        r = agentmill(
            "rollout",
            tmp_path / "ds",
            "--agent",
            "terminus",
            "--model",
            "m",
            "--base-url",
            server.base_url,
            "--temperature",
            "0.5",
            "--out",
            tmp_path / "runs" / "c",
        )  # other sampling: other trials, paid for
        assert "2 trials run" in r.stderr and len(server.requests) > paid
        paid = len(server.requests)
        r = rollout("d", "--no-store")
        assert "2 trials run" in r.stderr and len(server.requests) > paid
