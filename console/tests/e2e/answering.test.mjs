// End-to-end: answering safely. The release console in headless Chromium
// against a relay without demo agents, fed by test agents so every
// request arrives on cue. Desktop 1280×800 and phone 390×844.
//
// Run with scripts/test-console (after console.test.mjs).

import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { ROOT, Relay, Steps, TestAgent, answerNow, browser, cardIn, check, freePort, sendNow, sleep, successColour, tapSettled, until, STATIC_DIR, frames, steadied, relayHolds } from './lib.mjs';

mkdirSync(`${ROOT}target/console-e2e`, { recursive: true });

const token = `e2e-${randomBytes(12).toString('hex')}`;
const chromium = await browser();
const steps = new Steps();
const pageErrors = [];

// Each check gets a relay of its own, so no request left by another is
// in the way. E2E_STATIC_DIR serves another build (an older one, to see
// a check fail).
let relay;
async function step(name, fn, args = []) {
  // E2E_ONLY=words runs only the checks whose names contain them.
  if (process.env.E2E_ONLY && !name.includes(process.env.E2E_ONLY)) return;
  await steps.step(name, async () => {
    relay = new Relay({ port: await freePort(), token, demo: false, staticDir: STATIC_DIR, args });
    await relay.start();
    try {
      await fn();
    } finally {
      await relay.stop();
    }
  });
}

const DESKTOP = { viewport: { width: 1280, height: 800 } };
const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 };

/**
 * A console at `kind`'s size, live. `sent` gets every frame it puts on its
 * sockets: whether an answer left the page is seen there, with nothing in
 * flight.
 */
async function open(kind, as = token) {
  const ctx = await chromium.newContext(kind);
  const page = await ctx.newPage();
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  const sent = [];
  page.on('websocket', (ws) => ws.on('framesent', (f) => sent.push(String(f.payload))));
  await page.goto(`${relay.base}/#token=${encodeURIComponent(as)}`);
  await page.locator('.chip[data-state="live"]').waitFor({ timeout: 15_000 });
  return { ctx, page, sent };
}

/**
 * A test agent with a session titled `title`, and the console open at
 * `kind`'s size: `body` gets both (and the browser context, and what the
 * page sent), and both are closed after it, whatever it throws.
 */
async function withAgent(options, title, kind, body) {
  const agent = new TestAgent({ relay, ...options });
  await agent.connect();
  agent.start(title);
  const { ctx, page, sent } = await open(kind);
  try {
    return await body({ agent, page, ctx, sent });
  } finally {
    agent.drop();
    await ctx.close();
  }
}

const card = cardIn;

async function inboxIds(page) {
  return page.$$eval('main ol.cards article.card', (els) => els.map((e) => e.getAttribute('data-request')));
}

// The console's own timers that some checks wait out (console/src/model).
/** An answer is held on the device this long before it leaves (hold::UNDO_MS). */
const HOLD_MS = 5_000;
/** After a severe approval's first tap its button ignores taps this long (hold::CONFIRM_INERT_MS). */
const CONFIRM_INERT_MS = 500;
/** The first catch-up ends once no request has joined the list for this long (inbox::LOAD_QUIET_MS). */
const LOAD_QUIET_MS = 700;

/** Until every card on the page takes taps: the page is drawn and still. */
async function allSteady(page) {
  await until(async () => {
    await frames(page);
    return page.evaluate(() => document.querySelectorAll('main article.card').length > 0
      && !document.querySelector('main article.card[data-steady="settling"]'));
  }, 'the cards settle', 10_000, 50);
}

/** The page's clock (`performance.now`), the one its timers run on. */
function pageNow(page) {
  return page.evaluate(() => performance.now());
}

/**
 * Until a timer of the page's own, due at `at` on its clock, has run: the
 * page runs its timers in the order they fall due, so the console's timers
 * due by then have run too.
 */
async function pageTimerPast(page, at) {
  await page.evaluate((due) => new Promise((r) => {
    const wait = () => (performance.now() >= due ? r() : setTimeout(wait, Math.max(1, due - performance.now())));
    wait();
  }), at);
}

/**
 * Until the page's first catch-up is over: `LOAD_QUIET_MS` after the last
 * request it took in (by `joined`, on its clock). Only then does a request
 * arriving above what is shown wait behind "N new" instead of taking its
 * place in the order.
 */
async function caughtUp(page, joined) {
  // protocol timer under test: inbox::LOAD_QUIET_MS.
  await pageTimerPast(page, joined + LOAD_QUIET_MS);
}

/**
 * Until the answer held in card `c` says it leaves in at most `left` s:
 * by the page's clock it has been held at least `HOLD_MS / 1000 - left` s.
 * Returns as well once nothing is held there, for the next check to say.
 */
async function heldDown(c, left) {
  await until(async () => {
    const words = c.locator('.hold .hold-words');
    if ((await words.count()) === 0) return true;
    const m = /in (\d+) s/.exec(await words.first().textContent());
    return m && Number(m[1]) <= left;
  }, `the held answer counts down to ${left} s`, 10_000);
}

/** The answers among the frames a page sent (see `open`). */
function answersIn(sent) {
  return sent.filter((f) => f.includes('control.attention.respond'));
}

/**
 * From now on the page notes each click it takes, before any handler:
 * the request whose card it landed on, and whether on an answer held
 * there.
 */
async function recordClicks(page) {
  await page.evaluate(() => {
    window.__clicks = [];
    addEventListener('click', (e) => {
      const at = e.target instanceof Element ? e.target : null;
      window.__clicks.push({
        card: at?.closest('article.card')?.getAttribute('data-request') ?? null,
        held: Boolean(at?.closest('.hold')),
        what: at ? `${at.tagName.toLowerCase()}.${[...at.classList].join('.')}` : null,
      });
    }, true);
  });
}

/** Until the page has taken `n` clicks (see `recordClicks`); what it noted. */
async function clicksTaken(page, n) {
  return until(async () => {
    const all = await page.evaluate(() => window.__clicks);
    return all.length >= n && all;
  }, `the page takes ${n} clicks`, 10_000, 50);
}

/**
 * Two requests, one above the other; a double click (or a double tap) on
 * the first one's Deny, both halves sent at once as a quick hand does. The
 * first answers the first request; the second lands on what is in its
 * place now, and must answer nothing.
 */
async function doubleHit(kind, name, double) {
  await withAgent({ agent: `e2e-double-${name}` }, `Double ${name}`, kind, async ({ agent, page, sent }) => {
    const q1 = agent.ask(`Double ${name}: delete the first scratch volume?`);
    const q2 = agent.ask(`Double ${name}: delete the second scratch volume?`);
    const first = card(page, q1.data.prompt);
    await first.waitFor({ timeout: 10_000 });
    await card(page, q2.data.prompt).waitFor({ timeout: 10_000 });
    const ids = await inboxIds(page);
    check(ids.indexOf(q1.id) === 0 && ids.indexOf(q2.id) === 1, `the older request is first: ${ids}`);
    // The first card at the top of the view, so the second one's buttons
    // are in view after it moves up; then read, as anyone would first.
    await first.evaluate((e) => window.scrollBy(0, e.getBoundingClientRect().top - 8));
    await steadied(first);
    const box = await first.locator('button.option[data-option="deny"]').boundingBox();
    const x = box.x + box.width / 2;
    const y = box.y + box.height / 2;
    await recordClicks(page);
    await double(page, x, y);
    const [, second] = await clicksTaken(page, 2);
    // Both halves are handled by now: any answer they hold leaves by then.
    const hit = await pageNow(page);
    if (process.env.E2E_DEBUG) console.log({ name, y, second, commands: agent.commands.map((c) => c.subject), q1: q1.id, q2: q2.id });
    // The second half lands on the first card, the answer now held in its
    // place: it neither takes it back nor sends it early, and nothing moved.
    check(second.card === q1.id, `the second half landed on the first card, not the next: ${JSON.stringify(second)}`);
    check((await first.locator('.hold').count()) === 1, 'the answer is held, not taken back');
    await heldDown(first, 3);
    check(agent.commands.length === 0, 'nothing left early');
    await until(() => agent.commands.length === 1, 'the answer leaves when its window ends', 8_000);
    // The agent's answer is back on the page (the first card folds into its
    // row), and the window of anything the second half could have held is
    // over by the page's own timers: a second answer would have been sent.
    await page.locator(`main article.settled[data-request="${q1.id}"]`).waitFor({ timeout: 10_000 });
    await pageTimerPast(page, hit + HOLD_MS);
    check(answersIn(sent).length === 1, `the page sent one answer: ${answersIn(sent).length}`);
    const subjects = agent.commands.map((c) => c.subject);
    check(subjects.length === 1 && subjects[0] === q1.id && agent.commands[0].data.answer.option === 'deny',
      `one answer, Deny to the first request only: ${JSON.stringify(subjects)} (first ${q1.id}, second ${q2.id})`);
    check((await inboxIds(page)).includes(q2.id), 'the second request still waits');
    // Once it has been still long enough, the second card answers as usual.
    await tapSettled(card(page, q2.data.prompt), card(page, q2.data.prompt).locator('button.option[data-option="deny"]'));
    await card(page, q2.data.prompt).locator('.hold button.send-now').click({ timeout: 5_000 });
    await until(() => agent.commands.length === 2, 'the second card answers once it has been seen', 5_000);
  });
}

try {
  await step('desktop: a double click on Deny answers only the card that was clicked', async () => {
    await doubleHit(DESKTOP, 'click', (page, x, y) => page.mouse.click(x, y, { clickCount: 2 }));
  });

  await step('phone: a double tap on Deny answers only the card that was tapped', async () => {
    await doubleHit(PHONE, 'tap', (page, x, y) => Promise.all([page.touchscreen.tap(x, y), page.touchscreen.tap(x, y)]));
  });

  await step('a just-arrived card does not take a click meant for what was there', async () => {
    await withAgent({ agent: 'e2e-arrival' }, 'Arrivals', DESKTOP, async ({ agent, page }) => {
      const low = agent.ask('Arrival: rotate the staging log files?', undefined, { severity: 'info' });
      const lowCard = card(page, low.data.prompt);
      await lowCard.waitFor({ timeout: 10_000 });
      const joined = await pageNow(page);
      await steadied(lowCard);
      await caughtUp(page, joined);
      const box = await lowCard.locator('button.option[data-option="allow"]').boundingBox();
      // A more severe request is raised: it waits behind "1 new request"
      // instead of being drawn above, where the pointer is, which clicks.
      const high = agent.ask('Arrival: drop the production replica?', undefined, { severity: 'critical' });
      await page.locator('button.new-above', { hasText: '1 new request' }).waitFor({ timeout: 10_000 });
      check((await page.locator('main article.card', { hasText: high.data.prompt }).count()) === 0, 'the new card is not drawn above');
      await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
      await lowCard.locator('.hold').waitFor({ timeout: 2_000 });
      await sendNow(lowCard);
      await until(() => agent.commands.length === 1, 'the click answered the card it was aimed at', 3_000);
      const subjects = agent.commands.map((c) => c.subject);
      check(!subjects.includes(high.id) && subjects[0] === low.id, `the card that had just arrived was not answered: ${JSON.stringify(subjects)}`);
      await card(page, high.data.prompt).waitFor({ timeout: 5_000 });
    });
  });

  await step('a card scrolled into view waits before its buttons act', async () => {
    await withAgent({ agent: 'e2e-scrolled' }, 'Scrolled', DESKTOP, async ({ agent, page }) => {
      const qs = [];
      for (let i = 1; i <= 8; i++) qs.push(agent.ask(`Scrolled: question ${i}?`));
      const last = card(page, qs[7].data.prompt);
      await last.waitFor({ timeout: 10_000 });
      await allSteady(page);
      const below = await last.evaluate((e) => e.getBoundingClientRect().top > window.innerHeight);
      check(below, 'the last card starts out of view');
      // A flick brings it under the pointer, and the pointer clicks as soon
      // as the page has seen it come into view.
      await last.evaluate((e) => window.scrollBy(0, e.getBoundingClientRect().top - 40));
      const box = await (await page.waitForFunction((id) => {
        const c = document.querySelector(`main article.card[data-request="${id}"]`);
        if (c?.getAttribute('data-steady') !== 'settling') return null;
        const b = c.querySelector('button.option[data-option="allow"]').getBoundingClientRect();
        return { x: b.x, y: b.y, width: b.width, height: b.height };
      }, qs[7].id, { polling: 'raf', timeout: 5_000 })).jsonValue();
      await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
      // The card says that click was not taken.
      await last.locator('.moved-note').waitFor({ timeout: 5_000 });
      check(agent.commands.length === 0 && (await last.locator('.hold').count()) === 0,
        `nothing answered just after it came into view: ${JSON.stringify(agent.commands.map((c) => c.subject))}`);
      await steadied(last);
      await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
      await sendNow(last);
      await until(() => agent.commands.length === 1 && agent.commands[0].subject === qs[7].id, 'once seen, it answers', 5_000);
    });
  });

  await step('typed text on a permission: the button says it sends a refusal', async () => {
    await withAgent({ agent: 'e2e-typed' }, 'Typed replies', DESKTOP, async ({ agent, page }) => {
      const q = agent.ask('Typed: push the release branch?');
      const c = card(page, q.data.prompt);
      await c.waitFor({ timeout: 10_000 });
      const box = c.locator('form.reply input[name="reply"]');
      const send = c.locator('form.reply button.send');
      await box.fill('yes, go ahead');
      const refusal = (await send.textContent()).trim();
      check(refusal === 'Send as refusal', `text naming no option: the button says so (${refusal})`);
      await box.fill('allow');
      const allow = (await send.textContent()).trim();
      check(allow === 'Send as \u201cAllow\u201d', `text naming an option: the button names it (${allow})`);
      await box.fill('');
      const empty = (await send.textContent()).trim();
      check(empty === 'Send reply', `nothing typed: a plain label (${empty})`);
      await box.fill('yes, go ahead');
      await send.click();
      await sendNow(c);
      await until(() => agent.commands.length === 1, 'the reply was sent', 5_000);
      const answer = agent.commands[0].data.answer;
      check(answer.text === 'yes, go ahead', `the typed text went as typed: ${JSON.stringify(answer)}`);
    });
  });

  await step('typed numbers: each reaches the agent as the number its digits name, to the last bit', async () => {
    // The browser converts them (the page's parseFloat, after the engine's
    // grammar check): long mantissas, exponents, the smallest subnormal,
    // a bare point at either end, an integer too long for 64 bits.
    const typed = ['0.30000000000000004', '3.14159265358979323846264338327950288', '6.02214076e23',
      '4.9e-324', '1e308', '.5', '2.', '-7.25E-3', '123456789012345678901234567890', '42'];
    const fields = typed.map((_, i) => ({ id: `n${i}`, type: 'number', label: `Number ${i}`, required: true }));
    await withAgent({ agent: 'e2e-numbers' }, 'Typed numbers', DESKTOP, async ({ agent, page }) => {
      const f = agent.ask('Numbers: confirm the measured values', [], { data: { kind: 'form', fields } });
      const c = card(page, 'confirm the measured values');
      await c.waitFor({ timeout: 10_000 });
      for (const [i, s] of typed.entries()) await c.locator(`[data-field="n${i}"] input`).fill(s);
      await c.locator('form.form-answer button[type="submit"]').click();
      await sendNow(c);
      await until(() => agent.commands.some((x) => x.subject === f.id), 'the form answer went out', 5_000);
      const values = agent.commands.find((x) => x.subject === f.id).data.answer.values;
      for (const [i, s] of typed.entries()) {
        check(Object.is(values[`n${i}`], Number(s)), `${s} arrives as ${Number(s)}: ${JSON.stringify(values[`n${i}`])}`);
      }
    });
  });

  await step('keyboard: after an answer the focus moves to the next waiting card, and j/k go on from there', async () => {
    await withAgent({ agent: 'e2e-keys' }, 'Keyboard answers', DESKTOP, async ({ agent, page }) => {
      const qs = ['one', 'two', 'three'].map((n) => agent.ask(`Keys: question ${n}?`));
      await card(page, 'Keys: question three?').waitFor({ timeout: 10_000 });
      await allSteady(page);
      const focused = () => page.evaluate(() => {
        const a = document.activeElement;
        const c = a && a.closest('article.card');
        return c ? c.getAttribute('data-request') : (a ? a.tagName : null);
      });
      await page.locator('body').click({ position: { x: 5, y: 5 } });
      await page.keyboard.press('j');
      check((await focused()) === qs[0].id, `j focuses the first card (${await focused()})`);
      check(JSON.stringify(await inboxIds(page)) === JSON.stringify(qs.map((q) => q.id)), 'the three wait in order');
      await page.keyboard.press('2');
      check((await page.evaluate(() => document.activeElement.getAttribute('data-option'))) === 'deny', '2 goes to Deny');
      await page.keyboard.press('Enter');
      // Held for a few seconds, then sent; the focus moves on once it left.
      await until(() => agent.commands.length === 1, 'Enter answered', 9_000);
      await until(async () => (await focused()) === qs[1].id, 'the focus is on the next waiting card', 3_000);
      await until(async () => !(await inboxIds(page)).includes(qs[0].id), 'the answered card left', 5_000);
      await allSteady(page);
      const after = await focused();
      check(after === qs[1].id, `once the answered card is gone the focus is still on the next one, not the page (${after})`);
      await page.keyboard.press('j');
      check((await focused()) === qs[2].id, `j continues from there (${await focused()})`);
      // The key list takes the focus, and gives it back when it closes.
      await page.keyboard.press('?');
      await until(() => page.evaluate(() => document.activeElement.textContent === 'Close'), 'the key list has the focus', 2_000);
      await page.keyboard.press('Escape');
      await until(async () => (await focused()) === qs[2].id, 'closing the key list gives the focus back to the card', 2_000);
    });
  });

  for (const [kind, size] of [[DESKTOP, '1280x800'], [PHONE, '390x844']]) {
    await step(`${size}: an answered card folds into a one-line row in its place; the queue stays in view`, async () => {
      await withAgent({ agent: `e2e-fold-${size}` }, 'Folding', kind, async ({ agent, page }) => {
        const qs = ['one', 'two', 'three'].map((n) => agent.ask(`Fold ${size}: question ${n}?`));
        await card(page, qs[2].data.prompt).waitFor({ timeout: 10_000 });
        await allSteady(page);
        const act = (c) => (kind === PHONE ? c.tap() : c.click());
        const first = card(page, qs[0].data.prompt);
        const was = await until(() => first.boundingBox(), 'the first card is laid out', 3_000);
        await act(first.locator('button.option[data-option="allow"]'));
        await sendNow(first);
        const row = page.locator(`main ol.cards article.settled[data-request="${qs[0].id}"]`);
        await row.waitFor({ timeout: 5_000 });
        await until(async () => (await row.locator('.outcome').textContent()).includes('Allowed by you'), 'the row says what was answered, and by whom', 5_000);
        const box = await until(() => row.boundingBox(), 'the row is laid out', 3_000);
        check(Math.abs(box.y - was.y) < 30, `the row is where the card was (${box.y} vs ${was.y})`);
        check(box.height <= 100, `the row is compact: its outcome, then what was asked (${box.height} px)`);
        check((await page.locator('main section.recent').count()) === 0, 'no separate list of settled cards at the top');
        await steadied(card(page, qs[1].data.prompt));
        await act(card(page, qs[1].data.prompt).locator('button.option[data-option="deny"]'));
        await sendNow(card(page, qs[1].data.prompt));
        await page.locator(`main ol.cards article.settled[data-request="${qs[1].id}"]`).waitFor({ timeout: 5_000 });
        const next = await until(() => card(page, qs[2].data.prompt).boundingBox(), 'the next card is laid out', 3_000);
        const height = kind.viewport.height;
        check(next.y + 80 < height, `the next waiting card is still in view under two rows (top at ${next.y} of ${height})`);
        if (kind === PHONE) await page.screenshot({ path: `${ROOT}target/console-e2e/inbox-rows-390x844.png` });
      });
    });
  }

  await step('two answers, one applied: the row says the later one was refused and which the agent applied', async () => {
    // The agent hears both answers but acknowledges neither in time (a
    // half-dead connection), then applies the first and refuses the second.
    await withAgent({ agent: 'e2e-two-answers', ackWindowMs: 1500, ignore: 2 }, 'Two answers', DESKTOP, async ({ agent, page }) => {
      const q = agent.ask('Two answers: drop the stale feature flags?');
      const c = card(page, q.data.prompt);
      await c.waitFor({ timeout: 10_000 });
      await steadied(c);
      await c.locator('button.option[data-option="deny"]').click();
      await sendNow(c);
      await c.locator('.cmd[data-phase="timeout"]').waitFor({ timeout: 15_000 });
      await c.locator('button.option[data-option="allow"]').click();
      await sendNow(c);
      await until(() => agent.commands.length === 2, 'the agent heard both answers', 5_000);
      const [deny, allow] = agent.commands;
      agent.emit('control.accepted', {}, { cause: deny.id });
      agent.emit('attention.answered', { answer: { option: 'deny' }, by: deny.agent, via: 'control' }, { subject: q.id, cause: deny.id, run: 'run-e2e' });
      agent.emit('attention.resolved', { resolution: 'answered' }, { subject: q.id, cause: deny.id, run: 'run-e2e' });
      agent.emit('control.rejected', { reason: 'invalid', detail: 'already answered' }, { cause: allow.id });
      const row = page.locator(`main article.settled[data-request="${q.id}"]`).first();
      await until(async () => (await row.getAttribute('data-overruled')) === 'true', 'the row knows an answer was overruled', 10_000);
      const words = await row.locator('.outcome').textContent();
      check(words.includes('Your later answer \u201cAllow\u201d was refused: the agent applied \u201cDeny\u201d'), `said plainly: ${words}`);
      check(await row.locator('.cmd[data-phase="rejected"]').first().isVisible(), 'the refusal is shown, not folded away');
      const colours = await successColour(row.locator('.outcome'));
      check(colours.shown !== colours.ok, `not shown in the colour of success: ${JSON.stringify(colours)}`);
    });
  });

  await step('offline: no relay shown live, one banner, answers refused; back online it reconnects', async () => {
    await withAgent({ agent: 'e2e-offline' }, 'Offline', DESKTOP, async ({ agent, page, ctx }) => {
      const q = agent.ask('Offline: restart the queue workers?');
      const c = card(page, q.data.prompt);
      await c.waitFor({ timeout: 10_000 });
      await ctx.setOffline(true);
      await until(async () => (await page.locator('.chip[data-state="live"]').count()) === 0,
        'no relay is shown live while the device is offline', 5_000);
      const banners = (await page.locator('.banners .banner').allTextContents()).map((t) => t.trim());
      check(banners.length === 1 && banners[0].includes('offline') && banners[0].includes('refused'),
        `one banner, saying the device is offline and answers are refused: ${JSON.stringify(banners)}`);
      // The banner moved the card: a person waits until it is still, and
      // taps again when the card says a tap was not taken.
      const refusal = c.locator('.send-error');
      await until(async () => {
        await tapSettled(c, c.locator('button.option[data-option="allow"]'));
        return refusal.waitFor({ timeout: 1_500 }).then(() => true, () => false);
      }, 'the answer is refused in words', 15_000, 50).catch(async (e) => {
        throw new Error(`${e.message}\nthe card said: ${await c.innerText()}`);
      });
      const err = await refusal.textContent();
      check(err.includes('not connected') && err.includes('Nothing was queued'), `the answer is refused in words: ${err}`);
      check((await c.locator('.cmd').count()) === 0, 'no answer shows as sent');
      // The session page says it is this device that is offline.
      await page.evaluate(() => { location.hash = '#/sessions'; });
      await page.locator('main .lane[data-agent="e2e-offline"] a.lane-title').first().click();
      const why = await page.locator('section.controls .offline-agent').textContent({ timeout: 3_000 });
      check(why.startsWith('This device is offline') && !why.includes('agent'), `the session page says this device is offline, not that the agent is away: ${why}`);
      await page.evaluate(() => { location.hash = '#/'; });
      await ctx.setOffline(false);
      await page.locator('.chip[data-state="live"]').waitFor({ timeout: 30_000 });
      await until(async () => (await page.locator('.banners .banner').count()) === 0, 'the banner goes once a relay is live', 5_000);
      check((await c.locator('.send-error').count()) === 0, 'no stale "send again once it is live" once it is live');
      check(agent.commands.length === 0, 'nothing reached the agent from the offline attempt');
    });
  });

  for (const [kind, size] of [[DESKTOP, '1280x800'], [PHONE, '390x844']]) {
    await step(`${size}: the tabs stay in view while scrolling; the title counts what waits`, async () => {
      await withAgent({ agent: `e2e-long-${size}` }, 'A long queue', kind, async ({ agent, page }) => {
        for (let i = 0; i < 12; i++) agent.ask(`Long queue: question ${i + 1}?`);
        await card(page, 'Long queue: question 12?').waitFor({ timeout: 10_000 });
        const waiting = (await inboxIds(page)).length;
        await allSteady(page);
        const title = await page.title();
        await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
        await frames(page);
        const at = await page.evaluate(() => {
          const nav = document.querySelector('nav.tabs');
          const r = nav.getBoundingClientRect();
          const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
          return { top: r.top, scrolled: window.scrollY, onTop: !!hit && nav.contains(hit) };
        });
        check(at.scrolled > 200, `the page did scroll (${at.scrolled})`);
        check(at.top >= 0 && at.top <= 1 && at.onTop, `the tabs are at the top of the view: ${JSON.stringify(at)}`);
        check(title.startsWith(`(${waiting}) `), `the title starts with the waiting count, (${waiting}): ${title}`);
      });
    });
  }

  const LONG = 'Compact: run `terraform apply` on the shared staging stack? It replaces the load balancer, '
    + 'recreates both NAT gateways, rotates the database password and restarts every service behind the '
    + 'ingress, which takes about ten minutes during which staging is down for everyone.';
  const ROLLOUT = {
    kind: 'form',
    fields: [
      { id: 'version', type: 'string', label: 'Release tag', required: true },
      { id: 'environment', type: 'select', label: 'Environment', choices: [{ id: 'staging', label: 'Staging' }, { id: 'production', label: 'Production' }] },
      { id: 'replicas', type: 'number', label: 'Replicas', min: 1, max: 20, required: true },
      { id: 'canary', type: 'boolean', label: 'Start with a canary' },
      { id: 'notes', type: 'string', label: 'Notes for the on-call' },
    ],
  };

  await step('phone: a waiting card takes at most a third of the screen, its details one tap away; one relay is not repeated', async () => {
    await withAgent({ agent: 'e2e-compact' }, 'Compact cards', PHONE, async ({ agent, page }) => {
      const q = agent.ask(LONG, undefined, { severity: 'error' });
      const f = agent.ask('Compact: confirm the rollout settings', [], { data: ROLLOUT });
      const c = card(page, 'Compact: run');
      await c.waitFor({ timeout: 10_000 });
      await card(page, 'confirm the rollout settings').waitFor({ timeout: 10_000 });
      await allSteady(page);
      const third = PHONE.viewport.height / 3;
      const box = await c.boundingBox();
      check(box.height <= third + 10, `the card is at most a third of the screen (${box.height} px of ${PHONE.viewport.height})`);
      const inside = async (loc, what) => {
        const b = await loc.boundingBox();
        check(b && (await loc.isVisible()) && b.y >= box.y - 1 && b.y + b.height <= box.y + box.height + 1, `${what} is shown on the card: ${JSON.stringify(b)}`);
      };
      await inside(c.locator('.sev'), 'the severity');
      await inside(c.locator('.card-agent'), 'the agent');
      await inside(c.locator('.prompt'), 'the prompt');
      await inside(c.locator('button.option[data-option="allow"]'), 'Allow');
      await inside(c.locator('button.option[data-option="deny"]'), 'Deny');
      check((await c.locator('.card-agent').textContent()).includes('e2e-compact'), 'the agent is named');
      check(await c.locator('.prompt').evaluate((e) => e.scrollHeight > e.clientHeight + 2), 'the long prompt is clamped');
      check(!(await c.locator('form.reply input[name="reply"]').isVisible()), 'the reply box waits behind the expand');
      check(!(await c.locator('.provenance [data-prov="session"]').isVisible()), 'so does the provenance');
      const more = c.locator('button.details-toggle');
      check((await more.getAttribute('aria-expanded')) === 'false', 'the expand says it is closed');
      const mb = await more.boundingBox();
      check(mb.height >= 43.5 && mb.width >= 43.5, `the expand is a 44px target (${mb.width}x${mb.height})`);
      await more.tap();
      await until(async () => (await more.getAttribute('aria-expanded')) === 'true', 'the expand opens', 2_000);
      check(await c.locator('form.reply input[name="reply"]').isVisible(), 'the reply box is there once expanded');
      check(await c.locator('.provenance [data-prov="session"]').isVisible(), 'and where it comes from');
      check(await c.locator('.prompt').evaluate((e) => e.scrollHeight <= e.clientHeight + 2), 'and the whole prompt');
      check((await page.locator('main [data-prov="relay"]').count()) === 0, 'one relay: not repeated on the card');
      await more.tap();
      await until(async () => (await more.getAttribute('aria-expanded')) === 'false', 'and closes again', 2_000);
      // A form is compact too: its fields open from the card.
      const fc = card(page, 'confirm the rollout settings');
      const fb = await fc.boundingBox();
      check(fb.height <= third + 10, `the form's card is at most a third of the screen too (${fb.height} px)`);
      check(!(await fc.locator('[data-field="version"] input').isVisible()), 'its fields wait behind the expand');
      await fc.locator('button.details-toggle').tap();
      await fc.locator('[data-field="version"] input').waitFor({ state: 'visible', timeout: 2_000 });
      // Its head just under the sticky tabs, the fields below it.
      await fc.evaluate((e) => window.scrollBy(0, e.getBoundingClientRect().top - 64));
      await frames(page);
      await page.screenshot({ path: `${ROOT}target/console-e2e/form-390x844.png` });
      await fc.locator('[data-field="version"] input').fill('v3.1.0');
      await fc.locator('[data-field="replicas"] input').fill('2');
      await steadied(fc);
      await fc.locator('form.form-answer button[type="submit"]').tap();
      await fc.locator('.hold button.send-now').tap();
      await until(() => agent.commands.some((x) => x.subject === f.id), 'the form answer went out', 5_000);
      const { sw, iw } = await page.evaluate(() => ({ sw: document.documentElement.scrollWidth, iw: window.innerWidth }));
      check(sw <= iw, `it fits the phone (${sw} > ${iw})`);
      check(!agent.commands.some((x) => x.subject === q.id), 'nothing answered the other card');
    });
  });

  await step('desktop: a card shows its details and form without an expand; one relay is not repeated', async () => {
    await withAgent({ agent: 'e2e-wide' }, 'Wide cards', DESKTOP, async ({ agent, page }) => {
      agent.ask(LONG);
      agent.ask('Wide: confirm the rollout settings', [], { data: ROLLOUT });
      const c = card(page, 'Compact: run');
      await c.waitFor({ timeout: 10_000 });
      check(await c.locator('.provenance [data-prov="session"]').isVisible(), 'where it comes from is shown');
      check(await c.locator('form.reply input[name="reply"]').isVisible(), 'the reply box is shown');
      check((await page.locator('main [data-prov="relay"]').count()) === 0, 'one relay: not repeated on the card');
      const fc = card(page, 'Wide: confirm the rollout settings');
      await fc.locator('[data-field="version"] input').waitFor({ state: 'visible', timeout: 5_000 });
      await fc.evaluate((e) => window.scrollBy(0, e.getBoundingClientRect().top - 64));
      await frames(page);
      await page.screenshot({ path: `${ROOT}target/console-e2e/form-1280x800.png` });
    });
  });

  for (const [kind, size] of [[DESKTOP, '1280x800'], [PHONE, '390x844']]) {
    await step(`${size}: the inbox is filtered and grouped by agent, session and kind`, async () => {
      const a = new TestAgent({ relay, agent: `e2e-filter-a-${size}` });
      const b = new TestAgent({ relay, agent: `e2e-filter-b-${size}` });
      await a.connect();
      await b.connect();
      a.start('Filter A');
      b.start('Filter B');
      const { ctx, page } = await open(kind);
      try {
        const a1 = a.ask('Filter: A asks to allow?');
        const a2 = a.ask('Filter: A asks for a name?', [], { data: { kind: 'input' } });
        const b1 = b.ask('Filter: B asks to allow?');
        // All three, each possibly a redraw after the others.
        for (const q of ['Filter: A asks to allow?', 'Filter: A asks for a name?', 'Filter: B asks to allow?']) {
          await card(page, q).waitFor({ timeout: 10_000 });
        }
        const ids = async () => (await inboxIds(page)).sort();
        const sorted = (...qs) => qs.map((q) => q.id).sort();
        check(JSON.stringify(await ids()) === JSON.stringify(sorted(a1, a2, b1)), 'all three wait');
        // On a phone the filters fold behind one control.
        if (kind === PHONE) await page.locator('main button.filters-toggle').tap();
        const byAgent = page.locator('#filter-agent');
        const labels = await byAgent.locator('option').allTextContents();
        check(labels.some((l) => l.includes(a.agent) && l.includes('2')) && labels.some((l) => l.includes(b.agent) && l.includes('1')),
          `the agents are offered with what each has waiting: ${labels}`);
        await byAgent.selectOption(a.agent);
        await until(async () => JSON.stringify(await ids()) === JSON.stringify(sorted(a1, a2)), "only A's requests", 3_000);
        const note = page.locator('.filter-note');
        check((await note.textContent()).includes('2 of 3'), `it says what is hidden: ${await note.textContent()}`);
        await page.locator('#filter-kind').selectOption('input');
        await until(async () => JSON.stringify(await ids()) === JSON.stringify(sorted(a2)), "only A's question", 3_000);
        await note.locator('button', { hasText: 'Show all' }).click();
        await until(async () => (await ids()).length === 3, 'everything again', 3_000);
        const bySession = page.locator('#filter-session');
        const sessions = await bySession.locator('option').evaluateAll((els) => els.map((o) => [o.value, o.textContent]));
        const bs = sessions.find(([, t]) => t.includes('Filter B'));
        check(bs, `sessions are offered by their titles: ${JSON.stringify(sessions)}`);
        await bySession.selectOption(bs[0]);
        await until(async () => JSON.stringify(await ids()) === JSON.stringify(sorted(b1)), "only B's session", 3_000);
        await note.locator('button', { hasText: 'Show all' }).click();
        // Grouped by agent: a heading per agent, its cards under it.
        await page.locator('#inbox-group').selectOption('agent');
        const groups = page.locator('main section.inbox-group');
        await until(async () => (await groups.count()) === 2, 'one group per agent', 3_000);
        for (const g of await groups.all()) {
          const head = (await g.locator(':scope > h2').textContent()).trim();
          const agents = await g.locator('article.card .card-agent').allTextContents();
          check(agents.length > 0 && agents.every((x) => head.includes(x.trim())), `the group "${head}" holds only its agent's cards: ${agents}`);
        }
        await page.locator('#inbox-group').selectOption('kind');
        await until(async () => (await groups.count()) === 2, 'one group per kind', 3_000);
        // Keyboard: the controls are reached with Tab and work with the arrow keys.
        await page.locator('#inbox-group').focus();
        await page.keyboard.press('Shift+Tab');
        check(await page.evaluate(() => document.activeElement.tagName === 'SELECT' || document.activeElement.tagName === 'BUTTON'),
          'the filter controls are in the tab order');
        await page.locator('#inbox-group').selectOption('none');
        await until(async () => (await groups.count()) === 0 && (await ids()).length === 3, 'ungrouped again', 3_000);
        const small = await page.$$eval('.inbox-tools select, .inbox-tools button', (els) => els
          .filter((e) => e.offsetParent !== null)
          .map((e) => e.getBoundingClientRect()).filter((r) => r.height < 43.5).length);
        check(small === 0, 'the filter controls are 44px touch targets');
        const { sw, iw } = await page.evaluate(() => ({ sw: document.documentElement.scrollWidth, iw: window.innerWidth }));
        check(sw <= iw, `it fits (${sw} > ${iw})`);
        await page.screenshot({ path: `${ROOT}target/console-e2e/inbox-filter-${size}.png` });
      } finally {
        a.drop();
        b.drop();
        await ctx.close();
      }
    });
  }

  // Without idle callbacks (Safari has none) the page fills all the same.
  for (const idle of [true, false]) {
    const how = idle ? 'with idle callbacks' : 'without idle callbacks';
    await step(`phone, ${how}: forty-five waiting when the console opens: the page fills to forty, "Show more" brings the rest`, async () => {
      const agent = new TestAgent({ relay, agent: `e2e-page-${idle}` });
      await agent.connect();
      agent.start('A page of requests');
      let asked;
      for (let i = 0; i < 45; i++) asked = agent.ask(`Page: question ${i + 1}?`);
      await relayHolds(relay, asked);
      const ctx = await chromium.newContext(PHONE);
      const page = await ctx.newPage();
      page.on('pageerror', (e) => pageErrors.push(String(e)));
      if (!idle) await page.addInitScript(() => { delete Window.prototype.requestIdleCallback; });
      try {
        await page.goto(`${relay.base}/#token=${encodeURIComponent(token)}`);
        const cards = page.locator('main ol.cards article.card');
        const more = page.locator('main button.more');
        await cards.first().waitFor({ timeout: 15_000 });
        await until(async () => (await cards.count()) === 40, 'forty cards drawn', 10_000);
        await more.waitFor({ state: 'visible', timeout: 3_000 });
        check((await more.textContent()).includes('5 not shown'), `the rest are counted: ${await more.textContent()}`);
        await more.tap();
        await until(async () => (await cards.count()) === 45, 'all forty-five drawn', 5_000);
        check(await more.isHidden(), 'nothing more to show');
      } finally {
        agent.drop();
        await ctx.close();
      }
    });
  }

  await step('notifications refused by the browser: the switch says so, and where to change it', async () => {
    const ctx = await chromium.newContext(DESKTOP);
    const page = await ctx.newPage();
    page.on('pageerror', (e) => pageErrors.push(String(e)));
    await page.addInitScript(() => {
      const Fake = function () {};
      Fake.permission = 'default';
      Fake.requestPermission = async () => { Fake.permission = 'denied'; return 'denied'; };
      window.Notification = Fake;
    });
    try {
      await page.goto(`${relay.base}/#token=${encodeURIComponent(token)}`);
      await page.locator('.chip[data-state="live"]').waitFor({ timeout: 15_000 });
      await page.click('details.push summary');
      await page.click('details.push button[role="switch"]');
      await page.locator('details.push[data-state="blocked"] summary', { hasText: 'Blocked by the browser' }).waitFor({ timeout: 3_000 });
      check((await page.getAttribute('details.push button[role="switch"]', 'aria-checked')) === 'false', 'the switch is off');
      const why = await page.locator('#push-explain').textContent({ timeout: 3_000 });
      check(why.includes('blocks') && why.includes('settings'), `it says why and where: ${why}`);
    } finally {
      await ctx.close();
    }
  });

  await step('phone: a wrong token is said once, with the fix, and nothing claims to wait for a connection', async () => {
    const ctx = await chromium.newContext(PHONE);
    const page = await ctx.newPage();
    page.on('pageerror', (e) => pageErrors.push(String(e)));
    try {
      await page.goto(`${relay.base}/#token=not-the-token`);
      await page.locator('.chip[data-state="refused"]').waitFor({ timeout: 15_000 });
      await page.locator('[data-banner="refused"]').waitFor({ timeout: 5_000 });
      await frames(page);
      const banners = (await page.locator('.banners .banner').allTextContents()).map((t) => t.trim());
      check(banners.length === 1, `one banner: ${JSON.stringify(banners)}`);
      check((banners[0].match(/refused/g) || []).length === 1 && banners[0].includes('token'), `said once, naming the token: ${banners[0]}`);
      const text = await page.locator('body').textContent();
      check(!text.includes('waiting for a relay connection'), 'nothing claims to wait for a connection that was refused');
      check((await page.locator('#inbox-title .count').count()) === 0, 'no "Waiting for you 0" when the token was refused');
      const { sw, iw } = await page.evaluate(() => ({ sw: document.documentElement.scrollWidth, iw: window.innerWidth }));
      check(sw <= iw, `it fits the phone (${sw} > ${iw})`);
      await page.locator('[data-banner="refused"] button', { hasText: 'Enter another token' }).tap();
      await page.locator('#relay-token-0').waitFor({ timeout: 3_000 });
      await until(() => page.evaluate(() => document.activeElement && document.activeElement.id === 'relay-token-0'),
        '"Enter another token" puts the focus in the token field', 3_000);
    } finally {
      await ctx.close();
    }
  });


  await step('phone: Relays opens over the console without dropping it; Cancel, Esc and Back each return to where the person was', async () => {
    const ctx = await chromium.newContext(PHONE);
    const page = await ctx.newPage();
    page.on('pageerror', (e) => pageErrors.push(String(e)));
    // Every socket the page opens is counted: closing the screen must not reconnect.
    await page.addInitScript(() => {
      const Native = window.WebSocket;
      window.__sockets = 0;
      window.WebSocket = class extends Native {
        constructor(...args) {
          super(...args);
          window.__sockets++;
        }
      };
    });
    const agent = new TestAgent({ relay, agent: 'e2e-relays-screen' });
    await agent.connect();
    agent.start('Relays screen');
    for (let i = 1; i <= 6; i++) agent.ask(`Relays screen: question ${i}?`);
    try {
      await page.goto(`${relay.base}/#token=${encodeURIComponent(token)}`);
      await page.locator('.chip[data-state="live"]').waitFor({ timeout: 15_000 });
      await card(page, 'Relays screen: question 6?').waitFor({ timeout: 10_000 });
      // The person is on the Sessions view, not the inbox the app opens on.
      await page.locator('nav.tabs a[href="#/sessions"]').tap();
      await page.locator('main .lane').first().waitFor({ timeout: 5_000 });
      let y0 = 0;
      const sockets = await page.evaluate(() => window.__sockets);
      const openRelays = async () => {
        await page.locator('button.menu-toggle').tap();
        // Where the person is when they open it (reaching the menu may scroll).
        y0 = await page.evaluate(() => scrollY);
        await page.locator('button[data-open="relays"]').tap();
        await page.locator('#relay-token-0').waitFor({ timeout: 3_000 });
        await until(() => page.evaluate(() => document.activeElement && document.activeElement.id === 'connect-title'),
          'the screen takes the focus at its heading', 3_000);
        check((await page.locator('.chip[data-state="live"]').count()) === 1, 'opening it does not disconnect');
      };
      const backWhereItWas = async (how) => {
        await until(async () => (await page.locator('#relay-token-0').count()) === 0, `${how} closes the relays screen`, 3_000);
        await page.locator('main .lane').first().waitFor({ timeout: 3_000 });
        check(new URL(page.url()).origin === relay.base && new URL(page.url()).hash === '#/sessions', `${how}: still in the console, on the Sessions view (${page.url()})`);
        await frames(page);
        const y = await page.evaluate(() => scrollY);
        check(Math.abs(y - y0) < 2, `${how}: at the place it was left (${y} vs ${y0})`);
        check((await page.locator('.chip[data-state="live"]').count()) === 1, `${how}: still live`);
        check((await page.evaluate(() => window.__sockets)) === sockets, `${how}: no reconnection`);
      };
      await openRelays();
      await page.screenshot({ path: `${ROOT}target/console-e2e/relays-screen-390x844.png` });
      await page.locator('button.cancel-relays').tap();
      await backWhereItWas('Cancel');
      await openRelays();
      await page.keyboard.press('Escape');
      await backWhereItWas('Esc');
      await openRelays();
      await page.goBack();
      await backWhereItWas('Back');
    } finally {
      agent.drop();
      await ctx.close();
    }
  });

  await step('phone: a form says it can only be answered by filling it in or left waiting, and offers no other answer', async () => {
    await withAgent({ agent: 'e2e-forms' }, 'Forms', PHONE, async ({ agent, page }) => {
      const fields = [{ id: 'env', type: 'string', label: 'Environment', required: true }];
      const form = agent.ask('Forms: where should the build go?', [['decline', 'Decline']], { data: { kind: 'form', fields } });
      const c = card(page, form.data.prompt);
      await c.waitFor({ timeout: 10_000 });
      const note = (await c.locator('.form-only').textContent()).trim();
      check(note.includes('only be answered by filling it in') && note.includes('leave it waiting'), `said plainly: ${note}`);
      check((await c.locator('button.option').count()) === 0, 'no option the agent would refuse for a form');
      check((await c.locator('form.reply').count()) === 0, 'no typed reply the agent would refuse for a form');
      await page.screenshot({ path: `${ROOT}target/console-e2e/form-only-390x844.png` });
    });
  });

  await step('phone: a long session lists its latest runs with the rest one tap away, and pages in earlier events', async () => {
    await withAgent({ agent: 'e2e-long' }, 'Long session', PHONE, async ({ agent, page }) => {
      for (let n = 1; n <= 5; n++) agent.emit('run.started', { trigger: 'user' }, { run: `run-long-${n}` });
      for (let n = 1; n <= 350; n++) agent.emit('x.e2e.test.tick', { n });
      await page.goto(`${relay.base}/#/session/${encodeURIComponent(agent.source)}/${encodeURIComponent(agent.session)}`);
      const rows = page.locator('main ol.timeline > li');
      // session.started, run-e2e, 5 runs and 350 ticks: 357 events, the newest 300 shown.
      await until(async () => (await rows.count()) === 300, 'the newest 300 events', 10_000).catch(async (e) => { throw new Error(`${e.message}: ${await rows.count()} rows, ${await page.locator('main button.earlier').textContent()}`); });
      const runs = page.locator('main .runs li[data-run]');
      check((await runs.count()) === 3, `the latest three runs: ${await runs.count()}`);
      check(JSON.stringify(await runs.evaluateAll((els) => els.map((e) => e.getAttribute('data-run')))) === JSON.stringify(['run-long-3', 'run-long-4', 'run-long-5']),
        'the latest ones');
      const more = page.locator('main .runs button.more-runs');
      check((await more.textContent()).trim() === 'Show 3 earlier runs', `the rest one tap away: ${await more.textContent()}`);
      await more.tap();
      await until(async () => (await runs.count()) === 6, 'all the runs', 3_000);
      const earlier = page.locator('main button.earlier');
      check((await earlier.textContent()).trim() === 'Show 57 earlier events', `a way to the earlier events: ${await earlier.textContent()}`);
      await page.screenshot({ path: `${ROOT}target/console-e2e/session-earlier-390x844.png` });
      await earlier.tap();
      await until(async () => (await rows.count()) === 357, 'every event, the earlier ones paged in', 5_000);
      check(await earlier.isHidden(), 'nothing earlier left to show');
      const oldest = await rows.last().getAttribute('data-type');
      check(oldest === 'session.started', `down to the session's start: ${oldest}`);
    });
  });

  await step('phone: a session longer than this device keeps says how many earlier events are no longer kept', async () => {
    await withAgent({ agent: 'e2e-longer' }, 'Longer session', PHONE, async ({ agent, page }) => {
      // session.started, run.started and 1,100 ticks: 1,102 events, of
      // which the console keeps the newest 1,024 of a session.
      const ticks = 1_100;
      for (let n = 1; n <= ticks; n++) agent.emit('x.e2e.test.tick', { n });
      const kept = 1_024;
      const dropped = ticks + 2 - kept;
      await page.goto(`${relay.base}/#/session/${encodeURIComponent(agent.source)}/${encodeURIComponent(agent.session)}`);
      const rows = page.locator('main ol.timeline > li');
      const earlier = page.locator('main button.earlier');
      const hint = page.locator('main p.hint.dropped');
      await until(async () => (await rows.count()) === 300, 'the newest 300 events', 10_000);
      await until(async () => (await earlier.textContent()).trim() === 'Show 300 earlier events', 'the earlier ones a tap away', 10_000)
        .catch(async (e) => { throw new Error(`${e.message}: ${await earlier.textContent()}`); });
      check(await hint.isHidden(), 'no word of lost events while earlier ones can still be shown');
      for (const shown of [600, 900, kept]) {
        await earlier.tap();
        await until(async () => (await rows.count()) === shown, `${shown} events shown`, 5_000)
          .catch(async (e) => { throw new Error(`${e.message}: ${await rows.count()} rows`); });
      }
      check(await earlier.isHidden(), 'nothing kept is left to show');
      await hint.waitFor({ state: 'visible', timeout: 3_000 });
      const said = (await hint.textContent()).trim();
      check(said === `${dropped} earlier events are no longer kept on this device.`, `says what is gone: ${said}`);
      const oldest = await rows.last().getAttribute('data-type');
      check(oldest === 'x.e2e.test.tick', `the oldest shown is a tick, the session's start is gone: ${oldest}`);
      await hint.scrollIntoViewIfNeeded();
      await page.screenshot({ path: `${ROOT}target/console-e2e/session-dropped-390x844.png` });
    });
  });

  // The issue's phone checks: a destructive approval is not one tap, and
  // every answer can be taken back for a few seconds before it leaves.
  await step('phone: approving a critical request takes a second, deliberate tap; Undo sends nothing; Send now sends at once', async () => {
    await withAgent({ agent: 'e2e-deliberate' }, 'Deliberate', PHONE, async ({ agent, page, sent }) => {
      const q = agent.ask('Grant write access to the production database?', undefined, { severity: 'critical' });
      const c = card(page, q.data.prompt);
      await c.waitFor({ timeout: 10_000 });
      await steadied(c);
      const allow = c.locator('button.option[data-option="allow"]');
      const box = await allow.boundingBox();
      const x = box.x + box.width / 2;
      const y = box.y + box.height / 2;
      // A double tap, both halves at once: the first asks, and the second
      // is not the second step: it comes too soon.
      await recordClicks(page);
      await Promise.all([page.touchscreen.tap(x, y), page.touchscreen.tap(x, y)]);
      await clicksTaken(page, 2);
      const tapped = await pageNow(page);
      const asked = (await allow.textContent()).trim();
      check(asked.includes('Tap again to Allow (critical)'), `the first tap only asks, saying why: ${asked}`);
      check(agent.commands.length === 0 && (await c.locator('.hold').count()) === 0, 'the first tap sends nothing');
      await page.screenshot({ path: `${ROOT}target/console-e2e/confirm-step-390x844.png` });
      check(agent.commands.length === 0 && (await c.locator('.hold').count()) === 0, 'a quick second tap is not the second step');
      // protocol timer under test: the button ignores taps for
      // CONFIRM_INERT_MS after the first; the next one is the second step.
      await pageTimerPast(page, tapped + CONFIRM_INERT_MS);
      await allow.tap();
      const hold = c.locator('.hold');
      await hold.waitFor({ timeout: 2_000 });
      const heldAt = await pageNow(page);
      const words = await hold.textContent();
      check(words.includes('Sending \u201cAllow\u201d in') && words.includes('closing this page drops it'), `the held answer is shown: ${words}`);
      await page.screenshot({ path: `${ROOT}target/console-e2e/held-answer-390x844.png` });
      await heldDown(c, 3);
      check(agent.commands.length === 0, 'nothing leaves during the window');
      await hold.locator('button.undo').tap();
      await until(async () => (await c.locator('.hold').count()) === 0, 'Undo takes the answer back', 2_000);
      // protocol timer under test: the window the undone answer had ends by
      // the page's own timers; had Undo not dropped it, it would have left.
      await pageTimerPast(page, heldAt + HOLD_MS);
      check(agent.commands.length === 0 && answersIn(sent).length === 0,
        `Undo sent nothing: ${JSON.stringify(agent.commands.map((x) => x.data))}, ${answersIn(sent).length} sent by the page`);
      check((await inboxIds(page)).includes(q.id), 'the request still waits');
      await steadied(c);
      await c.locator('button.option[data-option="allow"]').tap();
      await until(async () => (await allow.textContent()).includes('Tap again'), 'the first tap asks again', 5_000);
      const again = await pageNow(page);
      // protocol timer under test: CONFIRM_INERT_MS, as above.
      await pageTimerPast(page, again + CONFIRM_INERT_MS);
      await c.locator('button.option[data-option="allow"]').tap();
      await c.locator('.hold button.send-now').waitFor({ timeout: 2_000 });
      const t0 = Date.now();
      await c.locator('.hold button.send-now').tap();
      await until(() => agent.commands.length === 1, 'Send now sends at once', 1_500);
      check(agent.commands[0].data.answer.option === 'allow', `the approval left: ${JSON.stringify(agent.commands[0].data)}`);
      console.log(`      sent ${Date.now() - t0} ms after Send now`);
    });
  });

  await step('phone: Deny is one tap, held for a few seconds, then sent on its own; an info request approves in one tap', async () => {
    await withAgent({ agent: 'e2e-deny-held' }, 'Deny held', PHONE, async ({ agent, page }) => {
      const q = agent.ask('docker compose down -v', undefined, { severity: 'error' });
      const i = agent.ask('Read the build log?', undefined, { severity: 'info' });
      const c = card(page, q.data.prompt);
      await c.waitFor({ timeout: 10_000 });
      await card(page, i.data.prompt).waitFor({ timeout: 10_000 });
      await steadied(c);
      const t0 = Date.now();
      await c.locator('button.option[data-option="deny"]').tap();
      check((await c.locator('button.option.confirming').count()) === 0, 'no second step to deny');
      await c.locator('.hold').waitFor({ timeout: 2_000 });
      await until(() => agent.commands.length === 1, 'the denial leaves when the window ends', 9_000, 50);
      const waited = Date.now() - t0;
      check(waited >= 3_000, `held a few seconds first (${waited} ms)`);
      check(agent.commands[0].data.answer.option === 'deny', 'the denial left');
      const row = page.locator(`main article.settled[data-request="${q.id}"]`);
      await until(async () => /Denied by you .* it will not happen/.test((await row.locator('.outcome').textContent().catch(() => '')) || ''),
        'the settled card says in plain words that it will not happen', 5_000);
      await page.screenshot({ path: `${ROOT}target/console-e2e/settled-390x844.png` });
      const info = card(page, i.data.prompt);
      await steadied(info);
      await info.locator('button.option[data-option="allow"]').tap();
      check((await info.locator('button.option.confirming').count()) === 0, 'no second step for an info request');
      await info.locator('.hold').waitFor({ timeout: 2_000 });
      await until(() => agent.commands.length === 2, 'the info approval leaves after its window', 9_000);
    });
  });

  await step('phone: closing the page while an answer is held asks first, and leaving sends nothing', async () => {
    await withAgent({ agent: 'e2e-close-held' }, 'Close held', PHONE, async ({ agent, page, ctx, sent }) => {
      const q = agent.ask('Delete the old release branches?', undefined, { severity: 'warning' });
      const c = card(page, q.data.prompt);
      await c.waitFor({ timeout: 10_000 });
      await steadied(c);
      await c.locator('button.option[data-option="deny"]').tap();
      await c.locator('.hold').waitFor({ timeout: 2_000 });
      let asked = null;
      page.on('dialog', async (d) => {
        asked = d.type();
        await d.accept();
      });
      await page.close({ runBeforeUnload: true });
      await until(() => asked !== null, 'the browser asks before leaving with an answer held', 3_000);
      check(asked === 'beforeunload', `asked as a page leave (${asked})`);
      // Gone, and the held answer with it: whatever the page sent before
      // it went is on its sockets.
      if (!page.isClosed()) await page.waitForEvent('close', { timeout: 10_000 });
      check(agent.commands.length === 0 && answersIn(sent).length === 0,
        `nothing was sent after the page closed: ${agent.commands.length}, ${answersIn(sent).length} sent by the page`);
      const again = await ctx.newPage();
      await again.goto(`${relay.base}/#token=${encodeURIComponent(token)}`);
      await card(again, q.data.prompt).waitFor({ timeout: 10_000 });
    });
  });


  await step('phone: a minute of arrivals moves nothing on screen (layout-shift score at most 0.1)', async () => {
    await withAgent({ agent: 'e2e-arrivals' }, 'Arrivals', PHONE, async ({ agent, page }) => {
      const first = [];
      for (let i = 0; i < 6; i++) first.push(agent.ask(`Arrivals: first question ${i + 1}?`));
      await card(page, first[5].data.prompt).waitFor({ timeout: 10_000 });
      const joined = await pageNow(page);
      await allSteady(page);
      await caughtUp(page, joined);
      await page.evaluate(() => window.scrollTo(0, 300));
      await frames(page);
      const anchor = first[2].data.prompt;
      const before = await card(page, anchor).boundingBox();
      await page.evaluate(() => {
        window.__cls = 0;
        window.__shifts = [];
        window.__scrolls = [];
        new PerformanceObserver((list) => {
          for (const e of list.getEntries()) {
            if (e.hadRecentInput) continue;
            window.__cls += e.value;
            window.__shifts.push({ value: e.value, sources: (e.sources || []).map((s) => s.node?.className || s.node?.nodeName) });
          }
        }).observe({ type: 'layout-shift' });
        addEventListener('scroll', () => window.__scrolls.push(Math.round(scrollY)));
      });
      const severities = ['critical', 'error', 'warning', 'info', 'notice'];
      const asked = [];
      const t0 = Date.now();
      for (let i = 0; Date.now() - t0 < 60_000; i++) {
        asked.push(agent.ask(i % 3 === 0 ? `docker compose down -v (${i})` : `Arrivals: later question ${i + 1}?`, undefined, { severity: severities[i % severities.length] }));
        // Now and then the agent withdraws one of the later requests.
        if (i % 4 === 3) agent.emit('attention.resolved', { resolution: 'dismissed' }, { subject: asked[i - 2].id, run: 'run-e2e' });
        // protocol timer under test: a minute at a person's pace, the
        // subject of this check: the page's clock redraws every second, the
        // roster is asked again every 15 s, and a request withdrawn once it
        // has waited 2 s (inbox::SEEN_PENDING_MS) folds into a row.
        await sleep(3_000);
      }
      const { cls, shifts, scrolls, y } = await page.evaluate(() => ({ cls: window.__cls, shifts: window.__shifts, scrolls: window.__scrolls, y: scrollY }));
      console.log(`      layout-shift score over ${Math.round((Date.now() - t0) / 1000)} s of ${asked.length} arrivals at 390x844: ${cls.toFixed(4)}`);
      if (process.env.E2E_DEBUG) console.log(JSON.stringify({ shifts, scrolls }));
      const after = await card(page, anchor).boundingBox();
      await page.screenshot({ path: `${ROOT}target/console-e2e/inbox-new-above-390x844.png` });
      check(cls <= 0.1, `layout-shift score ${cls.toFixed(4)} > 0.1: ${JSON.stringify(shifts.slice(0, 8))}`);
      check(Math.abs(after.y - before.y) < 2 && Math.abs(y - 300) < 2, `the card on screen stayed put (${before.y} → ${after.y}, scrollY ${y}; scrolls ${scrolls.slice(0, 10)})`);
      const bar = page.locator('button.new-above');
      const words = await bar.textContent();
      check(/\d+ new request/.test(words), `the new ones wait behind a bar: ${words}`);
      await bar.tap();
      const top = asked.find((q) => q.severity === 'critical');
      await card(page, top.data.prompt).waitFor({ timeout: 3_000 });
      const box = await card(page, top.data.prompt).boundingBox();
      check(box.y >= 0 && box.y < 844, `brought in and in view (${box.y})`);
      check(await bar.isHidden(), 'the bar goes once they are in');
    });
  });


  await step('phone: a typed yes offers the option it likely meant; an input takes its default on an empty reply', async () => {
    await withAgent({ agent: 'e2e-likely' }, 'Typed yes', PHONE, async ({ agent, page }) => {
      const q = agent.ask('Likely: restart the payments workers?');
      const c = card(page, q.data.prompt);
      await c.waitFor({ timeout: 10_000 });
      await c.locator('button.details-toggle').tap();
      const box = c.locator('form.reply input[name="reply"]');
      for (const typed of ['yes please', 'ok', '1']) {
        await box.fill(typed);
        check((await c.locator('form.reply button.send').textContent()).trim() === 'Send as refusal', `"${typed}" is still read as AEP-0008 reads it`);
        const likely = c.locator('button.likely');
        check((await likely.textContent()).includes('\u201cAllow\u201d'), `"${typed}": the likely option is offered: ${await likely.textContent()}`);
      }
      await steadied(c);
      await c.locator('button.likely').tap();
      await c.locator('.hold', { hasText: 'Sending \u201cAllow\u201d' }).waitFor({ timeout: 3_000 });
      await sendNow(c);
      await until(() => agent.commands.length === 1, 'the likely option was sent', 5_000);
      check(agent.commands[0].data.answer.option === 'allow', `sent as the option: ${JSON.stringify(agent.commands[0].data.answer)}`);

      const i = agent.ask('Which project should I search? (default: OPS)', [], { data: { kind: 'input' } });
      const ic = card(page, i.data.prompt);
      await ic.waitFor({ timeout: 10_000 });
      await steadied(ic);
      const send = ic.locator('form.reply button.send');
      check((await send.textContent()).includes('\u201cOPS\u201d (the default)'), `an empty reply sends the default: ${await send.textContent()}`);
      await send.tap();
      await sendNow(ic);
      await until(() => agent.commands.length === 2, 'the default was sent', 5_000);
      check(agent.commands[1].data.answer.text === 'OPS', `the default went as the reply: ${JSON.stringify(agent.commands[1].data.answer)}`);
    });
  });


  await step('phone: each view opens at its top, or where it was left, never at the last view\'s scroll', async () => {
    await withAgent({ agent: 'e2e-views' }, 'Views keep their place', PHONE, async ({ agent, page }) => {
      for (let i = 0; i < 14; i++) agent.ask(`Views: question ${i + 1}?`);
      await card(page, 'Views: question 14?').waitFor({ timeout: 10_000 });
      await allSteady(page);
      await page.evaluate(() => window.scrollTo(0, 2_000));
      await frames(page);
      const left = await page.evaluate(() => scrollY);
      check(left > 1_000, `the inbox is scrolled down (${left})`);
      // Each view is drawn on its route's change, when the page also asks
      // to put it where it belongs for the next frame.
      await page.locator('nav.tabs a[href="#/history"]').tap();
      await page.locator('#history-title').waitFor({ timeout: 3_000 });
      await frames(page);
      check((await page.evaluate(() => scrollY)) === 0, `History opens at its top (${await page.evaluate(() => scrollY)})`);
      await page.locator('nav.tabs a[href="#/sessions"]').tap();
      await page.locator('main .lane a.lane-title').first().waitFor({ timeout: 3_000 });
      await frames(page);
      check((await page.evaluate(() => scrollY)) === 0, 'Sessions opens at its top');
      await page.locator('main .lane[data-agent="e2e-views"] a.lane-title').first().tap();
      await page.locator('#timeline-title').waitFor({ timeout: 3_000 });
      await frames(page);
      const y = await page.evaluate(() => scrollY);
      const h1 = await page.locator('main h1').first().boundingBox();
      check(y === 0 && h1.y >= 0 && h1.y < 844, `a session opens at its top, its header in view (scrollY ${y}, header at ${h1.y})`);
      const audit = await page.locator('main section.audit').boundingBox();
      const timeline = await page.locator('#timeline-title').boundingBox();
      check(audit.y < timeline.y, `the command audit comes before the timeline (${audit.y} vs ${timeline.y})`);
      await page.screenshot({ path: `${ROOT}target/console-e2e/session-top-390x844.png` });
      await page.locator('nav.tabs a[href="#/"]').tap();
      await page.locator('#inbox-title').waitFor({ timeout: 3_000 });
      await card(page, 'Views: question 1?').waitFor({ timeout: 3_000 });
      await frames(page);
      const back = await page.evaluate(() => scrollY);
      check(Math.abs(back - left) < 2, `the inbox opens where it was left (${back} vs ${left})`);
    });
  });

  // Operators under credentials of their own: the relay binds each
  // command to its sender's principal, and the console names it.
  const OPERATORS = ['ops-alice', 'ops-bob', 'ops-carol'].map((name) => ({ name, token: `${name}-${randomBytes(8).toString('hex')}` }));
  const credentials = `${ROOT}target/console-e2e/operators.credentials`;
  writeFileSync(credentials, OPERATORS.map((o) => `${o.name} operator,viewer ${createHash('sha256').update(o.token).digest('hex')}\n`).join(''));
  await step('two operators answer in one session: each decision shows under its own name, after a reload, and to a console that connects later', async () => {
    const [alice, bob, carol] = OPERATORS;
    const agent = new TestAgent({ relay, agent: 'e2e-two-ops' });
    await agent.connect();
    agent.start('Two operators');
    const q1 = agent.ask('Two operators: drop the build cache?');
    const q2 = agent.ask('Two operators: rotate the signing keys?');
    const sessionHref = `#/session/${encodeURIComponent(agent.source)}/${encodeURIComponent(agent.session)}`;
    const a = await open(PHONE, alice.token);
    const b = await open(DESKTOP, bob.token);
    const c = { ctx: null };
    try {
      for (const [p, who] of [[a.page, alice], [b.page, bob]]) {
        const chip = (await p.locator('.chip[data-state="live"]').textContent()).trim();
        check(chip.includes(`as ${who.name}`), `the chip says who this console is connected as: ${chip}`);
      }
      const c1 = card(a.page, q1.data.prompt);
      await c1.waitFor({ timeout: 10_000 });
      await answerNow(c1, 'allow');
      const c2 = card(b.page, q2.data.prompt);
      await c2.waitFor({ timeout: 10_000 });
      await answerNow(c2, 'deny');
      await until(() => agent.commands.length === 2, 'both answers reached the agent', 10_000);
      const senders = agent.commands.map((x) => `${x.subject === q1.id ? 'q1' : 'q2'}:${x.agent}`).sort();
      check(JSON.stringify(senders) === JSON.stringify(['q1:ops-alice', 'q2:ops-bob']), `each command carries its operator: ${senders}`);
      // What each console says, in the audit, the timeline and the history.
      const record = async (p, me, shotName) => {
        await p.goto(`${relay.base}/${sessionHref}`);
        const rows = p.locator('main .audit li.cmd');
        await until(async () => (await rows.count()) === 2, 'two answers in the audit', 10_000);
        const audit = (await rows.locator('.cmd-what').allTextContents()).map((t) => t.replace(/\s+/g, ' ').trim());
        const timeline = p.locator('main ol.timeline li.event[data-type="control.attention.respond"] .ev-summary');
        await until(async () => (await timeline.count()) === 2, 'two answers in the timeline', 10_000);
        const said = (await timeline.allTextContents()).map((t) => t.replace(/\s+/g, ' ').trim());
        const answered = p.locator('main ol.timeline li.event[data-type="attention.answered"] .ev-summary');
        await until(async () => (await answered.count()) === 2, 'two outcomes in the timeline', 10_000);
        const applied = (await answered.allTextContents()).map((t) => t.replace(/\s+/g, ' ').trim());
        if (shotName) await p.screenshot({ path: `${ROOT}target/console-e2e/${shotName}.png` });
        await p.goto(`${relay.base}/#/history`);
        const hist = p.locator('main .history article.settled');
        await until(async () => (await hist.count()) >= 2, 'both in the history', 10_000);
        const history = (await hist.allTextContents()).map((t) => t.replace(/\s+/g, ' ').trim());
        const name = (who) => (who === me ? `you (${who})` : who);
        const first = (who) => (who === me ? `You (${who})` : who);
        for (const [q, who, label] of [[q1, 'ops-alice', 'Allow'], [q2, 'ops-bob', 'Deny']]) {
          const quoted = `\u201c${q.data.prompt}\u201d from e2e-two-ops`;
          check(audit.some((t) => t.startsWith(`${first(who)}: Answer \u2014 ${label} to ${quoted}`)), `${me ?? 'a third console'}: the audit names ${who}, the answer and the request: ${JSON.stringify(audit)}`);
          check(said.some((t) => t === `${first(who)} answered ${label} to ${quoted}`), `${me ?? 'a third console'}: the timeline says the same: ${JSON.stringify(said)}`);
          check(applied.some((t) => t === `${first(who)} answered ${label} to ${quoted} via control`), `the agent's record of it too: ${JSON.stringify(applied)}`);
          const decided = label === 'Allow' ? 'Allowed' : 'Denied';
          check(history.some((t) => t.includes(q.data.prompt) && t.includes(`${decided} by ${name(who)}`)), `${me ?? 'a third console'}: the history names ${who}: ${JSON.stringify(history)}`);
        }
        const all = [...audit, ...said, ...applied, ...history].join(' | ');
        check(!all.includes('aep-console'), `one name for each operator, never the console's: ${all}`);
        if (!me) check(!/you/i.test([...audit, ...said].join(' ')), `nobody is "you" to a third console: ${all}`);
      };
      await record(a.page, 'ops-alice', 'audit-two-operators-390x844');
      await record(b.page, 'ops-bob', 'audit-two-operators-1280x800');
      // After a reload, from what the relay kept.
      await a.page.reload();
      await a.page.locator('.chip[data-state="live"]').waitFor({ timeout: 15_000 });
      await record(a.page, 'ops-alice');
      const later = await open(DESKTOP, carol.token);
      c.ctx = later.ctx;
      await record(later.page, null);
    } finally {
      agent.drop();
      await a.ctx.close();
      await b.ctx.close();
      if (c.ctx) await c.ctx.close();
    }
  }, ['--credentials', credentials]);

  await steps.noPageErrors(pageErrors);
} finally {
  await chromium.close().catch(() => {});
}
steps.report();
