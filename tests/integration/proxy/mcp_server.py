"""A small MCP server over streamable HTTP for the body-rules tests (issue 28).

usage: mcp_server.py PORT CALLS_FILE [CERT KEY]

POST /mcp takes one JSON-RPC message or a batch. initialize, tools/list and tools/call
(tools: search, send_mail, shell) are answered; a tools/call is answered as an SSE stream
(text/event-stream), as streamable-HTTP servers may, everything else as JSON; a body
holding only notifications or responses gets 202. Every method the server acts on is
appended to CALLS_FILE ("tools/call search"), so a test can tell what reached it. With
CERT and KEY it serves HTTPS (for the inspected tests)."""
import json
import ssl
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[1])
CALLS = sys.argv[2]
TOOLS = [{"name": n, "inputSchema": {"type": "object"}} for n in ("search", "send_mail", "shell")]


def answer(message):
    method = message.get("method")
    if method is None or "id" not in message:
        return None
    with open(CALLS, "a") as f:
        tool = message.get("params", {}).get("name") if method == "tools/call" else None
        f.write(method + (" " + tool if tool else "") + "\n")
    if method == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "test-mcp", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        params = message.get("params", {})
        result = {"content": [{"type": "text", "text": "ran " + params.get("name", "?") + " with " +
                               json.dumps(params.get("arguments", {}), sort_keys=True)}]}
    else:
        return {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "no method " + method}}
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, content_type, body):
        data = body.encode()
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        try:
            message = json.loads(body)
        except ValueError:
            return self.send(400, "application/json", '{"jsonrpc":"2.0","id":null,"error":{"code":-32700}}')
        messages = message if isinstance(message, list) else [message]
        answers = [a for a in (answer(m) for m in messages) if a is not None]
        if not answers:
            return self.send(202, None, "")
        out = answers if isinstance(message, list) else answers[0]
        if any(m.get("method") == "tools/call" for m in messages):
            return self.send(200, "text/event-stream", "event: message\ndata: " + json.dumps(out) + "\n\n")
        self.send(200, "application/json", json.dumps(out))


server = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
if len(sys.argv) > 4:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[3], sys.argv[4])
    server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
