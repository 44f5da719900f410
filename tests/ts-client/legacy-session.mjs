// The official TypeScript SDK client (1.32, which speaks 2025-11-25 only) against the
// everything fixture: errors to requests come back as JSON-RPC errors with their code and
// data, a session survives them, and an aborted call is cancelled on the server while the
// session carries on. Usage: node legacy-session.mjs URL (run with the SDK resolvable).
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

const url = new URL(process.argv[2]);
const connect = async (capabilities) => {
  const client = new Client({ name: "mcp-mrtr-ci", version: "1" }, { capabilities });
  await client.connect(new StreamableHTTPClientTransport(url));
  return client;
};
const failure = (promise) => promise.then(() => assert.fail("expected an error"), (e) => e);

const client = await connect({ elicitation: {} });
const unknown = await failure(client.request({ method: "tools/nothing", params: {} }, z.any()));
assert.ok(unknown instanceof McpError, `a JSON-RPC error, not a transport one: ${unknown}`);
assert.equal(unknown.code, -32601);
assert.ok((await client.listTools()).tools.length > 0, "the session survives an unknown method");

const plain = await connect({});
const missing = await failure(plain.callTool({ name: "test_sampling", arguments: { prompt: "x" } }));
assert.equal(missing.code, -32021);
assert.deepEqual(missing.data, { requiredCapabilities: { sampling: {} } });

// A person who never answers: the SDK aborts the call and sends notifications/cancelled.
let asked = 0;
client.setRequestHandler(ElicitRequestSchema, () => { asked += 1; return new Promise(() => {}); });
const controller = new AbortController();
const call = failure(client.callTool({ name: "test_elicitation", arguments: { message: "Who?" } }, undefined,
  { signal: controller.signal }));
for (let i = 0; asked === 0 && i < 200; i += 1) await new Promise((r) => setTimeout(r, 50));
assert.equal(asked, 1, "the bridge asked the client");
controller.abort("the user gave up");
await call;
const after = await client.callTool({ name: "test_simple_text", arguments: {} });
assert.equal(after.content[0].text, "This is a simple text response for testing.");

await client.close();
await plain.close();
console.log("typescript sdk 2025-11-25 client: errors, session survival and cancellation passed");
