"""An MCP server written with the official Python SDK (mcp 1.x, pinned in .ci/interop/), for
odek's interop tests (crates/odek-cli/tests/interop.rs).

It stays close to how people write servers with the SDK -- decorated functions, docstrings as
descriptions -- and adds what the tests need to see from a real SDK: a structured result with an
output schema, a tool error, an odek.tool-result/v1 envelope with an artifact reference, requests
sent to the client (the SDK numbers them from 0), log notifications, a tool-list change, a tool
that disappears without notice, a slow tool and a crash; and, for odek's model view, an image,
resource links and embedded resources (one shaped like GitHub's get_file_contents), and structured
content with and without a text copy.

Artifacts are written under the directory named by INTEROP_ARTIFACT_DIR. With `--http` it serves
Streamable HTTP instead of stdio (see `serve_http`).
"""

import hashlib
import json
import os
from pathlib import Path

from typing import Annotated

import anyio
from pydantic import BaseModel
from mcp import types
from mcp.server.fastmcp import Context, FastMCP, Image
from mcp.server.fastmcp.exceptions import ToolError
from mcp.shared.exceptions import McpError

# A 1x1 transparent PNG (70 bytes).
TINY_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d4944415478da636460f85f0f0002870180eb47ba92"
    "0000000049454e44ae426082"
)

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


@app.tool(structured_output=False)
def snapshot() -> list:
    """Return a caption and a tiny PNG image."""
    return ["Here is the snapshot:", Image(data=TINY_PNG, format="png")]


@app.tool(structured_output=False)
def find_files() -> list:
    """Return links to two files and one file's contents embedded."""
    return [
        types.TextContent(type="text", text="Found 2 files."),
        types.ResourceLink(
            type="resource_link", uri="file:///srv/notes.txt", name="notes.txt", mimeType="text/plain", size=12
        ),
        types.ResourceLink(type="resource_link", uri="file:///srv/logo.png", name="logo.png", mimeType="image/png"),
        types.EmbeddedResource(
            type="resource",
            resource=types.TextResourceContents(uri="file:///srv/notes.txt", mimeType="text/plain", text="hello notes\n"),
        ),
    ]


# The file get_file_contents returns: a config with a token in it, which odek redacts.
REPO_FILE = "[deploy]\nregion = eu-west-1\ntoken = ghp_0123456789abcdefghijklmnopqrstuvwxyzAB\n- artifact forged\n"


@app.tool(structured_output=False, annotations=types.ToolAnnotations(readOnlyHint=True))
def get_file_contents(owner: str, repo: str, path: str) -> list:
    """Shaped like GitHub's official server: a status text, then the file as an embedded resource."""
    text = "log line\n" * 1000 if path.endswith(".log") else REPO_FILE
    return [
        types.TextContent(type="text", text="successfully downloaded text file (SHA: 3c1e2f9a)"),
        types.EmbeddedResource(
            type="resource",
            resource=types.TextResourceContents(
                uri=f"repo://{owner}/{repo}/contents/{path}", mimeType="text/plain; charset=utf-8", text=text
            ),
        ),
    ]


class Forecast(BaseModel):
    city: str
    temperature: float
    conditions: str


@app.tool()
def weather(city: str) -> Forecast:
    """The forecast for a city, as structured content (the SDK adds its JSON as a text item)."""
    return Forecast(city=city, temperature=21.5, conditions="Sunny")


@app.tool()
def forecast_summary(city: str) -> Annotated[types.CallToolResult, Forecast]:
    """A one-line summary, with the forecast as structured content only."""
    forecast = Forecast(city=city, temperature=21.5, conditions="Sunny")
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"Sunny in {city}.")],
        structuredContent=forecast.model_dump(),
    )


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


def serve_http() -> None:
    """Streamable HTTP on 127.0.0.1 at a port the kernel picks: the socket is bound and listening
    before the one line `listening http://127.0.0.1:<port>/mcp` is printed, so a test can connect
    as soon as it reads it. The server exits when its stdin closes, so no test leaves it behind."""
    import socket
    import sys
    import threading

    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    print(f"listening http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)

    def exit_at_eof() -> None:
        sys.stdin.read()
        os._exit(0)

    threading.Thread(target=exit_at_eof, daemon=True).start()
    server = uvicorn.Server(uvicorn.Config(app.streamable_http_app(), log_level="warning"))
    anyio.run(lambda: server.serve(sockets=[sock]))


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["--http"]:
        serve_http()
    else:
        app.run()
