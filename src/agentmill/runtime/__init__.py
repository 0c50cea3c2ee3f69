"""Runtime plumbing every part of agentmill stands on, and none of the concepts: atomic writes, scratch
paths, the event loop's priority and its file threads, child processes, open-file limits, whole steps
a Ctrl-C cannot split, SIGTERM handled as Ctrl-C, lazy package faces."""
