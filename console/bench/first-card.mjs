// Measures the release console: time to the first rendered card, and to
// all of them, with 1 000 pending requests waiting in the relay's replay
// buffers; and the transfer size of the build (HTML + JS + wasm + CSS, raw
// and gzip). Not a test: it prints numbers.
//
// Two profiles. `desktop`: 1280x800, no throttling. `phone`: 390x844 with
// touch, Chromium's network emulation at 150 ms round trip, 1.6 Mbps down
// and 750 kbps up, the CPU slowed 4x and the cache disabled. Each phase
// is printed per run (milliseconds after navigation) and as the median.
//
//   node --experimental-websocket console/bench/first-card.mjs [runs] [--phone] [--desktop] [--phone-net] [--phone-cpu]
//     [--dir=PATH ...]
//
// Without a profile flag phone and desktop are run, in turns (phone,
// desktop, phone, ...), so that a noisy machine affects both alike.
// `--phone-net` and `--phone-cpu` are the phone with only its network, or
// only its slow CPU. Each `--dir` is a build served by a relay of its own,
// run in the same turns, to compare two builds under the same load.

import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { gzipSync, brotliCompressSync, constants as zlib } from 'node:zlib';
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { Relay, TestAgent, browser, freePort, sleep, ROOT } from '../tests/e2e/lib.mjs';

const args = process.argv.slice(2);
const RUNS = Number(args.find((a) => /^\d+$/.test(a)) || 3);
const SESSIONS = 10;
const PER_SESSION = 100;
const PROFILES = {
  phone: {
    context: { viewport: { width: 390, height: 844 }, deviceScaleFactor: 3, isMobile: true, hasTouch: true },
    network: { offline: false, latency: 150, downloadThroughput: 1.6e6 / 8, uploadThroughput: 750e3 / 8 },
    cpu: 4,
  },
  desktop: { context: { viewport: { width: 1280, height: 800 } } },
};
// The phone's two handicaps apart, to see which one a phase waits on.
PROFILES['phone-net'] = { ...PROFILES.phone, cpu: undefined };
PROFILES['phone-cpu'] = { ...PROFILES.phone, network: undefined };
const chosen = Object.keys(PROFILES).filter((p) => args.includes(`--${p}`));
const profiles = chosen.length ? chosen : ['phone', 'desktop'];

function sizes() {
  const dist = `${ROOT}dist`;
  const files = readdirSync(dist).filter((f) => /(^index\.html$)|(^aep-console-.*\.(js|wasm)$)|(\.css$)/.test(f));
  let raw = 0;
  let gz = 0;
  let br = 0;
  const rows = files.map((f) => {
    // The precompressed copy the relay serves, when the build made one.
    const bytes = readFileSync(`${dist}/${f}`);
    const copy = (ext) => (existsSync(`${dist}/${f}.${ext}`) ? statSync(`${dist}/${f}.${ext}`).size : undefined);
    const g = copy('gz') ?? gzipSync(bytes, { level: 9 }).length;
    const b = copy('br') ?? brotliCompressSync(bytes, { params: { [zlib.BROTLI_PARAM_QUALITY]: 11 } }).length;
    raw += statSync(`${dist}/${f}`).size;
    gz += g;
    br += b;
    return `  ${f.padEnd(44)} ${String(bytes.length).padStart(9)} raw ${String(g).padStart(9)} gzip -9 ${String(b).padStart(9)} br 11`;
  });
  return { rows, raw, gz, br };
}

const median = (xs) => {
  const v = xs.filter((x) => x !== undefined && !Number.isNaN(x));
  return v.length ? [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)] : undefined;
};

async function measure(chromium, base, profile) {
  const p = PROFILES[profile];
  const ctx = await chromium.newContext(p.context);
  const page = await ctx.newPage();
  const cdp = await ctx.newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.setCacheDisabled', { cacheDisabled: !!p.network });
  if (p.network) await cdp.send('Network.emulateNetworkConditions', p.network);
  if (p.cpu) await cdp.send('Emulation.setCPUThrottlingRate', { rate: p.cpu });
  // What the wire carried: per response its encoding and encoded length,
  // and the WebSocket's frames (payload bytes, as received).
  const responses = new Map();
  let wireTotal = 0;
  const ws = { frames: 0, bytes: 0, last: 0 };
  cdp.on('Network.responseReceived', ({ requestId, response }) => {
    const h = Object.fromEntries(Object.entries(response.headers).map(([k, v]) => [k.toLowerCase(), v]));
    responses.set(requestId, { url: response.url, encoding: h['content-encoding'] || 'identity' });
  });
  cdp.on('Network.loadingFinished', ({ requestId, encodedDataLength }) => {
    wireTotal += encodedDataLength;
    const r = responses.get(requestId);
    if (r) r.wire = encodedDataLength;
  });
  // The extensions the relay's handshake response agreed (permessage-deflate or none).
  cdp.on('Network.webSocketHandshakeResponseReceived', ({ response }) => {
    const h = Object.fromEntries(Object.entries(response.headers).map(([k, v]) => [k.toLowerCase(), v]));
    ws.extensions = h['sec-websocket-extensions'] || 'none';
  });
  cdp.on('Network.webSocketFrameReceived', ({ response }) => {
    ws.frames += 1;
    ws.bytes += response.opcode === 1 ? Buffer.byteLength(response.payloadData) : Math.floor(response.payloadData.length * 3 / 4);
  });
  await page.addInitScript(() => {
    addEventListener('TrunkApplicationStarted', () => { window.__started = performance.now(); });
    const WS = window.WebSocket;
    window.WebSocket = class extends WS {
      constructor(...a) {
        super(...a);
        window.__wsCreated ??= performance.now();
        this.addEventListener('open', () => { window.__wsOpen ??= performance.now(); });
        this.addEventListener('message', () => { window.__wsFirst ??= performance.now(); window.__wsLast = performance.now(); });
      }
    };
    const mark = () => {
      if (!window.__firstCard && document.querySelector('main article.card')) window.__firstCard = performance.now();
      const n = document.querySelector('[data-count="inbox"]');
      if (!window.__allCards && n && Number(n.textContent) >= 1000) window.__allCards = performance.now();
    };
    new MutationObserver(mark).observe(document, { subtree: true, childList: true, characterData: true });
  });
  await page.goto(`${base}/#token=${token}`, { waitUntil: 'commit' });
  await page.waitForFunction(() => window.__firstCard && window.__allCards, null, { timeout: 120_000, polling: 200 });
  const t = await page.evaluate(() => {
    const res = performance.getEntriesByType('resource');
    const nav = performance.getEntriesByType('navigation')[0];
    const one = (re) => res.filter((r) => re.test(r.name)).reduce((a, r) => ({
      end: Math.max(a.end, r.responseEnd), wire: a.wire + r.transferSize, body: a.body + r.encodedBodySize,
    }), { end: 0, wire: 0, body: 0 });
    return {
      html: nav.responseEnd, js: one(/\.js$/), wasm: one(/\.wasm$/), css: one(/\.css$/),
      fcp: performance.getEntriesByName('first-contentful-paint')[0]?.startTime,
      started: window.__started, ws: window.__wsCreated, open: window.__wsOpen, msg: window.__wsFirst,
      last: window.__wsLast, first: window.__firstCard, all: window.__allCards,
    };
  });
  t.shown = await page.locator('main article.card').count();
  t.ws = { ...ws, created: t.ws };
  t.wire = wireTotal;
  t.encodings = [...responses.values()].filter((r) => /\.(wasm|js|css)$|\/$|#|index\.html/.test(r.url))
    .map((r) => `${r.url.replace(/^.*\//, '') || '/'}=${r.encoding}`).join(' ');
  await ctx.close();
  return t;
}

const ms = (x) => (x === undefined ? '   -' : `${x.toFixed(0).padStart(5)}`);
const kb = (x) => `${(x / 1000).toFixed(1)} KB`;

function report(profile, runs) {
  const m = (f) => median(runs.map(f));
  console.log(`\n${profile}: median of ${runs.length} runs (ms after navigation)`);
  console.log(`  HTML done                ${ms(m((t) => t.html))}`);
  console.log(`  JS done                  ${ms(m((t) => t.js.end))}   ${kb(m((t) => t.js.wire))} on the wire`);
  console.log(`  wasm done                ${ms(m((t) => t.wasm.end))}   ${kb(m((t) => t.wasm.wire))} on the wire (${kb(m((t) => t.wasm.body))} body)`);
  console.log(`  app started (compiled)   ${ms(m((t) => t.started))}`);
  console.log(`  first contentful paint   ${ms(m((t) => t.fcp))}`);
  console.log(`  socket created / open    ${ms(m((t) => t.ws.created))} / ${ms(m((t) => t.open))}`);
  console.log(`  first frame              ${ms(m((t) => t.msg))}`);
  console.log(`  first card               ${ms(m((t) => t.first))}`);
  console.log(`  last frame               ${ms(m((t) => t.last))}`);
  console.log(`  all 1000 in the inbox    ${ms(m((t) => t.all))}`);
  console.log(`  HTTP on the wire         ${kb(m((t) => t.wire))} (all responses, headers included)`);
  console.log(`  WebSocket carried        ${kb(m((t) => t.ws.bytes))} in ${m((t) => t.ws.frames)} frames (payload)`);
}

// One relay per build compared (`--dir=PATH`, repeatable; dist/ by
// default), each with the same 1 000 requests waiting.
const token = randomBytes(12).toString('hex');
const dirs = args.filter((a) => a.startsWith('--dir=')).map((a) => a.slice(6));
const builds = [];
for (const staticDir of dirs.length ? dirs : ['dist']) {
  const relay = new Relay({ port: await freePort(), token, demo: false, staticDir });
  await relay.start();
  const agents = [];
  for (let s = 0; s < SESSIONS; s++) {
    const a = new TestAgent({ relay, agent: `bench-${s}` });
    await a.connect();
    a.start(`Benchmark session ${s}`);
    for (let i = 0; i < PER_SESSION; i++) a.ask(`Request ${s * PER_SESSION + i + 1}: run step ${i} of the migration?`);
    agents.push(a);
  }
  builds.push({ staticDir, relay, agents });
}
await sleep(1000);

console.log(`load average before: ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
const chromium = await browser();
const variants = builds.flatMap((b) => profiles.map((p) => ({ build: b, profile: p,
  name: builds.length > 1 ? `${p} ${b.staticDir}` : p })));
const results = Object.fromEntries(variants.map((v) => [v.name, []]));
try {
  for (let run = 0; run < RUNS; run++) {
    for (const { build, profile, name } of variants) {
      const t = await measure(chromium, build.relay.base, profile);
      results[name].push(t);
      console.log(`${name} run ${run + 1}: HTML ${ms(t.html)}, JS ${ms(t.js.end)}, wasm ${ms(t.wasm.end)}, started ${ms(t.started)}, socket open ${ms(t.open)}, first frame ${ms(t.msg)}, first card ${ms(t.first)}, last frame ${ms(t.last)}, all 1000 ${ms(t.all)} (${t.shown} cards rendered)`);
      console.log(`       wire: HTTP ${kb(t.wire)}, wasm ${kb(t.wasm.wire)}, JS ${kb(t.js.wire)}, WebSocket ${kb(t.ws.bytes)} in ${t.ws.frames} frames (extensions: ${t.ws.extensions}); ${t.encodings}`);
    }
  }
} finally {
  await chromium.close();
  for (const b of builds) {
    for (const a of b.agents) a.drop();
    await b.relay.stop();
  }
}
console.log(`load average after: ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);

for (const v of variants) report(v.name, results[v.name]);
const s = sizes();
console.log(`\ntransfer size of dist/ (HTML + JS + wasm + CSS; the build's .gz / .br copies where it made them):`);
console.log(s.rows.join('\n'));
console.log(`  ${'total'.padEnd(44)} ${String(s.raw).padStart(9)} raw ${String(s.gz).padStart(9)} gzip -9 ${String(s.br).padStart(9)} br 11`);
