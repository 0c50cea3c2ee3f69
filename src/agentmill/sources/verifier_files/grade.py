# agentmill repo_bugs: reward 1 only when every fail-to-pass and pass-to-pass test passed; the graded
# reward `f2p_fixed` is the fraction of fail-to-pass tests that pass. A test that did not run counts
# as failed.
import json
import sys

outcomes_file, out = sys.argv[1], sys.argv[2]
try:
    with open(outcomes_file, encoding="utf-8") as f:
        outcomes = json.load(f)["outcomes"]
except (OSError, ValueError, KeyError, TypeError):
    outcomes = {}
with open("/tests/f2p.json", encoding="utf-8") as f:
    f2p = json.load(f)
with open("/tests/p2p.json", encoding="utf-8") as f:
    p2p = json.load(f)
passed = {k for k, v in outcomes.items() if v == "passed"} if isinstance(outcomes, dict) else set()
fixed = sum(t in passed for t in f2p)
kept = sum(t in passed for t in p2p)
reward = 1.0 if fixed == len(f2p) and kept == len(p2p) else 0.0
with open(out, "w", encoding="utf-8") as f:
    json.dump({"reward": reward, "f2p_fixed": fixed / len(f2p) if f2p else 0.0}, f)
print(f"fail-to-pass fixed: {fixed}/{len(f2p)}; pass-to-pass kept: {kept}/{len(p2p)}; reward {reward}")
