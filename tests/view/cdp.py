"""A small driver for the system Chromium over the DevTools protocol on a pipe (--remote-debugging-pipe).

No browser-driver package: Chromium reads NUL-terminated JSON commands on fd 3 and writes replies
and events on fd 4. Enough for tests: open a page, evaluate, click and type with real input
events, screenshots, and every console message, exception and failed load the page produced.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class CdpError(RuntimeError):
    pass


class Browser:
    def __init__(self, profile: Path):
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def wire():  # in the child: the pipe ends become fds 3 and 4
            os.dup2(to_child_r, 3)
            os.dup2(from_child_w, 4)

        cmd = [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--remote-debugging-pipe",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--disable-extensions",
            "--mute-audio",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            "about:blank",
        ]
        self.proc = subprocess.Popen(
            cmd,
            preexec_fn=wire,
            close_fds=False,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._next = 0
        self._lock = threading.Lock()
        self._replies: dict[int, dict] = {}
        self._cond = threading.Condition()
        self.events: list[dict] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        buf = b""
        while True:
            try:
                chunk = os.read(self._from_child, 1 << 16)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                with self._cond:
                    if "id" in msg:
                        self._replies[msg["id"]] = msg
                    else:
                        self.events.append(msg)
                    self._cond.notify_all()

    def send(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 30) -> dict:
        with self._lock:
            self._next += 1
            msg_id = self._next
        msg = {"id": msg_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with self._cond:
            while msg_id not in self._replies:
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise CdpError(f"{method}: no reply")
                self._cond.wait(left)
            reply = self._replies.pop(msg_id)
        if "error" in reply:
            raise CdpError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def new_page(self, width: int = 1280, height: int = 900) -> Page:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session, target)
        for domain in ("Page", "Runtime", "Log", "Network"):
            page.send(f"{domain}.enable")
        page.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        return page

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=5)
        except (CdpError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass


class Page:
    def __init__(self, browser: Browser, session: str, target: str):
        self.browser, self.session, self.target = browser, session, target

    def close(self) -> None:
        self.browser.send("Target.closeTarget", {"targetId": self.target})

    def send(self, method: str, params: dict | None = None, timeout: float = 30) -> dict:
        return self.browser.send(method, params, session=self.session, timeout=timeout)

    def _events(self) -> list[dict]:
        with self.browser._cond:
            return [e for e in self.browser.events if e.get("sessionId") == self.session]

    def goto(self, url: str, timeout: float = 30) -> None:
        """Navigate and wait for the load (or, for a new #fragment of the same page, the in-page navigation)."""
        kinds = ("Page.loadEventFired", "Page.navigatedWithinDocument")
        seen = len([e for e in self._events() if e["method"] in kinds])
        self.send("Page.navigate", {"url": url})
        deadline = time.monotonic() + timeout
        while len([e for e in self._events() if e["method"] in kinds]) <= seen:
            if time.monotonic() > deadline:
                raise CdpError(f"{url}: not loaded within {timeout} s")
            time.sleep(0.02)

    def eval(self, expression: str):
        r = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in r:
            raise CdpError(
                f"{expression!r}: {r['exceptionDetails'].get('exception', {}).get('description') or r['exceptionDetails']}"
            )
        return r["result"].get("value")

    def wait(self, expression: str, timeout: float = 15):
        """Poll until the expression is truthy; its value. A timeout names the expression."""
        deadline = time.monotonic() + timeout
        while True:  # JavaScript's truth: an element (sent back as {}) counts as found
            found, value = self.eval(f"(v => [!!v, v instanceof Node ? null : v])({expression})")
            if found:
                return value if value is not None else True
            if time.monotonic() > deadline:
                raise CdpError(f"waited {timeout} s for {expression}")
            time.sleep(0.05)

    def click(self, selector: str) -> None:
        """A real mouse click at the centre of the element (scrolled into view)."""
        box = self.wait(f"""(() => {{ const el = document.querySelector({json.dumps(selector)}); if (!el) return null;
            el.scrollIntoView({{block: "center"}}); const r = el.getBoundingClientRect();
            return r.width && r.height ? [r.left + r.width / 2, r.top + r.height / 2] : null; }})()""")
        for kind in ("mousePressed", "mouseReleased"):
            self.send(
                "Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1], "button": "left", "clickCount": 1}
            )

    def type(self, selector: str, value: str) -> None:
        """Focus a field, select what it holds, and type `value` over it (real key input)."""
        self.click(selector)
        self.eval(f"document.querySelector({json.dumps(selector)}).select()")
        self.send("Input.insertText", {"text": value})

    def choose(self, selector: str, value: str) -> None:
        """Pick an option of a <select> as a user would (value set, change event fired)."""
        self.eval(f"""(() => {{ const s = document.querySelector({json.dumps(selector)}); s.value = {json.dumps(value)};
            s.dispatchEvent(new Event("change", {{bubbles: true}})); return s.value; }})()""")

    def screenshot(self, path: Path, *, full: bool = True, max_height: int = 4000) -> Path:
        params = {"format": "png"}
        if full:
            size = self.send("Page.getLayoutMetrics")["cssContentSize"]
            params.update(
                captureBeyondViewport=True,
                clip={"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], max_height), "scale": 1},
            )
        path.write_bytes(base64.b64decode(self.send("Page.captureScreenshot", params)["data"]))
        return path

    def problems(self) -> list[str]:
        """Console errors and warnings, uncaught exceptions, and failed loads, as one line each."""
        out = []
        for e in self._events():
            p = e.get("params", {})
            if e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
                out.append(
                    f"console.{p['type']}: "
                    + " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
                )
            elif e["method"] == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append("exception: " + str(d.get("exception", {}).get("description") or d.get("text")))
            elif e["method"] == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
                out.append(f"log {p['entry'].get('source')}: {p['entry'].get('text')} {p['entry'].get('url', '')}")
            elif e["method"] == "Network.loadingFailed" and not p.get("canceled"):
                out.append(f"load failed: {p.get('errorText')}")
        return out
