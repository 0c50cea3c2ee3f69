"""Failure-driven synthesis of tool tasks (issue 11): diagnosis, capability cards, barrier, scheduler, store."""
