// A client of MCP 2025-11-25 written with the TypeScript SDK, for the
// end-to-end tests (e2e_bridge_tsclient_test.go): it connects over
// streamable HTTP, declares elicitation, sampling and roots, answers each
// of them in its own name, and calls tools one after the other.
//
// Run (exec'd, no shell):
//
//	node tsclient.mjs SDK_DIR URL NAME TOOL...
//
// SDK_DIR is the installed @modelcontextprotocol/sdk package (the tests
// find it with internal/npmtest); URL the MCP endpoint; NAME what it
// answers with: elicitation {"name": NAME} ({"color": "green"} when the
// message asks for a color), sampling "from NAME", roots file:///NAME.
//
// It prints JSON lines on stdout: first {"protocolVersion": …}, the
// version agreed; then one per tool call, {"tool", "text", "isError",
// "asked"} (text is the result's text contents joined by newlines, or the
// error's message with isError true and "error": true when the call
// failed as a request; asked lists the methods of the requests it was sent
// during the call, in order). It exits 0 once every call has been made,
// 1 when it could not connect.

import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [sdkDir, url, name, ...tools] = process.argv.slice(2);
if (!sdkDir || !url || !name) {
  console.error('usage: node tsclient.mjs SDK_DIR URL NAME TOOL...');
  process.exit(2);
}

const load = (rel) => import(pathToFileURL(join(sdkDir, 'dist', 'esm', rel)).href);
const { Client } = await load('client/index.js');
const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');
const { ElicitRequestSchema, CreateMessageRequestSchema, ListRootsRequestSchema } = await load('types.js');

let asked = [];
const client = new Client(
  { name: `tsclient-${name}`, version: 'e2e' },
  { capabilities: { elicitation: {}, sampling: {}, roots: { listChanged: true } } },
);
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  asked.push(req.method);
  const message = req.params.message ?? '';
  return { action: 'accept', content: /colou?r/i.test(message) ? { color: 'green' } : { name } };
});
client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
  asked.push(req.method);
  return { model: 'e2e', role: 'assistant', content: { type: 'text', text: `from ${name}` } };
});
client.setRequestHandler(ListRootsRequestSchema, async (req) => {
  asked.push(req.method);
  return { roots: [{ uri: `file:///${name}`, name }] };
});

const transport = new StreamableHTTPClientTransport(new URL(url));
try {
  await client.connect(transport);
} catch (err) {
  console.error(`connect to ${url}: ${err?.message ?? err}`);
  process.exit(1);
}
const print = (line) => process.stdout.write(JSON.stringify(line) + '\n');
print({ protocolVersion: transport.protocolVersion ?? null });

for (const tool of tools) {
  asked = [];
  try {
    const res = await client.callTool({ name: tool, arguments: {} });
    const text = (res.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
    print({ tool, text, isError: res.isError === true, asked });
  } catch (err) {
    print({ tool, text: String(err?.message ?? err), isError: true, error: true, asked });
  }
}

await client.close();
process.exit(0);
