"""Exit codes of every agentmill command, defined once (the table is in docs/exit-codes.md).

0    the work is done (a run may hold task or model failures: those are data, not errors)
1    a check found problems: `check` (a task failed oracle/nop), `diff` (folders differ),
     `ground decontaminate` (contaminated tasks), `ablate` (variants left out)
2    refused before any work: bad input, an unknown option value, a run folder made with other
     settings, or an endpoint that failed its preflight request
3    infrastructure stopped the work: every trial ended infra_error, a recipe stage had trials
     end in endpoint failures (it stays uncached and the same command retries them), a synthesis
     or grounded run produced nothing because its endpoints failed
130  interrupted by Ctrl-C (SIGINT): finished work is kept, the same command resumes
143  stopped by SIGTERM (Slurm, Kubernetes, systemd): handled as Ctrl-C
"""

OK = 0
PROBLEMS = 1
REFUSED = 2
INFRA = 3
INTERRUPTED = 130
TERMINATED = 143
