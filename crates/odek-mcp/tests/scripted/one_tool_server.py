"""A minimal MCP server over stdio for the odek-mcp tests: it lists one tool, "probe", described
by the JSON file named by its first argument ("outputSchema" and "annotations" when given), and
answers every tools/call with that file's "result" line, written as given (its bytes, not
re-encoded, so a test can send escaped keys) — or with its "resultWithUnknownArgument" line when
the arguments carry `odek ext check`'s unknown argument and the file gives one. When the file
names a "callLog", every tools/call appends its arguments there as one line. Standard library
only; one request at a time."""

import json
import sys

with open(sys.argv[1], encoding="utf-8") as spec_file:
    spec = json.load(spec_file)

tool = {"name": "probe", "description": "A probe tool.", "inputSchema": {"type": "object"}}
for member in ("outputSchema", "annotations"):
    if member in spec:
        tool[member] = spec[member]


def send(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


for raw in sys.stdin:
    try:
        message = json.loads(raw)
    except ValueError:
        continue
    if "id" not in message or "method" not in message:
        continue
    request_id = json.dumps(message["id"])
    method = message["method"]
    if method == "initialize":
        result = json.dumps({"protocolVersion": "2025-03-26", "capabilities": {"tools": {}},
                             "serverInfo": {"name": "one-tool", "version": "1"}})
    elif method == "tools/list":
        result = json.dumps({"tools": [tool]})
    elif method == "tools/call":
        if "callLog" in spec:
            with open(spec["callLog"], "a", encoding="utf-8") as log:
                log.write(json.dumps(message.get("params", {}).get("arguments")) + "\n")
        arguments = message.get("params", {}).get("arguments") or {}
        if "odek_check_unknown_argument" in arguments and "resultWithUnknownArgument" in spec:
            result = spec["resultWithUnknownArgument"]
        else:
            result = spec["result"]
    elif method == "ping":
        result = "{}"
    else:
        send('{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}' % request_id)
        continue
    send('{"jsonrpc":"2.0","id":%s,"result":%s}' % (request_id, result))
