"""What the alert tests share: a webhook receiver on loopback and runs with injected regressions."""

from __future__ import annotations

import csv
import gzip
import io
import json
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.plain_duckdb import open_views

RUNS = Path("gh-pages") / "benchmarks"


class _Receiver(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.received.append((self.path, json.loads(body)))  # type: ignore[attr-defined]
        self.send_response(500 if self.path == "/down" else 200)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def _serve(handler: type[BaseHTTPRequestHandler], **state: list) -> Iterator[ThreadingHTTPServer]:
    """``handler`` on a loopback port, in a thread, with ``state`` as attributes of the server."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    for name, value in state.items():
        setattr(server, name, value)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def webhook_server() -> AbstractContextManager[ThreadingHTTPServer]:
    """A real HTTP server on loopback that keeps every POST as (path, JSON body); ``/down`` answers 500."""
    return _serve(_Receiver, received=[])


class _Issues(BaseHTTPRequestHandler):
    """GitHub's issue endpoints of one repository, as far as the alerts use them."""

    def _reply(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self.server.tokens.append(self.headers.get("Authorization"))  # type: ignore[attr-defined]
        self._reply(200, [i for i in self.server.issues if i["state"] == "open"])  # type: ignore[attr-defined]

    def do_POST(self) -> None:
        self.server.tokens.append(self.headers.get("Authorization"))  # type: ignore[attr-defined]
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        issues = self.server.issues  # type: ignore[attr-defined]
        if self.path.endswith("/comments"):
            number = int(self.path.split("/")[-2])
            next(i for i in issues if i["number"] == number)["comments"].append(body["body"])
            self._reply(201, {"id": len(issues)})
            return
        issue = {"number": len(issues) + 1, "state": "open", "comments": [], **body}
        issues.append(issue)
        self._reply(201, issue)

    def log_message(self, format: str, *args: object) -> None:
        pass


def issue_server(issues: list[dict] | None = None) -> AbstractContextManager[ThreadingHTTPServer]:
    """GitHub's issues of one repository on loopback: ``issues`` open at first, ``tokens`` seen."""
    return _serve(_Issues, issues=list(issues or []), tokens=[])


def url(server: ThreadingHTTPServer, path: str) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}{path}"


def runs(mirror: Path) -> list[str]:
    return (mirror / RUNS / "commits.txt").read_text().split()


def steadiest_kernels(root: Path, n: int = 1) -> list[str]:
    """The ``n`` kernels whose Liger speed series can all see the smallest change: a doubling must show."""
    with open_views(root / "catalog.sqlite") as con:
        rows = con.execute(
            """select kernel from series_noise where is_liger and metric = 'speed' and history >= 5
               group by kernel order by max(detectable_change), kernel limit ?""",
            [n],
        ).fetchall()
    return [kernel for (kernel,) in rows]


def inject_run(mirror: Path, name: str, kernels: list[str], copy_of: str | None = None) -> None:
    """A new run ``name``: run ``copy_of``'s CSV (default the newest) with every Liger speed result
    of ``kernels`` twice as slow, listed after the others."""
    listed = runs(mirror)
    source = mirror / RUNS / (copy_of or listed[-1]) / "benchmark.csv.gz"
    rows = list(csv.DictReader(io.StringIO(gzip.decompress(source.read_bytes()).decode())))
    for row in rows:
        if row["kernel_name"] in kernels and row["kernel_provider"] == "liger" and row["metric_name"] == "speed":
            for column in ("y_value_20", "y_value_50", "y_value_80"):
                row[column] = repr(float(row[column]) * 2)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    (mirror / RUNS / name).mkdir()
    (mirror / RUNS / name / "benchmark.csv.gz").write_bytes(gzip.compress(out.getvalue().encode()))
    (mirror / RUNS / "commits.txt").write_text("\n".join([*listed, name]) + "\n")
