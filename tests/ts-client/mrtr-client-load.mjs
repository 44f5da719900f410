// The TypeScript SDK's v2 client (@modelcontextprotocol/client 2.4, which speaks
// 2026-07-28) running the flow examples/src/bin/client_load.rs runs with ours: FLOWS
// sequential calls of test_input_required_result_elicitation, each an input_required round
// answered by its elicitation handler, after 200 uncounted ones; prints the process's CPU per
// flow. Not run by the tests: a measure to read beside client_load's.
//
// Usage: npm install @modelcontextprotocol/client@2.4.0; node mrtr-client-load.mjs URL FLOWS
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { performance } from 'node:perf_hooks';

const [url, flowsArg] = process.argv.slice(2);
const FLOWS = Number.parseInt(flowsArg ?? '', 10);
if (!url || !Number.isInteger(FLOWS) || FLOWS <= 0) {
    console.error('usage: node load.mjs URL FLOWS');
    process.exit(2);
}

const WARMUP = 200;
const TOOL = 'test_input_required_result_elicitation';
const EXPECTED = 'Hello, Ada!';

const client = new Client(
    { name: 'mrtr-load', version: '1.0.0' },
    {
        capabilities: { elicitation: { form: {} } },
        // Stateless 2026-07-28 era: server/discover, per-request _meta envelope.
        versionNegotiation: { mode: { pin: '2026-07-28' } },
        // Auto-fulfil input_required results via the registered handlers (default true, explicit here).
        inputRequired: { autoFulfill: true, maxRounds: 10 }
    }
);

client.setRequestHandler('elicitation/create', async () => ({
    action: 'accept',
    content: { name: 'Ada' }
}));

const transport = new StreamableHTTPClientTransport(new URL(url));
await client.connect(transport);

async function flow() {
    const result = await client.callTool({ name: TOOL, arguments: {} });
    const text = result?.content?.[0]?.text;
    if (result?.isError || text !== EXPECTED) {
        console.error(`unexpected result: ${JSON.stringify(result)}`);
        process.exit(1);
    }
}

try {
    for (let i = 0; i < WARMUP; i++) await flow();

    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < FLOWS; i++) await flow();
    const t1 = performance.now();
    const cpu = process.cpuUsage(cpu0);

    console.log(
        JSON.stringify({
            flows: FLOWS,
            cpu_user_us: cpu.user,
            cpu_system_us: cpu.system,
            cpu_us_per_flow: (cpu.user + cpu.system) / FLOWS,
            wall_ms: t1 - t0
        })
    );
} catch (err) {
    console.error('flow failed:', err);
    process.exit(1);
} finally {
    await client.close().catch(() => {});
}
