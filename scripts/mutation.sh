#!/usr/bin/env bash
# Mutation testing of the trust-critical core (docs/testing.md): mutmut plants one-line defects in a
# module, one at a time, and runs that module's own fast tests against each; a mutant the tests
# do not fail on ("survived") is a behaviour no test protects.
#
# Each module runs in a work folder of its own (a copy of src/ and tests/, and a pyproject.toml
# holding only that module's [tool.mutmut] settings), so runs never touch the worktree and
# modules can run one at a time on a small machine.
#
# Usage: scripts/mutation.sh [MODULE ...]     (default: every module below, smallest first)
#        MUTATION_WORK=/var/tmp/m scripts/mutation.sh traces/redact.py
#        MUTATION_CHILDREN=2 ...              (parallel mutants; default 1)
#        MUTATION_TESTS="tests/a.py tests/b.py" ...  (another test selection than the module's own)
#        MUTATION_NAMES=file ...              (only the mutants named in the file, one per line: a
#                                              rerun of one run's survivors with more tests)
#        MUTATION_SAMPLE=60 ...               (a uniform sample of each module's mutants, seeded by
#                                              MUTATION_SEED, default 0: an estimate of the score where
#                                              a full run takes hours)
#        PYTHON=/other/venv/bin/python ...    (an environment with the dev extra; mutmut beside it)
# Afterwards: cd $MUTATION_WORK/<module> && mutmut results / mutmut show <mutant>
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-$ROOT/.venv/bin/python}
MUTMUT=${MUTMUT:-$(dirname "$PY")/mutmut}
WORK=${MUTATION_WORK:-/var/tmp/agentmill-mutation}
CHILDREN=${MUTATION_CHILDREN:-1}
SAMPLE=${MUTATION_SAMPLE:-}
SEED=${MUTATION_SEED:-0}

# module (under src/agentmill) -> its fast tests (space-separated pytest selections)
declare -A TESTS=(
  [rollout/identity.py]="tests/rollout/test_identity.py tests/rollout/test_seams.py"
  [rollout/lock.py]="tests/rollout/test_lock.py"
  [rollout/ledger.py]="tests/rollout/test_ledger.py"
  [traces/redact.py]="tests/traces/test_redact.py tests/traces/test_redact_fast.py"
  [traces/filters.py]="tests/traces/test_filters.py tests/traces/test_min_turns_default.py"
  [traces/render.py]="tests/traces/test_export.py -k render"
  [verify/outcome.py]="tests/verify/test_reward.py"
  [verify/reward_files.py]="tests/verify/test_reward_files.py"
  [verify/tamper.py]="tests/verify/test_tamper.py tests/verify/test_reward_files.py"
  [verify/isolation.py]="tests/verify/test_isolation.py tests/verify/test_reward_hacks.py"
  [verify/hardening.py]="tests/verify/test_hardening_rules.py tests/verify/test_hardening.py"
  [verify/test_script.py]="tests/verify/test_test_script.py tests/verify/test_trials.py tests/verify/test_reward_files.py tests/verify/test_agent_damage.py tests/verify/test_reward_hacks.py::test_attack_fails_with_evidence_and_honest_twin_passes[background-rewriter]"
  [verify/start_blame.py]="tests/verify/test_agent_damage.py"
  [verify/mutation.py]="tests/verify/test_audit_records.py tests/tools/test_mutation_audit.py tests/tools/test_check_tools.py tests/verify/test_judges.py::test_check_says_a_refusal_task_needs_a_judge_and_checks_it_whole_with_one"
  [verify/sql_state.py]="tests/verify/test_sql_state.py tests/verify/test_judges.py tests/tools/test_verify.py tests/tools/test_tool_reward_hacks.py"
  [sandbox/bwrap.py]="tests/sandbox/test_bwrap_parts.py tests/sandbox/test_lifecycle.py tests/sandbox/test_escape.py tests/sandbox/test_root_times.py tests/sandbox/test_conformance.py tests/sandbox/test_command.py tests/images/test_overlay.py"
  # the rest of verify/
  [verify/call_log.py]="tests/verify/test_call_log.py tests/tools/test_tool_reward_hacks.py"
  [verify/staging.py]="tests/verify/test_staging.py"
  [verify/state_diff.py]="tests/tools/test_tool_reward_hacks.py"
  [verify/judged.py]="tests/verify/test_judged.py tests/test_registry.py"
  [verify/fence.py]="tests/verify/test_fence.py tests/verify/test_judges.py"
  [verify/judge.py]="tests/verify/test_judge.py tests/verify/test_judges.py"
  [verify/test_deps.py]="tests/verify/test_test_deps.py"
  [verify/test_deps_scan.py]="tests/verify/test_test_deps_scan.py tests/verify/test_test_deps.py"
  [verify/tool_lints.py]="tests/tools/test_check_tools.py"
  [verify/toolkit.py]="tests/verify/test_toolkit_build.py tests/verify/test_toolkit.py"
)
# smallest first: a run of the small ones fits in minutes, the sandbox-backed ones take hours on 2 cores
ORDER=(rollout/identity.py verify/outcome.py rollout/lock.py verify/tamper.py verify/reward_files.py
       rollout/ledger.py traces/filters.py traces/render.py traces/redact.py verify/start_blame.py
       verify/isolation.py verify/mutation.py verify/test_script.py verify/sql_state.py verify/hardening.py
       sandbox/bwrap.py verify/call_log.py verify/staging.py verify/state_diff.py verify/judged.py
       verify/fence.py verify/judge.py verify/test_deps.py verify/test_deps_scan.py verify/tool_lints.py
       verify/toolkit.py)

modules=("$@")
[ ${#modules[@]} -gt 0 ] || modules=("${ORDER[@]}")

toml_list() { local out="" x; for x in "$@"; do out+="${out:+, }\"$x\""; done; echo "[$out]"; }

for module in "${modules[@]}"; do
  [ -n "${TESTS[$module]:-}" ] || { echo "unknown module $module (known: ${ORDER[*]})" >&2; exit 2; }
  dir="$WORK/${module//\//_}"
  rm -rf "$dir"
  mkdir -p "$dir"
  # the project as committed plus what is changed here, without caches
  (cd "$ROOT" && git ls-files -co --exclude-standard src tests) | grep -v '\.pyc$' \
    | (cd "$ROOT" && xargs -d '\n' cp --parents -t "$dir")
  read -r -a selection <<< "${MUTATION_TESTS:-${TESTS[$module]}}"
  cat > "$dir/pyproject.toml" <<EOF
[tool.mutmut]
source_paths = ["src/agentmill"]
only_mutate = ["src/agentmill/$module"]
also_copy = ["tests"]
pytest_add_cli_args_test_selection = $(toml_list "${selection[@]}")
pytest_add_cli_args = ["-p", "no:cacheprovider", "-p", "no:xdist", "-q"]
EOF
  echo "== $module: ${selection[*]}"
  # tests that start a Python of their own (a lock holder, a CLI) import the unmutated copy: mutmut's
  # trampolines do not run outside its own process
  names=()
  if [ -n "${MUTATION_NAMES:-}" ]; then
    mapfile -t names < <(grep -v '^$' "$MUTATION_NAMES")
    echo "   ${#names[@]} mutants named in $MUTATION_NAMES"
  elif [ -n "$SAMPLE" ]; then
    # a run filtered to a name no mutant has generates the mutants and collects the tests' stats, then stops
    (cd "$dir" && PYTHONPATH="$dir/src" "$MUTMUT" run "none-of-them" > sample.log 2>&1) || true
    mapfile -t names < <("$PY" - "$dir" "$module" "$SAMPLE" "$SEED" <<'PYEOF'
import json, random, sys
from pathlib import Path
folder, module, size, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
meta = json.loads((Path(folder) / "mutants/src/agentmill" / f"{module}.meta").read_text())
keys = sorted(meta["exit_code_by_key"])
print("\n".join(sorted(random.Random(seed).sample(keys, min(size, len(keys))))))
PYEOF
)
    echo "   sampled ${#names[@]} mutants (seed $SEED)"
  fi
  (cd "$dir" && PYTHONPATH="$dir/src${PYTHONPATH:+:$PYTHONPATH}" "$MUTMUT" run --max-children "$CHILDREN" \
    "${names[@]}" > run.log 2>&1) || echo "   mutmut exited $? (see $dir/run.log)"
  (cd "$dir" && "$MUTMUT" results --all true > results.txt 2>&1 || true)
  killed=$(grep -c ': killed$' "$dir/results.txt" || true)
  total=$(grep ': ' "$dir/results.txt" | grep -vc ': not checked$' || true)
  echo "   $killed of $total mutants killed; survivors: grep -v killed $dir/results.txt"
done
