// Accessibility audit: axe-core 4 run inside the release console, against
// the real relay binary and its demo agents, on every view: the connect
// screen, the inbox with a card of every kind (permission, form, review,
// critical), a form opened, an answer held and one answered, the
// history, the sessions list and a session, the relays screen, the key
// list and the notifications panel. Each at phone 390x844 and desktop
// 1280x800, light and dark.
//
// A violation of impact serious or critical fails its view; the moderate
// and minor ones are listed and counted, for the record.
//
// Run with scripts/test-console. E2E_STATIC_DIR serves another build (an
// older one, to see the audit fail).

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import { Relay, Steps, atRest, browser, check, freePort, tapSettled, until, STATIC_DIR } from './lib.mjs';

const require = createRequire(import.meta.url);
const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const FAILING = new Set(['serious', 'critical']);

const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 };
const DESKTOP = { viewport: { width: 1280, height: 800 } };
const MODES = [
  { name: 'phone light', phone: true, ctx: { ...PHONE, colorScheme: 'light' } },
  { name: 'phone dark', phone: true, ctx: { ...PHONE, colorScheme: 'dark' } },
  { name: 'desktop light', phone: false, ctx: { ...DESKTOP, colorScheme: 'light' } },
  { name: 'desktop dark', phone: false, ctx: { ...DESKTOP, colorScheme: 'dark' } },
];
/** What the inbox must hold before it is audited: a card of every kind. */
const KINDS = {
  permission: 'main article.card[data-kind="permission"]',
  form: 'main article.card[data-kind="form"]',
  review: 'main article.card[data-kind="review"]',
  critical: 'main article.card[data-severity="critical"]',
};

const token = `a11y-${randomBytes(12).toString('hex')}`;
const relay = new Relay({ port: await freePort(), token, seed: 7, staticDir: STATIC_DIR });
await relay.start();
const chromium = await browser();
const steps = new Steps();
const pageErrors = [];
/** Every audit's findings: { mode, view, failing: [...], others: [...] }. */
const audits = [];

/** Until the page is at rest: no card settling into place, no transition running. */
async function settle(page) {
  await atRest(page, 5_000);
}

/**
 * Runs axe on the whole page as it is now, records what it found and
 * lists it; the step it ran in fails on what was serious or critical.
 */
async function audit(page, mode, view) {
  await settle(page);
  if (!(await page.evaluate(() => typeof window.axe === 'object'))) await page.evaluate(AXE);
  const violations = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n) => ({ target: n.target.join(' '), html: n.html.slice(0, 160), why: n.failureSummary })),
    }));
  });
  const failing = violations.filter((v) => FAILING.has(v.impact));
  const others = violations.filter((v) => !FAILING.has(v.impact));
  audits.push({ mode: mode.name, view, failing, others });
  const listed = others.map((v) => `${v.id} (${v.impact}, ${v.nodes.length})`).join(', ') || 'none';
  console.log(`      ${mode.name} · ${view}: ${failing.length} serious/critical; moderate or minor: ${listed}`);
}

/**
 * A step of audits: every view in it is audited whatever an earlier one
 * found, then it fails naming each serious or critical violation with
 * the elements axe saw.
 */
async function audited(name, fn) {
  await steps.step(name, async () => {
    const from = audits.length;
    await fn();
    const said = audits.slice(from).flatMap((a) => a.failing.map((v) => `${a.mode} · ${a.view}: ${v.id} [${v.impact}] ${v.help}: `
      + `${v.nodes.length} node(s)\n` + v.nodes.slice(0, 3)
      .map((n) => `          ${n.target}  ${n.html}\n            ${String(n.why).split('\n').join(' ')}`).join('\n')));
    check(said.length === 0, `serious or critical violations:\n        ${said.join('\n        ')}`);
  });
}

/** Brings in requests waiting behind "N new", as a person does to see them. */
async function bringIn(page) {
  const bar = page.locator('button.new-above');
  if (await bar.isVisible().catch(() => false)) await bar.click({ timeout: 1_000 }).catch(() => {});
}

/** Until every kind is in the inbox, bringing in what waits behind "N new". */
async function everyKind(page) {
  const missing = async () => {
    await bringIn(page);
    const gone = [];
    for (const [kind, selector] of Object.entries(KINDS)) {
      if (!(await page.locator(selector).count())) gone.push(kind);
    }
    return gone;
  };
  await until(async () => (await missing()).length === 0, 'a card of every kind in the inbox', 60_000)
    .catch(async (e) => { throw new Error(`${e.message}; missing: ${(await missing()).join(', ')}`); });
}

/** Goes to a view by its link in the tabs, as a person does. */
async function openTab(page, name) {
  await page.locator('nav.tabs a', { hasText: name }).click();
}

const pages = new Map();

try {
  // The inbox first, in every mode, while the demo's critical request is
  // open (it expires after two minutes).
  for (const mode of MODES) {
    await audited(`axe ${mode.name}: the connect screen, then the inbox with a card of every kind`, async () => {
      const ctx = await chromium.newContext(mode.ctx);
      const page = await ctx.newPage();
      page.on('pageerror', (e) => pageErrors.push(String(e)));
      pages.set(mode.name, { ctx, page });
      await page.goto(`${relay.base}/`);
      await page.locator('#relay-token-0').waitFor();
      await audit(page, mode, 'connect screen');
      await page.fill('#relay-token-0', token);
      await page.click('main form button[type="submit"]');
      await page.locator('.chip[data-state="live"]').waitFor({ timeout: 15_000 });
      await everyKind(page);
      await audit(page, mode, `inbox (${await page.locator('main article.card').count()} cards)`);
    });
  }

  for (const mode of MODES) {
    await audited(`axe ${mode.name}: a form opened, an answer held and one answered`, async () => {
      const { page } = pages.get(mode.name);
      if (mode.phone) {
        // On a phone a form waits behind its card's button.
        const form = page.locator(KINDS.form).first();
        await form.locator('button.open-form').click();
        await form.locator('form.form-answer select').first().waitFor({ state: 'visible' });
        await audit(page, mode, 'inbox, a form opened');
      }
      // A build-bot permission: its Deny is one tap, held on the device.
      const c = page.locator('main article.card[data-kind="permission"]', { has: page.locator('.card-agent', { hasText: 'build-bot' }) }).first();
      await until(async () => (await bringIn(page), await c.count()), 'a permission request of build-bot\'s', 30_000);
      const id = await c.getAttribute('data-request');
      // Scrolled into view first and taken once the card has been still
      // there: a card that just came into view refuses a tap.
      await tapSettled(c, c.locator('button.option[data-option="deny"]'));
      await c.locator('.hold button.send-now').waitFor();
      await audit(page, mode, 'inbox, an answer held');
      await c.locator('.hold button.send-now').click({ timeout: 5_000 });
      const row = page.locator(`main ol.cards article.settled[data-request="${id}"]`);
      await until(async () => (await row.locator('.outcome').textContent().catch(() => '')).includes('Denied by you'), 'the answered row says so', 15_000);
      await audit(page, mode, 'inbox, an answered card');
    });
  }

  for (const mode of MODES) {
    await audited(`axe ${mode.name}: history, sessions, a session, relays, the key list, notifications`, async () => {
      const { page } = pages.get(mode.name);
      const menu = async () => {
        if (mode.phone) await page.locator('button.menu-toggle').click();
      };
      await openTab(page, 'History');
      await page.locator('main section.history article.settled').first().waitFor({ timeout: 15_000 });
      await audit(page, mode, 'history');
      await openTab(page, 'Sessions');
      const lane = page.locator('main a[href^="#/session/"]', { hasText: 'Fix flaky integration tests' }).first();
      await lane.waitFor({ timeout: 15_000 });
      await audit(page, mode, 'sessions');
      await lane.click();
      await page.locator('main ol.timeline > li').first().waitFor({ timeout: 15_000 });
      await audit(page, mode, 'a session');
      await menu();
      await page.locator('button[data-open="relays"]').click();
      await page.locator('#relay-url-0').waitFor();
      await audit(page, mode, 'relays');
      await page.goBack();
      await openTab(page, 'Inbox');
      await page.locator('main article.card').first().waitFor();
      await menu();
      await page.locator('button.keys-button').click();
      await page.locator('.key-help[role="dialog"]').waitFor();
      await audit(page, mode, 'the key list');
      await page.keyboard.press('Escape');
      const push = page.locator('details.push summary');
      if (!(await push.isVisible())) await menu();
      await push.click();
      await page.locator('details.push[open] button[role="switch"]').waitFor();
      await audit(page, mode, 'the notifications panel');
    });
  }

  await steps.step('no page errors', async () => {
    check(pageErrors.length === 0, `page errors: ${pageErrors.join(' | ')}`);
  });
} finally {
  for (const { ctx } of pages.values()) await ctx.close().catch(() => {});
  await chromium.close().catch(() => {});
  await relay.stop().catch(() => {});
}

// The record: how many audits, what failed them, and the moderate or
// minor findings by rule.
const failingRules = audits.flatMap((a) => a.failing);
const byRule = new Map();
for (const v of audits.flatMap((a) => a.others)) {
  const r = byRule.get(v.id) || { impact: v.impact, views: 0, nodes: 0 };
  r.views++;
  r.nodes += v.nodes.length;
  byRule.set(v.id, r);
}
console.log(`\naxe-core ${JSON.parse(readFileSync(require.resolve('axe-core/package.json'), 'utf8')).version}: ${audits.length} audits; `
  + `${failingRules.length} serious or critical violations (${failingRules.reduce((n, v) => n + v.nodes.length, 0)} nodes); `
  + `${[...byRule.values()].reduce((n, r) => n + r.views, 0)} moderate or minor`);
for (const [id, r] of byRule) console.log(`  ${id} (${r.impact}): in ${r.views} audits, ${r.nodes} nodes`);
console.log(`\n${steps.passed} passed, ${steps.failed} failed`);
if (steps.failed) {
  console.log(`\nrelay log (tail):\n${relay.log.slice(-20).join('')}`);
  process.exit(1);
}
