#!/usr/bin/env python3
"""The HTML report (`meshfit search --report`) as a user's browser takes it (issue 22).

Drives Debian's headless Chromium through its ChromeDriver (the W3C WebDriver protocol over
HTTP, with Python's standard library only) and checks, on a report written by the meshfit binary
given as argv[1]:
  - a screenshot of the page is a non-empty PNG;
  - the front table has one row per front strategy (the count in `--format json`'s output of the
    same search) and the chart one clickable point per row;
  - the fastest's breakdown is shown first; a click on a row, then on a chart point, shows that
    strategy's breakdown (stage memory bars with the budget, the step-time terms summing to its
    step time) and hides the others;
  - a click on a heading sorts the rows by that column, a second click reverses them.
Exit 0 when all hold, 1 with the failed check otherwise.
"""
import base64
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

SEARCH = ["search", "--model", "llama-3.1-70b", "--device", "h100-80gb", "--devices", "64", "--seq", "8192",
          "--global-batch", "512"]
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"  # the W3C key of an element reference


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Driver:
    def __init__(self, port):
        self.base = "http://127.0.0.1:%d" % port
        self.session = None

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read().decode())["value"]

    def start(self, profile):
        args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--window-size=1280,2000", "--user-data-dir=" + profile]
        caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {
            "binary": "/usr/bin/chromium", "args": args}}}}
        self.session = self.call("POST", "/session", caps)["sessionId"]

    def s(self, path):
        return "/session/%s%s" % (self.session, path)

    def js(self, script):
        return self.call("POST", self.s("/execute/sync"), {"script": script, "args": []})

    def click(self, css):
        el = self.call("POST", self.s("/element"), {"using": "css selector", "value": css})
        self.call("POST", self.s("/element/%s/click" % el[ELEMENT]), {})


def shown_detail(d):
    """The data-i of each breakdown section on show, with its step-time terms and headline."""
    return d.js("""return Array.from(document.querySelectorAll('section.detail'))
        .filter(s => !s.hidden && s.offsetParent !== null)
        .map(s => ({i: s.dataset.i,
                    bars: s.querySelectorAll('svg.stage-bars rect').length,
                    budget: s.querySelectorAll('svg.stage-bars line.budget').length,
                    terms: Array.from(s.querySelectorAll('table.time-terms td[data-v]'))
                               .map(td => Number(td.dataset.v)),
                    step: s.querySelector('h3:nth-of-type(2)').textContent}));""")


def check_detail(d, want, front):
    shown = shown_detail(d)
    if len(shown) != 1 or shown[0]["i"] != str(want):
        fail("after choosing #%d the breakdowns shown are %s" % (want, [x["i"] for x in shown]))
    x = shown[0]
    if x["bars"] == 0 or x["budget"] != 1:
        fail("#%d: %d memory bar segments, %d budget lines" % (want, x["bars"], x["budget"]))
    step = front[want - 1]["step_time_s"]
    if not x["terms"] or abs(sum(x["terms"]) - step) > 1e-9 * max(1.0, step):
        fail("#%d: the time terms sum to %s, its step time is %s" % (want, sum(x["terms"]), step))
    if ("%.3f s" % step) not in x["step"]:
        fail("#%d: the heading '%s' does not give the step time %.3f s" % (want, x["step"], step))


def main():
    meshfit = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp()
    report = os.path.join(work, "r.html")
    subprocess.run([meshfit] + SEARCH + ["--report", report], check=True, stdout=subprocess.DEVNULL)
    front = json.loads(subprocess.run([meshfit] + SEARCH + ["--format", "json"], check=True,
                                      stdout=subprocess.PIPE).stdout)["front"]
    if len(front) < 3:
        fail("the search's front has %d strategies; the checks need 3" % len(front))

    port = free_port()
    driver_proc = subprocess.Popen(["/usr/bin/chromedriver", "--port=%d" % port],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    d = Driver(port)
    try:
        for _ in range(300):  # its HTTP server up (up to 30 s on a loaded machine)
            try:
                d.call("GET", "/status")
                break
            except OSError:
                time.sleep(0.1)
        d.start(os.path.join(work, "profile"))
        d.call("POST", d.s("/url"), {"url": "file://" + report})

        png = base64.b64decode(d.call("GET", d.s("/screenshot")))
        if not png.startswith(b"\x89PNG\r\n\x1a\n") or len(png) < 10000:
            fail("the screenshot is not a PNG of a drawn page (%d bytes)" % len(png))

        rows = d.js("return document.querySelectorAll('#front tbody tr').length;")
        points = d.js("return document.querySelectorAll('svg g.pt').length;")
        if rows != len(front) or points != len(front):
            fail("%d table rows and %d chart points for a front of %d" % (rows, points, len(front)))

        check_detail(d, 1, front)  # the fastest, before any click
        d.click("#front tbody tr[data-i='3']")
        check_detail(d, 3, front)
        selected = d.js("return Array.from(document.querySelectorAll('#front tbody tr.sel')).map(r => r.dataset.i);")
        if selected != ["3"]:
            fail("the row marked selected after clicking #3: %s" % selected)
        d.click("svg g.pt[data-front='2'] circle")
        check_detail(d, 2, front)

        # Sorting: the peak column, ascending then descending.
        col = d.js("""return Array.from(document.querySelectorAll('#front thead th'))
                       .findIndex(th => th.textContent.startsWith('peak'));""")
        if col < 0:
            fail("no peak column in the front table")
        peaks = "return Array.from(document.querySelectorAll('#front tbody tr')).map(r => Number(r.cells[%d].dataset.v));" % col
        d.click("#front thead th:nth-child(%d)" % (col + 1))
        up = d.js(peaks)
        if up != sorted(up) or len(up) != len(front):
            fail("after one click on 'peak' the rows are not ascending: %s" % up)
        d.click("#front thead th:nth-child(%d)" % (col + 1))
        down = d.js(peaks)
        if down != sorted(up, reverse=True):
            fail("after a second click on 'peak' the rows are not descending: %s" % down)
        d.call("DELETE", d.s(""))
    finally:
        driver_proc.terminate()
        driver_proc.wait()
    print("ok: %d front rows and points, breakdowns on click, sorting, a %d-byte screenshot" % (len(front), len(png)))


if __name__ == "__main__":
    main()
