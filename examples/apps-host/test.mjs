// The deploy example's apps in a real browser: headless Chromium, driven by Playwright,
// loads a minimal MCP Apps host (host.js, bundled here with esbuild) that talks to the
// deploy server at the URL given, renders its apps and lets the test click in them.
//
//   node test.mjs http://127.0.0.1:PORT/mcp      (.ci/browser.sh starts the server)
//
// Writes review.png, status.png (and on a failure failure.png), console.log (the page's)
// and host-events.json (what the host recorded and every request it sent) to $OUT, by default ${CARGO_TARGET_DIR:-target}/apps-host.

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { chromium } from "playwright-core";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "../..");
const MCP_URL = process.argv[2];
const OUT = path.resolve(process.env.OUT ?? path.join(ROOT, process.env.CARGO_TARGET_DIR ?? "target", "apps-host"));
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const CHROMIUM_ARGS = [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync",
];
const WHOLE_RUN_MS = 110_000;
const WAIT_MS = 10_000;

const REVIEW = "ui://deploy/review";
const STATUS = "ui://deploy/status";
const CLIENT_CAPABILITIES = {
  elicitation: { form: {} },
  extensions: { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"], elicitation: {} } },
};
const DEFAULT_CSP = "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
  + "img-src 'self' data:; media-src 'self' data:; connect-src 'none'";

if (!MCP_URL) {
  console.error("usage: node test.mjs http://127.0.0.1:PORT/mcp");
  process.exit(2);
}
mkdirSync(OUT, { recursive: true });

const started = Date.now();
const watchdog = setTimeout(() => {
  console.error(`FAIL: the run took more than ${WHOLE_RUN_MS / 1000} s`);
  process.exit(1);
}, WHOLE_RUN_MS);

// ---------------------------------------------------------------------------------------
// The host page, its bundle, and /mcp forwarded to the server, on 127.0.0.1.

const bundle = await build({
  entryPoints: [path.join(HERE, "host.js")],
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "chrome120",
  write: false,
  logLevel: "silent",
  legalComments: "none",
});
const hostJs = bundle.outputFiles[0].contents;
const hostHtml = readFileSync(path.join(HERE, "host.html"));

/** Every request the page sent the server: its MCP headers and body. */
const forwarded = [];

const server = http.createServer(async (req, res) => {
  try {
    if (req.method === "GET" && (req.url === "/" || req.url === "/index.html")) {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(hostHtml);
    } else if (req.method === "GET" && req.url === "/favicon.ico") {
      res.writeHead(204).end();
    } else if (req.method === "GET" && req.url === "/host.js") {
      res.writeHead(200, { "content-type": "text/javascript; charset=utf-8" }).end(hostJs);
    } else if (req.method === "POST" && req.url === "/mcp") {
      const chunks = [];
      for await (const chunk of req) chunks.push(chunk);
      const body = Buffer.concat(chunks);
      const headers = {};
      for (const name of ["content-type", "accept", "mcp-protocol-version", "mcp-method", "mcp-name"]) {
        if (req.headers[name] !== undefined) headers[name] = req.headers[name];
      }
      forwarded.push({ headers, body: JSON.parse(body.toString("utf8")) });
      const upstream = await fetch(MCP_URL, { method: "POST", headers, body, signal: AbortSignal.timeout(20_000) });
      const type = upstream.headers.get("content-type") ?? "application/octet-stream";
      res.writeHead(upstream.status, { "content-type": type }).end(Buffer.from(await upstream.arrayBuffer()));
    } else {
      res.writeHead(404).end();
    }
  } catch (error) {
    res.writeHead(502, { "content-type": "text/plain" }).end(`forwarding failed: ${error.message}`);
  }
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const HOST_URL = `http://127.0.0.1:${server.address().port}/`;

// ---------------------------------------------------------------------------------------
// The browser.

const userDataDir = mkdtempSync(path.join(tmpdir(), "apps-host-chromium-"));
const consoleLines = [];
const pageErrors = [];
let context;
let page;

async function cleanUp() {
  writeFileSync(path.join(OUT, "console.log"), consoleLines.join("\n") + "\n");
  const recorded = await page?.evaluate(() => window.host?.events ?? []).catch(() => []);
  writeFileSync(path.join(OUT, "host-events.json"), JSON.stringify({ recorded, forwarded, pageErrors }, null, 2));
  await context?.close().catch(() => {});
  server.close();
  rmSync(userDataDir, { recursive: true, force: true });
}

// ---------------------------------------------------------------------------------------
// Helpers.

const events = (type) => page.evaluate((t) => window.host.events.filter((e) => e.type === t), type);

function within(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms); }),
  ]).finally(() => clearTimeout(timer));
}

/** The model's call, run in the page without waiting for it. */
function startTool(name, args) {
  const run = page.evaluate(([n, a]) => window.host.runTool(n, a), [name, args]);
  run.catch(() => {});
  return run;
}

async function appFrame(uri) {
  const handle = await page.waitForSelector(`iframe[data-uri="${uri}"]`, { timeout: WAIT_MS });
  const frame = await handle.contentFrame();
  if (!frame) throw new Error(`the iframe of ${uri} has no frame`);
  return frame;
}

/**
 * Clicks `selector` in an app as a person would, once the app's iframe has stopped moving:
 * the host resizes frames and adds transcript lines as answers arrive, and a click aimed at
 * where the button was a moment ago lands beside it. (Playwright waits for the element to
 * be still inside its frame, not for the frame to be still in the page.) The element itself
 * reports whether the click reached it; a click that landed beside it is made again, as a
 * person would, and one that reached it is never repeated.
 */
async function settledClick(frame, selector) {
  const iframe = await frame.frameElement();
  const target = frame.locator(selector);
  for (let attempt = 1; ; attempt++) {
    let last = null;
    let still = 0;
    for (let tries = 0; tries < 50 && still < 3; tries++) {
      const box = JSON.stringify(await iframe.boundingBox());
      still = box === last ? still + 1 : 0;
      last = box;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await target.evaluate((element) => {
      element.dataset.clicked = "no";
      element.addEventListener("click", () => { element.dataset.clicked = "yes"; }, { once: true, capture: true });
    });
    await target.click();
    // An app that answered is torn down by the host at once: its frame gone, the click landed.
    if (frame.isDetached()) return;
    const clicked = await target.getAttribute("data-clicked", { timeout: 1_000 }).catch(() => (frame.isDetached() ? "yes" : null));
    if (clicked === "yes") return;
    if (attempt === 3) throw new Error(`${selector}: three clicks landed beside it`);
    seen.missedClicks = (seen.missedClicks ?? 0) + 1;
  }
}

/** Waits until `selector` in `frame` shows `expected` (a string: exactly; a RegExp: matching). */
async function expectText(frame, selector, expected) {
  const deadline = Date.now() + WAIT_MS;
  let seen;
  for (;;) {
    seen = (await frame.locator(selector).textContent({ timeout: WAIT_MS }))?.trim();
    if (typeof expected === "string" ? seen === expected : expected.test(seen ?? "")) return seen;
    if (Date.now() > deadline) throw new Error(`${selector} shows ${JSON.stringify(seen)}, expected ${expected}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function waitForEvent(predicateSource, what) {
  await page.waitForFunction(predicateSource, null, { timeout: WAIT_MS }).catch(() => {
    throw new Error(`the host never recorded ${what}`);
  });
}

const toApp = async (uri) => (await events("to-app")).filter((e) => e.uri === uri).map((e) => e.message);
const toolCalls = (name) => forwarded.filter((r) => r.body.method === "tools/call" && r.body.params.name === name);

// ---------------------------------------------------------------------------------------
// The steps.

const steps = [];
const step = (name, fn) => steps.push({ name, fn });
const seen = {};

step("Chromium loads the host page, which reaches the deploy server", async () => {
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 900, height: 700 },
    timeout: 30_000,
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(WAIT_MS);
  page.on("console", (message) => consoleLines.push(`[${message.type()}] ${message.text()}`));
  page.on("pageerror", (error) => pageErrors.push(error.message));
  await page.goto(HOST_URL);
  await page.waitForFunction(() => window.host !== undefined);
  const info = await page.evaluate(() => window.host.connect());
  assert.equal(info.name, "deploy", "server/discover names the server");
});

step("tools/list: deploy is offered to the model with its app; plan_deploy and service_status are not", async () => {
  const listed = await page.evaluate(() => window.host.listTools());
  assert.deepEqual(listed.model, [{ name: "deploy", app: STATUS }], "the tools the model is offered");
  assert.deepEqual([...listed.appOnly].sort(), ["plan_deploy", "service_status"], "the app-only tools");
  const refused = await page.evaluate(() => window.host.runTool("service_status", { service: "checkout" }).then(() => "ran", (e) => e.message));
  assert.match(refused, /not offered to the model/, "the model cannot call an app-only tool");
  assert.equal(toolCalls("service_status").length, 0, "nothing was sent for the refused call");
});

step("deploy checkout 2.4.0: input_required; the review app shows the plan (elicitation/create)", async () => {
  seen.checkout = startTool("deploy", { service: "checkout", version: "2.4.0" });
  await waitForEvent(() => window.host.events.some((e) => e.type === "input-required" && e.name === "deploy"), "deploy's input_required");
  const [asked] = await events("input-required");
  const approval = asked.inputRequests?.approval;
  assert.equal(approval?.method, "elicitation/create", "deploy asks for approval with elicitation/create");
  assert.equal(approval.params._meta?.ui?.resourceUri, REVIEW, "the approval names the review app");
  assert.ok(asked.requestState, "input_required carries a requestState");
  seen.asked = asked;

  const frame = await appFrame(REVIEW);
  await expectText(frame, "#message", /^Deploy checkout 2\.4\.0 to production/);
  await expectText(frame, "#service", "checkout");
  await expectText(frame, "#from", "2.3.0");
  await expectText(frame, "#to", "2.4.0");
  await expectText(frame, "#replicas", "3");
  assert.equal(await frame.locator("#changes li").count(), 3, "the plan lists three changes");
  await frame.locator("#live.ok").waitFor({ timeout: WAIT_MS }).catch(async () => {
    throw new Error(`the review app did not confirm the plan: ${await frame.locator("#live").textContent()}`);
  });

  const [initialized] = (await events("app-initialized")).filter((e) => e.uri === REVIEW);
  assert.deepEqual(initialized.appCapabilities.elicitation, {}, "the review app declares appCapabilities.elicitation");
  seen.bridgeDropsElicitation = initialized.bridgeAppCapabilities?.elicitation === undefined;
  const messages = await toApp(REVIEW);
  const initResult = messages.find((m) => m.result?.hostCapabilities);
  assert.deepEqual(initResult?.result.hostCapabilities.elicitation, {}, "ui/initialize's result declares hostCapabilities.elicitation");
  const elicit = messages.find((m) => m.method === "elicitation/create");
  assert.ok(elicit && elicit.id !== undefined, "the host sent the app an elicitation/create request");
  assert.deepEqual(elicit.params, approval.params, "the app got the server's params unchanged, _meta included");
  assert.ok(!messages.some((m) => m.method === "ui/notifications/tool-input"), "an elicitation's app gets no tool-input");
  const planCalls = (await events("app-tool-call")).filter((e) => e.uri === REVIEW);
  assert.deepEqual(planCalls.map((e) => [e.name, e.arguments]), [["plan_deploy", { service: "checkout", version: "2.4.0" }]],
    "the review app called plan_deploy through the host");

  const csp = await frame.evaluate(() => document.querySelector('meta[http-equiv="Content-Security-Policy"]')?.content);
  assert.equal(csp, DEFAULT_CSP, "the app runs under the spec's restrictive default CSP");
  const reach = await frame.evaluate((url) => fetch(url).then(() => "reached", () => "blocked"), HOST_URL);
  assert.equal(reach, "blocked", "the CSP blocks the app's own network access");

  await page.screenshot({ path: path.join(OUT, "review.png"), fullPage: true });
});

step("approve: the host validates the answer and retries; the deploy completes", async () => {
  const frame = await appFrame(REVIEW);
  await settledClick(frame, "#approve");
  const result = await within(seen.checkout, 20_000, "deploy after approval");
  assert.ok(!result.isError, `deploy failed: ${JSON.stringify(result)}`);
  assert.deepEqual(result.structuredContent, { service: "checkout", from: "2.3.0", to: "2.4.0", rollout: 1 });

  const answers = await events("elicitation-result");
  assert.deepEqual(answers.at(-1).result, { action: "accept", content: { approve: true } }, "the review app's answer");
  const calls = toolCalls("deploy");
  assert.equal(calls.length, 2, "deploy was called twice: the first call and its retry");
  const retry = calls[1].body.params;
  assert.deepEqual(retry.arguments, { service: "checkout", version: "2.4.0" }, "the retry repeats the arguments");
  assert.deepEqual(retry.inputResponses, { approval: { action: "accept", content: { approve: true } } }, "the retry's inputResponses");
  assert.equal(retry.requestState, seen.asked.requestState, "the retry returns the requestState");
  assert.equal(await page.locator(`iframe[data-uri="${REVIEW}"]`).count(), 0, "the review app was torn down after its answer");
});

step("the status app shows 2.3.0 → 2.4.0; Refresh calls service_status through the host", async () => {
  const frame = await appFrame(STATUS);
  await expectText(frame, "#service", "checkout");
  await expectText(frame, "#from", "2.3.0");
  await expectText(frame, "#to", "2.4.0");
  await expectText(frame, "#rollout", "roll-out #1");

  const messages = await toApp(STATUS);
  const initIndex = messages.findIndex((m) => m.result?.hostContext);
  const inputIndex = messages.findIndex((m) => m.method === "ui/notifications/tool-input");
  const resultIndex = messages.findIndex((m) => m.method === "ui/notifications/tool-result");
  assert.ok(initIndex >= 0 && inputIndex > initIndex && resultIndex > inputIndex,
    "ui/initialize's result, then tool-input, then tool-result");
  assert.equal(messages[initIndex].result.hostContext.toolInfo?.tool?.name, "deploy", "hostContext.toolInfo names the tool");
  assert.deepEqual(messages[inputIndex].params, { arguments: { service: "checkout", version: "2.4.0" } });
  assert.deepEqual(messages[resultIndex].params.structuredContent, { service: "checkout", from: "2.3.0", to: "2.4.0", rollout: 1 });

  await settledClick(frame, "#refresh");
  await expectText(frame, "#version", "2.4.0");
  await expectText(frame, "#healthy", "3");
  await expectText(frame, "#rollouts", "1");
  const calls = (await events("app-tool-call")).filter((e) => e.uri === STATUS);
  assert.deepEqual(calls.map((e) => [e.name, e.arguments]), [["service_status", { service: "checkout" }]],
    "the status app called service_status through the host");
  await page.screenshot({ path: path.join(OUT, "status.png"), fullPage: true });
});

step("an app's call of a tool this server does not have is refused by the host", async () => {
  const frame = await appFrame(STATUS);
  const answer = await frame.evaluate(() => new Promise((resolve) => {
    const id = "probe-unknown-tool";
    window.addEventListener("message", (event) => { if (event.data?.id === id) resolve(event.data); });
    window.parent.postMessage({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "drop_database", arguments: {} } }, "*");
    setTimeout(() => resolve({ timedOut: true }), 5_000);
  }));
  assert.match(answer.error?.message ?? JSON.stringify(answer), /no tool named "drop_database"/);
  assert.equal(toolCalls("drop_database").length, 0, "nothing was sent to the server");
});

step("deploy search 2.0.0, rejected in the review app: 'not approved', search still runs 1.9.4", async () => {
  const run = startTool("deploy", { service: "search", version: "2.0.0" });
  const review = await appFrame(REVIEW);
  await expectText(review, "#from", "1.9.4");
  await expectText(review, "#to", "2.0.0");
  await settledClick(review, "#reject");
  const result = await within(run, 20_000, "deploy after rejection");
  assert.equal(result.isError, true, "a rejected deploy is an error");
  assert.match(result.content.map((b) => b.text).join("\n"), /not approved/);
  const retry = toolCalls("deploy").at(-1).body.params;
  assert.deepEqual(retry.inputResponses, { approval: { action: "decline" } }, "the retry carries the decline");

  const status = await appFrame(STATUS);
  await expectText(status, "#summary", /not approved/);
  await settledClick(status, "#refresh");
  await expectText(status, "#version", "1.9.4");
  await expectText(status, "#rollouts", "0");
});

step("every request carried 2026-07-28, the client capabilities and its Mcp-* headers; no page error", async () => {
  assert.ok(forwarded.length > 0);
  for (const { headers, body } of forwarded) {
    const what = `${body.method} ${body.params?.name ?? body.params?.uri ?? ""}`;
    assert.equal(headers["mcp-protocol-version"], "2026-07-28", `${what}: MCP-Protocol-Version`);
    assert.equal(headers["mcp-method"], body.method, `${what}: Mcp-Method`);
    if (body.method === "tools/call") assert.equal(headers["mcp-name"], body.params.name, `${what}: Mcp-Name`);
    if (body.method === "resources/read") assert.equal(headers["mcp-name"], body.params.uri, `${what}: Mcp-Name`);
    assert.equal(body.params._meta["io.modelcontextprotocol/protocolVersion"], "2026-07-28", `${what}: protocolVersion`);
    assert.deepEqual(body.params._meta["io.modelcontextprotocol/clientCapabilities"], CLIENT_CAPABILITIES, `${what}: clientCapabilities`);
  }
  assert.deepEqual(pageErrors, [], "uncaught errors in the page or its apps");
});

// ---------------------------------------------------------------------------------------

let passed = 0;
let failed = 0;
for (const [index, { name, fn }] of steps.entries()) {
  const t0 = Date.now();
  try {
    await fn();
    passed++;
    console.log(`ok ${index + 1} - ${name} (${Date.now() - t0} ms)`);
  } catch (error) {
    failed++;
    console.error(`not ok ${index + 1} - ${name}\n  ${error.message.replaceAll("\n", "\n  ")}`);
    if (page) {
      await page.screenshot({ path: path.join(OUT, "failure.png"), fullPage: true }).catch(() => {});
      console.error(`  see ${path.join(OUT, "failure.png")}, host-events.json and console.log`);
      // CI keeps only this output: what each app showed and what the host last recorded.
      for (const frame of page.frames().slice(1)) {
        const text = await frame.evaluate(() => document.body?.innerText ?? "").catch((e) => `(unreadable: ${e.message})`);
        console.error(`  app frame: ${text.replace(/\s+/g, " ").slice(0, 400)}`);
      }
      const recent = await page.evaluate(() => window.host?.events.slice(-8) ?? []).catch(() => []);
      for (const event of recent) console.error(`  host event: ${JSON.stringify(event).slice(0, 300)}`);
    }
    break;
  }
}
await cleanUp();
clearTimeout(watchdog);
if (seen.bridgeDropsElicitation) console.log("note: AppBridge's parsed appCapabilities drop `elicitation`; the host read it from the raw ui/initialize");
if (seen.missedClicks) console.log(`note: ${seen.missedClicks} click(s) landed beside a moving app and were made again`);
if (!failed) console.log(`screenshots: ${path.join(OUT, "review.png")}, ${path.join(OUT, "status.png")}`);
console.log(`run took ${((Date.now() - started) / 1000).toFixed(1)} s`);
const skipped = steps.length - passed - failed;
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ""}`);
process.exit(failed ? 1 : 0);
