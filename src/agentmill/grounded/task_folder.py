"""Write a grounded task as a plain Harbor task folder (no new task kind):

instruction.md            the statement and the deliverables (all the agent reads)
task.toml                 [metadata] source = "grounded", seed, pattern, sector, statement hash
environment/Dockerfile    the office-capable image (grounded/environment.py), COPY workspace/ /app/
environment/workspace/    the real files (no roles, no graph)
tests/test.sh             runs the deterministic artifact checks, writes reward.json
tests/check_artifacts.py  agentmill.grounded.artifacts (standard library only)
tests/checks.json         the deliverables and their checks, with the fact checks compiled from
                          the spec and the evidence graph (grounded/factchecks.py)
tests/rubric.json         criteria, negatives, verification instructions
tests/anchors.json        the evidence graph (nodes with roles, edges) and the file roles
solution/                 added on admission: the best admitted run's deliverables (pipeline.py)
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from agentmill.grounded import artifacts
from agentmill.grounded.environment import EnvironmentConfig, dockerfile_text
from agentmill.grounded.factchecks import compile_checks
from agentmill.grounded.records import Graph, Spec, Workspace
from agentmill.grounded.spec import instruction, statement_hash
from agentmill.tasks import TaskConfig, write_task

TEST_SH = """#!/bin/bash
# Deterministic artifact checks over /app/output, and the deliverables as text for the rubric judge,
# which runs on the host after this script (grounded/verifier.py, when a judge is configured).
mkdir -p /logs/verifier
python3 -I /tests/check_artifacts.py /tests/checks.json /app/output /logs/verifier/reward.json /logs/verifier/judge_input.json
"""


def write_grounded_task(
    dest: Path,
    ws: Workspace,
    ws_dir: Path,
    graph: Graph,
    spec: Spec,
    *,
    agent_timeout: float = 1800.0,
    judge_threshold: float = 0.90,
    environment: EnvironmentConfig | None = None,
) -> Path:
    dest = Path(dest)
    dockerfile = dockerfile_text(environment)
    shutil.rmtree(dest, ignore_errors=True)
    env_files: dict[str, str | bytes] = {"Dockerfile": dockerfile}
    for f in ws.files:
        env_files[f"workspace/{f.path}"] = (ws_dir / f.path).read_bytes()
    seed = ws.seed
    config = TaskConfig.model_validate(
        {
            "metadata": {
                "source": "grounded",
                "seed_id": seed.seed_id,
                "occupation": seed.occupation,
                "sector": seed.sector,
                "task_type": seed.task_type,
                "pattern": seed.pattern,
                "file_family": seed.file_family,
                "statement_hash": statement_hash(spec),
                "onet_task_id": seed.evidence.task_id,
                "judge_threshold": judge_threshold,
            },
            "agent": {"timeout_sec": agent_timeout},
            "verifier": {"timeout_sec": 120},
        }
    )
    rubric = {
        "criteria": [c.model_dump() for c in spec.criteria],
        "negatives": [n.model_dump() for n in spec.negatives],
    }
    anchors = {
        "nodes": [n.model_dump() for n in graph.nodes],
        "edges": [e.model_dump() for e in graph.edges],
        "roles": {f.path: f.role for f in ws.files},
    }
    return write_task(
        dest,
        instruction=instruction(spec),
        config=config,
        test_sh=TEST_SH,
        dockerfile=dockerfile,
        environment_files=env_files,
        test_files={
            "check_artifacts.py": Path(artifacts.__file__).read_text(encoding="utf-8"),
            "checks.json": json.dumps(checks_json(spec, graph, [f.path for f in ws.files]), indent=1),
            "rubric.json": json.dumps(rubric, indent=1),
            "anchors.json": json.dumps(anchors, indent=1),
            "spec.json": spec.model_dump_json(indent=1),
            "seed.json": seed.model_dump_json(indent=1),
        },
    )


def checks_json(spec: Spec, graph: Graph, files: list[str]) -> list[dict]:
    """Each deliverable's format checks and, under `facts`, the values it must show."""
    facts = compile_checks(spec, graph, files)
    return [{**d.model_dump(), "facts": facts[d.path]} for d in spec.deliverables]


def read_spec(task_dir: Path) -> Spec:
    return Spec.model_validate_json((Path(task_dir) / "tests" / "spec.json").read_text())


def read_graph(task_dir: Path) -> Graph:
    data = json.loads((Path(task_dir) / "tests" / "anchors.json").read_text())
    return Graph(nodes=data["nodes"], edges=data["edges"])
