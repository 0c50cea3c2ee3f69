# agentmill repo_bugs: records every test's outcome by node id, written once at the end of the session
# (to $AGENTMILL_OUTCOMES, default /logs/verifier/outcomes.json) for /tests/grade.py. The failure text
# of a failing test is kept short: it becomes the symptom an issue report quotes.
import json
import os

_outcomes = {}  # type: dict[str, str]
_messages = {}  # type: dict[str, str]


def pytest_runtest_logreport(report):
    prev = _outcomes.get(report.nodeid)
    if report.failed:
        _outcomes[report.nodeid] = "failed"
        if report.nodeid not in _messages:
            _messages[report.nodeid] = report.longreprtext[-4000:]
    elif report.when == "call" and prev is None:
        _outcomes[report.nodeid] = report.outcome  # passed or skipped
    elif report.skipped and prev is None:
        _outcomes[report.nodeid] = "skipped"


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("AGENTMILL_OUTCOMES", "/logs/verifier/outcomes.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"outcomes": _outcomes, "messages": _messages}, f)
