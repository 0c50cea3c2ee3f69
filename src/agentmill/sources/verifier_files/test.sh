#!/bin/bash
# Verifier: the project's own tests (a pristine copy in /tests/suite) against the code in /app.
mkdir -p /logs/verifier
cd /app
export PYTHONPATH="/app/src:/app${PYTHONPATH:+:$PYTHONPATH}"  # keeps the verifier's own entries
pytest -q -p no:cacheprovider /tests/suite > /logs/verifier/pytest.log 2>&1
tail -n 20 /logs/verifier/pytest.log
/usr/bin/python3 -I /tests/grade.py /logs/verifier/outcomes.json /logs/verifier/reward.json
