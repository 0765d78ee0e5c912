"""The Python SDK peer of odek-bench: the `mcp` package's `Client` over stdio, used as its
documentation shows (mcp 2.x; in 1.x the same loop is `stdio_client` + `ClientSession`). Run by
`odek-bench probe`, never by hand:

    python bench.py throughput <calls> <warmup> -- <server command...>
    python bench.py memory <line bytes> <cap bytes, ignored: the SDK has no cap> <newline every> <event stream, ignored: HTTP only> -- <server command...>

Prints one JSON line in the probe's report shapes; the probe adds peak RSS and timeouts.
"""

import asyncio
import json
import os
import sys
import time

from mcp import Client, StdioServerParameters


def parse_args(argv):
    if "--" not in argv or argv.index("--") < 1 or argv.index("--") == len(argv) - 1:
        raise SystemExit("usage: bench.py <throughput|memory> <args...> -- <server command...>")
    separator = argv.index("--")
    return argv[0], [int(value) for value in argv[1:separator]], argv[separator + 1 :]


def connect(server):
    # "legacy": the initialize handshake, which the echo server speaks; no server/discover probe.
    return Client(StdioServerParameters(command=server[0], args=server[1:]), mode="legacy")


async def echo_once(client):
    result = await client.call_tool("echo", {"text": "hello"})
    if not result.content or getattr(result.content[0], "text", None) != "hello":
        raise RuntimeError(f"unexpected echo result {result!r}")


async def throughput(server, calls, warmup):
    async with connect(server) as client:
        for _ in range(warmup):
            await echo_once(client)
        cpu_started = time.process_time()
        started = time.perf_counter()
        for _ in range(calls):
            await echo_once(client)
        seconds = time.perf_counter() - started
        cpu_seconds = time.process_time() - cpu_started
    return {"kind": "throughput", "calls": calls, "seconds": seconds, "cpu_seconds": cpu_seconds}


async def memory(server, line_bytes, newline_every):
    async with connect(server) as client:
        started = time.perf_counter()
        try:
            arguments = {"bytes": line_bytes}
            if newline_every > 0:
                arguments["newline_every"] = newline_every
            result = await client.call_tool("big_line", arguments)
            chars = sum(len(getattr(item, "text", "") or "") for item in result.content)
            outcome, detail = ("error" if result.is_error else "ok"), f"text of {chars} chars"
        except Exception as error:  # the SDK's own failure is the result being measured
            outcome, detail = "error", f"{type(error).__name__}: {error}"[:300]
        elapsed_ms = (time.perf_counter() - started) * 1000
        report = {"kind": "memory", "outcome": outcome, "elapsed_ms": elapsed_ms, "detail": detail}
        print(json.dumps(report), flush=True)
        # Skip the transport's orderly shutdown: the server may still be streaming.
        os._exit(0)


def main():
    mode, params, server = parse_args(sys.argv[1:])
    if mode == "throughput":
        report = asyncio.run(throughput(server, params[0], params[1]))
    else:
        report = asyncio.run(memory(server, params[0], params[2]))
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
