#!/usr/bin/env python3
"""The service around the bug: two clerks on two keep-alive connections.
One creates an item and reads it back, the other creates one and lists
them; then the first splits the lamp's price in 2, and in 0 parts (the
incident: the server closes the connection without answering).
Usage: client.py HOST:PORT"""
import http.client
import json
import sys

host, port = sys.argv[1].rsplit(":", 1)
a = http.client.HTTPConnection(host, int(port), timeout=10)
b = http.client.HTTPConnection(host, int(port), timeout=10)


def call(conn, method, path, body=None):
    headers = {"User-Agent": "clerk/1"}
    data = None
    if body is not None:
        data = json.dumps(body, separators=(",", ":"))
        headers["Content-Type"] = "application/json"
    conn.request(method, path, body=data, headers=headers)
    resp = conn.getresponse()
    return resp.status, resp.read()


call(a, "POST", "/api/v1/items", {"name": "lamp", "price_cents": 1999, "quantity": 1})
call(a, "GET", "/api/v1/items/1")
call(b, "POST", "/api/v1/items", {"name": "desk", "price_cents": 12000, "quantity": 2})
call(b, "GET", "/api/v1/items")
call(a, "POST", "/api/v1/items/1/split", {"parts": 2})
call(b, "GET", "/health")
try:
    call(a, "POST", "/api/v1/items/1/split", {"parts": 0})
except (http.client.HTTPException, OSError) as e:
    print("the split failed:", e, file=sys.stderr)
