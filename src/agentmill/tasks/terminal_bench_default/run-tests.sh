#!/bin/bash
# agentmill's stand-in for Terminal-Bench's default test runner, used for legacy tasks that ship no
# run-tests.sh of their own: pytest over $TEST_DIR/test_outputs.py, run from the image's WORKDIR.
# The offline verifier toolkit provides pytest; the verdict is pytest's exit status.
exec pytest "${TEST_DIR:-/tests}/test_outputs.py" -rA
