"""Fast exports make the same bytes as the plain single-process path.

- Worker processes: every row format and option (filters, reasoning, Parquet, a real tokenizer's
  counts) gives the same file, funnel, redaction count and skipped folders with 1, 2 and 3 workers,
  in folder order even when the first chunk finishes last; at most a window of chunks is read ahead.
- One scrub check per trajectory: rendering with it equals rendering every text through `scrub`.
- One-pass trajectory parsing: whatever it accepts, Python's json reads as the same trajectory;
  what it refuses (lone surrogates) still loads through Python's json.
"""

from __future__ import annotations

import json
import random
import re
import time
from pathlib import Path

import pytest

from agentmill.traces import parallel
from agentmill.traces import render as render_mod
from agentmill.traces import text as text_mod
from agentmill.traces.atif import Trajectory
from agentmill.traces.export import export_run
from agentmill.traces.filters import FilterSpec
from agentmill.traces.records import read_trajectory
from agentmill.traces.render import render
from agentmill.traces.text import clean_text, is_clean
from tests.traces.builders import NASTY, terminus_trajectory, varied_trajectory, write_varied_run
from tests.traces.test_export import needs_tokenizers

KEEP_ALL = dict(min_turns=0, drop_outcomes=[], subagents="keep", tamper="keep")
CASES = {
    "trl-default": ("trl", ".jsonl", FilterSpec(), "think"),
    "trl-all-drop": ("trl", ".jsonl", FilterSpec(**KEEP_ALL), "drop"),
    "trl-parquet": ("trl", ".parquet", FilterSpec(**KEEP_ALL), "think"),
    "sharegpt": ("sharegpt", ".jsonl", FilterSpec(**KEEP_ALL), "think"),
    "harbor": ("harbor", ".jsonl", FilterSpec(**KEEP_ALL), "think"),
    "trl-strict": (
        "trl",
        ".jsonl",
        FilterSpec(
            min_turns=3,
            completion="unclaimed",
            max_error_rate=0.9,
            max_repeated_commands=3,
            min_reward=0.5,
            max_tokens=500,
        ),
        "think",
    ),
}


@pytest.fixture(scope="module")
def varied(tmp_path_factory):
    run = tmp_path_factory.mktemp("varied") / "run"
    write_varied_run(run, 150)
    return run


def exported(run: Path, dest: Path, fmt: str, suffix: str, spec: FilterSpec, reasoning: str, workers: int, **kw):
    dest.mkdir(parents=True)
    report = export_run(run, fmt, dest / f"rows{suffix}", spec=spec, reasoning=reasoning, workers=workers, **kw)
    files = {p.name: p.read_bytes() for p in sorted(dest.iterdir())}
    return files, (report.rows, [vars(s) for s in report.funnel], report.redactions, report.skipped, report.tokens)


@pytest.mark.parametrize("case", list(CASES))
def test_workers_write_the_single_process_bytes(varied, tmp_path, monkeypatch, case):
    fmt, suffix, spec, reasoning = CASES[case]
    monkeypatch.setattr(parallel, "CHUNK", 7)  # many chunks, a short window
    monkeypatch.setattr(parallel, "IN_FLIGHT", 2)
    single = exported(varied, tmp_path / "w1", fmt, suffix, spec, reasoning, 1)
    assert single[1][0] > 0 and single[1][3]  # rows, and the broken folder reported
    for workers in (2, 3):
        assert exported(varied, tmp_path / f"w{workers}", fmt, suffix, spec, reasoning, workers) == single


@needs_tokenizers
def test_workers_count_tokens_with_a_real_tokenizer_alike(varied, tmp_path):
    from agentmill.models.local import local_gguf

    spec = FilterSpec(**KEEP_ALL, max_tokens=700)
    single = exported(varied, tmp_path / "w1", "trl", ".jsonl", spec, "think", 1, tokenizer=local_gguf())
    funnel = single[1][1]
    assert funnel[-1]["name"] == "max_tokens" and funnel[-1]["dropped"] > 0 and funnel[-1]["kept"] > 0
    assert exported(varied, tmp_path / "w2", "trl", ".jsonl", spec, "think", 2, tokenizer=local_gguf()) == single


def _first_chunk_last(folders):
    if any(f.name == "v00000" for f in folders):
        time.sleep(1.0)  # the first chunk comes back after every other chunk in the window
    return [parallel._maker.make(f) for f in folders]


def test_rows_keep_folder_order_when_the_first_chunk_finishes_last(varied, tmp_path, monkeypatch):
    spec = FilterSpec(**KEEP_ALL)
    single = exported(varied, tmp_path / "w1", "trl", ".jsonl", spec, "think", 1)
    monkeypatch.setattr(parallel, "CHUNK", 5)
    monkeypatch.setattr(parallel, "_make_chunk", _first_chunk_last)  # workers are forked after this
    assert exported(varied, tmp_path / "w2", "trl", ".jsonl", spec, "think", 2) == single


def test_a_threaded_process_spawns_its_workers_and_gets_the_same_rows(varied, tmp_path, monkeypatch):
    import threading

    spec = FilterSpec(**KEEP_ALL)
    single = exported(varied, tmp_path / "w1", "trl", ".jsonl", spec, "think", 1)
    methods = []
    real = parallel.multiprocessing.get_context
    monkeypatch.setattr(parallel.multiprocessing, "get_context", lambda method: methods.append(method) or real(method))
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)  # another thread is running: forking could copy a held lock
    other.start()
    try:
        assert exported(varied, tmp_path / "w2", "trl", ".jsonl", spec, "think", 2) == single
    finally:
        stop.set()
        other.join()
    assert methods == ["spawn"]


def test_without_process_semaphores_the_rows_are_made_here(varied, tmp_path, monkeypatch):
    class NoPool:
        def Pool(self, *a, **kw):  # noqa: N802 (multiprocessing's name)
            raise OSError("[Errno 38] Function not implemented")

    spec = FilterSpec(**KEEP_ALL)
    single = exported(varied, tmp_path / "w1", "trl", ".jsonl", spec, "think", 1)
    monkeypatch.setattr(parallel.multiprocessing, "get_context", lambda method: NoPool())
    assert exported(varied, tmp_path / "w2", "trl", ".jsonl", spec, "think", 2) == single


class _Watched(list):
    """Trial folders that remember how far the export has read ahead."""

    furthest = 0

    def __getitem__(self, index):
        if isinstance(index, slice):
            self.furthest = max(self.furthest, min(index.stop, len(self)))
        return super().__getitem__(index)


def test_workers_read_at_most_a_window_ahead(varied, monkeypatch):
    monkeypatch.setattr(parallel, "CHUNK", 4)
    monkeypatch.setattr(parallel, "IN_FLIGHT", 2)
    folders = _Watched(sorted((varied / "trials").iterdir()))
    maker_args = (FilterSpec(**KEEP_ALL), parallel.TokenCounter(), "trl", "think")
    made = parallel.made_in_order(folders, parallel.RowMaker(*maker_args), maker_args, 2)
    taken = [next(made) for _ in range(10)]
    assert len(taken) == 10 and folders.furthest <= 10 + 2 * 2 * 4 + 4  # taken + window + the chunk being queued
    assert folders.furthest < len(folders) / 2
    made.close()  # the pool is shut down with the generator


def test_worker_count_defaults_to_one_for_small_runs_and_obeys_a_request():
    assert parallel.worker_count(None, parallel.MIN_TRIALS - 1) == 1
    assert parallel.worker_count(3, 10) == 3 and parallel.worker_count(0, 10) == 1
    assert 1 <= parallel.worker_count(None, 10**6) <= parallel.MAX_WORKERS


# --- one scrub check per trajectory -------------------------------------------------------------


def _trajectories() -> list[Trajectory]:
    rng = random.Random(7)
    out = [varied_trajectory(i, rng) for i in range(300)]
    for nasty in NASTY:  # each nasty text alone, in an output, a reply, reasoning and the task
        t = terminus_trajectory([("ls\n", f"a\n{nasty}\nb"), ("pwd\n", "/app")], reasoning=f"r {nasty}")
        t.steps[1].message = f"Task {nasty}"
        out.append(t)
    return out


def _as_rendered(r):
    return r.messages, r.tools, r.redactions


def test_one_check_per_trajectory_renders_what_scrubbing_every_text_renders(monkeypatch):
    trajectories = _trajectories()
    fast = [_as_rendered(render(t, reasoning=mode)) for t in trajectories for mode in ("think", "drop")]
    plain = sum(
        render_mod.scrubbed_as_is(render_mod._texts(t, render_mod.rendering_of(t) == "text")) for t in trajectories
    )
    assert 0 < plain < len(trajectories)  # both paths were taken
    monkeypatch.setattr(render_mod, "scrubbed_as_is", lambda texts: False)  # every text through scrub
    assert fast == [_as_rendered(render(t, reasoning=mode)) for t in trajectories for mode in ("think", "drop")]


def test_a_check_blind_to_non_ascii_control_characters_is_caught(monkeypatch):
    # the check must see every character clean_text removes: C1 controls and surrogates too
    t = terminus_trajectory([("ls\n", "bad\x9fbyte half \ud800"), ("pwd\n", "x")])
    good = _as_rendered(render(t))
    monkeypatch.setattr(text_mod, "_DIRTY", re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]"))
    assert _as_rendered(render(t)) != good


def test_plain_runs_take_the_one_check():
    t = terminus_trajectory(
        [(f"grep -n 'item {i}' data.csv\n", f"{i}: row {i}, value") for i in range(30)], reasoning="Next I check."
    )
    assert render_mod.scrubbed_as_is(render_mod._texts(t, True))


def _clean_reference(text: str) -> str:
    text = text_mod._SURROGATE.sub("\ufffd", text)
    text = text_mod._ANSI.sub("", text)
    return text_mod._CONTROL.sub("", text)


def test_is_clean_agrees_with_the_three_passes_on_every_character():
    for cp in list(range(0, 0x3000)) + list(range(0xD700, 0xE100)) + list(range(0xFF00, 0x10000)) + [0x10FFFF, 0x1F600]:
        c = chr(cp)
        for text in (c, f"ab{c}", f"{c}\n", f"x{c}y" * 3):
            assert is_clean(text) == (_clean_reference(text) == text), hex(cp)
            assert clean_text(text) == _clean_reference(text)


# --- one-pass trajectory parsing ----------------------------------------------------------------


def _slow(text: str) -> Trajectory:
    return Trajectory.model_validate(json.loads(text))


def test_lone_surrogates_load_through_pythons_json():
    t = terminus_trajectory([("ls\n", "half \ud800 surrogate")])
    text = json.dumps(t.model_dump(mode="python"))  # escaped: "\ud800"
    with pytest.raises(ValueError):
        Trajectory.model_validate_json(text)
    assert (
        read_trajectory(text) == _slow(text)
        and "\ud800" in read_trajectory(text).steps[2].observation.results[0].content
    )


def test_deep_nesting_loads_through_pythons_json():
    t = terminus_trajectory([("ls\n", "a")])
    t.extra = {"deep": json.loads("[" * 300 + "]" * 300)}
    text = json.dumps(t.model_dump(mode="python"))
    assert read_trajectory(text) == _slow(text)


def test_whatever_the_one_pass_parser_accepts_pythons_json_reads_the_same():
    rng = random.Random(11)
    base = json.dumps(varied_trajectory(3, random.Random(3)).model_dump(mode="python"))
    numbers = [
        "0.1",
        "1e400",
        "-0",
        "-0.0",
        "5e-324",
        "1.7976931348623157e308",
        "123456789012345678901234567890",
        "NaN",
        "Infinity",
        "1E5",
        "2.5e-3",
    ]
    accepted = 0
    for i in range(1500):
        text = base
        if i % 3 == 0:  # a number of another kind where the tool arguments hold one
            text = text.replace('"n": 0.0', f'"n": {rng.choice(numbers)}', 1)
        for _ in range(rng.randint(0, 2)):  # byte-level damage: most texts break, some stay valid
            pos = rng.randrange(len(text))
            text = (
                text[:pos]
                + rng.choice(["", "\\", '"', ",", "}", "1", "a", "\\u00e9", " ", "\x01", "\ud800"])
                + text[pos + 1 :]
            )
        try:
            fast = Trajectory.model_validate_json(text)
        except ValueError:
            continue
        accepted += 1
        slow = _slow(text)
        # repr tells 1 from 1.0 and shows NaN (which equals nothing, not even itself)
        assert repr(fast.model_dump()) == repr(slow.model_dump()), text
        assert repr(read_trajectory(text).model_dump()) == repr(slow.model_dump())
    assert accepted > 300


def test_an_invalid_trajectory_fails_with_pythons_error():
    text = json.dumps(
        {"session_id": "s", "agent": {"name": "a", "version": "1"}, "steps": [{"step_id": "x", "source": "agent"}]}
    )
    with pytest.raises(ValueError) as fast:
        read_trajectory(text)
    with pytest.raises(ValueError) as slow:
        _slow(text)
    assert str(fast.value) == str(slow.value)


def test_trial_folders_are_the_sorted_trial_directories_held_as_names(tmp_path):
    from agentmill.traces.records import trial_folders

    trials = tmp_path / "trials"
    for name in ("b", "a10", "a9", "A", ".tmp-x", "_z"):
        (trials / name).mkdir(parents=True)
    (trials / "file.json").write_text("{}")
    (trials / "link").symlink_to(trials / "b")
    got = trial_folders(tmp_path)
    want = sorted(p for p in trials.iterdir() if p.is_dir() and not p.name.startswith("."))
    assert list(got) == want and got.names == ["A", "_z", "a10", "a9", "b", "link"]
    assert list(got[1:3]) == want[1:3] and got[-1] == trials / "link"
