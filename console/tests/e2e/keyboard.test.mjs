// Keyboard alone: the release console in headless Chromium against the
// real relay binary, fed by a test agent so every request arrives on cue.
// Nothing here clicks: a person connects, walks the page with Tab,
// answers a permission request, fills a form and opens a session with
// the keyboard, and hears new requests and settled answers through the
// page's live region while the focus stays where they are.
//
// Run with scripts/test-console. E2E_STATIC_DIR serves another build.

import { randomBytes } from 'node:crypto';
import { Relay, Steps, TestAgent, atRest, browser, check, freePort, until, STATIC_DIR } from './lib.mjs';

const token = `kbd-${randomBytes(12).toString('hex')}`;
const relay = new Relay({ port: await freePort(), token, demo: false, staticDir: STATIC_DIR });
await relay.start();
const chromium = await browser();
const steps = new Steps();
const pageErrors = [];

const FIELDS = [
  { id: 'window', type: 'string', label: 'Maintenance window', required: true },
  { id: 'region', type: 'select', label: 'Region', required: true, choices: [{ id: 'eu', label: 'Europe' }, { id: 'us', label: 'United States' }] },
  { id: 'hosts', type: 'number', label: 'Hosts at a time', required: true, min: 1, max: 10 },
  { id: 'drain', type: 'boolean', label: 'Drain connections first' },
];

/**
 * In the page: a description of an element (what it is, where it sits,
 * whether its focus can be seen), and the walk's bookkeeping.
 */
function kbdHelpers() {
  const seen = new WeakSet();
  let last = null;
  const label = (e) => (e.getAttribute('aria-label') || (e.labels && e.labels[0] && e.labels[0].textContent) || e.textContent || e.id || '')
    .trim().replace(/\s+/g, ' ').slice(0, 50);
  const describe = (e) => {
    if (!e || e === document.body || e === document.documentElement) return { none: true, tag: e ? e.tagName : null };
    const r = e.getBoundingClientRect();
    const cs = getComputedStyle(e);
    const x = Math.min(Math.max(r.left + r.width / 2, 0), innerWidth - 1);
    const y = Math.min(Math.max(r.top + r.height / 2, 0), innerHeight - 1);
    const hit = document.elementFromPoint(x, y);
    const card = e.closest('article.card');
    return {
      tag: e.tagName.toLowerCase(),
      id: e.id,
      cls: e.className && typeof e.className === 'string' ? e.className : '',
      label: label(e),
      option: e.getAttribute('data-option'),
      card: card ? card.getAttribute('data-request') : null,
      inMain: !!e.closest('main'),
      // Seen: an outline of at least 2 px, on screen, not covered by anything.
      outline: cs.outlineStyle !== 'none' && parseFloat(cs.outlineWidth) >= 2,
      onScreen: r.bottom > 0 && r.top < innerHeight && r.right > 0 && r.left < innerWidth,
      covered: !(hit && (hit === e || e.contains(hit) || hit.contains(e))),
      html: e.outerHTML.slice(0, 120),
    };
  };
  window.__kbd = {
    describe,
    active: () => describe(document.activeElement),
    /** Notes the focused element; whether it comes after the last one in the document. */
    step() {
      const a = document.activeElement;
      const after = !last || !a || a === document.body || !!(last.compareDocumentPosition(a) & Node.DOCUMENT_POSITION_FOLLOWING);
      if (a && a !== document.body) {
        seen.add(a);
        last = a;
      }
      return { ...describe(a), after };
    },
    reset() {
      last = null;
    },
    /** Controls a person can reach that the walk did not. */
    unreached() {
      const all = document.querySelectorAll('a[href], button, input, select, textarea, summary, [tabindex]:not([tabindex="-1"])');
      return [...all]
        .filter((e) => !e.disabled && e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden' && !e.closest('[inert], [aria-hidden="true"]'))
        // What a closed <details> holds is out of reach until it opens (its summary is not).
        .filter((e) => !e.closest('details:not([open])') || e.closest('details:not([open]) > summary'))
        .filter((e) => !seen.has(e))
        .map((e) => e.outerHTML.slice(0, 120));
    },
    positiveTabindex: () => [...document.querySelectorAll('[tabindex]')].filter((e) => e.tabIndex > 0).map((e) => e.outerHTML.slice(0, 80)),
  };
}

const active = (page) => page.evaluate(() => window.__kbd.active());
const said = (page) => page.evaluate(() => document.getElementById('announcer')?.textContent || '');

/**
 * Presses Tab until `want(active element)` holds, at most `max` times;
 * returns the element. Each stop must show its focus.
 */
async function tabTo(page, want, what, { max = 40, back = false } = {}) {
  for (let i = 0; i < max; i++) {
    await page.keyboard.press(back ? 'Shift+Tab' : 'Tab');
    const a = await active(page);
    if (!a.none) check(a.outline && a.onScreen && !a.covered, `the focus can be seen on ${a.html} (outline ${a.outline}, on screen ${a.onScreen}, covered ${a.covered})`);
    if (!a.none && want(a)) return a;
  }
  throw new Error(`${what}: not reached with ${max} presses of ${back ? 'Shift+Tab' : 'Tab'} (at ${JSON.stringify(await active(page))})`);
}

/**
 * Walks the whole page with Tab from the skip link round to it again:
 * every stop in document order, its focus seen, and every control on
 * the page among the stops.
 */
async function walk(page, where) {
  await page.evaluate(() => {
    window.scrollTo(0, 0);
    document.querySelector('a.skip').focus();
    window.__kbd.reset();
  });
  const stops = [await page.evaluate(() => window.__kbd.step())];
  for (let i = 0; i < 200; i++) {
    await page.keyboard.press('Tab');
    const s = await page.evaluate(() => window.__kbd.step());
    if (s.cls === 'skip') break;
    if (s.none) continue; // past the last control, the browser's own frame
    stops.push(s);
  }
  check(stops[0].cls === 'skip' && stops[0].outline, `${where}: the first stop is the skip link, its focus seen`);
  const hidden = stops.filter((s) => !s.outline || !s.onScreen || s.covered);
  check(hidden.length === 0, `${where}: focus not seen on ${hidden.length} stops: ${JSON.stringify(hidden.slice(0, 3))}`);
  const back = stops.filter((s) => !s.after);
  check(back.length === 0, `${where}: the focus goes back up the page at ${JSON.stringify(back.slice(0, 3))}`);
  const mainAt = stops.findIndex((s) => s.inMain);
  check(mainAt > 0 && stops.slice(mainAt).every((s) => s.inMain), `${where}: the page frame first, then the view (${stops.map((s) => s.label).join(' | ')})`);
  const unreached = await page.evaluate(() => window.__kbd.unreached());
  check(unreached.length === 0, `${where}: controls Tab never reaches: ${JSON.stringify(unreached.slice(0, 4))}`);
  const positive = await page.evaluate(() => window.__kbd.positiveTabindex());
  check(positive.length === 0, `${where}: a tabindex above 0 reorders the page: ${positive}`);
  return stops;
}

/**
 * Presses Enter on the focused control of card `id` once the card holds
 * still: a card that just came into view or moved takes no answer for a
 * moment (its buttons say so with aria-disabled), as a person sees.
 */
async function enterSettled(page, id) {
  const card = page.locator(`main article.card[data-request="${id}"]`);
  await until(async () => (await card.getAttribute('data-steady')) === 'ready', 'the card holds still', 5_000, 50);
  await page.keyboard.press('Enter');
}

/** Sends what is held in the focused card with its Send now, by keyboard. */
async function sendHeld(page, card) {
  await until(async () => (await active(page)).cls.includes('hold'), 'the held answer has the focus', 3_000, 50);
  await tabTo(page, (a) => a.cls.includes('send-now') && a.card === card, 'Send now', { max: 3 });
  await page.keyboard.press('Enter');
}

const agent = new TestAgent({ relay, agent: 'e2e-keyboard' });
const ctx = await chromium.newContext({ viewport: { width: 1280, height: 800 } });
const page = await ctx.newPage();
page.on('pageerror', (e) => pageErrors.push(String(e)));
await page.addInitScript(kbdHelpers);

try {
  await agent.connect();
  agent.start('Keyboard-only operator');
  const permission = agent.ask('Keyboard: restart the staging workers?');
  const form = agent.emit('attention.requested', {
    kind: 'form', prompt: 'Keyboard: schedule the maintenance window', fields: FIELDS, respond_via: ['control'],
  }, { run: 'run-e2e', severity: 'info' });

  await steps.step('connect with the keyboard: Tab to the token, type it, Enter', async () => {
    await page.goto(`${relay.base}/`);
    await page.locator('#relay-token-0').waitFor();
    const url = await tabTo(page, (a) => a.id === 'relay-url-0', 'the relay address', { max: 5 });
    check(url.inMain, 'the address comes first');
    await tabTo(page, (a) => a.id === 'relay-token-0', 'the token', { max: 2 });
    await page.keyboard.type(token);
    await page.keyboard.press('Enter');
    await page.locator('.chip[data-state="live"]').waitFor({ timeout: 15_000 });
    await page.locator(`main article.card[data-request="${form.id}"]`).waitFor({ timeout: 10_000 });
  });

  await steps.step('Tab reaches every control in document order, each with its focus seen', async () => {
    const stops = await walk(page, 'inbox');
    const inCards = stops.filter((s) => s.card).map((s) => s.card);
    check(inCards.indexOf(permission.id) < inCards.indexOf(form.id) && inCards.lastIndexOf(permission.id) < inCards.indexOf(form.id),
      `one card's controls, then the next card's: ${inCards.join(' ')}`);
    console.log(`      ${stops.length} stops: ${stops.map((s) => s.label || s.tag).join(' | ')}`);
  });

  await steps.step('answer a permission request: Tab to Allow, Enter, Send now; the answer settles and is said, the focus stays', async () => {
    await page.keyboard.press('Enter'); // the skip link: to the view
    check((await active(page)).id === 'main', 'the skip link moves the focus to the view');
    await tabTo(page, (a) => a.card === permission.id && a.option === 'allow', 'Allow');
    await enterSettled(page, permission.id);
    await sendHeld(page, permission.id);
    await until(() => agent.commands.length === 1, 'the answer reached the agent', 10_000);
    const cmd = agent.commands[0];
    check(cmd.type === 'control.attention.respond' && cmd.subject === permission.id && cmd.data.answer.option === 'allow',
      `Allow, to the permission request: ${JSON.stringify(cmd)}`);
    const words = await until(async () => {
      const w = await said(page);
      return w.includes('Settled') && w.includes('Allow') && w;
    }, 'the live region says the answer settled', 10_000);
    const focus = await active(page);
    check(focus.card === form.id, `after the answer the focus is on the next waiting card: ${JSON.stringify(focus)}`);
    // The settled answer has been drawn and every card it moved has come to rest.
    await atRest(page);
    const still = await active(page);
    check(still.card === form.id && still.tag === focus.tag, `the settled answer took no focus (${JSON.stringify(still)})`);
    console.log(`      said: ${words}`);
  });

  await steps.step('fill a form with the keyboard alone; a request arriving meanwhile is said and takes no focus', async () => {
    const field = (id) => `f-${form.id}-${id}`;
    await tabTo(page, (a) => a.id === field('window'), 'the first field');
    await page.keyboard.type('Sunday 02:00');
    agent.ask('Keyboard: rotate the log volume?');
    const words = await until(async () => {
      const w = await said(page);
      return w.includes('rotate the log volume') && w;
    }, 'the live region says a new request arrived', 10_000);
    console.log(`      said: ${words}`);
    const still = await active(page);
    check(still.id === field('window'), `the new request took no focus (${JSON.stringify(still)})`);
    await page.keyboard.type(' UTC');
    check((await page.inputValue(`#${field('window')}`)) === 'Sunday 02:00 UTC', 'the typing went on where it was');
    await tabTo(page, (a) => a.id === field('region'), 'the region', { max: 1 });
    await page.keyboard.press('ArrowDown');
    check((await page.locator(`#${field('region')} option:checked`).textContent()) === 'Europe', 'an arrow key picks the first region');
    await tabTo(page, (a) => a.id === field('hosts'), 'the hosts', { max: 1 });
    await page.keyboard.type('3');
    await tabTo(page, (a) => a.id === field('drain'), 'the checkbox', { max: 1 });
    await page.keyboard.press('Space');
    await tabTo(page, (a) => a.card === form.id && a.label === 'Send answer', 'Send answer', { max: 1 });
    await enterSettled(page, form.id);
    await sendHeld(page, form.id);
    await until(() => agent.commands.length === 2, 'the form reached the agent', 10_000);
    const { values } = agent.commands[1].data.answer;
    const want = { window: 'Sunday 02:00 UTC', region: 'eu', hosts: 3, drain: true };
    check(Object.keys(want).length === Object.keys(values).length && Object.entries(want).every(([k, v]) => values[k] === v),
      `every field as filled in: ${JSON.stringify(values)}`);
    await until(async () => (await said(page)).includes('Settled: form request'), 'the live region says the form settled', 10_000);
  });

  await steps.step('open a session from a card with the keyboard; its page is walked the same way', async () => {
    await tabTo(page, (a) => a.inMain && a.tag === 'a' && a.label.includes('Keyboard-only operator'), 'the card\'s session link');
    await page.keyboard.press('Enter');
    await page.locator('main h1', { hasText: 'Keyboard-only operator' }).waitFor({ timeout: 5_000 });
    check(page.url().includes('#/session/'), `the session is open: ${page.url()}`);
    const focus = await active(page);
    check(!focus.none && focus.inMain, `the focus moved into the session's view, not lost to the page: ${JSON.stringify(focus)}`);
    await page.locator('main ol.timeline > li').first().waitFor();
    const stops = await walk(page, 'session');
    console.log(`      ${stops.length} stops: ${stops.map((s) => s.label || s.tag).join(' | ')}`);
  });

  await steps.step('no page errors', async () => {
    check(pageErrors.length === 0, `page errors: ${pageErrors.join(' | ')}`);
  });
} finally {
  agent.drop();
  await ctx.close().catch(() => {});
  await chromium.close().catch(() => {});
  await relay.stop().catch(() => {});
}

console.log(`\n${steps.passed} passed, ${steps.failed} failed`);
if (steps.failed) {
  console.log(`\nrelay log (tail):\n${relay.log.slice(-20).join('')}`);
  process.exit(1);
}
