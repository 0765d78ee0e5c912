"""An MCP server written with the official Python SDK (mcp 1.x, pinned in .ci/interop/), for
odek's interop tests (crates/odek-cli/tests/interop.rs).

It stays close to how people write servers with the SDK -- decorated functions, docstrings as
descriptions -- and adds what the tests need to see from a real SDK: a structured result with an
output schema, a tool error, an odek.tool-result/v1 envelope with an artifact reference, requests
sent to the client (the SDK numbers them from 0), log notifications, a tool-list change, a tool
that disappears without notice, a slow tool and a crash.

Artifacts are written under the directory named by INTEROP_ARTIFACT_DIR.
"""

import hashlib
import json
import os
from pathlib import Path

import anyio
from mcp import types
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.shared.exceptions import McpError

app = FastMCP(
    "odek-interop-python",
    instructions="Test server for odek's interop suite. Every tool is deterministic except pid.",
)


@app.tool(
    title="Add two integers",
    annotations=types.ToolAnnotations(readOnlyHint=True, idempotentHint=True, openWorldHint=False),
)
def add(a: int, b: int) -> int:
    """Add two integers and return the sum."""
    return a + b


@app.tool(title="Echo")
def echo(text: str) -> str:
    """Return the given text unchanged."""
    return text


@app.tool()
def fail(message: str = "the tool failed") -> str:
    """Always fail with the given message."""
    raise ToolError(message)


@app.tool(title="Write a report")
def write_report(name: str = "report", content: str = "interop report\n") -> str:
    """Write a text report file and return a short summary that references it as an artifact."""
    root = Path(os.environ["INTEROP_ARTIFACT_DIR"]).resolve()
    path = root / f"{name}.txt"
    data = content.encode()
    path.write_bytes(data)
    envelope = {
        "schema": "odek.tool-result/v1",
        "text": f"Wrote report {name} ({len(data)} bytes).",
        "artifacts": [
            {
                "schema": "odek.artifact-ref/v1",
                "id": name,
                "uri": path.as_uri(),
                "media_type": "text/plain",
                "sha256": hashlib.sha256(data).hexdigest(),
                "size_bytes": len(data),
                "summary": "The full report",
            }
        ],
    }
    return json.dumps(envelope)


@app.tool()
async def talk_to_client(ctx: Context, pings: int = 1) -> str:
    """Log to the client, ping it, then ask it for a sampling completion it does not offer."""
    await ctx.info("talking to the client")
    await ctx.session.send_log_message(level="warning", data={"step": 1, "of": 2}, logger="interop")
    for _ in range(pings):
        await ctx.session.send_ping()
    request = types.ServerRequest(
        types.CreateMessageRequest(
            params=types.CreateMessageRequestParams(
                messages=[types.SamplingMessage(role="user", content=types.TextContent(type="text", text="hi"))],
                maxTokens=1,
            )
        )
    )
    try:
        await ctx.session.send_request(request, types.CreateMessageResult)
    except McpError as err:
        refusal = f"MCP error {err.error.code}: {err.error.message}"
    else:
        refusal = "no error"
    return f"{pings} ping(s) answered; sampling/createMessage refused with {refusal}"


@app.tool()
async def grow(ctx: Context) -> str:
    """Add the tool extra and tell the client that the tool list changed."""
    app.add_tool(extra, name="extra", description="Added at run time by grow.")
    await ctx.session.send_tool_list_changed()
    return "extra added"


def extra() -> str:
    return "extra called"


@app.tool()
def retire(tool: str) -> str:
    """Remove a tool without telling the client."""
    app.remove_tool(tool)
    return f"{tool} removed"


@app.tool()
async def sleep(seconds: float) -> str:
    """Sleep for the given number of seconds."""
    await anyio.sleep(seconds)
    return f"slept {seconds} s"


@app.tool()
def crash(code: int = 3) -> str:
    """Exit the server process at once with the given status, without replying."""
    os._exit(code)


@app.tool()
def pid() -> int:
    """Return the server's process id."""
    return os.getpid()


if __name__ == "__main__":
    app.run()
