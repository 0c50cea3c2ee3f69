"""Exchange with other harnesses' run folders. harbor_import.py: Harbor job folders -> agentmill runs.
(The other way, `agentmill export --format harbor-job`, is an export format: traces/formats_harbor.py.)"""
