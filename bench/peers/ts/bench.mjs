// The TypeScript SDK peer of odek-bench: the SDK's own Client over its StdioClientTransport,
// used as its documentation shows. Run by `odek-bench probe`, never by hand:
//
//   node bench.mjs throughput <calls> <warmup> -- <server command...>
//   node bench.mjs memory <line bytes> <cap bytes, 0 for the SDK default> <newline every> -- <server command...>
//
// Prints one JSON line in the probe's report shapes; the probe adds peak RSS and timeouts.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

// The probe enforces the scenario timeout; the SDK's own 60 s default must not cut in first.
const REQUEST_TIMEOUT_MS = 3_600_000;

function parseArgs(argv) {
  const separator = argv.indexOf('--');
  if (separator < 1 || separator === argv.length - 1) {
    throw new Error('usage: bench.mjs <throughput|memory> <args...> -- <server command...>');
  }
  return { mode: argv[0], params: argv.slice(1, separator).map(Number), server: argv.slice(separator + 1) };
}

async function connect(server, maxBufferSize) {
  const options = { command: server[0], args: server.slice(1), stderr: 'inherit' };
  // The transport's read-buffer cap (STDIO_DEFAULT_MAX_BUFFER_SIZE, 10 MiB, when unset).
  if (maxBufferSize > 0) options.maxBufferSize = maxBufferSize;
  const transport = new StdioClientTransport(options);
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

async function throughput(server, calls, warmup) {
  const client = await connect(server, 0);
  for (let i = 0; i < warmup; i++) await echoOnce(client);
  const cpuStarted = process.cpuUsage();
  const started = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) await echoOnce(client);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const cpu = process.cpuUsage(cpuStarted);
  await client.close();
  return { kind: 'throughput', calls, seconds, cpu_seconds: (cpu.user + cpu.system) / 1e6 };
}

async function memory(server, lineBytes, maxBufferSize, newlineEvery) {
  const client = await connect(server, maxBufferSize);
  const started = performance.now();
  try {
    const args = newlineEvery > 0 ? { bytes: lineBytes, newline_every: newlineEvery } : { bytes: lineBytes };
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

const { mode, params, server } = parseArgs(process.argv.slice(2));
const report = mode === 'throughput' ? await throughput(server, params[0], params[1]) : await memory(server, params[0], params[1], params[2]);
process.stdout.write(`${JSON.stringify(report)}\n`, () => process.exit(0));
