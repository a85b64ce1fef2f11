"""Python client stacks against the sidecar (test/e2e/real-clients.test.ts runs this file).

Each case first asks the test's control server to revoke every token on the service, then
sends one request through the sidecar and prints one JSON line: case, HTTP status and the
body size the service's echo reports. SIDECAR and CONTROL are base URLs (plain HTTP).
"""
import http.client
import json
import os
import sys
import urllib.parse
import urllib.request

SIDECAR = os.environ["SIDECAR"]
CONTROL = os.environ["CONTROL"]
BODY = b"a=1&b=2&text=" + b"x" * 4000
# Plain HTTP on loopback: never through a proxy from the environment.
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def chunks():
    """A generator body: no length known, so the client sends it chunked."""
    for i in range(4):
        yield BODY[i * len(BODY) // 4:(i + 1) * len(BODY) // 4]


def revoke():
    u = urllib.parse.urlsplit(CONTROL)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=20)
    conn.request("POST", "/revoke")
    conn.getresponse().read()
    conn.close()


def http_client(method, body=None, chunked=False):
    def run(path):
        u = urllib.parse.urlsplit(SIDECAR)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=20)
        conn.request(method, path, body=body, encode_chunked=chunked)
        res = conn.getresponse()
        out = (res.status, res.read())
        conn.close()
        return out
    return run


def urllib_stack(data=None, headers=None):
    def run(path):
        req = urllib.request.Request(SIDECAR + path, data=data, headers=headers or {})
        try:
            with OPENER.open(req, timeout=20) as res:
                return res.status, res.read()
        except urllib.error.HTTPError as err:
            return err.code, err.read()
    return run


def requests_stack(method, data=None):
    def run(path):
        import requests
        session = requests.Session()
        session.trust_env = False  # no proxy from the environment
        res = session.request(method, SIDECAR + path, data=data() if callable(data) else data, timeout=20)
        return res.status_code, res.content
    return run


CASES = [
    ("http.client GET", http_client("GET")),
    ("http.client POST", http_client("POST", BODY)),
    ("http.client POST generator (chunked)", http_client("POST", chunks(), chunked=True)),
    ("urllib GET", urllib_stack()),
    ("urllib POST", urllib_stack(BODY, {"Content-Type": "application/x-www-form-urlencoded"})),
    ("urllib POST iterable (chunked)", urllib_stack(chunks(), {"Content-Type": "application/octet-stream"})),
]
try:
    import requests  # noqa: F401  (Debian: python3-requests)
    CASES += [
        ("requests GET", requests_stack("GET")),
        ("requests POST", requests_stack("POST", BODY)),
        ("requests POST generator (chunked)", requests_stack("POST", chunks)),
    ]
except ImportError:
    print(json.dumps({"case": "requests", "skipped": "not installed"}), flush=True)

for name, run in CASES:
    try:
        revoke()
        status, raw = run("/pub/b2b/v1/echo/" + urllib.parse.quote(name))
        try:
            echo = json.loads(raw)
        except ValueError:
            echo = {}
        print(json.dumps({"case": name, "status": status, "bodyBytes": echo.get("bodyBytes"), "method": echo.get("method")}), flush=True)
    except Exception as err:  # report, never hide: the test asserts on every case
        print(json.dumps({"case": name, "error": repr(err)}), flush=True)
sys.exit(0)
