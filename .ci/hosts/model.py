#!/usr/bin/env python3
"""A scripted Anthropic Messages API on 127.0.0.1 for driving Claude Code without a model.

usage: model.py PORT TOOL ARGS_JSON LOG
The first turn that offers TOOL calls it with ARGS_JSON; the turn after its tool_result
answers with the result's text. Every other request gets a short text. Streams SSE when
asked (Claude Code does).
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT, TOOL, ARGS, LOG = int(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]


def log(line):
    with open(LOG, "a") as f:
        f.write(line + "\n")


def tool_result_text(messages):
    last = messages[-1] if messages else {}
    if last.get("role") != "user" or not isinstance(last.get("content"), list):
        return None
    for block in last["content"]:
        if block.get("type") == "tool_result":
            content = block.get("content")
            if isinstance(content, list):
                return " ".join(c.get("text", "") for c in content if isinstance(c, dict))
            return str(content)
    return None


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        if self.path.startswith("/v1/messages/count_tokens"):
            return self.json({"input_tokens": 10})
        tools = [t.get("name") for t in body.get("tools", [])]
        result = tool_result_text(body.get("messages", []))
        if result is not None:
            log(f"tool_result: {result}")
            blocks = [{"type": "text", "text": f"The tool said: {result}"}]
        elif any(name and name.endswith(TOOL) for name in tools):
            name = next(n for n in tools if n and n.endswith(TOOL))
            log(f"calling {name}")
            blocks = [{"type": "tool_use", "id": "toolu_01", "name": name, "input": ARGS}]
        else:
            blocks = [{"type": "text", "text": "ok"}]
        stop = "tool_use" if blocks[0]["type"] == "tool_use" else "end_turn"
        message = {"id": "msg_01", "type": "message", "role": "assistant", "model": body.get("model", "m"),
                   "content": blocks, "stop_reason": stop, "stop_sequence": None,
                   "usage": {"input_tokens": 10, "output_tokens": 10}}
        if not body.get("stream"):
            return self.json(message)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()

        def event(kind, data):
            self.wfile.write(f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode())

        event("message_start", {"type": "message_start", "message": {**message, "content": [], "stop_reason": None}})
        for i, block in enumerate(blocks):
            if block["type"] == "text":
                event("content_block_start", {"type": "content_block_start", "index": i,
                                              "content_block": {"type": "text", "text": ""}})
                event("content_block_delta", {"type": "content_block_delta", "index": i,
                                              "delta": {"type": "text_delta", "text": block["text"]}})
            else:
                event("content_block_start", {"type": "content_block_start", "index": i,
                                              "content_block": {**block, "input": {}}})
                event("content_block_delta", {"type": "content_block_delta", "index": i,
                                              "delta": {"type": "input_json_delta",
                                                        "partial_json": json.dumps(block["input"])}})
            event("content_block_stop", {"type": "content_block_stop", "index": i})
        event("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                "usage": {"output_tokens": 10}})
        event("message_stop", {"type": "message_stop"})
        self.wfile.flush()

    def json(self, value):
        data = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
