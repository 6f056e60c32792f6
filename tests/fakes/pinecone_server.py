"""A loopback fake of a Pinecone serverless index's data plane for tests.

Point the real ``pinecone`` SDK at it with ``Pinecone(api_key=...).Index(host=fake.host)``;
the SDK (v10) sends plain ``http://`` to a loopback host without complaint. Endpoints
(Pinecone data-plane REST API, https://docs.pinecone.io/reference/api/2025-04/data-plane):

- ``POST /vectors/upsert`` ``{"vectors": [{"id", "values", "metadata"}], "namespace"}`` ->
  ``{"upsertedCount": n}``
- ``POST /query`` ``{"vector", "topK", "namespace", "filter", "includeValues",
  "includeMetadata"}`` -> ``{"matches": [{"id", "score"}], "namespace"}`` (cosine)
- ``GET /vectors/list?namespace=&prefix=&limit=&paginationToken=`` ->
  ``{"vectors": [{"id"}], "pagination": {"next"}, "namespace"}`` (ids in order, 100 per page)
- ``POST /vectors/delete`` ``{"ids", "namespace"}`` -> ``{}``
- ``POST /describe_index_stats`` -> ``{"dimension", "metric", "totalVectorCount",
  "namespaces": {ns: {"vectorCount"}}, "indexFullness"}``

Limits enforced like the service's documented operation limits
(https://docs.pinecone.io/reference/api/database-limits): at most 1,000 vectors and
2 MB per upsert request (400 / 413 otherwise), metadata at most 40 KB per vector, the
index's dimension on every vector, at most 1,000 ids per delete. Metadata filters support
``$eq`` on top-level fields (the only operator longdoc uses).
"""

from __future__ import annotations

import json
import math
from typing import Any

from tests.fakes.loopback import LoopbackFake

MAX_UPSERT_VECTORS = 1000
MAX_REQUEST_BYTES = 2 * 1024 * 1024
MAX_METADATA_BYTES = 40 * 1024
MAX_DELETE_IDS = 1000
LIST_PAGE = 100


class FakePinecone(LoopbackFake):
    """Loopback Pinecone index of ``dimension`` with ``metric``; vectors live in memory.

    Attributes:
        host: ``http://127.0.0.1:<port>`` to pass as the SDK's index ``host``.
        namespaces: ``{namespace: {id: (values, metadata)}}``.
    """

    name = "fake-pinecone"

    def __init__(self, dimension: int = 1024, metric: str = "cosine"):
        self.dimension = dimension
        self.metric = metric
        self.namespaces: dict[str, dict[str, tuple[list[float], dict[str, Any]]]] = {}
        super().__init__()
        self.host = self.url

    def count(self, namespace: str | None = None) -> int:
        """Number of vectors stored in ``namespace`` (all namespaces when None)."""
        with self.lock:
            if namespace is not None:
                return len(self.namespaces.get(namespace, {}))
            return sum(len(v) for v in self.namespaces.values())

    def ids(self, namespace: str) -> list[str]:
        """Sorted vector ids of one namespace."""
        with self.lock:
            return sorted(self.namespaces.get(namespace, {}))

    def upsert_sizes(self) -> list[tuple[int, int]]:
        """``(vectors, request bytes)`` of every successful upsert request, in order."""
        with self.lock:
            return [(len(r.body["vectors"]), r.size) for r in self.requests
                    if r.path == "/vectors/upsert" and r.answered == 200]

    def route(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> tuple[int, Any]:
        """Dispatch one data-plane request (see module docstring)."""
        routes = {
            ("POST", "/vectors/upsert"): self._upsert,
            ("POST", "/query"): self._query,
            ("GET", "/vectors/list"): self._list,
            ("POST", "/vectors/delete"): self._delete,
            ("POST", "/describe_index_stats"): self._stats,
        }
        handler = routes.get((method, path))
        if handler is None:
            return 404, {"code": 5, "message": f"fake does not serve {method} {path}"}
        return handler(body or {}, query)

    def _upsert(self, body: dict[str, Any], query: dict[str, list[str]]) -> tuple[int, Any]:
        vectors = body.get("vectors") or []
        size = len(json.dumps(body).encode())
        if size > MAX_REQUEST_BYTES:
            return 413, {"code": 3, "message": f"Request size {size} exceeds the maximum of {MAX_REQUEST_BYTES} bytes"}
        if len(vectors) > MAX_UPSERT_VECTORS:
            return 400, {"code": 3, "message": f"Upsert of {len(vectors)} vectors exceeds {MAX_UPSERT_VECTORS}"}
        for v in vectors:
            if len(v.get("values") or []) != self.dimension:
                return 400, {"code": 3, "message": f"Vector dimension {len(v.get('values') or [])} does not "
                                                   f"match the dimension of the index {self.dimension}"}
            meta = v.get("metadata") or {}
            meta_bytes = len(json.dumps(meta).encode())
            if meta_bytes > MAX_METADATA_BYTES:
                return 400, {"code": 3, "message": f"Metadata size is {meta_bytes} bytes, which exceeds the "
                                                   f"limit of {MAX_METADATA_BYTES} bytes per vector"}
            if any(value is None for value in meta.values()):
                return 400, {"code": 3, "message": "Metadata values cannot be null"}
        namespace = body.get("namespace", "")
        with self.lock:
            store = self.namespaces.setdefault(namespace, {})
            for v in vectors:
                store[v["id"]] = ([float(x) for x in v["values"]], dict(v.get("metadata") or {}))
        return 200, {"upsertedCount": len(vectors)}

    @staticmethod
    def _matches(metadata: dict[str, Any], flt: dict[str, Any] | None) -> bool:
        for key, condition in (flt or {}).items():
            if key == "$and":
                if not all(FakePinecone._matches(metadata, sub) for sub in condition):
                    return False
                continue
            expected = condition.get("$eq") if isinstance(condition, dict) else condition
            if metadata.get(key) != expected:
                return False
        return True

    def _query(self, body: dict[str, Any], query: dict[str, list[str]]) -> tuple[int, Any]:
        vector = [float(x) for x in body.get("vector") or []]
        if len(vector) != self.dimension:
            return 400, {"code": 3, "message": f"Query vector dimension {len(vector)} does not match "
                                               f"the dimension of the index {self.dimension}"}
        top_k = int(body.get("topK") or 10)
        namespace = body.get("namespace", "")
        qnorm = math.sqrt(sum(x * x for x in vector)) or 1.0
        with self.lock:
            rows = list(self.namespaces.get(namespace, {}).items())
        scored = []
        for vid, (values, metadata) in rows:
            if not self._matches(metadata, body.get("filter")):
                continue
            vnorm = math.sqrt(sum(x * x for x in values)) or 1.0
            score = sum(a * b for a, b in zip(vector, values, strict=True)) / (qnorm * vnorm)
            match: dict[str, Any] = {"id": vid, "score": score}
            if body.get("includeMetadata"):
                match["metadata"] = metadata
            if body.get("includeValues"):
                match["values"] = values
            scored.append(match)
        scored.sort(key=lambda m: (-m["score"], m["id"]))
        return 200, {"matches": scored[:top_k], "namespace": namespace, "usage": {"readUnits": 1}}

    def _list(self, body: dict[str, Any], query: dict[str, list[str]]) -> tuple[int, Any]:
        namespace = query.get("namespace", [""])[0]
        prefix = query.get("prefix", [""])[0]
        limit = int(query.get("limit", [str(LIST_PAGE)])[0])
        start = int(query.get("paginationToken", ["0"])[0])
        with self.lock:
            ids = sorted(i for i in self.namespaces.get(namespace, {}) if i.startswith(prefix))
        page = ids[start : start + limit]
        answer: dict[str, Any] = {"vectors": [{"id": i} for i in page], "namespace": namespace,
                                  "usage": {"readUnits": 1}}
        if start + limit < len(ids):
            answer["pagination"] = {"next": str(start + limit)}
        return 200, answer

    def _delete(self, body: dict[str, Any], query: dict[str, list[str]]) -> tuple[int, Any]:
        ids = body.get("ids") or []
        if len(ids) > MAX_DELETE_IDS:
            return 400, {"code": 3, "message": f"Delete of {len(ids)} ids exceeds {MAX_DELETE_IDS}"}
        namespace = body.get("namespace", "")
        with self.lock:
            store = self.namespaces.get(namespace, {})
            if body.get("deleteAll"):
                store.clear()
            for vid in ids:
                store.pop(vid, None)
        return 200, {}

    def _stats(self, body: dict[str, Any], query: dict[str, list[str]]) -> tuple[int, Any]:
        with self.lock:
            namespaces = {ns: {"vectorCount": len(v)} for ns, v in self.namespaces.items() if v}
        return 200, {"dimension": self.dimension, "metric": self.metric, "indexFullness": 0.0,
                     "totalVectorCount": sum(n["vectorCount"] for n in namespaces.values()),
                     "namespaces": namespaces, "vectorType": "dense"}
