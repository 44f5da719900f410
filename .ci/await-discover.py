#!/usr/bin/env python3
"""Waits until the MCP server at URL answers server/discover (2026-07-28), at most SECONDS.

usage: await-discover.py URL NAME SECONDS. Exit 1, saying why, when it never does or when it
answers with an error. Shared by the CI stages that start a server of their own.
"""
import json
import sys
import time
import urllib.request

url, name, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
body = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {"_meta": {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {}}}}).encode()
headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
           "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"}
deadline = time.time() + seconds
while True:
    try:
        answer = json.loads(urllib.request.urlopen(urllib.request.Request(url, body, headers), timeout=60).read())
        break
    except Exception as e:
        if time.time() > deadline:
            sys.exit(f"the {name} server did not answer at {url}: {e}")
        time.sleep(0.2)
if "result" not in answer:
    sys.exit(f"the {name} server's answer to server/discover: {answer}")
