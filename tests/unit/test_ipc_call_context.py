"""ipc.call_context: one thread-local for every RPC server's call and connection."""

from __future__ import annotations

import threading

import pytest

from hadoop_qjm.ipc import call_context

pytestmark = pytest.mark.timeout(30)


def test_a_call_sees_its_ip_and_its_connections_user_until_they_end() -> None:
    connection = object()
    call_context.enter_connection(connection, "nn1")
    call_context.enter_call("10.0.0.1")
    try:
        assert call_context.remote_ip() == "10.0.0.1"
        assert call_context.remote_user() == "nn1"
        assert call_context.remote_connection() is connection
    finally:
        call_context.leave_call()
    assert call_context.remote_ip() is None
    assert call_context.remote_user() == "nn1"  # the connection outlives the call
    call_context.leave_connection()
    assert (call_context.remote_user(), call_context.remote_connection()) == (None, None)


def test_a_handler_gives_its_slot_back_once() -> None:
    slots = threading.BoundedSemaphore(1)
    slots.acquire()
    call_context.enter_call("10.0.0.1", slots)
    call_context.release_handler_slot()
    call_context.release_handler_slot()  # nothing held any more: no second release
    assert call_context.leave_call() is None  # the dispatcher has nothing to give back
    assert slots.acquire(blocking=False)
