"""Legacy Terminal-Bench tasks (`task.yaml`, `Dockerfile`, `solution.sh`, `run-tests.sh`, `tests/`).

Read into the same Task record as Harbor tasks. Terminal-Bench copies `run-tests.sh` next to the
test files in `/tests` and runs it with TEST_DIR=/tests; the verdict is its exit status, which the
verifier turns into a reward when the script writes none (see verify/test_script.py). A task without
run-tests.sh gets Terminal-Bench's default: pytest over tests/test_outputs.py.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import yaml

from agentmill.errors import TaskError
from agentmill.tasks.hashing import hash_tree
from agentmill.tasks.io import parse_config, read_text
from agentmill.tasks.model import Task

# Terminal-Bench runs this when a task has no run-tests.sh; staged into /tests under the same name.
DEFAULT_RUNNER = Path(str(resources.files("agentmill.tasks") / "terminal_bench_default" / "run-tests.sh"))

# task.yaml keys that map onto Harbor's schema; the rest is kept as metadata.
_KNOWN = {
    "instruction",
    "descriptions",
    "max_agent_timeout_sec",
    "max_test_timeout_sec",
    "author_name",
    "author_email",
    "difficulty",
    "category",
    "tags",
    "parser_name",
    "run_tests_in_same_shell",
    "disable_asciinema",
    "estimated_duration_sec",
    "expert_time_estimate_min",
    "junior_time_estimate_min",
    "test_scripts",
}


def load_terminal_bench(root: Path) -> Task:
    yaml_path = root / "task.yaml"
    try:
        raw = yaml.safe_load(read_text(yaml_path, what="task config"))
    except yaml.YAMLError as e:
        raise TaskError(yaml_path, f"invalid YAML: {str(e).splitlines()[0]}") from None
    if not isinstance(raw, dict):
        raise TaskError(yaml_path, "must be a mapping of keys to values")
    warnings = [f"{yaml_path}: unknown key '{k}' kept as metadata" for k in raw if k not in _KNOWN]

    instruction = raw.get("instruction")
    if instruction is None and isinstance(raw.get("descriptions"), list) and raw["descriptions"]:
        instruction = raw["descriptions"][0].get("description") if isinstance(raw["descriptions"][0], dict) else None
    if not isinstance(instruction, str) or not instruction.strip():
        raise TaskError(yaml_path, "field 'instruction': missing or not a non-empty string")

    metadata = {
        k: v
        for k, v in raw.items()
        if k not in {"instruction", "descriptions", "max_agent_timeout_sec", "max_test_timeout_sec"}
    }
    config_raw = {
        "metadata": metadata,
        "agent": {"timeout_sec": raw.get("max_agent_timeout_sec", 360.0)},
        "verifier": {"timeout_sec": raw.get("max_test_timeout_sec", 60.0), "env": {"TEST_DIR": "/tests"}},
    }
    config, more = parse_config(config_raw, yaml_path)
    warnings += more

    run_tests = root / "run-tests.sh"
    tests_dir = root / "tests"
    if not run_tests.is_file():
        if not (tests_dir / "test_outputs.py").is_file():
            raise TaskError(run_tests, "missing, and no tests/test_outputs.py for Terminal-Bench's default runner")
        run_tests = DEFAULT_RUNNER
        warnings.append(
            f"{root / 'run-tests.sh'}: missing: Terminal-Bench's default runner is used "
            "(pytest over tests/test_outputs.py)"
        )
    solution = root / "solution.sh"
    if not solution.is_file():
        warnings.append(f"{solution}: missing: no oracle solution")
    dockerfile = root / "Dockerfile"
    return Task(
        name=root.name,
        path=root,
        format="terminal-bench",
        instruction=instruction,
        config=config,
        content_hash=hash_tree(root),
        environment_dir=root,
        dockerfile=dockerfile if dockerfile.is_file() else None,
        tests_sources=tuple(p for p in (tests_dir, run_tests) if p.exists()),
        test_script="run-tests.sh",
        solution_sources=(solution,) if solution.is_file() else (),
        solution_script="solution.sh" if solution.is_file() else None,
        warnings=tuple(warnings),
    )
