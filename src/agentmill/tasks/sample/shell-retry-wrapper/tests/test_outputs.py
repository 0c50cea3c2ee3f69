#!/usr/bin/env python3
"""Outcome checks for this task. Prints PASS/FAIL per check; exits non-zero on any failure."""
import os
import stat
import subprocess
import sys
import tempfile

CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


def main():
    failed = 0
    for fn in CHECKS:
        try:
            fn()
            print(f"PASS {fn.__name__}")
        except Exception as e:  # noqa: BLE001 - any error is a failed check
            failed += 1
            print(f"FAIL {fn.__name__}: {e!r}")
    print(f"{len(CHECKS) - failed}/{len(CHECKS)} checks passed")
    sys.exit(1 if failed else 0)


SCRIPT = "/app/bin/retry.sh"
WORK = tempfile.mkdtemp()
FLAKE = os.path.join(WORK, "flake.sh")
with open(FLAKE, "w") as fh:
    fh.write('#!/bin/sh\n'
             '# flake.sh COUNTER FAIL_TIMES EXIT_CODE: fail FAIL_TIMES times, then succeed\n'
             'n=$(cat "$1" 2>/dev/null || echo 0); n=$((n + 1)); echo "$n" > "$1"\n'
             'if [ "$n" -le "$2" ]; then exit "$3"; fi\n'
             'echo "ok after $n"\n')
os.chmod(FLAKE, 0o755)


def run(*args):
    p = subprocess.run([SCRIPT, *args], capture_output=True, text=True, timeout=20, cwd=WORK)
    return p.returncode, p.stdout


def counter(name):
    path = os.path.join(WORK, name)
    return int(open(path).read()) if os.path.exists(path) else 0


@check
def is_executable():
    assert os.stat(SCRIPT).st_mode & stat.S_IXUSR, "retry.sh is not executable"


@check
def succeeds_after_failures():
    rc, out = run("5", FLAKE, "c1", "2", "7")
    assert rc == 0, rc
    assert counter("c1") == 3, f"command ran {counter('c1')} times"
    assert out.strip() == "ok after 3", f"stdout {out!r}"


@check
def gives_up_with_last_status():
    rc, _ = run("3", FLAKE, "c2", "10", "7")
    assert rc == 7 and counter("c2") == 3, (rc, counter("c2"))
    rc, _ = run("4", "false")
    assert rc == 1, rc


@check
def first_success_runs_once():
    rc, out = run("6", FLAKE, "c3", "0", "9")
    assert rc == 0 and counter("c3") == 1, (rc, counter("c3"))


@check
def arguments_passed_through():
    out_file = os.path.join(WORK, "args.txt")
    rc, _ = run("2", "sh", "-c", 'printf "%s|" "$@" > "$0"', out_file, "a b", "", "*", "$HOME")
    assert rc == 0, rc
    assert open(out_file).read() == "a b||*|$HOME|", open(out_file).read()


@check
def status_varies_per_attempt():
    script = os.path.join(WORK, "codes.sh")
    with open(script, "w") as fh:
        fh.write('#!/bin/sh\nn=$(cat cnt 2>/dev/null || echo 0); n=$((n+1)); echo $n > cnt; exit $((n + 10))\n')
    os.chmod(script, 0o755)
    rc, _ = run("3", script)
    assert rc == 13, f"expected status of last attempt (13), got {rc}"


@check
def bad_usage_exits_2():
    marker = os.path.join(WORK, "should-not-exist")
    for args in (["0", "touch", marker], ["abc", "touch", marker], ["-1", "touch", marker], ["3"], []):
        rc, _ = run(*args)
        assert rc == 2, f"args {args}: exit {rc}"
    assert not os.path.exists(marker), "command ran despite bad usage"


if __name__ == "__main__":
    main()
