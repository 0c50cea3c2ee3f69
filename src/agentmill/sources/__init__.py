"""Task-source generators: each kind turns public material into ordinary Harbor task folders.

One module per kind (`functions`, `repo_bugs`, ...), the shared writing and admission in
`folders.py`. Each kind is a recipe source kind (registered in pyproject.toml's
`agentmill.task_sources` entry points) and an `agentmill sources` command.
"""
