"""Tamper evidence as the in-sandbox pytest guard reports it (verify/tamper.py): only well-formed marker
lines count, each field cut to 300 characters; anything else on the test run's output is ignored."""

from __future__ import annotations

from agentmill.verify.tamper import MARKER, Tamper, TamperKind, parse_markers


def test_a_marker_line_becomes_evidence_and_prints_back():
    (found,) = parse_markers(f"collected 3 items\n  {MARKER}\trunner_guard\t/app/conftest.py\tplugin loaded  \nok\n")
    assert found == Tamper(kind=TamperKind.RUNNER_GUARD, path="/app/conftest.py", detail="plugin loaded")
    assert found.line() == "runner_guard /app/conftest.py: plugin loaded"


def test_every_marker_of_a_run_is_kept_in_order():
    text = f"{MARKER}\tshadow_module\t/app/json.py\ta\n{MARKER}\tsupervisor\t-\tb\n"
    assert [(t.kind, t.detail) for t in parse_markers(text)] == [
        (TamperKind.SHADOW_MODULE, "a"),
        (TamperKind.SUPERVISOR, "b"),
    ]


def test_lines_that_are_not_exact_markers_are_ignored():
    for line in (
        f"{MARKER}\trunner_guard\t/app/x",  # three fields
        f"{MARKER}\trunner_guard\t/app/x\ty\tz",  # five
        f"{MARKER}X\trunner_guard\t/app/x\ty",  # another tag
        f"echo {MARKER}\trunner_guard\t/app/x\ty",  # the tag not first
        f"{MARKER}\tno_such_kind\t/app/x\ty",  # an unknown kind: skipped, the next line still read
    ):
        assert parse_markers(line + f"\n{MARKER}\tsupervisor\t/p\td\n") == [
            Tamper(kind=TamperKind.SUPERVISOR, path="/p", detail="d")
        ], line


def test_long_fields_are_cut_to_300_characters():
    (found,) = parse_markers(f"{MARKER}\tplanted_tool\t{'p' * 400}\t{'d' * 400}")
    assert (found.path, found.detail) == ("p" * 300, "d" * 300)
