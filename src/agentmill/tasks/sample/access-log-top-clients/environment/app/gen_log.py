"""Write /app/logs/access.log, a day of nginx combined-format traffic."""
import os

state = 987654321


def rnd(n):
    global state
    state = (state * 1103515245 + 12345) % 2**31
    return (state >> 8) % n


CLIENTS = (["198.51.100.7"] * 9 + ["203.0.113.42"] * 7 + ["192.0.2.15"] * 7 + ["198.51.100.23"] * 5
           + ["203.0.113.9"] * 5 + ["192.0.2.200"] * 3 + ["198.51.100.150"] * 2 + ["203.0.113.77"] * 2
           + ["192.0.2.8"])
PATHS = ["/", "/products", "/products/42", "/cart", "/checkout", "/static/app.js", "/static/site.css",
         "/api/search?q=lamp", "/login", "/favicon.ico"]
STATUS = [200] * 14 + [304] * 3 + [404] * 2 + [500]
AGENTS = ['"Mozilla/5.0 (X11; Linux x86_64)"', '"Mozilla/5.0 (Macintosh)"', '"curl/8.1.2"']
MONITOR = "10.0.0.5"

lines = []
for i in range(1500):
    sec = i * 57
    ts = f"12/Jun/2024:{sec // 3600 % 24:02d}:{sec // 60 % 60:02d}:{sec % 60:02d} +0000"
    if i % 4 == 0:
        lines.append(f'{MONITOR} - - [{ts}] "GET /healthz HTTP/1.1" 200 2 "-" "kube-probe/1.29"')
        continue
    ip = CLIENTS[rnd(len(CLIENTS))]
    path = PATHS[rnd(len(PATHS))]
    method = "POST" if path in ("/cart", "/checkout", "/login") and rnd(2) else "GET"
    status = STATUS[rnd(len(STATUS))]
    size = 0 if status == 304 else 200 + rnd(9000)
    lines.append(f'{ip} - - [{ts}] "{method} {path} HTTP/1.1" {status} {size} "-" {AGENTS[rnd(3)]}')

os.makedirs("/app/logs", exist_ok=True)
with open("/app/logs/access.log", "w") as fh:
    fh.write("\n".join(lines) + "\n")
