// A minimal MCP Apps host (SEP-1865, 2026-01-26) that also renders elicitations in apps
// (SEP-3118, draft), for testing the `deploy` example in a real browser. test.mjs bundles
// this file with esbuild and drives it through `window.host`.
//
// - It speaks MCP 2026-07-28 to the server: stateless POSTs through the page's own origin
//   (`/mcp`, which test.mjs forwards), with the protocol version and client capabilities
//   in every request's `_meta`, and the retry of a tool call that answers
//   `input_required` (multi-round-trip requests).
// - It renders each app in a sandboxed iframe (`allow-scripts` only, so an opaque origin)
//   from `srcdoc`, with the app's Content Security Policy injected, and talks to it
//   through the official AppBridge + PostMessageTransport of @modelcontextprotocol/ext-apps.
// - The "model" is the test: it sees only the tools whose visibility includes "model".

import {
  AppBridge,
  PostMessageTransport,
  RESOURCE_MIME_TYPE,
  buildAllowAttribute,
  getToolUiResourceUri,
} from "@modelcontextprotocol/ext-apps/app-bridge";
import { z } from "zod";

const PROTOCOL_VERSION = "2026-07-28";
const UI_EXTENSION = "io.modelcontextprotocol/ui";
// Declared on every request: form elicitations, and MCP Apps with app-rendered ones.
const CLIENT_CAPABILITIES = {
  elicitation: { form: {} },
  extensions: { [UI_EXTENSION]: { mimeTypes: [RESOURCE_MIME_TYPE], elicitation: {} } },
};
const HOST_INFO = { name: "mcp-mrtr-apps-test-host", version: "1.0.0" };
// `elicitation` (SEP-3118) is not in AppBridge 2.0.4's McpUiHostCapabilities type; the
// bridge passes the object through to the app's ui/initialize result unchanged.
const HOST_CAPABILITIES = { serverTools: {}, logging: {}, elicitation: {} };
const HOST_CONTEXT = {
  theme: "light",
  platform: "web",
  displayMode: "inline",
  availableDisplayModes: ["inline"],
  locale: "en-US",
  containerDimensions: { maxHeight: 800, maxWidth: 672 },
  styles: {
    variables: {
      "--font-sans": 'system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif',
      "--font-mono": 'ui-monospace, "DejaVu Sans Mono", monospace',
      "--color-background-primary": "#ffffff",
      "--color-background-secondary": "#f6f8fa",
      "--color-background-success": "#dafbe1",
      "--color-text-primary": "#1f2328",
      "--color-text-secondary": "#59636e",
      "--color-text-success": "#1a7f37",
      "--color-text-danger": "#d1242f",
      "--color-border-primary": "#d1d9e0",
      "--color-border-secondary": "#e5e8eb",
      "--color-border-success": "#4ac26b",
      "--border-radius-md": "8px",
    },
  },
};
// The spec's restrictive default, for an app that declares no `_meta.ui.csp`.
const DEFAULT_CSP = {
  "default-src": ["'none'"],
  "script-src": ["'self'", "'unsafe-inline'"],
  "style-src": ["'self'", "'unsafe-inline'"],
  "img-src": ["'self'", "data:"],
  "media-src": ["'self'", "data:"],
  "connect-src": ["'none'"],
};
// What the app's answer to elicitation/create must look like before the host reads it.
const ElicitResult = z.looseObject({
  action: z.enum(["accept", "decline", "cancel"]),
  content: z.record(z.string(), z.unknown()).optional(),
});
const APP_START_MS = 10_000;
const ELICITATION_MS = 90_000;
const HTTP_MS = 20_000;

const transcript = document.getElementById("transcript");
const events = [];
let tools = new Map();
let statusApp = null;
let nextId = 1;

/** Records what happened, for the test to assert on. */
function record(type, detail = {}) {
  events.push(JSON.parse(JSON.stringify({ type, ...detail })));
}

// ---------------------------------------------------------------------------------------
// The transcript the page shows.

function entry(kind, who, ...parts) {
  const line = document.createElement("p");
  line.className = `entry ${kind}`;
  const label = document.createElement("span");
  label.className = "who";
  label.textContent = who;
  line.append(label);
  for (const part of parts) {
    if (part && typeof part === "object" && "code" in part) {
      const code = document.createElement("code");
      code.textContent = part.code;
      line.append(code);
    } else {
      line.append(String(part));
    }
  }
  transcript.append(line);
  return line;
}

const brief = (value) => JSON.stringify(value);

// ---------------------------------------------------------------------------------------
// MCP 2026-07-28 over Streamable HTTP, one stateless POST a request.

async function mcp(method, params = {}) {
  const id = nextId++;
  const meta = {
    ...(params._meta ?? {}),
    "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
    "io.modelcontextprotocol/clientCapabilities": CLIENT_CAPABILITIES,
  };
  const headers = {
    "Content-Type": "application/json",
    Accept: "application/json, text/event-stream",
    "MCP-Protocol-Version": PROTOCOL_VERSION,
    "Mcp-Method": method,
  };
  if (method === "tools/call" || method === "prompts/get") headers["Mcp-Name"] = params.name;
  if (method === "resources/read") headers["Mcp-Name"] = params.uri;
  const response = await fetch("/mcp", {
    method: "POST",
    headers,
    body: JSON.stringify({ jsonrpc: "2.0", id, method, params: { ...params, _meta: meta } }),
    signal: AbortSignal.timeout(HTTP_MS),
  });
  const type = response.headers.get("content-type") ?? "";
  const body = await response.text();
  let message;
  if (type.startsWith("text/event-stream")) {
    for (const event of body.split(/\r?\n\r?\n/)) {
      const data = event.split(/\r?\n/).filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n");
      if (!data) continue;
      const parsed = JSON.parse(data);
      if (parsed.id === id && (parsed.result !== undefined || parsed.error !== undefined)) message = parsed;
    }
  } else if (type.startsWith("application/json")) {
    message = JSON.parse(body);
  }
  if (!message) throw new Error(`${method}: HTTP ${response.status} with no JSON-RPC answer: ${body.slice(0, 300)}`);
  if (message.error) throw new Error(`${method}: error ${message.error.code}: ${message.error.message}`);
  return message.result;
}

const visibility = (tool) => tool._meta?.ui?.visibility ?? ["model", "app"];

/** A tool call, answered through as many `input_required` rounds as it takes. */
async function callTool(name, args, caller) {
  let params = { name, arguments: args };
  for (let round = 1; ; round++) {
    const result = await mcp("tools/call", params);
    if (result.resultType !== "input_required") return result;
    record("input-required", { name, caller, round, inputRequests: result.inputRequests, requestState: result.requestState });
    if (caller !== "model") throw new Error(`${name}, called by ${caller}, asks for input: this host answers only the model's calls`);
    if (round >= 4) throw new Error(`${name} still asks for input after ${round} rounds`);
    const inputResponses = {};
    for (const [key, ask] of Object.entries(result.inputRequests ?? {})) {
      inputResponses[key] = await answerInputRequest(name, key, ask);
    }
    params = { name, arguments: args, inputResponses };
    if (result.requestState !== undefined) params.requestState = result.requestState;
    record("retry", { name, round, inputResponses, requestState: result.requestState });
  }
}

/** The fields of a CallToolResult, as an app receives it. */
function callToolResult(result) {
  const { content = [], structuredContent, isError, _meta } = result;
  return {
    content,
    ...(structuredContent !== undefined && { structuredContent }),
    ...(isError !== undefined && { isError }),
    ...(_meta !== undefined && { _meta }),
  };
}

const textOf = (result) => (result.content ?? []).filter((b) => b.type === "text").map((b) => b.text).join("\n");

// ---------------------------------------------------------------------------------------
// Apps: a sandboxed iframe each, behind an AppBridge.

function cspOf(declared = {}) {
  const policy = structuredClone(DEFAULT_CSP);
  const add = (directive, origins) => {
    if (!origins?.length) return;
    policy[directive] = [...policy[directive].filter((s) => s !== "'none'"), ...origins];
  };
  add("connect-src", declared.connectDomains);
  for (const directive of ["script-src", "style-src", "img-src", "media-src"]) add(directive, declared.resourceDomains);
  if (declared.resourceDomains?.length) policy["font-src"] = [...declared.resourceDomains];
  if (declared.frameDomains?.length) policy["frame-src"] = [...declared.frameDomains];
  if (declared.baseUriDomains?.length) policy["base-uri"] = [...declared.baseUriDomains];
  return Object.entries(policy).map(([directive, sources]) => `${directive} ${sources.join(" ")}`).join("; ");
}

/** The app's HTML with the policy as the first element of its head. */
function withCsp(html, csp) {
  const meta = `<meta http-equiv="Content-Security-Policy" content="${csp.replaceAll('"', "&quot;")}">`;
  const head = /<head(\s[^>]*)?>/i.exec(html);
  if (head) return html.slice(0, head.index + head[0].length) + meta + html.slice(head.index + head[0].length);
  const root = /<html(\s[^>]*)?>/i.exec(html);
  if (root) return html.slice(0, root.index + root[0].length) + `<head>${meta}</head>` + html.slice(root.index + root[0].length);
  return `<!doctype html><head>${meta}</head>` + html;
}

function timeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what} (after ${ms} ms)`)), ms); }),
  ]).finally(() => clearTimeout(timer));
}

/** Reads `uri`, renders it, and resolves once the app has said `initialized`. */
async function mountApp(uri, label, hostContext = {}) {
  const read = await mcp("resources/read", { uri });
  const contents = read.contents?.find((c) => c.uri === uri) ?? read.contents?.[0];
  if (!contents) throw new Error(`${uri}: resources/read returned no contents`);
  if (contents.mimeType !== RESOURCE_MIME_TYPE) throw new Error(`${uri}: mimeType ${contents.mimeType}, not ${RESOURCE_MIME_TYPE}`);
  const html = contents.text ?? new TextDecoder().decode(Uint8Array.from(atob(contents.blob ?? ""), (c) => c.charCodeAt(0)));
  const ui = contents._meta?.ui ?? {};
  const csp = cspOf(ui.csp);

  const card = document.createElement("section");
  card.className = ui.prefersBorder === false ? "app" : "app bordered";
  card.dataset.uri = uri;
  const caption = document.createElement("div");
  caption.className = "label";
  caption.textContent = `${uri} · ${label}`;
  const iframe = document.createElement("iframe");
  iframe.setAttribute("sandbox", "allow-scripts");
  const allow = buildAllowAttribute(ui.permissions);
  if (allow) iframe.setAttribute("allow", allow);
  iframe.title = label;
  iframe.dataset.uri = uri;
  card.append(caption, iframe);
  transcript.append(card);

  const bridge = new AppBridge(null, HOST_INFO, HOST_CAPABILITIES, { hostContext: { ...HOST_CONTEXT, ...hostContext } });
  // AppBridge parses the app's ui/initialize with a schema that drops the capabilities it
  // does not know (SEP-3118's `elicitation`): read them from the raw message.
  let announced;
  const watch = (event) => {
    if (event.source === iframe.contentWindow && event.data?.method === "ui/initialize") announced = event.data.params;
  };
  window.addEventListener("message", watch);
  const initialized = new Promise((resolve) => bridge.addEventListener("initialized", resolve));
  bridge.onsizechange = ({ height }) => {
    if (typeof height === "number" && height > 0) iframe.style.height = `${Math.min(Math.ceil(height), 800)}px`;
  };
  bridge.oncalltool = (params) => appCallsTool(uri, params);
  bridge.onloggingmessage = (params) => record("app-log", { uri, params });

  const transport = new PostMessageTransport(iframe.contentWindow, iframe.contentWindow);
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    record("to-app", { uri, message });
    return send(message, options);
  };
  await bridge.connect(transport);
  iframe.srcdoc = withCsp(html, csp);
  try {
    await timeout(initialized, APP_START_MS, `${uri} did not complete ui/initialize`);
  } finally {
    window.removeEventListener("message", watch);
  }
  const app = {
    uri,
    bridge,
    iframe,
    card,
    csp,
    appCapabilities: announced?.appCapabilities ?? {},
    async close() {
      await timeout(bridge.teardownResource({}), 3_000, `${uri} did not answer ui/resource-teardown`).catch((e) => record("warning", { message: e.message }));
      await bridge.close();
      card.classList.add("closed");
      caption.textContent = `${uri} · ${label} · closed`;
      iframe.remove();
    },
  };
  record("app-initialized", {
    uri,
    appInfo: announced?.appInfo,
    appCapabilities: app.appCapabilities,
    bridgeAppCapabilities: bridge.getAppCapabilities() ?? null,
    csp,
  });
  return app;
}

/** A `tools/call` from an app: only tools of this server that apps may call. */
async function appCallsTool(uri, params) {
  const tool = tools.get(params?.name);
  const refuse = (message) => {
    record("app-tool-refused", { uri, name: params?.name, message });
    throw Object.assign(new Error(message), { code: -32602 });
  };
  if (!tool) refuse(`no tool named ${JSON.stringify(params?.name)} on this server`);
  if (!visibility(tool).includes("app")) refuse(`${tool.name} is not callable by apps`);
  record("app-tool-call", { uri, name: tool.name, arguments: params.arguments ?? {} });
  const result = await callTool(tool.name, params.arguments ?? {}, uri);
  record("app-tool-result", { uri, name: tool.name, result });
  return callToolResult(result);
}

// ---------------------------------------------------------------------------------------
// Elicitation rendered by an app (SEP-3118).

/** Answers one of the server's input requests. */
async function answerInputRequest(toolName, key, ask) {
  if (ask.method !== "elicitation/create") throw new Error(`${toolName} asks for ${ask.method}: this host answers only elicitations`);
  const params = ask.params ?? {};
  if ((params.mode ?? "form") !== "form") throw new Error(`${toolName} asks for a ${params.mode} elicitation: this host renders only forms`);
  const uri = params._meta?.ui?.resourceUri;
  if (!uri) throw new Error(`${toolName} asks "${params.message}" with no app: this test host renders no plain form`);
  entry("server", "server", `${toolName} asks (${key}): ${params.message}`);
  const app = await mountApp(uri, `asked by ${toolName}`);
  let result;
  try {
    if (!app.appCapabilities.elicitation) throw new Error(`${uri} did not declare appCapabilities.elicitation`);
    // The server's params go to the app unchanged, `_meta` included.
    result = await app.bridge.request({ method: "elicitation/create", params }, ElicitResult, { timeout: ELICITATION_MS });
  } finally {
    await app.close();
  }
  record("elicitation-result", { key, uri, result });
  if (result.action !== "accept") {
    entry("person", "person", `${result.action === "decline" ? "declined" : "cancelled"} in ${uri}`);
    return { action: result.action };
  }
  const problems = checkContent(params.requestedSchema ?? {}, result.content);
  if (problems.length) {
    record("elicitation-invalid", { key, uri, problems });
    throw new Error(`${uri} accepted with content that does not match requestedSchema: ${problems.join("; ")}`);
  }
  entry("person", "person", `accepted in ${uri}: `, { code: brief(result.content) });
  return { action: "accept", content: result.content };
}

/** What is wrong with `content` for a form elicitation's `requestedSchema`. */
function checkContent(schema, content) {
  if (!content || typeof content !== "object" || Array.isArray(content)) return ["content is not an object"];
  const properties = schema.properties ?? {};
  const problems = (schema.required ?? []).filter((name) => !(name in content)).map((name) => `${name} is required`);
  for (const [name, value] of Object.entries(content)) {
    const property = properties[name];
    if (!property) problems.push(`${name} is not in requestedSchema`);
    else problems.push(...checkValue(name, property, value));
  }
  return problems;
}

function checkValue(name, property, value) {
  const allowed = property.enum ?? property.oneOf?.map((o) => o.const);
  switch (property.type) {
    case "boolean":
      return typeof value === "boolean" ? [] : [`${name} must be a boolean`];
    case "string":
      if (typeof value !== "string") return [`${name} must be a string`];
      if (allowed && !allowed.includes(value)) return [`${name} must be one of ${brief(allowed)}`];
      if (property.minLength !== undefined && value.length < property.minLength) return [`${name} is too short`];
      if (property.maxLength !== undefined && value.length > property.maxLength) return [`${name} is too long`];
      return [];
    case "number":
    case "integer":
      if (typeof value !== "number" || !Number.isFinite(value)) return [`${name} must be a number`];
      if (property.type === "integer" && !Number.isInteger(value)) return [`${name} must be an integer`];
      if (property.minimum !== undefined && value < property.minimum) return [`${name} is below ${property.minimum}`];
      if (property.maximum !== undefined && value > property.maximum) return [`${name} is above ${property.maximum}`];
      return [];
    case "array": {
      if (!Array.isArray(value) || value.some((v) => typeof v !== "string")) return [`${name} must be an array of strings`];
      const items = property.items?.enum ?? property.items?.anyOf?.map((o) => o.const);
      if (items && value.some((v) => !items.includes(v))) return [`${name} must hold only ${brief(items)}`];
      return [];
    }
    default:
      return [`${name} has a type this host cannot check: ${brief(property.type)}`];
  }
}

// ---------------------------------------------------------------------------------------
// What the test drives.

async function connect() {
  const discovered = await mcp("server/discover");
  const info = discovered.serverInfo ?? discovered._meta?.["io.modelcontextprotocol/serverInfo"] ?? {};
  document.getElementById("server").textContent = `${info.name ?? "server"} ${info.version ?? ""} · MCP ${PROTOCOL_VERSION}`;
  record("connected", { serverInfo: info });
  return info;
}

/** Lists the tools, and which of them the model is offered. */
async function listTools() {
  const listed = [];
  let cursor;
  do {
    const page = await mcp("tools/list", cursor ? { cursor } : {});
    listed.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  tools = new Map(listed.map((tool) => [tool.name, tool]));
  const forModel = listed.filter((tool) => visibility(tool).includes("model"));
  const appOnly = listed.filter((tool) => !visibility(tool).includes("model"));
  entry("host", "host", "tools offered to the model: ", { code: forModel.map((t) => t.name).join(", ") || "none" },
    appOnly.length ? ` · only for apps: ` : "", appOnly.length ? { code: appOnly.map((t) => t.name).join(", ") } : "");
  return {
    model: forModel.map((tool) => ({ name: tool.name, app: getToolUiResourceUri(tool) ?? null })),
    appOnly: appOnly.map((tool) => tool.name),
  };
}

/** The model calls a tool: input asked in apps, then the result shown in the tool's app. */
async function runTool(name, args) {
  const tool = tools.get(name);
  if (!tool || !visibility(tool).includes("model")) throw new Error(`${name} is not offered to the model`);
  if (statusApp) {
    await statusApp.close();
    statusApp = null;
  }
  entry("model", "model", "calls ", { code: `${name} ${brief(args)}` });
  let result;
  try {
    result = await callTool(name, args, "model");
  } catch (error) {
    entry("error", "host", error.message);
    throw error;
  }
  result = callToolResult(result);
  record("tool-result", { name, result });
  if (result.isError) entry("error", "result", textOf(result));
  else entry("server", "result", textOf(result) || brief(result.structuredContent));
  const uri = getToolUiResourceUri(tool);
  if (uri) {
    statusApp = await mountApp(uri, `result of ${name}`, { toolInfo: { tool } });
    await statusApp.bridge.sendToolInput({ arguments: args });
    await statusApp.bridge.sendToolResult(result);
  }
  return result;
}

window.host = { connect, listTools, runTool, events };
