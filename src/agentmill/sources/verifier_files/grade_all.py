# agentmill sources: reward 1 only when pytest exited 0 AND the recorder saw at least one test and every
# test it saw passed. The recorder writes at the end of the session, so code under test that ends the
# process early (os._exit(0), sys.exit(0) at import) leaves no record and gets 0, whatever the exit code.
import json
import sys

status, outcomes_file, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
try:
    with open(outcomes_file, encoding="utf-8") as f:
        outcomes = json.load(f)["outcomes"]
except (OSError, ValueError, KeyError, TypeError):
    outcomes = {}
ok = status == 0 and isinstance(outcomes, dict) and bool(outcomes) and all(v == "passed" for v in outcomes.values())
with open(out, "w", encoding="utf-8") as f:
    f.write("1\n" if ok else "0\n")
passed = sum(v == "passed" for v in outcomes.values()) if isinstance(outcomes, dict) else 0
print(f"pytest exit {status}; {passed}/{len(outcomes) if isinstance(outcomes, dict) else 0} tests passed; reward {int(ok)}")
