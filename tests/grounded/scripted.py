"""Scripted model roles for the grounded tests: policies for tests.helpers.chat_server.ChatServer
(a real local HTTP server). The judge policy reads what it was sent (rubric, evidence,
deliverables) and scores from that, so the tests see the effect of what crossed the boundary."""

from __future__ import annotations

import json
import re
import threading
from contextlib import contextmanager

from agentmill.verify.fence import unfence
from tests.helpers.chat_server import ChatServer, Reply, terminus_json

CSV = "energy/iowa-electricity.csv"
ABOUT = "energy/iowa-electricity-about.md"
STOCKS = "markets/stocks.csv"


def assembler_policy():
    replies = [
        {"action": "search", "query": "iowa electricity net generation renewables"},
        {"action": "search", "query": "stocks msft price"},
        {"action": "search", "query": "seattle weather precipitation"},
        # a "confuser" no reader would confuse with the core file (stock prices beside electricity): refused
        {
            "action": "select",
            "case": "Iowa's electricity generation mix in 2017",
            "files": [
                {"path": f"corpus/{CSV}", "role": "core"},
                {"path": f"corpus/{ABOUT}", "role": "supporting"},
                {"path": f"corpus/{STOCKS}", "role": "confuser"},
                {"path": "corpus/weather/seattle-weather-about.md", "role": "ambient"},
            ],
        },
        {
            "action": "select",
            "case": "Iowa's electricity generation mix in 2017",
            "files": [
                {"path": f"corpus/{CSV}", "role": "core"},
                {"path": f"corpus/{ABOUT}", "role": "supporting"},
                {"path": f"corpus/{STOCKS}", "role": "ambient"},
                {"path": "corpus/weather/seattle-weather-about.md", "role": "ambient"},
            ],
        },
    ]
    return _sequence(replies)


def _sequence(objs):
    lock = threading.Lock()
    items = [json.dumps(o) for o in objs]

    def policy(_request):
        with lock:
            return Reply(items.pop(0) if len(items) > 1 else items[0])

    return policy


def row(n, field, value, file=CSV):
    return {
        "file": file,
        "field": field,
        "value": value,
        "locator": {"kind": "row_field", "row": n, "field": "net_generation" if file == CSV else field},
    }


GRAPH = {
    "nodes": [
        {"id": "f2001fossil", **row(1, "2001 fossil fuels net generation", "35361")},
        {"id": "f2017fossil", **row(17, "2017 fossil fuels net generation", "29329")},
        {"id": "f2017nuclear", **row(34, "2017 nuclear net generation", "5214")},
        {"id": "f2017renew", **row(51, "2017 renewables net generation", "21933")},
        {
            "id": "funits",
            "file": ABOUT,
            "field": "unit of net generation",
            "value": "thousand megawatthours",
            "locator": {"kind": "span", "text": "thousand megawatthours"},
        },
        # planted: not what the file says at that locator (row 2 is 35991); must be dropped
        {"id": "fplanted", **row(2, "2002 fossil fuels net generation", "99999")},
        {
            "id": "fstock",
            "file": STOCKS,
            "field": "MSFT price Jan 2000",
            "value": "39.81",
            "locator": {"kind": "row_field", "row": 1, "field": "price"},
        },
    ],
    "edges": [
        {"src": "f2017fossil", "dst": "f2017renew", "relation": "compare"},
        {"src": "f2017nuclear", "dst": "f2017renew", "relation": "derive"},
        {"src": "funits", "dst": "f2017renew", "relation": "interpret"},
        {"src": "fplanted", "dst": "f2001fossil", "relation": "compare"},
    ],
}

CRITERIA = [
    {
        "id": "c1",
        "artifact": "summary.csv",
        "requirement": "a Total row with the 2017 total net generation",
        "expected": "56476",
        "weight": 2.0,
        "anchors": ["f2017fossil", "f2017nuclear", "f2017renew"],
        "verification": "Sum the three 2017 rows; the Total row must equal it.",
    },
    {
        "id": "c2",
        "artifact": "memo.md",
        "requirement": "the renewables share of 2017 generation",
        "expected": "38.8%",
        "weight": 1.0,
        "anchors": ["f2017renew", "f2017fossil", "f2017nuclear"],
        "verification": "21933 / 56476, to one decimal place.",
    },
    {
        "id": "c3",
        "artifact": "memo.md",
        "requirement": "the unit of the figures",
        "expected": "thousand megawatthours",
        "weight": 1.0,
        "anchors": ["funits"],
        "verification": "The memo names the unit used by the data's documentation.",
    },
]
SPEC = {
    "statement": "Our board wants a short brief on how Iowa generated its electricity in 2017. "
    "Total the year's net generation by source, and write a memo that gives the total and the share "
    "that came from renewables, and the unit of the figures.",
    "deliverables": [
        {"path": "summary.csv", "format": "csv", "columns": ["source", "net_generation"]},
        {"path": "memo.md", "format": "md", "sections": ["Summary", "Method"]},
    ],
    "criteria": CRITERIA,
    "negatives": [
        {
            "id": "x1",
            "artifact": "summary.csv",
            "forbidden": "uses 2001 figures instead of 2017",
            "penalty": 0.3,
            "anchors": ["f2001fossil"],
        }
    ],
}


def compiler_policy(leak_first: bool = True):
    leaky = dict(SPEC, statement=SPEC["statement"] + " Start from fact f2017renew in the core file.")
    return _sequence(([leaky] if leak_first else []) + [SPEC])


def reviser_policy(statement: str | None = None):
    criteria = json.loads(json.dumps(CRITERIA))
    criteria[2]["verification"] = (
        "The memo's Summary names the unit given in the data's documentation (thousand megawatthours)."
    )
    changes = {"criteria": criteria}
    if statement:
        changes["statement"] = statement
    return _sequence([{"changes": changes, "notes": "c3's verification said too little"}])


GOOD = """mkdir -p /app/output
cat > /app/output/summary.csv <<'X'
source,net_generation
Fossil Fuels,29329
Nuclear Energy,5214
Renewables,21933
Total,56476
X
cat > /app/output/memo.md <<'X'
# Summary
In 2017 Iowa generated 56476 thousand megawatthours; 38.8% came from renewables.
# Method
Summed the 2017 rows of iowa-electricity.csv by source.
X
"""
NO_METHOD = GOOD.replace("# Method\n", "")
# right numbers, and the 2001 figure the negative criterion forbids: only the judge can tell
USES_2001 = GOOD.replace("# Method\n", "In 2001 fossil fuels alone gave 35361.\n# Method\n")
WRONG = (
    GOOD.replace("29329", "35361")
    .replace("5214", "3853")
    .replace("21933", "1437")
    .replace("56476", "40651")
    .replace("38.8%", "3.5%")
)


def teacher_policy(scripts: list[str]):
    """Conversation i (counted by first requests) types scripts[i] after listing what it can see."""
    lock = threading.Lock()
    state = {"conversations": 0}

    def policy(request):
        msgs = request["messages"]
        turns = sum(1 for m in msgs if m["role"] == "assistant")
        with lock:
            if turns == 0:
                state["conversations"] += 1
            script = scripts[min(state["conversations"], len(scripts)) - 1]
        if turns == 0:
            return Reply(terminus_json([("find /app -type f | sort; ls /tests /solution; echo LISTED\n", 0.5)]))
        if turns == 1:
            return Reply(terminus_json([(f"bash <<'AGENTMILL_EOF'\n{script}AGENTMILL_EOF\n", 0.8)]))
        return Reply(terminus_json([], complete=True))

    return policy


def _section(text: str, start: str, end: str | None) -> str:
    i = text.find(start)
    if i < 0:
        return ""
    j = text.find(end, i + len(start)) if end else -1
    return text[i + len(start) : j if j >= 0 else None]


def judge_policy():
    """Scores a criterion 1 when its expected value is in its artifact and (anchored mode)
    every fact it cites is shown in the evidence; a negative is proven when a cited fact's value
    appears in the deliverables."""

    def policy(request):
        text = request["messages"][-1]["content"]
        rubric = json.loads(_section(text, "Rubric:\n", "\n\nEvidence:"))
        evidence = _section(text, "Evidence:\n", "\n\nAnswer with")
        # the deliverables, read as a judge is told to: the one fenced JSON value, nothing outside it
        files = unfence(text)[1]
        deliverables = "\n".join(f"{path}:\n{body}" for path, body in files.items())
        anchored = evidence.strip() != "(not provided)"
        scores = []
        for c in rubric["criteria"]:
            # a criterion is met in its own artifact: text elsewhere claiming to be that artifact does not count
            ok = (
                c.get("expected", c["requirement"]) in files.get(c["artifact"], "")
                if anchored
                else _loose(c["requirement"], deliverables)
            )
            if anchored:
                ok = ok and all(re.search(rf"\[{re.escape(a)}\] [^\n]*= ", evidence) for a in c["anchors"])
            scores.append({"id": c["id"], "score": 1.0 if ok else 0.0, "reason": "scripted"})
        violations = []
        for n in rubric["negatives"]:
            proven = anchored and any(
                (m := re.search(rf"\[{re.escape(a)}\] [^\n]*= (.+)", evidence)) and m.group(1).strip() in deliverables
                for a in n.get("anchors", [])
            )
            violations.append({"id": n["id"], "proven": bool(proven), "evidence": "scripted"})
        return Reply(json.dumps({"scores": scores, "violations": violations}))

    return policy


@contextmanager
def judge_configured(monkeypatch, policy=None):
    """The rollout verifier's judge (AGENTMILL_JUDGE_*) set to a scripted judge on a real local server."""
    with ChatServer(policy or judge_policy(), model="scripted-judge") as server:
        monkeypatch.setenv("AGENTMILL_JUDGE_MODEL", "scripted-judge")
        monkeypatch.setenv("AGENTMILL_JUDGE_BASE_URL", server.base_url)
        yield server
    monkeypatch.delenv("AGENTMILL_JUDGE_MODEL")
    monkeypatch.delenv("AGENTMILL_JUDGE_BASE_URL")


def _loose(requirement: str, deliverables: str) -> bool:
    return "Total" in deliverables or "total" in deliverables


def careful_judge_policy():
    """A judge that recomputes: a criterion scores 1 when its expected value is in the deliverables
    and follows from the cited facts *as the evidence shows them* (a cited value, their sum or a
    share of their sum, to the expected precision; text equal to a cited value). It reads the
    deliverables as a judge is told to: the one fenced JSON value, each criterion in its own artifact."""

    def policy(request):
        text = request["messages"][-1]["content"]
        rubric = json.loads(_section(text, "Rubric:\n", "\n\nEvidence:"))
        evidence = _section(text, "Evidence:\n", "\n\nAnswer with")
        files = unfence(text)[1]  # the deliverables: the one fenced JSON value, nothing outside it
        shown = dict(re.findall(r"^\[([^\]]+)\] [^\n]*?= ([^\n]*)$", evidence, re.MULTILINE))
        scores = []
        for c in rubric["criteria"]:
            values = [shown.get(a) for a in c["anchors"]]
            ok = c["expected"] in files.get(c["artifact"], "") and None not in values
            if ok:
                nums = [float(v) for v in values if re.fullmatch(r"-?\d+(\.\d+)?", v.strip())]
                want = c["expected"].rstrip("%")
                if re.fullmatch(r"-?\d+(\.\d+)?", want):
                    places = len(want.split(".")[1]) if "." in want else 0
                    derived = nums + [sum(nums)] + [100 * x / sum(nums) for x in nums if sum(nums)]
                    ok = len(nums) == len(values) and any(f"{d:.{places}f}" == want for d in derived)
                else:
                    ok = any(v.strip().casefold() == want.casefold() for v in values)
            scores.append({"id": c["id"], "score": 1.0 if ok else 0.0, "reason": "recomputed"})
        return Reply(
            json.dumps(
                {"scores": scores, "violations": [{"id": n["id"], "proven": False} for n in rubric["negatives"]]}
            )
        )

    return policy
