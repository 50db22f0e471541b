// A host of heddle's MCP facade built on the TypeScript SDK
// (@modelcontextprotocol/sdk): no one at heddle wrote the client. Driven by
// integration/facade_test.go.
//
//   node host.mjs stdio HEDDLE_BINARY ARG…   heddle mcp, started as a stdio server
//   node host.mjs http URL SUBJECT           serve's /mcp/{agent}, as SUBJECT (X-Heddle-Subject)
//
// It lists the tools, calls echo, calls the destructive add_tool twice —
// declining the first elicitation and accepting the second —, waits for
// notifications/tools/list_changed after the upstream change, lists again
// and calls the new tool. It prints one JSON report on stdout and exits 0;
// the Go test judges the report.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const [mode, ...rest] = process.argv.slice(2);
let transport;
if (mode === 'stdio') {
  const [command, ...args] = rest;
  transport = new StdioClientTransport({ command, args, stderr: 'inherit' });
} else if (mode === 'http') {
  const [url, subject] = rest;
  transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { 'X-Heddle-Subject': subject } },
  });
} else {
  console.error('usage: host.mjs stdio COMMAND ARG… | http URL SUBJECT');
  process.exit(2);
}

const client = new Client({ name: 'facade-host', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });

const answers = ['decline', 'accept'];
const elicitations = [];
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  const action = answers.shift() ?? 'decline';
  elicitations.push({ message: req.params.message, action });
  return action === 'accept' ? { action, content: {} } : { action };
});

let changed = 0;
let onChange = () => {};
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  changed++;
  onChange();
});

const code = (res) => res?._meta?.code ?? '';
const text = (res) => (res?.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('');
const names = async () => (await client.listTools()).tools.map((t) => t.name).sort();

const report = {};
await client.connect(transport);
report.server = client.getServerVersion()?.name;
report.protocolVersion = transport.protocolVersion ?? '';
const { tools } = await client.listTools();
report.tools = tools.map((t) => t.name).sort();
report.annotations = Object.fromEntries(tools.map((t) => [t.name, t.annotations ?? null]));
const echo = await client.callTool({ name: 'echo', arguments: { text: 'from typescript' } });
report.echo = { isError: !!echo.isError, text: text(echo) };

const declined = await client.callTool({ name: 'add_tool', arguments: { name: 'fresh' } });
report.declined = { isError: !!declined.isError, code: code(declined) };

const changedBefore = changed;
const notified = new Promise((resolve) => {
  onChange = resolve;
  setTimeout(resolve, 10000);
});
const accepted = await client.callTool({ name: 'add_tool', arguments: { name: 'fresh' } });
report.accepted = { isError: !!accepted.isError, code: code(accepted), text: text(accepted) };
await notified;
report.listChanged = changed > changedBefore;
report.toolsAfter = await names();
const fresh = await client.callTool({ name: 'fresh', arguments: { k: 'v' } });
report.fresh = { isError: !!fresh.isError, code: code(fresh) };
report.elicitations = elicitations;

await client.close();
process.stdout.write(JSON.stringify(report) + '\n');
process.exit(0);
