// The TypeScript SDK peer of odek-bench: the SDK's own Client over its StdioClientTransport, or
// its StreamableHTTPClientTransport given `--url`, used as its documentation shows. Run by
// `odek-bench probe`, never by hand:
//
//   node bench.mjs throughput <calls> <warmup> (-- <server command...> | --url <url>)
//   node bench.mjs memory <line bytes> <cap bytes, 0 for the SDK default> <newline every> <event stream 0|1>
//       (-- <server command...> | --url <url>)
//
// Over HTTP the transport has no cap to set (it reads a whole JSON body with `response.json()`).
// Prints one JSON line in the probe's report shapes; the probe adds peak RSS and timeouts.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

// The probe enforces the scenario timeout; the SDK's own 60 s default must not cut in first.
const REQUEST_TIMEOUT_MS = 3_600_000;

function parseArgs(argv) {
  const url = argv.indexOf('--url');
  if (url >= 1 && url === argv.length - 2) {
    return { mode: argv[0], params: argv.slice(1, url).map(Number), target: { url: argv[url + 1] } };
  }
  const separator = argv.indexOf('--');
  if (separator < 1 || separator === argv.length - 1) {
    throw new Error('usage: bench.mjs <throughput|memory> <args...> (-- <server command...> | --url <url>)');
  }
  return { mode: argv[0], params: argv.slice(1, separator).map(Number), target: { server: argv.slice(separator + 1) } };
}

function transportFor(target, maxBufferSize) {
  if (target.url) return new StreamableHTTPClientTransport(new URL(target.url));
  const server = target.server;
  const options = { command: server[0], args: server.slice(1), stderr: 'inherit' };
  // The transport's read-buffer cap (STDIO_DEFAULT_MAX_BUFFER_SIZE, 10 MiB, when unset).
  if (maxBufferSize > 0) options.maxBufferSize = maxBufferSize;
  return new StdioClientTransport(options);
}

async function connect(target, maxBufferSize) {
  const transport = transportFor(target, maxBufferSize);
  const client = new Client({ name: 'odek-bench-typescript-sdk', version: '0.0.0' });
  await client.connect(transport);
  return client;
}

async function echoOnce(client) {
  const result = await client.callTool({ name: 'echo', arguments: { text: 'hello' } });
  if (result.content?.[0]?.text !== 'hello') {
    throw new Error(`unexpected echo result ${JSON.stringify(result)}`);
  }
}

async function throughput(target, calls, warmup) {
  const client = await connect(target, 0);
  for (let i = 0; i < warmup; i++) await echoOnce(client);
  const cpuStarted = process.cpuUsage();
  const started = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) await echoOnce(client);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const cpu = process.cpuUsage(cpuStarted);
  await client.close();
  return { kind: 'throughput', calls, seconds, cpu_seconds: (cpu.user + cpu.system) / 1e6 };
}

async function memory(target, lineBytes, maxBufferSize, newlineEvery, eventStream) {
  const client = await connect(target, maxBufferSize);
  const started = performance.now();
  try {
    const args = { bytes: lineBytes };
    if (newlineEvery > 0) args.newline_every = newlineEvery;
    if (eventStream) args.event_stream = true;
    const result = await client.callTool({ name: 'big_line', arguments: args }, undefined, {
      timeout: REQUEST_TIMEOUT_MS,
    });
    const chars = (result.content ?? []).reduce((sum, item) => sum + (item.text?.length ?? 0), 0);
    return { kind: 'memory', outcome: 'ok', elapsed_ms: performance.now() - started, detail: `text of ${chars} chars` };
  } catch (error) {
    const detail = String(error?.message ?? error).slice(0, 300);
    return { kind: 'memory', outcome: 'error', elapsed_ms: performance.now() - started, detail };
  }
}

const { mode, params, target } = parseArgs(process.argv.slice(2));
const report =
  mode === 'throughput'
    ? await throughput(target, params[0], params[1])
    : await memory(target, params[0], params[1], params[2], params[3] === 1);
process.stdout.write(`${JSON.stringify(report)}\n`, () => process.exit(0));
