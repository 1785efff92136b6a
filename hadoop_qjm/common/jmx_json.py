"""``/jmx`` as JMXJsonServlet lays it out, pure: the ``?qry=`` matcher and the JSON answer
over the beans a daemon shows (no I/O; the server sends what :func:`render_jmx` returns)."""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Callable, Iterable

__all__ = ["jmx_query", "render_jmx"]

_OK = 200
_BAD_REQUEST = 400  # plain numbers: importing http would make this module impure


def jmx_query(text: str) -> Callable[[str], bool]:
    """A matcher for ``/jmx?qry=``: a JMX ObjectName pattern ``domain:k=v,k=v[,*]`` with globs."""
    domain, sep, rest = text.partition(":")
    parts = rest.split(",") if sep else []
    wanted = dict(part.partition("=")[::2] for part in parts if part != "*")
    any_other = "*" in parts
    if not sep or (not wanted and not any_other) or any("=" not in p for p in parts if p != "*"):
        raise ValueError(f"Invalid ObjectName pattern: {text}")

    def matches(name: str) -> bool:
        bean_domain, _, bean_rest = name.partition(":")
        props = dict(part.partition("=")[::2] for part in bean_rest.split(","))
        return (
            fnmatch.fnmatchcase(bean_domain, domain)
            and (any_other or set(props) == set(wanted))
            and all(k in props and fnmatch.fnmatchcase(props[k], v) for k, v in wanted.items())
        )

    return matches


def render_jmx(beans: Callable[[], Iterable[dict[str, object]]], qry: str) -> tuple[int, bytes]:
    """The status and JSON body of ``/jmx?qry=QRY`` over ``beans()`` (called only for a
    valid query): ``{"beans": [...]}`` of the matching beans, else 400 with
    ``{"result": "ERROR", "message": ...}``."""
    try:
        matches = jmx_query(qry)
    except ValueError as e:
        result: dict[str, object] = {"result": "ERROR", "message": str(e)}
        status = _BAD_REQUEST
    else:
        result = {"beans": [b for b in beans() if matches(b["name"])]}  # type: ignore[arg-type]
        status = _OK
    return status, json.dumps(result, indent=2, default=str).encode("utf-8")
