// The official TypeScript MCP SDK's client (@modelcontextprotocol/sdk, pinned by
// .ci/interop/package-lock.json) driving `odek mcp` over stdio: list the tools, call read_file,
// call run_task with a progress callback.
// Usage: node ts_client.mjs <sdk dir> <odek binary> <odek mcp args...>; prints one JSON object.
import { pathToFileURL } from "node:url";
import path from "node:path";

const [sdkDir, odek, ...args] = process.argv.slice(2);
const load = (relative) => import(pathToFileURL(path.join(sdkDir, relative)).href);
const { Client } = await load("dist/esm/client/index.js");
const { StdioClientTransport } = await load("dist/esm/client/stdio.js");

const transport = new StdioClientTransport({ command: odek, args: ["mcp", ...args], stderr: "inherit" });
const client = new Client({ name: "odek-interop-ts", version: "0.0.0" });
await client.connect(transport);
const report = { server: client.getServerVersion()?.name };
const tools = await client.listTools();
report.tools = tools.tools.map((tool) => tool.name);
const read = await client.callTool({ name: "read_file", arguments: { path: "notes.txt" } });
report.read_file = { isError: read.isError ?? false, text: read.content[0].text };
const progress = [];
const run = await client.callTool(
  { name: "run_task", arguments: { goal: "count the apples" } },
  undefined,
  { onprogress: (update) => progress.push(update) },
);
report.run_task = { isError: run.isError ?? false, envelope: JSON.parse(run.content[0].text) };
report.progress = progress;
await client.close();
console.log(JSON.stringify(report));
