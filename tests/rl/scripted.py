"""Completions a policy could write, put where the model's generations would be: TRL's `rollout_func`
boundary (used by the GRPO tests and benchmarks/train.py)."""

from __future__ import annotations

import json


def terminus(commands: list[tuple[str, float]] = (), complete: bool = True) -> str:
    return json.dumps(
        {
            "analysis": "",
            "plan": "",
            "task_complete": complete,
            "commands": [{"keystrokes": k, "duration": d} for k, d in commands],
        }
    )


def scripted_rollout(replies: list[str]):
    """A TRL `rollout_func`: TRL hands it each prompt once per generation (a group's copies in a row);
    the k-th copy of a group gets replies[k], tokenised as the policy would have written it."""
    served: list[str] = []

    def rollout(prompts, trainer):
        tok = trainer.processing_class
        out = {"prompt_ids": [], "completion_ids": [], "logprobs": None}
        for k, prompt in enumerate(prompts):
            reply = replies[k % len(replies)]
            out["prompt_ids"].append(
                list(
                    tok.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True, return_dict=True)[
                        "input_ids"
                    ]
                )
            )
            out["completion_ids"].append(tok(reply + "<|im_end|>", add_special_tokens=False)["input_ids"])
            served.append(reply)
        return out

    rollout.served = served
    return rollout
