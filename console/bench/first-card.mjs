// Measures the release console: time to the first rendered card, and to
// all of them, with 1 000 pending requests waiting in the relay's replay
// buffers; and the transfer size of the build (HTML + JS + wasm + CSS, raw
// and gzip). Not a test: it prints numbers.
//
//   node --experimental-websocket console/bench/first-card.mjs [runs]

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { randomBytes } from 'node:crypto';
import { Relay, TestAgent, browser, freePort, sleep, ROOT } from '../tests/e2e/lib.mjs';

const RUNS = Number(process.argv[2] || 3);
const SESSIONS = 10;
const PER_SESSION = 100;

function sizes() {
  const dist = `${ROOT}dist`;
  const files = readdirSync(dist).filter((f) => /(^index\.html$)|(^aep-console-.*\.(js|wasm)$)|(\.css$)/.test(f));
  let raw = 0;
  let gz = 0;
  const rows = files.map((f) => {
    const bytes = readFileSync(`${dist}/${f}`);
    const g = gzipSync(bytes, { level: 9 }).length;
    raw += statSync(`${dist}/${f}`).size;
    gz += g;
    return `  ${f.padEnd(44)} ${String(bytes.length).padStart(9)} raw ${String(g).padStart(9)} gzip`;
  });
  return { rows, raw, gz };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const token = randomBytes(12).toString('hex');
const port = await freePort();
const relay = new Relay({ port, token, demo: false });
await relay.start();
const agents = [];
for (let s = 0; s < SESSIONS; s++) {
  const a = new TestAgent({ relay, agent: `bench-${s}` });
  await a.connect();
  a.start(`Benchmark session ${s}`);
  for (let i = 0; i < PER_SESSION; i++) a.ask(`Request ${s * PER_SESSION + i + 1}: run step ${i} of the migration?`);
  agents.push(a);
}
await sleep(1000);

const chromium = await browser();
const first = [];
const all = [];
try {
  for (let run = 0; run < RUNS; run++) {
    const ctx = await chromium.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await ctx.newPage();
    await page.addInitScript(() => {
      addEventListener('TrunkApplicationStarted', () => { window.__started = performance.now(); });
      const WS = window.WebSocket;
      window.WebSocket = class extends WS {
        constructor(...a) {
          super(...a);
          window.__wsCreated ??= performance.now();
          this.addEventListener('open', () => { window.__wsOpen ??= performance.now(); });
          this.addEventListener('message', () => { window.__wsFirst ??= performance.now(); });
        }
      };
      const mark = () => {
        if (!window.__firstCard && document.querySelector('main article.card')) window.__firstCard = performance.now();
        const n = document.querySelector('[data-count="inbox"]');
        if (!window.__allCards && n && Number(n.textContent) >= 1000) window.__allCards = performance.now();
      };
      new MutationObserver(mark).observe(document, { subtree: true, childList: true, characterData: true });
    });
    await page.goto(`${relay.base}/#token=${token}`);
    await page.waitForFunction(() => window.__firstCard && window.__allCards, null, { timeout: 60_000 });
    const t = await page.evaluate(() => ({
      first: window.__firstCard, all: window.__allCards, started: window.__started,
      ws: window.__wsCreated, open: window.__wsOpen, msg: window.__wsFirst,
      wasm: performance.getEntriesByType('resource').find((r) => r.name.endsWith('.wasm'))?.responseEnd,
    }));
    const shown = await page.locator('main article.card').count();
    first.push(t.first);
    all.push(t.all);
    console.log(`run ${run + 1}: first card ${t.first.toFixed(0)} ms, all 1000 in the inbox ${t.all.toFixed(0)} ms after navigation (${shown} cards rendered on the first page)`);
    console.log(`       wasm loaded ${t.wasm?.toFixed(0)} ms, app started ${t.started?.toFixed(0)} ms, socket created ${t.ws?.toFixed(0)} ms, open ${t.open?.toFixed(0)} ms, first frame ${t.msg?.toFixed(0)} ms`);
    await ctx.close();
  }
} finally {
  await chromium.close();
  for (const a of agents) a.drop();
  await relay.stop();
}

const s = sizes();
console.log(`\ntime to first rendered card (1000 pending, median of ${RUNS}): ${median(first).toFixed(0)} ms`);
console.log(`time until all 1000 are in the inbox (median): ${median(all).toFixed(0)} ms`);
console.log(`\ntransfer size of dist/ (HTML + JS + wasm + CSS):`);
console.log(s.rows.join('\n'));
console.log(`  ${'total'.padEnd(44)} ${String(s.raw).padStart(9)} raw ${String(s.gz).padStart(9)} gzip`);
