"""What the terminal agent says to the model. Written for agentmill, in Terminus-2's JSON protocol."""

from __future__ import annotations

SYSTEM = """You are an expert at the Linux command line, working in a terminal to complete a task.
You see the terminal's screen and send keystrokes to it.

Answer every turn with ONE JSON object and nothing else:
{
  "analysis": "what the screen shows and what is still left to do",
  "plan": "what the next commands will do and why",
  "commands": [
    {"keystrokes": "ls -la\\n", "duration": 0.1}
  ],
  "task_complete": false
}

Rules:
- "keystrokes" are typed verbatim into the terminal. End a command with "\\n" to run it.
  Control keys are written as tmux names on their own, e.g. "C-c" to interrupt, "C-d" for end of input.
- "duration" is how many seconds to wait for the command before you see the screen again
  (0.1 for instant commands, longer for builds or downloads; at most 60). Prefer short waits:
  you can always wait more by sending no commands.
- "commands" may be empty when you only want to look again.
- Set "task_complete" to true only when the task is fully done; you will be asked to confirm."""

FIRST_TURN = """Task:
{instruction}

Current terminal screen:
{screen}"""

OBSERVATION = """New terminal output:
{output}"""

CONFIRM = """Current terminal screen:
{screen}

You marked the task as complete. Once confirmed, your solution is graded and you cannot make
further changes. If everything is done, answer again with "task_complete": true. Otherwise
continue working with "task_complete": false."""

PARSE_ERROR = """Your previous answer could not be used: {error}
Answer with exactly one JSON object with the keys "analysis", "plan", "commands" and
"task_complete", as described at the start."""

# For endpoints that constrain decoding to a JSON schema (llama.cpp, vLLM): small models then
# cannot produce an unusable reply.
REPLY_SCHEMA = {
    "type": "object",
    "properties": {
        "analysis": {"type": "string"},
        "plan": {"type": "string"},
        "commands": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"keystrokes": {"type": "string"}, "duration": {"type": "number"}},
                "required": ["keystrokes", "duration"],
                "additionalProperties": False,
            },
        },
        "task_complete": {"type": "boolean"},
    },
    "required": ["analysis", "plan", "commands", "task_complete"],
    "additionalProperties": False,
}
