// A host of the shipped example built on the TypeScript SDK
// (@modelcontextprotocol/sdk): no one at heddle wrote the client. Driven by
// integration/example_hosts_test.go, from a directory holding the example's
// config/, agents/ and bin/.
//
//   node example.mjs COMMAND ARG…   e.g. bin/heddle mcp catalog-assistant
//
// It starts COMMAND as a stdio server, lists its tools, searches the
// catalogue (search_products) and asks for a product that does not exist
// (get_product), then prints one JSON report on stdout and exits 0; the Go
// test judges the report.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [command, ...args] = process.argv.slice(2);
if (!command) {
  console.error('usage: example.mjs COMMAND ARG…');
  process.exit(2);
}
const transport = new StdioClientTransport({ command, args, stderr: 'inherit' });
const client = new Client({ name: 'example-host', version: '1.0.0' });

const report = {};
await client.connect(transport);
report.server = client.getServerVersion()?.name;
const { tools } = await client.listTools();
report.tools = tools.map((t) => t.name).sort();
report.readOnly = Object.fromEntries(tools.map((t) => [t.name, t.annotations?.readOnlyHint === true]));
// The results as they came: content, structuredContent, isError, _meta.
report.search = await client.callTool({ name: 'search_products', arguments: { query: 'managed database' } });
report.missing = await client.callTool({ name: 'get_product', arguments: { id: 'P-999' } });

await client.close();
process.stdout.write(JSON.stringify(report) + '\n');
process.exit(0);
