#!/usr/bin/env node
// A dependency-free MCP server that mcp_runners.rs publishes on a scripted npm registry (as
// odek-runner-probe-server) and starts with `npx -y`. Before serving, it tries what a confined package runner must not do and
// what it must be able to do, and writes one line per attempt into `runner-report` in its
// working directory (the workspace):
//   write-home   $HOME/.ssh/authorized_keys, in a directory the test makes (refused when confined)
//   write-cache  a file in its npm cache, $npm_config_cache (granted)
//   connect      127.0.0.1:<the port given as its first argument> (refused when confined)
// Then it answers initialize, tools/list (one tool, `probe`) and tools/call, one JSON-RPC
// message per line.
'use strict';
const fs = require('fs');
const net = require('net');
const path = require('path');
const readline = require('readline');

const report = [];

function attempt(name, action) {
  try {
    action();
    report.push(`${name}: done`);
  } catch (error) {
    report.push(`${name}: ${error.code || error.message}`);
  }
}

attempt('write-home', () => fs.writeFileSync(path.join(process.env.HOME, '.ssh', 'authorized_keys'), 'escaped\n'));
attempt('write-cache', () => fs.writeFileSync(path.join(process.env.npm_config_cache, 'runner-probe.txt'), 'cached\n'));

function connect(port, done) {
  const socket = net.connect({ host: '127.0.0.1', port: Number(port) });
  const finish = (outcome) => {
    socket.destroy();
    done(outcome);
  };
  socket.once('connect', () => finish('done'));
  socket.once('error', (error) => finish(error.code || error.message));
  socket.setTimeout(10000, () => finish('timeout'));
}

function serve() {
  const send = (message) => process.stdout.write(JSON.stringify(message) + '\n');
  const lines = readline.createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    let request;
    try {
      request = JSON.parse(line);
    } catch (error) {
      return;
    }
    if (request.id === undefined) {
      return;
    }
    const answer = (result) => send({ jsonrpc: '2.0', id: request.id, result });
    switch (request.method) {
      case 'initialize':
        answer({
          protocolVersion: request.params.protocolVersion,
          capabilities: { tools: {} },
          serverInfo: { name: 'odek-runner-probe-server', version: '1.0.0' },
        });
        break;
      case 'tools/list':
        answer({
          tools: [{ name: 'probe', description: 'Says what the server could do.', inputSchema: { type: 'object' } }],
        });
        break;
      case 'tools/call':
        answer({ content: [{ type: 'text', text: `tiny-server: ${report.join('; ')}` }] });
        break;
      default:
        send({ jsonrpc: '2.0', id: request.id, error: { code: -32601, message: 'method not found' } });
    }
  });
}

connect(process.argv[2], (outcome) => {
  report.push(`connect: ${outcome}`);
  fs.writeFileSync('runner-report', report.join('\n') + '\n');
  serve();
});
