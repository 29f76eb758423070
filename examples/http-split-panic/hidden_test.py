#!/usr/bin/env python3
"""The hidden test a task author would write for the failure alone:
splitting item 1 into 0 parts answers 422. Usage: hidden_test.py BUILD"""
import http.client
import json
import os
import socket
import subprocess
import sys
import time

s = socket.socket()
s.bind(("127.0.0.1", 0))
port = s.getsockname()[1]
s.close()
env = dict(os.environ, PORT=str(port), RUST_BACKTRACE="0")
proc = subprocess.Popen([sys.argv[1]], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("POST", "/api/v1/items", body=json.dumps({"name": "lamp", "price_cents": 1999, "quantity": 1}),
              headers={"Content-Type": "application/json"})
    c.getresponse().read()
    c.request("POST", "/api/v1/items/1/split", body=json.dumps({"parts": 0}), headers={"Content-Type": "application/json"})
    status = c.getresponse().status
    if status != 422:
        print(f"split into 0 parts answered {status}, want 422", file=sys.stderr)
        sys.exit(1)
except (http.client.HTTPException, OSError) as e:
    print(f"split into 0 parts failed: {e}", file=sys.stderr)
    sys.exit(1)
finally:
    proc.kill()
    proc.wait()
