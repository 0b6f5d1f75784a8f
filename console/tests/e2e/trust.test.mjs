// End-to-end: trusting the console from a phone. The release console in
// headless Chromium at 390×844 (and desktop where it differs) against the
// real relay binary, with its demo agents where they matter and test
// agents for requests on cue.
//
// Run with scripts/test-console. E2E_STATIC_DIR serves another build (an
// older one, to see a check fail); E2E_ONLY=words runs only the checks
// whose names contain them.

import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium as playwright } from 'playwright-core';
import { CHROMIUM_ARGS, ROOT, Relay, Steps, TestAgent, answerNow, atRest, browser, cardIn, check, frames, freePort, relayStats, sendNow, sleep, steadied, successColour, until, STATIC_DIR } from './lib.mjs';

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
    relay = new Relay({ port: await freePort(), token, demo, staticDir: STATIC_DIR, args });
    await relay.start();
    try {
      await fn();
    } finally {
      await relay.stop();
    }
  });
}

async function open(kind, { as = token, live = true, context = {}, init } = {}) {
  const ctx = await chromium.newContext({ ...kind, ...context });
  if (init) await ctx.addInitScript(init);
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

/**
 * In the page from its first moment: counts the frames and changes in
 * which the "N new" pill shows, and notes when a card last joined the
 * inbox (`window.__arrivals`).
 */
function arrivalWatch() {
  const seen = { pill: 0, cardAt: Date.now() };
  window.__arrivals = seen;
  const shows = (e) => {
    if (!e) return false;
    const r = e.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && getComputedStyle(e).visibility !== 'hidden';
  };
  const look = () => {
    if (shows(document.querySelector('button.new-above'))) seen.pill++;
  };
  const frame = () => {
    look();
    requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
  const isCard = (n) => n.nodeType === 1 && (n.matches('article.card') || !!n.querySelector('article.card'));
  new MutationObserver((records) => {
    look();
    if (records.some((r) => [...r.addedNodes].some(isCard))) seen.cardAt = Date.now();
  }).observe(document, { childList: true, subtree: true, attributes: true });
}

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
        // Watched in every frame from the page's first moment until every
        // request is drawn, when none is left to wait behind the pill.
        const { ctx, page } = await open(PHONE, { live: false, init: arrivalWatch });
        await page.locator('main ol.cards article.card').first().waitFor({ timeout: 15_000 });
        const shown = await until(async () => {
          const s = await cardsOnScreen(page);
          return s.length === asked.length && s;
        }, `round ${round}: all ${asked.length} waiting requests drawn`, 5_000).catch(async (e) => {
          throw new Error(`${e.message}: ${JSON.stringify(await cardsOnScreen(page))}, pill "${await page.locator('button.new-above').textContent()}"`);
        });
        await frames(page);
        const pill = await page.evaluate(() => window.__arrivals.pill);
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
        // protocol timer under test: the first catch-up is over once the
        // list has been still for 700 ms (LOAD_QUIET_MS, console/src/model/inbox.rs).
        await page.waitForFunction(() => Date.now() - window.__arrivals.cardAt >= 700, null, { timeout: 10_000, polling: 50 });
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

  // 2. No silent taps.
  await step('390x844: twenty double taps on Deny, each on a card seen for 1.2 s while requests above it, out of view, settle, send one command each', async () => {
    const agent = await agentWith('e2e-double-taps', 'Double taps');
    const above = [];
    const raise = () => above.push(agent.ask(`Double taps: an urgent question ${above.length + 1}?`, undefined, { severity: 'error' }));
    for (let i = 0; i < 3; i++) raise();
    // Below: enough for the page to scroll the card to the top.
    for (let i = 1; i <= 4; i++) agent.ask(`Double taps: a later question ${i}?`, undefined, { severity: 'info' });
    const { ctx, page } = await open(PHONE);
    try {
      const pill = page.locator('button.new-above');
      const misses = [];
      for (let round = 1; round <= 20; round++) {
        const q = agent.ask(`Double taps: delete scratch volume ${round}?`, undefined, { severity: 'warning' });
        // What arrived above the reader is brought in, as a person would.
        if (await pill.isVisible()) await pill.tap();
        const c = cardIn(page, q.data.prompt);
        await c.waitFor({ timeout: 10_000 });
        // Just under the tab bar, the urgent cards above it out of view.
        await c.evaluate((e) => window.scrollBy(0, e.getBoundingClientRect().top - 60));
        await steadied(c);
        // One of them is settled by its agent: it folds to a row, above
        // and out of view; what is on screen stays where it is.
        const gone = await until(async () => {
          for (const u of above) {
            const b = await page.locator(`main article.card[data-request="${u.id}"]`).boundingBox();
            if (b && b.y + b.height < 0) return u;
          }
          return null;
        }, `round ${round}: an urgent card above, out of view`, 3_000);
        const at = await c.boundingBox();
        if (process.env.E2E_DEBUG) {
          await c.evaluate((el) => {
            window.__trace = [];
            const t0 = performance.now();
            const tick = () => {
              const r = el.getBoundingClientRect();
              window.__trace.push([Math.round(performance.now() - t0), Math.round(r.top * 10) / 10, Math.round(scrollY * 10) / 10, el.getAttribute('data-steady')]);
              if (window.__trace.length < 120) requestAnimationFrame(tick);
            };
            requestAnimationFrame(tick);
          });
        }
        agent.emit('attention.resolved', { resolution: 'dismissed' }, { subject: gone.id, run: 'run-e2e' });
        above.splice(above.indexOf(gone), 1);
        await page.locator(`main article.card[data-request="${gone.id}"]`).waitFor({ state: 'detached', timeout: 5_000 });
        const still = await c.boundingBox();
        check(Math.abs(still.y - at.y) < 1, `round ${round}: the card did not move on screen (${at.y} → ${still.y})`);
        const deny = c.locator('button.option[data-option="deny"]');
        const box = await deny.boundingBox();
        const x = box.x + box.width / 2;
        const y = box.y + box.height / 2;
        const before = agent.commands.length;
        await page.touchscreen.tap(x, y);
        // protocol timer under test: a double tap, its second half 150 ms
        // after the first (inside the 500 ms a fresh hold takes no tap).
        await sleep(150);
        await page.touchscreen.tap(x, y);
        raise();
        const held = await c.locator('.hold').isVisible();
        const note = await c.locator('.moved-note').isVisible();
        if (!held) {
          if (process.env.E2E_DEBUG) console.log(round, JSON.stringify(await page.evaluate(() => window.__trace.filter((x, i, a) => i === 0 || x.slice(1).join() !== a[i - 1].slice(1).join()))));
          misses.push({ round, note });
          check(note, `round ${round}: the double tap was dropped without a word (no hold, no note)`);
          continue;
        }
        await sendNow(c);
        await until(() => agent.commands.length === before + 1, `round ${round}: its answer left`, 5_000);
        // Its outcome came back through the relay: whatever the taps sent went before it.
        await page.locator(`main article.settled[data-request="${q.id}"]`).waitFor({ state: 'attached', timeout: 10_000 });
        check(agent.commands.length === before + 1, `round ${round}: one command (${agent.commands.length - before})`);
        const last = agent.commands[agent.commands.length - 1];
        check(last.subject === q.id && last.data.answer.option === 'deny', `round ${round}: Deny to its own request`);
      }
      check(misses.length === 0, `every double tap on a card seen for 1.2 s was taken: ${JSON.stringify(misses)}`);
    } finally {
      agent.drop();
      await ctx.close();
    }
  });

  await step('390x844: thirty double taps (100–200 ms apart) on Deny, on cards of every severity, send exactly one answer each, counted after every hold has ended', async () => {
    // The agent takes its time to settle an answered request, so a second
    // answer from the same device would still find it open.
    const agent = new TestAgent({ relay, agent: 'e2e-one-answer', outcomeAfterMs: 30_000 });
    await agent.connect();
    agent.start('One answer');
    const severities = ['critical', 'error', 'warning', 'notice', 'info'];
    const asked = [];
    for (let i = 0; i < 30; i++) {
      asked.push(agent.ask(`One answer: drop scratch table ${i + 1}?`, undefined, { severity: severities[i % severities.length] }));
    }
    const { ctx, page } = await open(PHONE);
    try {
      const untaken = [];
      for (const [i, q] of asked.entries()) {
        const c = cardIn(page, q.data.prompt);
        await c.waitFor({ timeout: 10_000 });
        const deny = c.locator('button.option[data-option="deny"]');
        await deny.scrollIntoViewIfNeeded();
        await steadied(c);
        const box = await deny.boundingBox();
        const [x, y] = [box.x + box.width / 2, box.y + box.height / 2];
        await page.touchscreen.tap(x, y);
        // protocol timer under test: the second half of a double tap,
        // 100 to 200 ms after the first.
        await sleep(100 + (i % 5) * 25);
        await page.touchscreen.tap(x, y);
        if (!(await c.locator('.hold').isVisible())) untaken.push(`${q.severity} ${i + 1}`);
      }
      check(untaken.length === 0, `a double tap on Deny holds the refusal at once, whatever the severity (not taken: ${untaken.join(', ')})`);
      // Every hold ends on its own; whatever a second one would send leaves
      // at its end, before the page shows no hold at all.
      await until(async () => (await page.locator('main .hold').count()) === 0, 'every hold has ended', 20_000);
      await until(() => asked.every((q) => agent.commands.some((c) => c.subject === q.id)), 'every answer reached the agent', 10_000);
      // Counted on the relay too: every command it routed reached the agent.
      const { counters } = await relayStats(relay);
      await until(() => agent.commands.length >= counters.commands_routed, 'the agent has every routed command', 5_000);
      const counts = asked.map((q) => agent.commands.filter((c) => c.subject === q.id).length);
      const wrong = asked.map((q, i) => [q, counts[i]]).filter(([, n]) => n !== 1).map(([q, n]) => `${q.severity} "${q.data.prompt}": ${n}`);
      check(wrong.length === 0, `one command per request: ${wrong.join('; ')}`);
      check(agent.commands.every((c) => c.data.answer.option === 'deny'), 'each is a Deny');
    } finally {
      agent.drop();
      await ctx.close();
    }
  });

  await step('390x844: a tap on a card that has just moved is not taken, and the card says so', async () => {
    const agent = await agentWith('e2e-moved', 'Moved');
    const { ctx, page } = await open(PHONE);
    try {
      const q1 = agent.ask('Moved: restart the first worker?', undefined, { severity: 'warning' });
      const q2 = agent.ask('Moved: restart the second worker?', undefined, { severity: 'warning' });
      const first = cardIn(page, q1.data.prompt);
      const second = cardIn(page, q2.data.prompt);
      await first.waitFor({ timeout: 10_000 });
      await second.waitFor({ timeout: 10_000 });
      await steadied(first);
      await steadied(second);
      const was = await second.boundingBox();
      await answerNow(first, 'deny');
      // The first folds to a row once answered; the second moves up, and a
      // finger lands on it at once.
      const moved = await until(async () => {
        const b = await second.boundingBox();
        return b && Math.abs(b.y - was.y) > 20 && b;
      }, 'the second card moves up', 5_000, 10);
      // A finger already on its way lands a moment later (well within the
      // time a moved card waits).
      await sleep(80);
      const deny = await second.locator('button.option[data-option="deny"]').boundingBox();
      await page.touchscreen.tap(deny.x + deny.width / 2, deny.y + deny.height / 2);
      const note = second.locator('.moved-note');
      await note.waitFor({ state: 'visible', timeout: 1_000 });
      const words = (await note.textContent()).trim();
      check(/moved/i.test(words) && /tap again/i.test(words), `the note says why and what to do: ${words}`);
      await page.screenshot({ path: `${SHOTS}/moved-note-390x844.png` });
      check((await second.locator('.hold').count()) === 0, 'the tap was not taken');
      const noteBox = await note.boundingBox();
      check(noteBox.y > deny.y, `the note is below the buttons, which stay where they were (${noteBox.y} vs ${deny.y}; moved to ${moved.y})`);
      await steadied(second);
      await second.locator('button.option[data-option="deny"]').tap();
      await second.locator('.hold').waitFor({ timeout: 2_000 });
      check(await note.isHidden(), 'the note goes once a tap is taken');
      await sendNow(second);
      await until(() => agent.commands.length === 2, 'the second answer left', 5_000);
      check(agent.commands[1].subject === q2.id, 'to the second request');
    } finally {
      agent.drop();
      await ctx.close();
    }
  });

  // 4. Requests nobody can answer do not look live.
  await step('390x844: after a relay restart, requests of agents that did not come back are marked unreachable before any tap and not counted; the closing banner goes once reconnected', async () => {
    // One agent comes back after the restart, as a real one does (and
    // speaks again); the other is gone for good.
    const back = new TestAgent({ relay, agent: 'e2e-comes-back', reconnect: true });
    await back.connect();
    back.start('Comes back');
    const gone = await agentWith('e2e-gone-for-good', 'Gone for good');
    const qb = back.ask('Restart: rotate the staging logs?', undefined, { severity: 'warning' });
    const qg = gone.ask('Restart: drop the old replica?', undefined, { severity: 'critical' });
    const { ctx, page } = await open(PHONE);
    try {
      await cardIn(page, qb.data.prompt).waitFor({ timeout: 10_000 });
      await cardIn(page, qg.data.prompt).waitFor({ timeout: 10_000 });
      const count = async () => (await page.locator('#inbox-title .count').textContent()).trim();
      check((await count()) === '2', `both wait at first (${await count()})`);
      gone.drop();
      await until(async () => (await relayStats(relay)).claims === 1, 'the relay lets the gone agent\'s claim go', 10_000);
      await relay.stop();
      const closing = page.locator('.banners [data-notice="closing"]');
      await closing.waitFor({ timeout: 10_000 });
      relay = new Relay({ port: relay.port, token, demo: false, staticDir: relay.staticDir });
      await relay.start();
      await until(() => back.ws.readyState === 1, 'the agent that comes back is connected again', 15_000);
      back.emit('progress.status', { message: 'back after the relay restarted' }, { run: 'run-e2e' });
      await page.locator('.chip[data-state="live"]').waitFor({ timeout: 30_000 });
      // Before anyone taps: the gone agent's request is said to be
      // unreachable, with no buttons, and not counted.
      const marked = page.locator(`main .unreachable-list li[data-request="${qg.id}"]`);
      await marked.waitFor({ timeout: 10_000 });
      check((await page.locator(`main ol.cards article.card[data-request="${qg.id}"]`).count()) === 0, 'not among the cards to answer');
      const words = (await page.locator('main .unreachable-list').textContent()).replace(/\s+/g, ' ');
      check(/not connected/.test(words), `said plainly: ${words}`);
      await until(async () => (await count()) === '1', 'only what can be answered is counted', 5_000);
      check((await page.title()).startsWith('(1) '), `the title counts it too: ${await page.title()}`);
      await until(async () => (await closing.count()) === 0, 'the "closing the connection" banner goes once reconnected', 5_000);
      await page.screenshot({ path: `${SHOTS}/after-restart-390x844.png` });
      // The request of the agent that came back still answers.
      const cb = cardIn(page, qb.data.prompt);
      await until(async () => (await cb.locator('button.option[data-option="deny"]').count()) === 1, 'the agent that came back is answerable', 10_000);
      await answerNow(cb, 'deny');
      await until(() => back.commands.length === 1, 'its answer reached it', 5_000);
      check(gone.commands.length === 0, 'nothing went to the agent that is gone');
      // The Sessions list says so too: not "active".
      await page.goto(`${relay.base}/#/sessions`);
      const state = (agent) => page.locator(`main article.lane[data-agent="${agent}"] .state`).first();
      await until(async () => (await state('e2e-gone-for-good').textContent()) === 'not connected', 'the gone agent\'s session is not shown active', 5_000);
      check((await state('e2e-comes-back').textContent()) === 'active', `the agent that came back is: ${await state('e2e-comes-back').textContent()}`);
    } finally {
      back.drop();
      await ctx.close();
    }
  });

  // 5. A viewer sees requests read-only.
  const people = ['ops-viewer viewer', 'ops-olga operator,viewer'].map((line) => {
    const [name, roles] = line.split(' ');
    return { name, roles, token: `${name}-${randomBytes(8).toString('hex')}` };
  });
  const [viewer, operator] = people;
  const credentials = `${SHOTS}/trust.credentials`;
  writeFileSync(credentials, people.map((p) => `${p.name} ${p.roles} ${createHash('sha256').update(p.token).digest('hex')}\n`).join(''));
  await step('390x844: a viewer sees requests read-only, with no answer buttons, and no session commands; an operator of the same relay answers', async () => {
    const agent = await agentWith('e2e-viewer', 'Viewer');
    const q = agent.ask('Viewer: restart the billing workers?', undefined, { severity: 'error' });
    const v = await open(PHONE, { as: viewer.token });
    try {
      const c = cardIn(v.page, q.data.prompt);
      await c.waitFor({ timeout: 10_000 });
      // Drawn for a viewer: the card's answer area is its read-only note.
      await c.locator('.actions[data-answering="read-only"] .read-only').waitFor({ timeout: 10_000 });
      check((await c.locator('button.option').count()) === 0, 'no answer buttons for a viewer');
      check((await c.locator('form.reply, form.form-answer, button.open-form').count()) === 0, 'no reply box or form either');
      const note = (await c.locator('.read-only').textContent({ timeout: 3_000 })).trim();
      check(note.includes('ops-viewer') && /watch/.test(note) && /not answer/.test(note), `the card says why: ${note}`);
      const chip = (await v.page.locator('.chip[data-state="live"]').textContent()).replace(/\s+/g, ' ');
      check(chip.includes('as ops-viewer') && chip.includes('read-only'), `the chip says so: ${chip}`);
      await v.page.screenshot({ path: `${SHOTS}/viewer-390x844.png` });
      await v.page.goto(`${relay.base}/#/session/${encodeURIComponent(agent.source)}/${encodeURIComponent(agent.session)}`);
      const why = await v.page.locator('section.controls [data-controls]').textContent({ timeout: 5_000 });
      check(/read-only/i.test(why), `the session offers no commands, and says why: ${why}`);
      check((await v.page.locator('section.controls button').count()) === 0, 'no session command buttons');
      check(agent.commands.length === 0, 'nothing was sent');
      const o = await open(PHONE, { as: operator.token });
      try {
        const oc = cardIn(o.page, q.data.prompt);
        await oc.waitFor({ timeout: 10_000 });
        await answerNow(oc, 'deny');
        await until(() => agent.commands.length === 1, 'the operator answered', 5_000);
        check(agent.commands[0].agent === 'ops-olga', `under the operator's name: ${agent.commands[0].agent}`);
      } finally {
        await o.ctx.close();
      }
    } finally {
      agent.drop();
      await v.ctx.close();
    }
  }, { args: ['--credentials', credentials] });

  // 6. A settled card says enough, on a phone too.
  await step('390x844: a settled card\'s one line names the decision, who made it and what came of it, uncut; Denied is not green; "Request changes" is not "Denied"; a tool\'s outcome follows "Allowed"', async () => {
    const agent = await agentWith('e2e-settled', 'Settled rows');
    const { ctx, page } = await open(PHONE);
    try {
      const denied = agent.ask('Settled: drop the staging database and every snapshot of it?', undefined, { severity: 'warning' });
      const review = agent.ask('Settled: review the migration plan', [['approve', 'Approve'], ['request_changes', 'Request changes']],
        { severity: 'notice', data: { kind: 'review' } });
      const allowed = agent.emit('attention.requested', {
        kind: 'permission', prompt: 'Bash: rm -rf build/', respond_via: ['control'],
        options: [{ id: 'allow', label: 'Allow' }, { id: 'deny', label: 'Deny' }],
      }, { run: 'run-e2e', severity: 'info', subject: 'call-e2e-1' });
      for (const q of [denied, review, allowed]) await cardIn(page, q.data.prompt).waitFor({ timeout: 10_000 });
      await atRest(page);
      const answer = async (q, option) => {
        await answerNow(cardIn(page, q.data.prompt), option);
        await page.locator(`main article.settled[data-request="${q.id}"][data-status="resolved"]`).waitFor({ timeout: 10_000 });
        await atRest(page);
      };
      await answer(denied, 'deny');
      await answer(review, 'request_changes');
      await answer(allowed, 'allow');
      // The command then runs, and its outcome is on the stream.
      agent.emit('tool.completed', { tool: { name: 'Bash', call_id: 'call-e2e-1' }, status: 'ok' }, { run: 'run-e2e' });
      const row = (q) => page.locator(`main article.settled[data-request="${q.id}"]`);
      const line = async (q) => ((await row(q).locator('.outcome').textContent()) || '').replace(/\s+/g, ' ').trim();
      await until(async () => (await line(allowed)).includes('ran and completed'), 'the allowed command\'s outcome is shown', 5_000);
      // The token of this relay names no principal: the console's own name.
      const me = 'you (aep-console)';
      check((await line(denied)) === `Denied by ${me} \u2014 it will not happen`, `the denial in one line: ${await line(denied)}`);
      check((await line(review)).startsWith(`\u201cRequest changes\u201d by ${me}`) && !(await line(review)).includes('Denied'),
        `a review's "Request changes" is not "Denied": ${await line(review)}`);
      check((await line(allowed)) === `Allowed by ${me} \u2014 Bash ran and completed`, `the tool's outcome follows "Allowed": ${await line(allowed)}`);
      await page.evaluate(() => window.scrollTo(0, 0));
      await frames(page);
      await page.screenshot({ path: `${SHOTS}/settled-rows-390x844.png` });
      for (const q of [denied, review, allowed]) {
        const cut = await row(q).locator('.outcome').evaluate((e) => {
          const r = e.getBoundingClientRect();
          const range = document.createRange();
          range.selectNodeContents(e);
          const text = range.getBoundingClientRect();
          return { overflow: e.scrollWidth > e.clientWidth + 1, ellipsis: getComputedStyle(e).textOverflow === 'ellipsis' && getComputedStyle(e).overflow === 'hidden',
            outside: text.right > innerWidth + 1 || text.left < -1, width: r.width };
        });
        check(!cut.overflow && !cut.ellipsis && !cut.outside, `${await line(q)}: read whole at 390 px (${JSON.stringify(cut)})`);
        const visible = await row(q).locator('.outcome').isVisible();
        check(visible, 'on the row itself, not behind "What happened"');
      }
      const colours = await successColour(row(denied).locator('.outcome'));
      check(colours.shown !== colours.ok, `Denied is not in the colour of success: ${JSON.stringify(colours)}`);
      // The history's long form says the same, without the wire's jargon.
      await page.locator('nav.tabs a[href="#/history"]').tap();
      const h = page.locator(`main .history article.settled[data-request="${denied.id}"] .outcome`);
      await h.waitFor({ timeout: 5_000 });
      const long = (await h.textContent()).replace(/\s+/g, ' ');
      check(long.includes(`Denied by ${me}`) && !/via control|Resolved \(/.test(long), `the history in plain words: ${long}`);
    } finally {
      agent.drop();
      await ctx.close();
    }
  });

  // 7. Requests first, controls after.
  await step('390x844: the first card starts within 200 px of the top, the filters fold behind one control, the relay chip shows a name; at 200 % text size the first card is on the first screen', async () => {
    const agent = await agentWith('e2e-first-screen', 'First screen');
    for (let i = 1; i <= 4; i++) agent.ask(`First screen: question ${i}?`, undefined, { severity: i === 1 ? 'error' : 'warning' });
    const firstCard = (page) => page.locator('main ol.cards article.card').first();
    /** Until the four requests are drawn and nothing on the page moves any more. */
    const allDrawn = async (page) => {
      await until(async () => (await page.locator('main ol.cards article.card').count()) === 4, 'the four requests are drawn', 10_000);
      await atRest(page);
    };
    const { ctx, page } = await open(PHONE);
    try {
      await firstCard(page).waitFor({ timeout: 10_000 });
      await allDrawn(page);
      const top = await firstCard(page).evaluate((e) => e.getBoundingClientRect().top);
      console.log(`      first card at ${Math.round(top)} px of 844 (390x844)`);
      check(top <= 200, `the first card starts within 200 px of the top (${top})`);
      const chip = (await page.locator('.chip[data-state="live"] .chip-label').textContent()).trim();
      check(chip === `127.0.0.1:${relay.port}`, `the relay chip shows a name, not a URL: ${chip}`);
      check((await page.locator('.chip[data-state="live"]').getAttribute('title')).includes('/socket'), 'the address is one long press away');
      const toggle = page.locator('main button.filters-toggle');
      check((await toggle.count()) === 1 && (await toggle.isVisible()), 'one control for the filters');
      check(!(await page.locator('#filter-agent').isVisible()) && !(await page.locator('#inbox-group').isVisible()), 'the filters fold behind it');
      await page.screenshot({ path: `${SHOTS}/first-screen-390x844.png` });
      await toggle.tap();
      check((await toggle.getAttribute('aria-expanded')) === 'true', 'it says it is open');
      await page.locator('#filter-agent').selectOption(agent.agent);
      await until(async () => (await toggle.textContent()).includes('(1)'), 'it counts the filters in use', 3_000);
      await toggle.tap();
      check(!(await page.locator('#filter-agent').isVisible()), 'and folds them away again');
      check(await page.locator('.filter-note').isVisible(), 'what the list is kept to stays said');
      await page.locator('.filter-note button', { hasText: 'Show all' }).tap();
    } finally {
      await ctx.close();
    }
    // The browser's own text size at 200 %: a profile whose default font
    // size is 32 px, as a person sets it.
    const profile = mkdtempSync(join(tmpdir(), 'console-big-text-'));
    mkdirSync(join(profile, 'Default'), { recursive: true });
    writeFileSync(join(profile, 'Default', 'Preferences'), JSON.stringify({ webkit: { webprefs: { default_font_size: 32, default_fixed_font_size: 26 } } }));
    const big = await playwright.launchPersistentContext(profile, { executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS, ...PHONE });
    try {
      const p = big.pages()[0] || await big.newPage();
      p.on('pageerror', (e) => pageErrors.push(String(e)));
      await p.goto(`${relay.base}/#token=${encodeURIComponent(token)}`);
      await firstCard(p).waitFor({ timeout: 15_000 });
      await allDrawn(p);
      const size = await p.evaluate(() => getComputedStyle(document.documentElement).fontSize);
      check(size === '32px', `the text is at 200 % (${size})`);
      const box = await firstCard(p).evaluate((e) => {
        const r = e.getBoundingClientRect();
        const b = e.querySelector('button.option').getBoundingClientRect();
        return { top: r.top, button: b.bottom };
      });
      console.log(`      at 200 % text: first card at ${Math.round(box.top)} px, its first button ends at ${Math.round(box.button)} px of 844`);
      await p.screenshot({ path: `${SHOTS}/first-screen-200pc-390x844.png` });
      check(box.top < 844 && box.button <= 844, `the first card, its answer buttons too, is on the first screen: ${JSON.stringify(box)}`);
      const { sw, iw } = await p.evaluate(() => ({ sw: document.documentElement.scrollWidth, iw: innerWidth }));
      check(sw <= iw, `nothing wider than the screen (${sw} > ${iw})`);
    } finally {
      await big.close();
      agent.drop();
    }
  });

  // 8. Times on the reader's clock.
  await step('390x844 in Pacific/Auckland: history shows local times, with the date when not today, and the zone in the detail', async () => {
    const zone = 'Pacific/Auckland';
    const agent = await agentWith('e2e-times', 'Times');
    const now = Date.now();
    const at = (ms) => new Date(ms).toISOString();
    // Settled two days ago (an agent's record, replayed), and just now.
    const old = agent.ask('Times: rotate the old keys?', undefined, { severity: 'info' });
    agent.emit('attention.resolved', { resolution: 'dismissed' }, { subject: old.id, run: 'run-e2e', time: at(now - 2 * 86_400_000) });
    const recent = agent.ask('Times: restart the cache?', undefined, { severity: 'info' });
    agent.emit('attention.resolved', { resolution: 'dismissed' }, { subject: recent.id, run: 'run-e2e', time: at(now) });
    const { ctx, page } = await open(PHONE, { context: { timezoneId: zone } });
    try {
      await page.locator('nav.tabs a[href="#/history"]').tap();
      const time = (q) => page.locator(`main .history article.settled[data-request="${q.id}"] .card-head .age`);
      await time(old).waitFor({ timeout: 10_000 });
      const parts = (ms, opts) => Object.fromEntries(new Intl.DateTimeFormat('en-GB', { timeZone: zone, hourCycle: 'h23', ...opts })
        .formatToParts(new Date(ms)).map((p) => [p.type, p.value]));
      const hm = (ms) => { const p = parts(ms, { hour: '2-digit', minute: '2-digit' }); return `${p.hour}:${p.minute}`; };
      const day = (ms) => { const p = parts(ms, { day: 'numeric', month: 'short' }); return `${p.day} ${p.month}`; };
      const expectOld = `${day(now - 2 * 86_400_000)} ${hm(now - 2 * 86_400_000)}`;
      const shownOld = (await time(old).textContent()).trim();
      const shownNew = (await time(recent).textContent()).trim();
      check(shownOld === expectOld, `two days ago, on this device's clock and with its date: ${shownOld} (expected ${expectOld})`);
      check(shownNew === hm(now) || shownNew === hm(now + 60_000), `today: the local time alone (${shownNew}, expected ${hm(now)})`);
      const detail = await time(old).getAttribute('title');
      check(detail.includes(zone) && /UTC\+1[23]:00/.test(detail) && detail.includes(day(now - 2 * 86_400_000)), `the detail names the date and the zone: ${detail}`);
      await page.screenshot({ path: `${SHOTS}/history-times-390x844.png` });
    } finally {
      agent.drop();
      await ctx.close();
    }
  });

  await steps.noPageErrors(pageErrors);
} finally {
  await chromium.close().catch(() => {});
}
steps.report();
