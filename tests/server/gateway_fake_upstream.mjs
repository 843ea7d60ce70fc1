// A tiny MCP server on stdio for tests/server/gateway_test.mjs: its tools misbehave on request.
// Tools: `note` (appends `text` to $FAKE_LOG and succeeds), `fail` (an isError result),
// `reject` (a JSON-RPC error), `crash` (exits mid-call), `stall` (sends log notifications and
// never answers), `fds` (lists its open files), `ask` (asks the client for sampling
// before answering), `hold` (answers an isError result once the file $FAKE_GO exists).
// $FAKE_DESC changes `note`'s description (a rug pull); $FAKE_GARBAGE makes it write a
// malformed line before each answer.
import { appendFileSync, existsSync, readdirSync, readlinkSync } from 'node:fs';
import { createInterface } from 'node:readline';

const desc = process.env.FAKE_DESC ?? 'Append a note to the log';
const tools = [
  { name: 'note', description: desc, _meta: { 'x/hint': 'not pinned' },
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } },
  { name: 'fail', description: 'Always fails', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } },
  { name: 'reject', description: 'Always a protocol error', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } },
  { name: 'crash', description: 'Exits mid-call', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } },
  { name: 'ask', description: 'Asks the client for sampling', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } },
  { name: 'stall', description: 'Logs for ever, never answers', inputSchema: { type: 'object' } },
  { name: 'fds', description: 'Lists what its open files are', inputSchema: { type: 'object' } },
  { name: 'unbound', description: 'Never bound', inputSchema: { type: 'object' } },
  { name: 'hold', description: 'Fails once told to', inputSchema: { type: 'object' } },
];
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
const log = (line) => { if (process.env.FAKE_LOG) appendFileSync(process.env.FAKE_LOG, line + '\n'); };
let pending = null;  // a tools/call waiting for the client's answer to `ask`

const rl = createInterface({ input: process.stdin });
rl.on('line', (line) => {
  const m = JSON.parse(line);
  if (process.env.FAKE_GARBAGE) process.stdout.write('this is {not json\n');
  if (m.method === undefined) {  // an answer to our request
    log(`answer ${JSON.stringify(m.error ?? m.result)}`);
    if (pending) { send({ jsonrpc: '2.0', id: pending, result: { content: [{ type: 'text', text: 'asked' }] } }); pending = null; }
    return;
  }
  if (m.id === undefined) return;  // a notification
  switch (m.method) {
    case 'initialize':
      return send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params.protocolVersion,
        capabilities: { tools: {}, resources: {} }, serverInfo: { name: 'fake', version: '1' } } });
    case 'tools/list':
      return send({ jsonrpc: '2.0', id: m.id, result: { tools } });
    case 'resources/list':
      return send({ jsonrpc: '2.0', id: m.id, result: { resources: [] } });
    case 'tools/call': {
      const { name, arguments: args } = m.params;
      log(`call ${name} ${JSON.stringify(args)}`);
      if (name === 'note') return send({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: 'noted' }] } });
      if (name === 'fail') return send({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: 'it failed' }], isError: true } });
      if (name === 'reject') return send({ jsonrpc: '2.0', id: m.id, error: { code: -32000, message: 'nope' } });
      if (name === 'crash') process.exit(3);
      if (name === 'fds') {
        const open = readdirSync('/proc/self/fd').map((fd) => { try { return readlinkSync(`/proc/self/fd/${fd}`); } catch { return ''; } });
        return send({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: open.join('\n') }] } });
      }
      if (name === 'stall') {
        log(`pid ${process.pid}`);
        setInterval(() => send({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'working' } }), 20);
        return;
      }
      if (name === 'hold') {
        const wait = setInterval(() => {
          if (!existsSync(process.env.FAKE_GO ?? '')) return;
          clearInterval(wait);
          send({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: 'held, failed' }], isError: true } });
        }, 20);
        return;
      }
      if (name === 'ask') {
        pending = m.id;
        return send({ jsonrpc: '2.0', id: 'up-1', method: 'sampling/createMessage', params: { messages: [], maxTokens: 1 } });
      }
      return send({ jsonrpc: '2.0', id: m.id, error: { code: -32602, message: `no tool ${name}` } });
    }
    default:
      return send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'no such method' } });
  }
});
