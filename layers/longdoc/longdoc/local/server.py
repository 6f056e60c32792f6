"""``longdoc serve``: the API function's own handler behind a local HTTP server (Werkzeug's WSGI server).

Each HTTP request becomes the API Gateway REST proxy event the function receives on AWS
(:func:`longdoc.local.api_event.proxy_event`: the template's route in ``resource``, repeated
headers and parameters in ``multiValueHeaders`` / ``multiValueQueryStringParameters``;
https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-lambda-proxy-integrations.html),
and the handler's proxy response becomes the HTTP response: same routes, validation,
status codes, error bodies and idempotency, because it is the same code. What differs:

- extraction runs start in the background: :class:`BackgroundStarter` spawns a worker process
  (:mod:`longdoc.local.worker`) that runs the local engine, takes the run's lease for it (the
  owner names the worker's pid) and hands it the lease, so ``POST /extractions`` answers at once
  and ``GET /extractions/{id}`` shows progress; summaries and bulk extractions likewise
  (:class:`MachineStarter`, one worker per execution). Workers run in a session of their own
  (``start_new_session``): a signal to the server's process group (Ctrl-C in a terminal, or an
  MCP client's stdio shutdown, which signals the server's whole group) does not reach them, so a
  worker started by ``longdoc mcp`` outlives that server. ``longdoc serve`` still stops the
  workers it started when it stops (:meth:`BackgroundStarter.stop`); each finished worker is
  reaped at once by a thread waiting on it (no ``<defunct>`` processes);
- a body over ``max_body_bytes`` (API Gateway's 10 MB payload quota by default) is answered
  413 before the handler sees it;
- ``GET /docs`` is a self-contained page generated from the OpenAPI document (no CDN assets);
- ``GET /review`` is the review page (:data:`REVIEW_PAGE`, static HTML and script calling the API's
  ``/reviews`` routes through this same handler; issue 29);
- one request at a time reaches the handler (one Lambda execution environment; the
  Powertools resolver keeps the current event on the app, so it is not re-entrant).
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

from werkzeug.wrappers import Request, Response

from longdoc.core.errors import ExecutionAlreadyExists
from longdoc.core.ports import StateStore
from longdoc.local.api_event import proxy_event
from longdoc.local.docs_page import docs_html
from longdoc.local.engine import REGION, LocalContext
from longdoc.local.pids import execution_worker_gone, pid_file
from longdoc.local.runner import claim_run, lease_seconds, run_dir

MAX_BODY_BYTES = 10 * 1024 * 1024
"""API Gateway's payload quota for REST APIs (10 MB); larger bodies are answered 413."""

WORKER_START_SECONDS = 60.0
"""The first lease a worker gets: long enough for a new process to import the engine and take it over."""

REVIEW_PAGE = Path(__file__).with_name("review_page.html")
"""The review page ``GET /review`` serves: the queue, the page with the span boxed, keyboard decisions."""

LOCAL_MACHINE = f"arn:aws:states:{REGION}:123456789012:execution:longdoc-local-extract"


class BackgroundStarter:
    """The :class:`~longdoc.core.ports.ExecutionStarter` of ``longdoc serve`` and ``longdoc mcp``: one worker
    process per run.

    ``start_execution`` spawns ``python -m longdoc.local.worker --owner -``, then claims the run's
    lease for an owner naming that worker's pid (:func:`worker_owner`), for at least
    :data:`WORKER_START_SECONDS` (so the run is not shown ``STALE`` while its worker starts, and a
    second live driver is refused with :class:`~longdoc.core.errors.RunLeaseHeld`: the worker is
    then killed), and writes the owner to the worker's stdin; the worker continues that lease.
    Its output goes to ``runs/<run_id>/worker.log``. Returns the execution's local ARN
    (``…:execution:longdoc-local-extract:<name>``). :meth:`resume` continues a ``FAILED`` or
    ``STALE`` run the same way (``longdoc runs resume`` in a worker).
    """

    def __init__(self, state: StateStore, home: Path, definition_path: Path):
        self.state, self.home, self.definition_path = state, Path(home), Path(definition_path)
        self.workers: list[subprocess.Popen[bytes]] = []

    def _leased_worker(self, run_id: str, options: list[str], name: str, execution_input: dict[str, Any]) -> None:
        """Spawn a worker with ``options``, claim ``run_id`` for it and hand it the owner (see the class)."""
        with (run_dir(self.home, run_id) / "worker.log").open("ab") as log:
            worker = _spawn_worker(["--owner", "-", *options], name, self.definition_path, execution_input, log,
                                   owner_on_stdin=True)
        owner = worker_owner(worker.pid)
        try:
            claim_run(self.state, run_id, owner, max(WORKER_START_SECONDS, lease_seconds()))
        except BaseException:
            worker.kill()  # it waits for its owner on stdin and has done nothing
            raise
        try:
            assert worker.stdin is not None
            worker.stdin.write(owner.encode("utf-8") + b"\n")
            worker.stdin.close()
        except OSError:
            self.state.release_run_lease(run_id, owner)  # the worker died at once: the next request may start it
            raise
        self.workers.append(worker)

    def start_execution(self, name: str, execution_input: dict[str, Any]) -> str:
        """Start the run's worker, its lease claimed for it; returns the execution ARN (the worker runs it)."""
        self._leased_worker(str(execution_input["run_id"]), [], name, execution_input)
        return f"{LOCAL_MACHINE}:{name}"

    def resume(self, run_id: str) -> None:
        """Continue a ``FAILED`` or ``STALE`` run from its checkpoint in a worker (what ``longdoc runs resume``
        does, in the background). Raises :class:`~longdoc.core.errors.NotFound` for an unknown run and
        :class:`~longdoc.core.errors.LongdocError` saying why a run cannot resume (live, finished), as
        :func:`~longdoc.local.console.check_resumable` does, or :class:`~longdoc.core.errors.RunLeaseHeld`."""
        from longdoc.local.console import check_resumable

        check_resumable(self.state, run_id)
        self._leased_worker(run_id, ["--resume", run_id], f"{run_id}-resume", {})

    def stop(self) -> int:
        """Terminate workers still running (their runs become ``STALE``); returns how many there were."""
        return _stop_all(self.workers)


class MachineStarter:
    """The :class:`~longdoc.core.ports.ExecutionStarter` of ``longdoc serve`` for summaries and bulk extractions.

    ``start_execution`` spawns ``python -m longdoc.local.worker --kind <kind>``, which runs the
    execution of ``definition_path`` in the local engine and exits; its output goes to
    ``workers/<kind>-<name>.log`` under ``home``. Progress and results are in the summary or
    bulk records the function writes, as on AWS. Returns the execution's local ARN.
    ``kind`` is ``summarize`` or ``bulk`` (:data:`longdoc.local.worker.MACHINES`).
    """

    def __init__(self, kind: str, home: Path, definition_path: Path):
        self.kind, self.home, self.definition_path = kind, Path(home), Path(definition_path)
        self.workers: list[subprocess.Popen[bytes]] = []

    def start_execution(self, name: str, execution_input: dict[str, Any]) -> str:
        """Start the worker of one execution; returns the execution ARN (the worker runs it).

        Execution names are unique, as in Step Functions: a name already started in this home
        (its log file exists; created exclusively, so two racing requests cannot both start it)
        raises :class:`ExecutionAlreadyExists` and starts nothing.
        """
        logs = self.home / "workers"
        logs.mkdir(parents=True, exist_ok=True)
        try:
            log_file = (logs / f"{self.kind}-{name}.log").open("xb")
        except FileExistsError:
            raise ExecutionAlreadyExists(f"execution {name} of the local {self.kind} state machine already exists") from None
        with log_file as log:
            try:
                worker = _spawn_worker(["--kind", self.kind], name, self.definition_path, execution_input, log)
            except OSError:  # no worker started: the name stays free for a retry
                Path(log.name).unlink(missing_ok=True)
                raise
        self.workers.append(worker)
        self._pid_file(name).write_text(str(worker.pid), encoding="ascii")
        return f"arn:aws:states:{REGION}:123456789012:execution:longdoc-local-{self.kind}:{name}"

    def _pid_file(self, name: str) -> Path:
        return pid_file(self.home, self.kind, name)

    def execution_gone(self, execution: str) -> bool:
        """Whether the worker of ``execution`` has ended (:func:`execution_worker_gone`)."""
        return execution_worker_gone(self.home, self.kind, execution)

    def stop(self) -> int:
        """Terminate workers still running; returns how many there were."""
        return _stop_all(self.workers)


def worker_owner(pid: int) -> str:
    """The lease owner of the worker process ``pid``: ``<host>:<pid>:<8 hex>`` (as
    :func:`~longdoc.local.runner.new_owner`, so a lease whose worker died is seen at once)."""
    import socket
    import uuid

    return f"{socket.gethostname()}:{pid}:{uuid.uuid4().hex[:8]}"


def _reap(worker: subprocess.Popen[bytes]) -> None:
    """Wait for ``worker`` on a daemon thread, so it is reaped when it ends (never left ``<defunct>``)."""
    threading.Thread(target=worker.wait, name=f"reap-{worker.pid}", daemon=True).start()


def _spawn_worker(options: list[str], name: str, definition: Path, execution_input: dict[str, Any],
                  log: Any, owner_on_stdin: bool = False) -> subprocess.Popen[bytes]:
    """Start ``python -m longdoc.local.worker <options> --name N --definition ASL --input JSON`` in a new
    session (``start_new_session``: signals to this process's group do not reach it), its output to
    the open binary file ``log``, reaped when it ends (:func:`_reap`). ``owner_on_stdin``: its stdin
    is a pipe the caller writes the lease owner to. Raises OSError when the process cannot start."""
    command = [sys.executable, "-m", "longdoc.local.worker", *options, "--name", name,
               "--definition", str(definition), "--input", json.dumps(execution_input)]
    worker = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                              stdin=subprocess.PIPE if owner_on_stdin else subprocess.DEVNULL)
    _reap(worker)
    return worker


def _stop_all(workers: list[subprocess.Popen[bytes]]) -> int:
    """Terminate the live processes of ``workers`` (kill after 10 s); returns how many were alive."""
    alive = [w for w in workers if w.poll() is None]
    for worker in alive:
        worker.terminate()
    for worker in alive:
        try:
            worker.wait(timeout=10)
        except subprocess.TimeoutExpired:
            worker.kill()
    return len(alive)


def http_response(result: dict[str, Any]) -> Response:
    """The HTTP response for a Lambda proxy integration result (``statusCode``, headers, body)."""
    body = result.get("body") or ""
    data = base64.b64decode(body) if result.get("isBase64Encoded") else str(body).encode("utf-8")
    response = Response(data, status=int(result.get("statusCode", 502)))
    response.headers.clear()
    for key, values in (result.get("multiValueHeaders") or {}).items():
        for value in values:
            response.headers.add(key, value)
    for key, value in (result.get("headers") or {}).items():
        if key not in response.headers:
            response.headers[key] = value
    return response


def _json(status: int, body: dict[str, Any]) -> Response:
    return Response(json.dumps(body), status=status, content_type="application/json")


class ApiApp:
    """The WSGI application: HTTP request -> proxy event -> the API function's ``handler`` -> HTTP response.

    ``api`` is the loaded ``functions/api/app.py`` module (:func:`~longdoc.local.lambda_runtime.load_handler`).
    ``mounts`` maps a path (``/mcp``) to a WSGI application answering it instead of the handler
    (``longdoc serve``'s MCP transport, :mod:`longdoc.mcpserver.http`).
    """

    def __init__(self, api: ModuleType, *, max_body_bytes: int = MAX_BODY_BYTES,
                 mounts: dict[str, Any] | None = None):
        self.api = api
        self.max_body_bytes = max_body_bytes
        self.mounts = dict(mounts or {})
        self._one_at_a_time = threading.Lock()

    def invoke(self, event: dict[str, Any]) -> dict[str, Any]:
        """Invoke the handler once with ``event`` (serialised: one execution environment)."""
        with self._one_at_a_time:
            result: dict[str, Any] = self.api.handler(event, LocalContext(function_name="longdoc-local-api"))
        return result

    def _read_body(self, request: Request) -> bytes | None:
        """The body, or None when it is longer than ``max_body_bytes`` (declared or actually sent)."""
        if request.content_length is not None and request.content_length > self.max_body_bytes:
            return None
        data = request.stream.read(self.max_body_bytes + 1)
        return None if len(data) > self.max_body_bytes else data

    def dispatch(self, request: Request) -> Response:
        """Answer one request: 413 for a body too large, the docs or review page, or the handler's answer."""
        body = self._read_body(request)
        if body is None:
            return _json(413, {"message": "Request Too Long", "limit_bytes": self.max_body_bytes})
        if request.method == "GET" and request.path in ("/docs", "/docs/"):
            spec = json.loads(self.invoke(proxy_event(Request.from_values("/openapi.json"), b""))["body"])
            return Response(docs_html(spec), content_type="text/html; charset=utf-8")
        if request.method == "GET" and request.path in ("/review", "/review/"):
            return Response(REVIEW_PAGE.read_bytes(), content_type="text/html; charset=utf-8")
        return http_response(self.invoke(proxy_event(request, body)))

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        mounted = self.mounts.get(environ.get("PATH_INFO") or "/")
        if mounted is not None:
            return mounted(environ, start_response)
        response = self.dispatch(Request(environ))
        return response(environ, start_response)
