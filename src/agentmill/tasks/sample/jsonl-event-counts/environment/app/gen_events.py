"""Write /app/events.jsonl: a day of app analytics events with a few damaged lines."""
import json

TYPES = ["page_view", "click", "signup", "purchase", "logout", "search"]
WEIGHTS = [9, 6, 1, 1, 2, 4]
state = 20240611


def rnd(n):
    global state
    state = (state * 6364136223846793005 + 1442695040888963407) % 2**64
    return (state >> 33) % n


pool = [t for t, w in zip(TYPES, WEIGHTS) for _ in range(w)]
lines = []
for i in range(600):
    event = {
        "ts": f"2024-06-11T{(i * 24) // 600:02d}:{rnd(60):02d}:{rnd(60):02d}Z",
        "type": pool[rnd(len(pool))],
        "user": f"u{rnd(90):03d}",
    }
    if event["type"] == "purchase":
        event["amount_cents"] = 100 * (1 + rnd(80))
    text = json.dumps(event)
    kind = rnd(40)
    if kind == 0:
        text = text[: len(text) // 2]  # truncated write
    elif kind == 1:
        lines.append("")  # stray blank line
    lines.append(text)
with open("/app/events.jsonl", "w") as fh:
    fh.write("\n".join(lines) + "\n")
