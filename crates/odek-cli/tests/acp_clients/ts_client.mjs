// An editor's side of ACP on the official TypeScript SDK (@agentclientprotocol/sdk, its v1
// client app): starts `odek acp`, opens a session, switches it to "ask", prompts three times
// (an edit it allows, one it rejects, a command it cancels), loads a saved session, and prints
// what it saw as one JSON object.
// Usage: node ts_client.mjs <sdk package dir> <odek> <replay> <cwd> <saved session id>
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const [sdk, odek, replay, cwd, savedId] = process.argv.slice(2);
const acp = await import(pathToFileURL(`${sdk}/dist/v1/stable/acp.js`).href);
const child = spawn(odek, ["acp", "--provider", "replay", "--replay", replay, "--planning"], {
  cwd,
  stdio: ["pipe", "pipe", "inherit"],
});
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const seen = { updates: [], permissions: [] };
let answers = ["allow-once", "reject-once"];
let onToolCall = null;

const app = acp
  .client({ name: "odek-interop-ts" })
  .onRequest("session/request_permission", async ({ params }) => {
    seen.permissions.push({ toolCallId: params.toolCall.toolCallId, kinds: params.options.map((o) => o.kind) });
    const optionId = answers.shift() ?? "allow-once";
    return { outcome: { outcome: "selected", optionId } };
  })
  .onNotification("session/update", async ({ params }) => {
    seen.updates.push({ sessionId: params.sessionId, update: params.update });
    if (params.update.sessionUpdate === "tool_call" && onToolCall) {
      const call = onToolCall;
      onToolCall = null;
      call(params.update);
    }
  });

const result = await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request("initialize", { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
  const created = await ctx.request("session/new", { cwd, mcpServers: [] });
  const sessionId = created.sessionId;
  await ctx.request("session/set_mode", { sessionId, modeId: "ask" });
  const prompt = (text) => ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });
  const allowed = await prompt("edit the file");
  const rejected = await prompt("edit it again");
  const running = prompt("wait for it");
  await new Promise((resolve) => {
    onToolCall = resolve;
  });
  await ctx.notify("session/cancel", { sessionId });
  const cancelled = await running;
  const loaded = await ctx.request("session/load", { sessionId: savedId, cwd, mcpServers: [] });
  return {
    init,
    modes: created.modes,
    stops: [allowed.stopReason, rejected.stopReason, cancelled.stopReason],
    outcomes: [allowed, rejected, cancelled].map((r) => r._meta?.odek?.outcome),
    loaded: loaded !== undefined,
    sessionId,
  };
});
child.stdin.end();
process.stdout.write(JSON.stringify({ ...result, ...seen }) + "\n");
await new Promise((resolve) => child.on("exit", resolve));
