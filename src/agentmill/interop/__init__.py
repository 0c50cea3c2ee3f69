"""Exchange with other harnesses. harbor/: Harbor's formats in one place, both ways: its job folder's
records (schema.py, config.py, stats.py), its ATIF trajectories (atif.py), `agentmill export --format
harbor-job` (job_export.py) and `agentmill import harbor` (job_import.py). foreign_files.py: reading
another harness's folder as the hostile input it is."""
