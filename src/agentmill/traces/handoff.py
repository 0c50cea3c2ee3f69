"""Context handoffs inside one trajectory (terminus, agents/terminus/handoff.py).

When a conversation nears the model's context, the agent asks the model for a summary (a separate
request, a *subagent*) and goes on in a fresh conversation. Both stay in the trial's trajectory:

- the main steps run on unbroken; the `system` step that begins each fresh conversation carries
  `extra["context_handoff"]` = {"handoff": k, "tokens_before": n, "subagent": {"steps": [...]}};
- the subagent's steps are every message of the summarisation request (the conversation so far plus
  the instruction) and its reply, so they render to exactly what that request sent.

The model never saw the steps before the last handoff together with the ones after it, so a row is
rendered from the last conversation only (`current_conversation`); the summarisation requests are
trajectories of their own with `extra.parent_session_id` (`subagent_trajectories`), dropped by the
default `subagents = "drop"` trace filter.
"""

from __future__ import annotations

from agentmill.traces.atif import Step, Trajectory

HANDOFF = "context_handoff"


def handoff_of(step: Step) -> dict | None:
    value = (step.extra or {}).get(HANDOFF)
    return value if isinstance(value, dict) else None


def current_conversation(steps: list[Step]) -> list[Step]:
    """The steps of the conversation the model had last: from the last handoff on (all of them if none)."""
    start = max((i for i, s in enumerate(steps) if handoff_of(s) is not None), default=0)
    return steps[start:]


def subagent_trajectories(trajectory: Trajectory) -> list[Trajectory]:
    """The summarisation requests recorded in a trajectory, each as a trajectory of its own whose
    `extra.parent_session_id` names the trial's (the `subagents` trace filter's mark)."""
    out = []
    for step in trajectory.steps:
        handoff = handoff_of(step)
        if handoff is None:
            continue
        sub = handoff.get("subagent") or {}
        steps = [Step.model_validate(s) for s in sub.get("steps") or []]
        out.append(
            Trajectory(
                session_id=f"{trajectory.session_id}.summary-{handoff.get('handoff')}",
                agent=trajectory.agent,
                steps=steps,
                extra={**(trajectory.extra or {}), "parent_session_id": trajectory.session_id, "subagent": "summary"},
            ).summarize()
        )
    return out
