#!/bin/bash
# Verifier: runs the outcome checks and records the reward.
mkdir -p /logs/verifier
python3 /tests/test_outputs.py
if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
