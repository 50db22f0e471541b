// bench.mjs is the TypeScript SDK client of make bench-compare
// (bench/README.md). It reads one JSON command a line on stdin and answers
// each with one JSON line on stdout, carrying the command's id:
//
//   {"op":"hello"}                                  → {"node":…, "sdk":…, "protocol":…}
//   {"op":"open","client":"c1","transport":"stdio","command":BIN}
//   {"op":"open","client":"c1","transport":"http","url":URL}
//   {"op":"run","client":"c1","tool":"echo","args":{…},"calls":N,"callers":C}
//       → {"p50_us":…, "calls_per_s":…, "cpu_us_per_call":…, "bytes_per_call":"n/a", "allocs_per_call":"n/a"}
//   {"op":"close","client":"c1"}
//   {"op":"startup","command":BIN,"servers":N}   → {"ms":…, "cpu_us":…}
//   {"op":"hold","url":URL,"sessions":N}          → {"heap_per_session":…}
//
// It measures its loads itself: each call's latency, the load's wall time,
// and process.cpuUsage() (user and system CPU of this process; the servers
// are other processes). Node has no count of the bytes or objects it
// allocates, so those are "n/a". A failure answers {"error": "…"}.

import { createInterface } from "node:readline";
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";

const sdkVersion = JSON.parse(
  readFileSync(new URL("./node_modules/@modelcontextprotocol/sdk/package.json", import.meta.url)),
).version;

// The deadline of every request: a hung server fails the run rather than
// stalling it.
const requestTimeout = { timeout: 60_000 };

const clients = new Map();

// stderrKept is how much of a stdio server's stderr a client keeps, the
// end of it, for the error of a call that fails.
const stderrKept = 4096;

// connect returns a connected client to the server a command names. A
// stdio client keeps what its server last wrote on stderr and counts the
// messages it reads from it, which the error of a failed call reports.
async function connect(cmd) {
  const client = new Client({ name: "bench-ts-sdk", version: "0" }, { capabilities: {} });
  if (cmd.transport !== "stdio") {
    await client.connect(new StreamableHTTPClientTransport(new URL(cmd.url)), requestTimeout);
    return client;
  }
  const transport = new StdioClientTransport({ command: cmd.command, args: [], stderr: "pipe" });
  const seen = { stderr: "", messages: 0, lastAt: 0 };
  transport.stderr.on("data", (b) => {
    seen.stderr = (seen.stderr + b.toString()).slice(-stderrKept);
  });
  await client.connect(transport, requestTimeout);
  const onmessage = transport.onmessage;
  transport.onmessage = (msg, extra) => {
    seen.messages++;
    seen.lastAt = performance.now();
    onmessage?.(msg, extra);
  };
  client.describeServer = () => {
    let alive = "exited";
    try {
      process.kill(transport.pid, 0);
      alive = "running";
    } catch {}
    const last = seen.lastAt ? `, the last ${Math.round(performance.now() - seen.lastAt)} ms ago` : "";
    const tail = seen.stderr.trim() ? `its stderr ended with:\n${seen.stderr.trim()}` : "it wrote nothing on stderr";
    return `the stdio server (pid ${transport.pid}) is ${alive}; the client read ${seen.messages} message${seen.messages === 1 ? "" : "s"} from it since it connected${last}; ${tail}`;
  };
  return client;
}

function cpuMicros(start) {
  const d = process.cpuUsage(start);
  return d.user + d.system;
}

async function run(cmd) {
  const client = clients.get(cmd.client);
  if (!client) throw new Error(`no client ${cmd.client}`);
  const lat = new Float64Array(cmd.calls);
  let next = 0;
  const params = { name: cmd.tool, arguments: cmd.args };
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= cmd.calls) return;
      const t0 = performance.now();
      const res = await client.callTool(params, undefined, requestTimeout);
      lat[i] = performance.now() - t0;
      if (res.isError) throw new Error(`tool error: ${JSON.stringify(res)}`);
    }
  };
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  try {
    await Promise.all(Array.from({ length: cmd.callers }, worker));
  } catch (e) {
    next = cmd.calls; // stop the others
    if (client.describeServer) throw new Error(`${e?.message ?? e}; ${client.describeServer()}`, { cause: e });
    throw e;
  }
  const wallMs = performance.now() - t0;
  const cpu = cpuMicros(cpu0);
  // What the turn left is collected before the answer, as each Go client's
  // turn starts from a collected heap: a collection of node's would
  // otherwise run during the next client's turn, on the CPUs it shares.
  globalThis.gc();
  lat.sort();
  const n = lat.length;
  const p50 = n % 2 ? lat[(n - 1) / 2] : (lat[n / 2 - 1] + lat[n / 2]) / 2;
  return {
    p50_us: p50 * 1000,
    calls_per_s: cmd.calls / (wallMs / 1000),
    cpu_us_per_call: cpu / cmd.calls,
    bytes_per_call: "n/a",
    allocs_per_call: "n/a",
  };
}

async function closeAll(list) {
  await Promise.allSettled(list.map((c) => c.close()));
}

// startup connects N stdio servers at once and lists each one's tools.
async function startup(cmd) {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const opened = [];
  try {
    await Promise.all(
      Array.from({ length: cmd.servers }, async () => {
        const c = await connect({ transport: "stdio", command: cmd.command });
        opened.push(c);
        await c.listTools(undefined, requestTimeout);
      }),
    );
    const ms = performance.now() - t0;
    return { ms, cpu_us: cpuMicros(cpu0) };
  } finally {
    await closeAll(opened);
  }
}

function heapUsed() {
  globalThis.gc();
  globalThis.gc();
  return process.memoryUsage().heapUsed;
}

// hold opens N sessions to one HTTP server and reports the heap each holds.
async function hold(cmd) {
  const before = heapUsed();
  const opened = [];
  try {
    for (let i = 0; i < cmd.sessions; i++) {
      const c = await connect({ transport: "http", url: cmd.url });
      opened.push(c);
      await c.listTools(undefined, requestTimeout);
    }
    return { heap_per_session: (heapUsed() - before) / cmd.sessions };
  } finally {
    await closeAll(opened);
  }
}

async function handle(cmd) {
  switch (cmd.op) {
    case "hello":
      return { node: process.version, sdk: sdkVersion, protocol: LATEST_PROTOCOL_VERSION };
    case "open":
      clients.set(cmd.client, await connect(cmd));
      return {};
    case "run":
      return run(cmd);
    case "close": {
      const c = clients.get(cmd.client);
      clients.delete(cmd.client);
      if (c) await c.close();
      return {};
    }
    case "startup":
      return startup(cmd);
    case "hold":
      return hold(cmd);
    default:
      throw new Error(`unknown op ${cmd.op}`);
  }
}

// Commands are handled one at a time, in order.
const rl = createInterface({ input: process.stdin });
for await (const line of rl) {
  let cmd = {};
  let answer;
  try {
    cmd = JSON.parse(line);
    answer = await handle(cmd);
  } catch (e) {
    answer = { error: String(e?.stack ?? e) };
  }
  process.stdout.write(JSON.stringify({ id: cmd.id, ...answer }) + "\n");
}
await closeAll([...clients.values()]);
process.exit(0);
