"""The official Python MCP SDK's client (mcp 1.x, pinned by .ci/interop/requirements.lock) driving
`odek mcp` over stdio: list the tools, call read_file, call run_task with a progress callback.
Usage: python_client.py <odek binary> <odek mcp args...>; prints one JSON object on stdout."""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main() -> None:
    odek, args = sys.argv[1], sys.argv[2:]
    params = StdioServerParameters(command=odek, args=["mcp", *args])
    report = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            report["protocol"] = init.protocolVersion
            report["server"] = init.serverInfo.name
            tools = await session.list_tools()
            report["tools"] = [tool.name for tool in tools.tools]
            read_result = await session.call_tool("read_file", {"path": "notes.txt"})
            report["read_file"] = {"isError": read_result.isError, "text": read_result.content[0].text}
            progress = []

            async def on_progress(value, total, message):
                progress.append({"progress": value, "total": total, "message": message})

            run = await session.call_tool(
                "run_task", {"goal": "count the apples"}, progress_callback=on_progress
            )
            report["run_task"] = {"isError": run.isError, "envelope": json.loads(run.content[0].text)}
            report["progress"] = progress
    print(json.dumps(report))


asyncio.run(main())
