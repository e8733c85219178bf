#!/usr/bin/python3
"""Takes a screenshot of a transaction timeline (`mbpsim run --timeline FILE.json`) opened in a
browser's trace viewer: the Performance panel of the DevTools that Debian's Chromium bundles,
which reads the Chrome trace-event format. (Perfetto's UI is online only, and Debian's
Chromium has no chrome://tracing.) Chromium runs headless and is driven over the DevTools
protocol (Debian's python3-websocket): the file is given to the panel's "Load profile" input,
the process group and every track are expanded, and the page is captured.

  scripts/timeline-screenshot.py TIMELINE.json OUT.png [--width 1600] [--height 1000]

Needs the Debian packages chromium and python3-websocket (apt-get install chromium
python3-websocket; no setup.sh mode installs them). Exit status: 0 written, 1 bad input, 2 the browser or the panel failed.
The panel's layout (where a track's triangle is) is Chromium's, not ours: the clicks below
are the layout of Chromium 150-156; a later layout may need them moved.
"""
import argparse
import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request


def die(status, msg):
    print(f"timeline-screenshot: {msg}", file=sys.stderr)
    sys.exit(status)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Page:
    def __init__(self, port):
        import websocket  # Debian: python3-websocket
        deadline = time.time() + 30
        while True:
            try:
                tabs = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json"))
                page = next(t for t in tabs if t["type"] == "page")
                break
            except Exception:
                if time.time() > deadline:
                    die(2, "chromium did not open its DevTools port")
                time.sleep(0.3)
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], suppress_origin=True)
        self.n = 0

    def call(self, method, **params):
        self.n += 1
        self.ws.send(json.dumps({"id": self.n, "method": method, "params": params}))
        while True:
            m = json.loads(self.ws.recv())
            if m.get("id") == self.n:
                if "error" in m:
                    die(2, f"{method}: {m['error'].get('message')}")
                return m["result"]

    def click(self, x, y):
        for t in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=t, x=x, y=y, button="left", clickCount=1)
        time.sleep(0.4)

    def js(self, expr):
        return self.call("Runtime.evaluate", expression=expr, returnByValue=True)["result"].get("value")


# Every element of the page, through the shadow roots the DevTools' components use.
ALL = """(function(){const out=[];const w=n=>{if(!n)return;out.push(n);if(n.shadowRoot)for(const c of n.shadowRoot.children)w(c);
for(const c of n.children||[])w(c);};w(document.documentElement);return out;})()"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("timeline")
    ap.add_argument("out")
    ap.add_argument("--width", type=int, default=1600)
    ap.add_argument("--height", type=int, default=1000)
    a = ap.parse_args()
    try:
        with open(a.timeline) as f:
            t = json.load(f)
    except (OSError, ValueError) as e:
        die(1, f"{a.timeline}: not a timeline: {e}")
    if not isinstance(t, dict) or not isinstance(t.get("traceEvents"), list):
        die(1, f"{a.timeline}: not a timeline: no traceEvents list")
    tracks = sum(1 for e in t["traceEvents"] if e.get("ph") == "M" and e.get("name") == "thread_name")
    if not a.out.endswith(".png"):
        die(1, f"{a.out}: the screenshot is a .png")
    browser = shutil.which("chromium")
    if not browser:
        die(2, "chromium is not installed (Debian package chromium)")

    profile = tempfile.mkdtemp(prefix="mbpsim-chromium-")
    port = free_port()
    proc = subprocess.Popen([browser, "--headless=new", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}", "--no-first-run",
                             f"--remote-debugging-port={port}", f"--window-size={a.width},{a.height}", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        p = Page(port)
        p.call("Page.enable")
        p.call("Emulation.setDeviceMetricsOverride", width=a.width, height=a.height, deviceScaleFactor=1, mobile=False)
        p.call("Page.navigate", url="devtools://devtools/bundled/devtools_app.html?panel=timeline")
        deadline = time.time() + 30
        oid = None
        while oid is None:
            r = p.call("Runtime.evaluate", expression=f"{ALL}.find(e=>e.tagName==='INPUT'&&e.type==='file')")
            oid = r["result"].get("objectId")
            if oid is None:
                if time.time() > deadline:
                    die(2, "the Performance panel has no 'Load profile' input")
                time.sleep(0.5)
        p.call("DOM.setFileInputFiles", files=[os.path.abspath(a.timeline)], objectId=oid)
        time.sleep(4)
        # The flame chart's keyboard-shortcut dialog opens on a first load: close it.
        p.js(f"(function(){{const b={ALL}.find(e=>e.getAttribute&&/close/i.test(e.getAttribute('aria-label')||'')&&e.offsetParent!==null);"
             f"if(b)b.click();return !!b;}})()")
        # The sidebar (insights, annotations) off: the tracks get the width.
        p.js(f"(function(){{const b={ALL}.find(e=>e.getAttribute&&/sidebar/i.test(e.getAttribute('aria-label')||'')&&e.offsetParent!==null);"
             f"if(b)b.click();return !!b;}})()")
        time.sleep(0.5)
        # The process group's triangle, then each track's from the bottom up (an expanded track
        # grows downwards: the ones above it stay where they were). Rows are 21 px apart
        # below the time ruler.
        x0, y0, row = 20, 129, 21
        p.click(x0, y0)
        for i in range(tracks, 0, -1):
            p.click(x0 + 20, y0 + i * row)
        time.sleep(1)
        shot = p.call("Page.captureScreenshot", format="png")
        with open(a.out + ".partial", "wb") as f:
            f.write(base64.b64decode(shot["data"]))
        os.replace(a.out + ".partial", a.out)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(profile, ignore_errors=True)
    print(f"timeline-screenshot: {a.out} ({tracks} tracks)")


if __name__ == "__main__":
    main()
