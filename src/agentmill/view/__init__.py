"""The trajectory viewer: `agentmill view RUN_DIR` serves a local web page over a run's trials.

source.py          the registry of what the viewer opens (ViewSource, register_source, open_source; plug-ins by
                   the agentmill.view_sources entry point, e.g. synth/view_source.py)
rollout_source.py  rollout folders and recipe run folders
index.py           view.sqlite: the ledger's rows plus turns, tamper and filter verdicts, indexed
verdicts.py        what the export filters say about a trial
queries.py         the paged, filtered trial list in SQL
trial.py           one trial folder: trajectory, verifier output, reward, task files
server.py          the loopback HTTP server (JSON routes, bundled assets, CSP)
assets/            the page: index.html, app.js, app.css, synth.js (the synth store panel); no network, no inline script
"""

from agentmill.view import rollout_source as _rollout_source  # noqa: F401  (registers the built-in source)
from agentmill.view.server import ViewServer
from agentmill.view.source import ViewSource, open_source, register_source

__all__ = ["ViewServer", "ViewSource", "open_source", "register_source"]
