"""Harbor (laude-institute/harbor): its job folder and trajectories, read and written as Harbor does.

schema.py is the job folder's layout and Harbor's records; config.py and stats.py write a job's config,
locks and stats; atif.py maps trajectories both ways; job_export.py writes a run as a job folder
(`agentmill export --format harbor-job`) and job_import.py reads one back (`agentmill import harbor`).
"""
