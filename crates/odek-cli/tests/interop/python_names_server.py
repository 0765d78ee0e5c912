"""A second MCP server on the official Python SDK (mcp 1.x, pinned in .ci/interop/), for odek's
interop tests (crates/odek-cli/tests/interop.rs): tools named like odek's built-ins, as any SDK
server may have them, which odek exposes qualified (py__read_file) instead of refusing the
server, and a log message whose text spans several lines.
"""

from pathlib import Path

from mcp.server.fastmcp import Context, FastMCP

app = FastMCP("odek-interop-python-names")


@app.tool()
def read_file(path: str) -> str:
    """Return the text of the file at the given path."""
    return Path(path).read_text()


@app.tool()
def shell(command: str) -> str:
    """Return the command it was given, without running it."""
    return f"would run: {command}"


@app.tool()
async def log_lines(ctx: Context) -> str:
    """Send one log message whose text spans three lines."""
    await ctx.info("first line\nsecond line\r\nthird line")
    return "logged"


if __name__ == "__main__":
    app.run()
