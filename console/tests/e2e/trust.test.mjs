// End-to-end: trusting the console from a phone. The release console in
// headless Chromium at 390×844 (and desktop where it differs) against the
// real relay binary, with its demo agents where they matter and test
// agents for requests on cue.
//
// Run with scripts/test-console. E2E_STATIC_DIR serves another build (an
// older one, to see a check fail); E2E_ONLY=words runs only the checks
// whose names contain them.

import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { ROOT, Relay, Steps, TestAgent, browser, cardIn, check, freePort, sleep, until } from './lib.mjs';

const SHOTS = `${ROOT}target/console-e2e`;
mkdirSync(SHOTS, { recursive: true });

const token = `e2e-${randomBytes(12).toString('hex')}`;
const chromium = await browser();
const steps = new Steps();
const pageErrors = [];

const DESKTOP = { viewport: { width: 1280, height: 800 } };
const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 };
const RANK = { critical: 0, error: 1, warning: 2, notice: 3, info: 4, debug: 5 };

// Each check gets a relay of its own, so no request left by another is in
// the way.
let relay;
async function step(name, fn, { demo = false, args = [] } = {}) {
  if (process.env.E2E_ONLY && !name.includes(process.env.E2E_ONLY)) return;
  await steps.step(name, async () => {
    relay = new Relay({ port: await freePort(), token, demo, staticDir: process.env.E2E_STATIC_DIR || 'dist', args });
    await relay.start();
    try {
      await fn();
    } finally {
      await relay.stop();
    }
  });
}

async function open(kind, { as = token, live = true, context = {} } = {}) {
  const ctx = await chromium.newContext({ ...kind, ...context });
  const page = await ctx.newPage();
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  await page.goto(`${relay.base}/#token=${encodeURIComponent(as)}`);
  if (live) await page.locator('.chip[data-state="live"]').waitFor({ timeout: 15_000 });
  return { ctx, page };
}

async function agentWith(name, title) {
  const agent = new TestAgent({ relay, agent: name });
  await agent.connect();
  agent.start(title);
  return agent;
}

const cardsOnScreen = (page) => page.$$eval('main ol.cards article.card', (els) => els.map((e) => ({
  id: e.getAttribute('data-request'), severity: e.getAttribute('data-severity'),
})));

/** Whether two boxes overlap (by more than a hairline). */
const overlap = (a, b) => a.x < b.x + b.width - 1 && b.x < a.x + a.width - 1 && a.y < b.y + b.height - 1 && b.y < a.y + a.height - 1;

try {
  // 1. The first open is the list, not arrivals above the reader.
  await step('390x844: a fresh open shows everything waiting, most urgent first, nothing held behind "N new"; the pill covers nothing', async () => {
    const agent = await agentWith('e2e-first-open', 'First open');
    // The least urgent first, so a first screen drawn from the first
    // request alone would put the rest above it.
    const severities = ['info', 'notice', 'warning', 'info', 'error', 'critical', 'warning', 'critical', 'notice'];
    const asked = severities.map((severity, i) => agent.ask(`First open: question ${i + 1}?`, undefined, { severity }));
    try {
      const rounds = 8;
      let last;
      for (let round = 1; round <= rounds; round++) {
        const { ctx, page } = await open(PHONE, { live: false });
        let pill = 0;
        const t0 = Date.now();
        await page.locator('main ol.cards article.card').first().waitFor({ timeout: 15_000 });
        // Watched from the first card to well after the catch-up.
        while (Date.now() - t0 < 3_000) {
          if (await page.locator('button.new-above').isVisible()) pill++;
          await sleep(50);
        }
        const shown = await until(async () => {
          const s = await cardsOnScreen(page);
          return s.length === asked.length && s;
        }, `round ${round}: all ${asked.length} waiting requests drawn`, 5_000).catch(async (e) => {
          throw new Error(`${e.message}: ${JSON.stringify(await cardsOnScreen(page))}, pill "${await page.locator('button.new-above').textContent()}"`);
        });
        const ranks = shown.map((c) => RANK[c.severity]);
        check(pill === 0, `round ${round}: ${pill} samples saw requests held behind "${await page.locator('button.new-above').textContent()}" on a first open`);
        check(ranks.every((r, i) => i === 0 || ranks[i - 1] <= r), `round ${round}: most urgent first: ${shown.map((c) => c.severity)}`);
        const count = (await page.locator('#inbox-title .count').textContent()).trim();
        check(count === String(asked.length), `round ${round}: the heading counts ${asked.length} (${count})`);
        const top = await page.locator('main ol.cards article.card').first().getAttribute('data-severity');
        check(top === 'critical', `round ${round}: the first card is the critical one (${top})`);
        if (round < rounds) await ctx.close();
        else last = { ctx, page };
      }
      // Once caught up, a request arriving above the reader waits behind
      // the pill, which sits in a place of its own.
      const { ctx, page } = last;
      try {
        await sleep(1_000);
        const more = agent.ask('First open: a later critical question?', undefined, { severity: 'critical' });
        const pill = page.locator('button.new-above');
        await pill.waitFor({ state: 'visible', timeout: 5_000 });
        await page.screenshot({ path: `${SHOTS}/new-above-390x844.png` });
        const box = await pill.boundingBox();
        const others = await page.$$eval('nav.tabs a, header.top, main article.card, main h1, .banners .banner', (els) => els
          .map((e) => { const r = e.getBoundingClientRect(); return { x: r.x, y: r.y, width: r.width, height: r.height, what: e.tagName + '.' + e.className }; })
          .filter((r) => r.height > 0 && r.y < innerHeight && r.y + r.height > 0));
        const covered = others.filter((o) => overlap(box, o));
        check(covered.length === 0, `the pill covers nothing: ${JSON.stringify(box)} over ${JSON.stringify(covered)}`);
        const center = await page.evaluate(({ x, y }) => {
          const hit = document.elementFromPoint(x, y);
          return hit && hit.closest('button.new-above') !== null;
        }, { x: box.x + box.width / 2, y: box.y + box.height / 2 });
        check(center, 'nothing is drawn over the pill either');
        const cut = await page.$$eval('nav.tabs a', (els) => els.filter((e) => e.scrollWidth > e.clientWidth + 1).map((e) => e.textContent));
        check(cut.length === 0, `beside it, every tab still reads whole: ${JSON.stringify(cut)}`);
        check((await pill.textContent()).includes('1 new request'), `it says how many: ${await pill.textContent()}`);
        await pill.tap();
        await until(async () => (await cardsOnScreen(page)).some((c) => c.id === more.id), 'the tap brings it in', 3_000);
        check(await pill.isHidden(), 'and the pill goes');
      } finally {
        await ctx.close();
      }
    } finally {
      agent.drop();
    }
  });

  await steps.step('no page errors', async () => {
    check(pageErrors.length === 0, `page errors: ${pageErrors.join(' | ')}`);
  });
} finally {
  await chromium.close().catch(() => {});
}

console.log(`\n${steps.passed} passed, ${steps.failed} failed`);
if (steps.failed) process.exit(1);
