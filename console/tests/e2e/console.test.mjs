// End-to-end: the release console in headless Chromium against the real
// relay binary and its demo agents. Every check reads what a person sees
// (the DOM), and every failure names what was expected.
//
// Run with scripts/test-console (it builds what is missing first).

import { mkdirSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { Relay, TestAgent, answerNow, atRest, browser, cardIn, check, freePort, relayHolds, relayStats, sendNow, socketControl, tapSettled, until, ROOT, STATIC_DIR } from './lib.mjs';

const SHOTS = `${ROOT}target/console-e2e`;
mkdirSync(SHOTS, { recursive: true });

const results = [];
let failed = 0;

async function step(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    results.push({ name, ok: true });
    console.log(`ok    ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    failed++;
    results.push({ name, ok: false });
    console.log(`FAIL  ${name} (${Date.now() - t0} ms)\n      ${String(e && e.stack || e).split('\n').join('\n      ')}`);
  }
}

const card = cardIn;
const settled = (page, id) => page.locator(`main article.settled[data-request="${id}"]`).first();

/**
 * Until an image at `src` has failed to load in `page`, and the page has
 * answered since: an element injected earlier with the same address has
 * had its error, and whatever handler it ran has run.
 */
async function imageFailed(page, src) {
  await page.evaluate((s) => new Promise((r) => {
    const img = new Image();
    img.onerror = img.onload = r;
    img.src = s;
  }), src);
}

/**
 * What the Sessions list says of each session's work, without the clock:
 * its state, events, runs and waiting requests. It changes as they work,
 * wait and end.
 */
async function laneWork(page) {
  return page.$$eval('main .lane', (els) => els.map((e) => [
    e.getAttribute('data-session'), e.getAttribute('data-state'),
    (e.querySelector('.lane-meta')?.textContent || '').replace(/\s*\u00b7\s*updated .*$/, ''),
    e.querySelector('.lane-runs')?.textContent, e.querySelector('.pending')?.textContent,
  ].join(' | ')).join('\n'));
}

async function inboxIds(page) {
  return page.$$eval('main ol.cards article.card', (els) => els.map((e) => e.getAttribute('data-request')));
}

async function noHorizontalScroll(page, where) {
  const { sw, iw } = await page.evaluate(() => ({ sw: document.documentElement.scrollWidth, iw: window.innerWidth }));
  check(sw <= iw, `${where}: the page scrolls sideways (${sw} > ${iw})`);
}

async function touchTargets(page, where) {
  const small = await page.$$eval(
    'main button:not([disabled]), main select, main input[type="text"], main input[type="number"], main .tabs a, header button, nav.tabs a',
    (els) => els
      .filter((e) => e.offsetParent !== null)
      .map((e) => ({ h: e.getBoundingClientRect().height, w: e.getBoundingClientRect().width, t: e.outerHTML.slice(0, 80) }))
      .filter((r) => r.h < 43.5 || r.w < 43.5),
  );
  check(small.length === 0, `${where}: touch targets under 44px: ${JSON.stringify(small.slice(0, 3))}`);
}

async function unnamedControls(page, where) {
  const unnamed = await page.$$eval('button, input, select, textarea, a[href]', (els) => els
    .filter((e) => e.offsetParent !== null)
    .filter((e) => {
      if (e.getAttribute('aria-label') || e.getAttribute('aria-labelledby')) return false;
      if (e.id && document.querySelector(`label[for="${CSS.escape(e.id)}"]`)) return false;
      if (e.closest('label')) return false;
      if (e.closest('fieldset') && e.type === 'checkbox') return false;
      return !(e.textContent || '').trim();
    })
    .map((e) => e.outerHTML.slice(0, 100)));
  check(unnamed.length === 0, `${where}: controls without an accessible name: ${JSON.stringify(unnamed.slice(0, 3))}`);
}

const token = `e2e-${randomBytes(12).toString('hex')}`;
const port = await freePort();
// E2E_STATIC_DIR serves another build (an older one, to see a check fail).
const relay = new Relay({ port, token, seed: 7, staticDir: STATIC_DIR });
await relay.start();
const chromium = await browser();
const desk = await chromium.newContext({ viewport: { width: 1280, height: 800 } });
const page = await desk.newPage();
const dialogs = [];
const pageErrors = [];
page.on('dialog', (d) => {
  dialogs.push(d.message());
  d.dismiss().catch(() => {});
});
page.on('pageerror', (e) => pageErrors.push(String(e)));
// The build's Content-Security-Policy must not be what breaks anything.
await page.addInitScript(() => {
  window.__csp = [];
  document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
});
const shots = [];
let survivor;
async function shot(p, name) {
  const path = `${SHOTS}/${name}.png`;
  await p.screenshot({ path, fullPage: false });
  shots.push(path);
}

try {
  await step('connect with a token; it is kept in sessionStorage only and never in the URL', async () => {
    await page.goto(`${relay.base}/`);
    const url = page.locator('#relay-url-0');
    await url.waitFor();
    check((await url.inputValue()) === `ws://127.0.0.1:${port}/socket`, 'the default relay is the origin that served the page');
    await page.fill('#relay-token-0', token);
    await page.click('main form button[type="submit"]');
    await page.locator('.chip[data-state="live"]').waitFor({ timeout: 15_000 });
    const kept = await page.evaluate(() => ({
      session: sessionStorage.getItem('aep-console.relays'),
      local: localStorage.getItem('aep-console.relays'),
    }));
    check(kept.session && kept.session.includes(token), 'the token is kept for this tab');
    check(kept.local === null, 'nothing is kept on the device unless asked');
    check(!page.url().includes(token), 'the token is not in the address');
  });

  await step('a #token= link connects and is scrubbed from the address bar; a wrong token is named', async () => {
    const ctx = await chromium.newContext({ viewport: { width: 1280, height: 800 } });
    const p = await ctx.newPage();
    await p.goto(`${relay.base}/#token=${encodeURIComponent(token)}`);
    await p.locator('.chip[data-state="live"]').waitFor({ timeout: 15_000 });
    check(!p.url().includes(token) && !p.url().includes('token='), `the link was scrubbed (${p.url()})`);
    const wrong = await ctx.newPage();
    await wrong.goto(`${relay.base}/#token=not-the-token`);
    await wrong.locator('.chip[data-state="refused"]', { hasText: 'wrong token' }).waitFor({ timeout: 15_000 });
    await wrong.locator('[data-banner="refused"] button', { hasText: 'Enter another token' }).click();
    await wrong.locator('#relay-token-0').waitFor();
    check(!wrong.url().includes('not-the-token'), 'the wrong token was scrubbed too');
    await ctx.close();
  });

  /** A desktop page that connected by the form, with "remember on this device" ticked. */
  async function connectRemembering() {
    const ctx = await chromium.newContext({ viewport: { width: 1280, height: 800 } });
    const p = await ctx.newPage();
    await p.goto(`${relay.base}/`);
    await p.fill('#relay-token-0', token);
    await p.check('input[name="remember"]');
    await p.click('main form button[type="submit"]');
    await p.locator('.chip[data-state="live"]').waitFor({ timeout: 15_000 });
    return { ctx, p };
  }

  await step('"remember on this device" keeps the token in localStorage; Forget removes it everywhere', async () => {
    const { ctx, p } = await connectRemembering();
    const kept = await p.evaluate(() => ({
      session: sessionStorage.getItem('aep-console.relays'),
      local: localStorage.getItem('aep-console.relays'),
    }));
    check(kept.local && kept.local.includes(token) && kept.session === null, 'kept on the device only');
    await p.reload();
    await p.locator('.chip[data-state="live"]').waitFor({ timeout: 15_000 });
    await p.click('button:text-is("Forget")');
    const ask = p.locator('.confirm.forget[role="alertdialog"]');
    await ask.waitFor();
    check(await p.evaluate(() => document.activeElement.textContent === 'Keep them'), 'the question has the focus, on the safe answer');
    const still = await p.evaluate(() => localStorage.getItem('aep-console.relays'));
    check(still && still.includes(token), 'nothing is wiped before the question is answered');
    await ask.locator('button[data-confirm="forget"]').click();
    await p.locator('#relay-token-0').waitFor();
    const after = await p.evaluate(() => [sessionStorage.getItem('aep-console.relays'), localStorage.getItem('aep-console.relays')]);
    check(after[0] === null && after[1] === null, `nothing kept after Forget: ${after}`);
    check((await p.inputValue('#relay-token-0')) === '', 'the token field is empty');
    await ctx.close();
  });

  await step('a link to a relay the page did not come from is asked about first, and saved relays stay', async () => {
    const { ctx, p } = await connectRemembering();
    const saved = await p.evaluate(() => localStorage.getItem('aep-console.relays'));
    const other = `ws://127.0.0.1:${await freePort()}/socket`;
    await p.goto(`${relay.base}/?x=1#relay=${encodeURIComponent(other)}&token=stolen`);
    await p.locator('#relay-url-0').waitFor();
    check((await p.inputValue('#relay-url-0')) === other, 'the link is shown, not followed');
    await p.getByText('did not serve this page').first().waitFor();
    check((await p.locator('.chip').count()) === 0, 'nothing connected');
    check((await p.evaluate(() => localStorage.getItem('aep-console.relays'))) === saved, 'the saved relays are kept');
    check(!p.url().includes('stolen'), 'the link was scrubbed');
    await ctx.close();
  });

  await step('two relays at once: each with its status, cards tagged with their relay, answers routed back', async () => {
    const tokenB = `b-${randomBytes(8).toString('hex')}`;
    // A page of another origin reaches a relay only when it lets it.
    const relayB = new Relay({ port: await freePort(), token: tokenB, demo: false, args: ['--allow-origin', relay.base] });
    await relayB.start();
    const agent = new TestAgent({ relay: relayB, agent: 'e2e-far' });
    try {
      await agent.connect();
      agent.start('Runs behind the second relay');
      agent.ask('Approve the relay-B migration?');
      const ctx = await chromium.newContext({ viewport: { width: 1280, height: 800 } });
      const p = await ctx.newPage();
      await p.goto(`${relay.base}/`);
      await p.fill('#relay-token-0', token);
      await p.click('text=Add another relay');
      await p.fill('#relay-url-1', `ws://127.0.0.1:${relayB.port}/socket`);
      await p.fill('#relay-token-1', tokenB);
      await p.click('main form button[type="submit"]');
      await until(async () => (await p.locator('.chip[data-state="live"]').count()) === 2, 'both relays are live', 15_000);
      const c = card(p, 'Approve the relay-B migration?');
      await c.waitFor({ timeout: 10_000 });
      const relayLabel = await c.locator('.provenance [data-prov="relay"] dd').textContent();
      check(relayLabel.includes(String(relayB.port)), `the card names the relay it came through: ${relayLabel}`);
      await p.locator('main article.card .provenance [data-prov="relay"] dd', { hasText: `127.0.0.1:${port}/` }).first().waitFor({ timeout: 10_000 });
      const id = await c.getAttribute('data-request');
      await answerNow(c, 'allow');
      await until(async () => (await settled(p, id).getAttribute('data-status')) === 'resolved', 'the answer went back through relay B', 10_000);
      check(agent.commands.length === 1, 'the agent behind relay B received the answer once');
      await relayB.stop();
      await p.locator('.chip[data-state="reconnecting"]').waitFor({ timeout: 10_000 });
      check((await p.locator('.chip[data-state="live"]').count()) === 1, 'the other relay stays live');
      await ctx.close();
    } finally {
      agent.drop();
      await relayB.stop();
    }
  });

  await step('agent text with markup is shown literally and nothing runs', async () => {
    const xss = card(page, '<img src=x onerror=alert(1)>');
    await xss.waitFor({ timeout: 20_000 });
    const text = await xss.locator('.prompt').textContent();
    check(text.includes('<img src=x onerror=alert(1)>') && text.includes('<script>alert(1)</script>'), `prompt shown as text: ${text}`);
    check((await page.locator('img[src="x"]').count()) === 0, 'no <img> was injected');
    check((await page.locator('body script:not([src])').count()) <= 1, 'no inline script was injected');
    check((await xss.locator('blockquote.prompt *').count()) === 0, 'the quoted prompt holds no elements');
    await imageFailed(page, 'x');
    check(dialogs.length === 0, `no dialog opened (${dialogs.join(', ')})`);
    const attribution = await xss.locator('.agent-text figcaption').textContent();
    check(attribution.includes('build-bot'), 'the quote names the agent');
  });

  await step('the inbox is ordered, shows provenance, and no option has the focus', async () => {
    // Requests that arrive above what is shown wait behind "N new"; bring them in as a person would.
    await until(async () => {
      const bar = page.locator('button.new-above');
      if (await bar.isVisible()) await bar.click({ timeout: 1_000 });
      return (await inboxIds(page)).length >= 6;
    }, 'several requests are waiting', 20_000);
    const c = page.locator('main article.card').first();
    for (const k of ['Session', 'Run']) {
      check((await c.locator('.provenance dt', { hasText: k }).count()) === 1, `provenance shows ${k}`);
    }
    check((await c.locator('.card-agent').textContent()).trim().length > 0, 'the card names its agent');
    // One relay: the same for every card, so said once (the header's chip), not on each.
    check((await page.locator('main article.card [data-prov="relay"]').count()) === 0, 'one relay is not repeated on every card');
    const expiring = card(page, 's3://incident-archive');
    await expiring.waitFor({ timeout: 10_000 });
    const countdown = expiring.locator('.expires');
    const first = await countdown.textContent();
    check(/^expires in \d+:\d\d$/.test(first), `the expiring request counts down: ${first}`);
    await until(async () => (await countdown.textContent()) !== first, 'the countdown moves', 3_000);
    const focused = await page.evaluate(() => document.activeElement && document.activeElement.className);
    check(!String(focused).includes('option'), 'no answer button holds the focus by default');
    // Most severe first; among equals, the soonest to expire, then the oldest.
    const rank = { debug: 0, info: 1, notice: 2, warning: 3, error: 4, critical: 5 };
    const order = await page.$$eval('main ol.cards article.card', (els) => els.map((e) => ({
      sev: e.getAttribute('data-severity'),
      expires: Number(e.querySelector('.expires')?.getAttribute('data-expires') ?? Infinity),
    })));
    for (let i = 1; i < order.length; i++) {
      const [a, b] = [order[i - 1], order[i]];
      check(rank[a.sev] > rank[b.sev] || (rank[a.sev] === rank[b.sev] && a.expires <= b.expires),
        `card ${i} is out of order: ${JSON.stringify(order)}`);
    }
    check(order.some((o) => rank[o.sev] >= rank.error), `destructive requests are raised above routine ones: ${JSON.stringify(order)}`);
    const badges = await page.$$eval('main ol.cards .sev', (els) => [...new Set(els.map((e) => e.textContent.trim().toLowerCase()))]);
    check(badges.length >= 2, `severities are named on the cards: ${badges}`);
    await shot(page, 'inbox-1280x800');
  });

  await step('keyboard: j/k move between cards, a number goes to that option, / goes to the reply', async () => {
    await page.locator('body').click({ position: { x: 5, y: 5 } });
    await page.keyboard.press('j');
    const first = await page.evaluate(() => document.activeElement.getAttribute('data-request'));
    await page.keyboard.press('j');
    const second = await page.evaluate(() => document.activeElement.getAttribute('data-request'));
    await page.keyboard.press('k');
    const back = await page.evaluate(() => document.activeElement.getAttribute('data-request'));
    check(first && second && first !== second && back === first, `j/k moved ${first} → ${second} → ${back}`);
    const withOptions = await page.$$eval('main article.card', (els) => els.findIndex((e) => e.querySelector('button.option')));
    check(withOptions >= 0, 'a card with options is shown');
    await page.locator('main article.card').nth(withOptions).focus();
    await page.keyboard.press('2');
    const opt = await page.evaluate(() => document.activeElement.getAttribute('data-option'));
    check(opt, 'a number key focuses an option (without answering)');
    await page.locator('main article.card').nth(withOptions).focus();
    await page.keyboard.press('/');
    check(await page.evaluate(() => document.activeElement.name === 'reply'), '/ focuses the reply box');
    await page.keyboard.press('Escape');
  });

  await step('answer a permission request: sent, accepted, answered and resolved', async () => {
    const c = card(page, 'rm -rf build/');
    await c.waitFor({ timeout: 20_000 });
    const id = await c.getAttribute('data-request');
    await answerNow(c, 'allow');
    const s = settled(page, id);
    await s.waitFor({ timeout: 10_000 });
    await until(async () => (await s.getAttribute('data-status')) === 'resolved', 'the card settles as resolved');
    const outcome = await s.locator('.outcome').textContent();
    check(outcome.includes('Allowed by you') && outcome.includes('it goes ahead') && !outcome.includes('Resolved ('), `outcome in plain words: ${outcome}`);
    check((await s.locator('.cmd[data-phase="done"][data-mine="true"]').count()) === 1, 'the command reached its outcome');
    check(!(await inboxIds(page)).includes(id), 'the card left the inbox');
  });

  await step('a review answer shows the command waiting for the agent, then done', async () => {
    const c = card(page, 'Review the migration plan');
    await c.waitFor({ timeout: 20_000 });
    const id = await c.getAttribute('data-request');
    await answerNow(c, 'approve');
    // deploy-agent takes 0.6 to 1.8 s to decide: the card says so meanwhile.
    await c.locator('.cmd[data-phase="sending"] .cmd-state', { hasText: 'waiting for the agent' }).waitFor({ timeout: 3_000 });
    check(await c.locator('button.option').first().isDisabled(), 'no second answer while one is in flight');
    await until(async () => (await settled(page, id).getAttribute('data-status')) === 'resolved', 'the review settles', 10_000);
  });

  await step('answer with free text (input), and free text on a permission counts as a refusal', async () => {
    const input = card(page, 'Which incident tracker project');
    await input.waitFor({ timeout: 20_000 });
    const id = await input.getAttribute('data-request');
    await input.locator('form.reply input[name="reply"]').fill('OPS and SEC');
    await input.locator('form.reply button.send').click();
    await sendNow(input);
    await until(async () => (await settled(page, id).getAttribute('data-status')) === 'resolved', 'the input request settles');
    check((await settled(page, id).locator('.outcome').textContent()).includes('OPS and SEC'), 'the text answer is shown');

    const perm = card(page, 'cargo test -p payments-api');
    await perm.waitFor({ timeout: 30_000 });
    const pid = await perm.getAttribute('data-request');
    const box = perm.locator('form.reply input[name="reply"]');
    await box.fill('not now, CI is red');
    const hint = await perm.locator('form.reply .hint').textContent();
    check(hint.includes('refusal'), `the reply box says unmatched text is a refusal: ${hint}`);
    await perm.locator('form.reply button.send').click();
    await sendNow(perm);
    await until(async () => (await settled(page, pid).getAttribute('data-status')) === 'resolved', 'the permission settles');
    const outcome = await settled(page, pid).locator('.outcome').textContent();
    check(outcome.includes('Denied') && outcome.includes('not now, CI is red'), `applied as the refusal with the reason: ${outcome}`);
  });

  await step('an answer from another operator updates this console live', async () => {
    const other = await chromium.newContext({ viewport: { width: 1280, height: 800 } });
    const o = await other.newPage();
    await o.goto(`${relay.base}/#token=${encodeURIComponent(token)}`);
    const theirs = card(o, 'git push --force-with-lease');
    await theirs.waitFor({ timeout: 30_000 });
    const id = await theirs.getAttribute('data-request');
    await card(page, 'git push --force-with-lease').waitFor({ timeout: 10_000 });
    await answerNow(theirs, 'deny');
    await until(async () => !(await inboxIds(page)).includes(id), 'the card leaves this inbox', 10_000);
    await page.goto(`${relay.base}/#/history`);
    const h = page.locator(`main .history article.settled[data-request="${id}"]`);
    await until(async () => (await h.getAttribute('data-status')) === 'resolved', 'this console sees it settle', 10_000);
    check((await h.locator('.cmd[data-mine="false"]').count()) === 1, "the other operator's command is shown, not as ours");
    check((await h.locator('.outcome').textContent()).includes('Denied by'), 'with the answer applied');
    await h.scrollIntoViewIfNeeded();
    await shot(page, 'settled-1280x800');
    await page.goto(`${relay.base}/#/`);
    await other.close();
  });

  await step('opt-in notifications fire for new requests only while the tab is hidden, through the service worker', async () => {
    const ctx = await chromium.newContext({ viewport: { width: 1280, height: 800 } });
    await ctx.grantPermissions(['notifications'], { origin: relay.base });
    const p = await ctx.newPage();
    await p.addInitScript(() => {
      window.__hidden = false;
      Object.defineProperty(document, 'visibilityState', { get: () => (window.__hidden ? 'hidden' : 'visible') });
    });
    const notes = () => p.evaluate(async () => {
      const reg = await navigator.serviceWorker.ready;
      return (await reg.getNotifications()).map((n) => ({ title: n.title, body: n.body, tag: n.tag }));
    });
    await p.goto(`${relay.base}/#token=${encodeURIComponent(token)}`);
    await p.locator('.chip[data-state="live"]').waitFor({ timeout: 15_000 });
    const agent = new TestAgent({ relay, agent: 'e2e-notify' });
    await agent.connect();
    agent.start('Asks while nobody looks');
    agent.ask('Seen while visible?');
    await card(p, 'Seen while visible?').waitFor({ timeout: 10_000 });
    check((await notes()).length === 0, 'nothing is shown before opting in');
    await p.click('details.push summary');
    await p.click('details.push button[role="switch"]');
    // Offline, the browser cannot subscribe to a push service: notified
    // while the console is open.
    await p.locator('details.push[data-state="on-while-open"] button[aria-checked="true"]').waitFor({ timeout: 10_000 });
    agent.ask('Still visible, opted in?');
    await card(p, 'Still visible, opted in?').waitFor({ timeout: 10_000 });
    check((await notes()).length === 0, 'no notification while the tab is visible');
    await p.evaluate(() => { window.__hidden = true; });
    const raised = agent.ask('Raised while hidden <b>bold</b>?');
    const note = await until(async () => (await notes()).find((n) => n.tag === raised.id), 'a notification for the new request', 10_000);
    check(note.title.includes('e2e-notify') && note.body === 'Raised while hidden <b>bold</b>?', `who asks and what, as text: ${JSON.stringify(note)}`);
    agent.drop();
    await ctx.close();
  });

  await step('a form: a missing required field is caught in the browser, then the answer is applied', async () => {
    const f = card(page, 'confirm the rollout settings');
    await f.waitFor({ timeout: 20_000 });
    const id = await f.getAttribute('data-request');
    await f.locator('form.form-answer button[type="submit"]').click();
    await f.locator('[data-field="version"] .field-error', { hasText: '\u201cRelease tag\u201d is required' }).waitFor({ timeout: 3_000 });
    check((await f.locator('[data-field="replicas"] .field-error').count()) === 1, 'the required number is reported too');
    check((await f.locator('.cmd').count()) === 0, 'nothing was sent');
    check(await page.evaluate(() => document.activeElement.closest('[data-field]')?.dataset.field === 'version'), 'the first problem has the focus');
    await f.scrollIntoViewIfNeeded();
    await shot(page, 'form-1280x800');
    await f.locator('[data-field="version"] input').fill('v2.14.0');
    await f.locator('[data-field="environment"] select').selectOption({ label: 'Staging' });
    await f.locator('[data-field="regions"] label', { hasText: 'EU (Ireland)' }).click();
    await f.locator('[data-field="regions"] label', { hasText: 'US East' }).click();
    await f.locator('[data-field="replicas"] input').fill('40');
    await f.locator('form.form-answer button[type="submit"]').click();
    await f.locator('[data-field="replicas"] .field-error', { hasText: 'at most 20' }).waitFor({ timeout: 3_000 });
    await f.locator('[data-field="replicas"] input').fill('3');
    await f.locator('[data-field="canary"] input').check();
    await f.locator('[data-field="notify"] select').selectOption({ label: 'Other\u2026' });
    await f.locator('[data-field="notify"] input[type="text"]').fill('#payments-release');
    await f.locator('form.form-answer button[type="submit"]').click();
    await sendNow(f);
    await until(async () => (await settled(page, id).getAttribute('data-status')) === 'resolved', 'the form settles', 10_000);
    await page.goto(`${relay.base}/#/history`);
    const values = await page.locator(`main .history article.settled[data-request="${id}"] dl.values`).textContent();
    // Choices by the labels they were picked by, not their ids.
    for (const v of ['v2.14.0', 'Staging', 'US East (N. Virginia), EU (Ireland)', '#payments-release']) {
      check(values.includes(v), `the history shows the applied values, ${v} among them: ${values}`);
    }
    await page.goto(`${relay.base}/#/`);
  });

  await step('an out-of-band request is informational: listed quietly, not counted, no way to send from here', async () => {
    // ci-watcher keeps one out-of-band request open at a time.
    const oob = page.locator('main .elsewhere-list .info-row').first();
    await oob.waitFor({ timeout: 20_000 });
    check((await oob.textContent()).includes('ci-watcher'), `it is ci-watcher's: ${await oob.textContent()}`);
    const id = await oob.getAttribute('data-request');
    check(!(await inboxIds(page)).includes(id), 'not among the cards waiting for you');
    check((await page.locator(`main article.card[data-request="${id}"]`).count()) === 0, 'not a card with buttons');
    check((await page.locator('main .elsewhere-list button, main .elsewhere-list form').count()) === 0, 'no send affordance');
    check((await page.locator('main .elsewhere-list').textContent()).includes("agent's own interface"), 'says where it is answered');
  });

  await step('the agent refusing an answer is shown as its own decision, not an error', async () => {
    const g = card(page, 'access to the production database');
    await g.waitFor({ timeout: 20_000 });
    const id = await g.getAttribute('data-request');
    await answerNow(g, 'approve');
    const row = page.locator(`article[data-request="${id}"] .cmd[data-phase="rejected"]`).first();
    await row.waitFor({ timeout: 10_000 });
    const words = await row.textContent();
    check(words.includes('Refused by the agent') && words.includes('not an error'), `refusal in words: ${words}`);
    check(words.includes('two approvers'), `the agent's stated reason is shown: ${words}`);
  });

  let buildBotSession;
  let cancelCommand;
  await step('cancel a run after confirming; run.cancelled appears in the timeline', async () => {
    await page.goto(`${relay.base}/#/sessions`);
    await page.locator('main .lane[data-agent="build-bot"] a.lane-title').first().click();
    buildBotSession = page.url();
    const cancel = page.locator('button[data-verb="cancel-run"]');
    await cancel.waitFor({ timeout: 15_000 });
    await cancel.click();
    await page.locator('.confirm[role="alertdialog"]').waitFor();
    // The safe answer takes the focus, not the reason box (on a phone its
    // keyboard would cover the buttons).
    await until(() => page.evaluate(() => document.activeElement.getAttribute('data-confirm') === 'no'), 'the question takes the focus', 2_000);
    await page.click('button[data-confirm="no"]');
    await until(() => page.evaluate(() => document.activeElement.getAttribute('data-verb') === 'cancel-run'),
      'keeping going gives the focus back to the button that asked', 2_000);
    await cancel.click();
    await page.locator('.confirm[role="alertdialog"]').waitFor();
    check((await page.locator('li.event[data-type="run.cancelled"]').count()) === 0, 'nothing is cancelled before confirming');
    await page.fill('#cancel-reason', 'end-to-end test');
    await page.click('button[data-confirm="yes"]');
    await page.locator('li.event[data-type="run.cancelled"]').first().waitFor({ timeout: 10_000 });
    await page.locator('.runs li[data-run-status="cancelled"]').first().waitFor({ timeout: 5_000 });
    await page.locator('.last-command .cmd[data-phase="done"]').waitFor({ timeout: 5_000 });
    await until(() => page.evaluate(() => document.activeElement && document.activeElement !== document.body && !!document.activeElement.closest('main')),
      'after confirming, the focus stays with the session\'s controls, not the page body', 5_000);
    cancelCommand = await page.locator('.last-command .cmd').getAttribute('data-command');
    const own = page.locator(`.audit .cmd[data-command="${cancelCommand}"]`);
    await own.locator('.cmd-state', { hasText: 'Done' }).waitFor({ timeout: 5_000 });
    check((await own.locator('.who').textContent()) === 'You (aep-console)', `the audit names the sender as the timeline does, marked as this console's own: ${await own.locator('.who').textContent()}`);
    const said = (await page.locator('li.event[data-type="control.cancel"] .ev-summary').first().textContent()).replace(/\s+/g, ' ').trim();
    check(said.startsWith('You (aep-console) asked to cancel'), `the timeline names the sender the same way: ${said}`);
    check(/\d\d:\d\d/.test(await own.locator('.cmd-time').textContent()), 'with the time it was sent');
    await own.scrollIntoViewIfNeeded();
    await shot(page, 'audit-1280x800');
    await page.evaluate(() => window.scrollTo(0, 0));
    await shot(page, 'session-1280x800');
    // Causes are links within the timeline.
    const link = page.locator('li.event a.ev-cause').first();
    if (await link.count()) {
      const target = await link.getAttribute('data-cause');
      await link.click();
      check(await page.evaluate(() => document.activeElement.id) === `ev-${target}`, 'clicking a cause moves to it');
    }
  });

  await step('the session timeline opens at the newest events, pairs tool calls with their results, and filters by type', async () => {
    await page.goto(buildBotSession);
    const items = page.locator('main ol.timeline > li');
    await items.first().waitFor({ timeout: 10_000 });
    const ats = await items.evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-at') || 0)));
    check(ats.length > 3 && ats[0] > 0 && ats[0] === Math.max(...ats), `the newest event comes first: ${ats.slice(0, 5)}`);
    const pair = page.locator('main ol.timeline > li.tool-pair').first();
    await pair.waitFor({ timeout: 20_000 });
    check((await pair.locator('[data-type="tool.requested"]').count()) === 1, 'the pair holds the call');
    check((await pair.locator('[data-type="tool.completed"], [data-type="tool.failed"]').count()) === 1, 'and its result');
    check(!(await pair.locator('details').evaluate((d) => d.open)), 'folded to one line');
    await pair.locator('summary').click();
    check(await pair.locator('details').evaluate((d) => d.open), 'it unfolds');
    const loose = await page.$$eval('main ol.timeline > li.event[data-call]', (els) => els.map((e) => [e.getAttribute('data-type'), e.getAttribute('data-call')]));
    const calls = new Set(loose.filter(([t]) => t === 'tool.requested').map(([, c]) => c));
    check(!loose.some(([t, c]) => t !== 'tool.requested' && calls.has(c)), `no call is left apart from its result: ${JSON.stringify(loose)}`);
    const filter = page.locator('#timeline-type');
    await filter.selectOption('tool');
    await until(async () => (await items.count()) > 0
      && (await items.evaluateAll((els) => els.every((e) => e.getAttribute('data-category') === 'tool'))), 'only tool calls are shown', 5_000);
    await filter.selectOption('attention');
    await until(async () => (await items.evaluateAll((els) => els.length > 0 && els.every((e) => e.getAttribute('data-category') === 'attention'))),
      'only requests are shown', 5_000);
    await filter.selectOption('all');
    await until(async () => (await items.count()) >= ats.length - 1, 'everything again', 5_000);
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.locator('button.to-latest').click();
    await until(async () => {
      const top = await items.first().evaluate((e) => e.getBoundingClientRect().top);
      return top > 0 && top < 800 / 2;
    }, 'one click brings the newest events into view', 3_000);
    await shot(page, 'session-timeline-1280x800');
  });

  await step('the Sessions list keeps its order while sessions work, wait and end', async () => {
    await page.goto(`${relay.base}/#/sessions`);
    await page.locator('main .lane').first().waitFor({ timeout: 10_000 });
    const lists = [];
    let work = await laneWork(page);
    for (let i = 0; i < 10; i++) {
      // Each look after some session moved on.
      if (i > 0) work = await until(async () => { const w = await laneWork(page); return w !== work && w; }, 'the sessions keep working', 15_000);
      lists.push(await page.$$eval('main .lane', (els) => els.map((e) => [e.getAttribute('data-session'), Number(e.getAttribute('data-started'))])));
    }
    for (const list of lists) {
      const started = list.map(([, t]) => t);
      check(started.every((t, i) => t > 0 && (i === 0 || started[i - 1] <= t)), `in the order they started: ${JSON.stringify(list)}`);
    }
    for (let i = 1; i < lists.length; i++) {
      const [a, b] = [lists[i - 1].map(([s]) => s), lists[i].map(([s]) => s)];
      const kept = b.filter((s) => a.includes(s));
      check(JSON.stringify(kept) === JSON.stringify(a.filter((s) => b.includes(s))), `no session moved: ${a} then ${b}`);
    }
  });

  await step('pause and resume a session; a vendor verb gets a generic form', async () => {
    await page.goto(`${relay.base}/#/sessions`);
    await page.locator('main .lane[data-agent="research-agent"] a.lane-title').first().click();
    const pause = page.locator('button[data-verb="pause"]');
    await pause.waitFor({ timeout: 15_000 });
    check((await page.locator('button[data-verb="cancel-run"]').count()) === 0, 'no cancel for an agent that did not declare it');
    await pause.focus();
    await page.keyboard.press('Enter');
    await page.locator('[data-session-state="paused"]').waitFor({ timeout: 10_000 });
    await until(() => page.evaluate(() => document.activeElement.getAttribute('data-verb') === 'resume'),
      'after Enter on Pause the focus is on Resume, not the page body', 5_000);
    // What the pause did reads as a pause, not as progress.
    const result = page.locator('.last-command .cmd-state');
    await until(async () => (await result.textContent()).startsWith('Done'), 'the pause is done', 5_000);
    check((await result.textContent()).trim() === 'Done \u2014 the agent paused', `the pause's result: ${await result.textContent()}`);
    const session = page.url();
    await page.goto(`${relay.base}/#/sessions`);
    const runs = (await page.locator('main .lane[data-state="paused"][data-agent="research-agent"] .lane-runs').first().textContent()).trim();
    check(runs.startsWith('Paused') && !runs.includes('Running'), `a paused session reads paused in the list: ${runs}`);
    await page.goto(session);
    await page.locator('button[data-verb="resume"]').click();
    await page.locator('[data-session-state="active"]').waitFor({ timeout: 10_000 });
    const vendor = page.locator('form.vendor[data-verb="x.demo.control.instruct"]');
    await vendor.waitFor();
    const heading = (await vendor.locator('h3').textContent()).trim();
    check(heading === 'instruct (demo) x.demo.control.instruct', `the verb and its type are apart: ${heading}`);
    await vendor.locator('textarea').fill('Group the causes by service.');
    await vendor.locator('button[type="submit"]').click();
    await vendor.locator('.cmd[data-phase="done"]').waitFor({ timeout: 10_000 });
  });

  await step('an answer to an agent that went away explains no-route, and its other requests are then marked unreachable', async () => {
    // A relay of its own: with the demo agents' sessions starting, this
    // console would learn from a fresh roster that the agent left before
    // the tap, and rightly offer no answer at all.
    const quiet = new Relay({ port: await freePort(), token, demo: false });
    await quiet.start();
    const agent = new TestAgent({ relay: quiet, agent: 'e2e-gone' });
    const ctx = await chromium.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      await agent.connect();
      agent.start('Leaves before anyone answers');
      agent.ask('Delete the e2e scratch bucket?');
      const other = agent.ask('Also delete its snapshots?');
      const p = await ctx.newPage();
      await p.goto(`${quiet.base}/#token=${encodeURIComponent(token)}`);
      const c = card(p, 'Delete the e2e scratch bucket?');
      await c.waitFor({ timeout: 10_000 });
      await card(p, 'Also delete its snapshots?').waitFor({ timeout: 10_000 });
      agent.drop();
      await until(async () => (await relayStats(quiet)).claims === 0, 'the relay lets the agent\'s claim go', 10_000);
      await answerNow(c, 'allow');
      const row = c.locator('.cmd[data-phase="relay-refused"]');
      await row.waitFor({ timeout: 10_000 });
      check((await row.textContent()).includes('Not delivered: the agent is not connected'), 'no-route in words');
      // The refusal says the roster is out of date: the agent's other
      // request is marked before anyone taps it, and the tapped card
      // keeps what came of the answer.
      await p.locator(`main .unreachable-list li[data-request="${other.id}"]`).waitFor({ timeout: 10_000 });
      check(await row.isVisible(), 'the refusal stays on the card that was tapped');
      check((await c.locator('.hint.unreachable').count()) === 1, 'which now says its agent is not connected');
    } finally {
      agent.drop();
      await ctx.close();
      await quiet.stop();
    }
  });

  await step('no acknowledgement: the card says so, and Retry resends the same command id', async () => {
    await page.goto(`${relay.base}/#/`);
    const agent = new TestAgent({ relay, agent: 'e2e-slow', ackWindowMs: 1500, ignore: 1 });
    await agent.connect();
    agent.start('Loses the first command');
    agent.ask('Restart the e2e worker pool?');
    const c = card(page, 'Restart the e2e worker pool?');
    await c.waitFor({ timeout: 10_000 });
    // The hub asks for the roster when a session starts; a session it has
    // not seen is answerable once a roster lists it, with its declared
    // 1.5 s window (rather than the 10 s default).
    await c.locator('.actions[data-answering="options"]').waitFor({ timeout: 10_000 });
    await answerNow(c, 'deny');
    const timedOut = c.locator('.cmd[data-phase="timeout"]');
    await timedOut.waitFor({ timeout: 15_000 });
    check((await timedOut.textContent()).includes('No acknowledgement'), 'the silence is named');
    // (A card that just moved takes a moment before its buttons act again.)
    await until(async () => !(await c.locator('button.option').first().isDisabled()), 'the card can be answered again', 3_000);
    await timedOut.locator('button.retry').click();
    await until(() => agent.commands.length === 2, 'the agent received the command twice', 5_000);
    check(agent.commands[0].id === agent.commands[1].id, `the retry reused the id (${agent.commands[0].id} vs ${agent.commands[1].id})`);
    check(JSON.stringify(agent.commands[0]) === JSON.stringify(agent.commands[1]), 'the retry carried the same bytes');
    const row = page.locator(`article[data-request] .cmd[data-command="${agent.commands[0].id}"][data-phase="done"]`).first();
    await row.waitFor({ timeout: 10_000, state: 'attached' });
    check((await row.textContent()).includes('sent 2 times (same id)'), 'the card says the command was sent twice');
    agent.drop();
  });

  await step('the expiring request counts down, then times out and says so', async () => {
    await page.goto(`${relay.base}/#/history`);
    const h = page.locator('main article.settled[data-status="timed-out"]', { hasText: 's3://incident-archive' }).first();
    await h.waitFor({ timeout: 60_000 });
    check((await h.locator('.outcome').textContent()).includes('Timed out'), 'the outcome says timed out');
  });

  await step('a request answered elsewhere (oob) updates live', async () => {
    await page.goto(`${relay.base}/#/history`);
    const answered = page.locator('main article.settled[data-kind]', { hasText: 'on GitHub' }).locator('.outcome', { hasText: "in the agent's own interface" }).first();
    await answered.waitFor({ timeout: 60_000 });
    check((await answered.textContent()).includes(' by '), 'it names who answered');
  });

  await step('phone: one column, no sideways scroll, 44px targets, named controls; screenshots', async () => {
    const phone = await chromium.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 });
    const p = await phone.newPage();
    await p.goto(`${relay.base}/#token=${encodeURIComponent(token)}`);
    await p.locator('.chip[data-state="live"]').waitFor({ timeout: 15_000 });
    await p.locator('main article.card').first().waitFor({ timeout: 15_000 });
    await noHorizontalScroll(p, 'inbox');
    await touchTargets(p, 'inbox');
    await unnamedControls(p, 'inbox');
    // A compact card's buttons stay under its prompt: none float over a
    // card cut off by the bottom of the screen, away from what they answer.
    await atRest(p);
    const floating = await p.$$eval('main article.card', (cards) => cards.map((c) => {
      const q = c.querySelector('.prompt');
      const o = c.querySelector('.options');
      if (!q || !o) return null;
      return o.getBoundingClientRect().top < q.getBoundingClientRect().bottom - 1 ? c.getAttribute('data-request') : null;
    }).filter(Boolean));
    check(floating.length === 0, `answer buttons float over their card: ${floating}`);
    await shot(p, 'inbox-390x844');
    const f = p.locator('main article.card', { hasText: 'Export settings' }).or(p.locator('main article.card', { hasText: 'confirm the rollout' })).first();
    if (await f.count()) {
      await f.scrollIntoViewIfNeeded();
      await f.locator('button.details-toggle').tap();
      await f.locator('form.form-answer').scrollIntoViewIfNeeded();
      await noHorizontalScroll(p, 'form');
      await shot(p, 'form-390x844');
    }
    await p.setViewportSize({ width: 360, height: 640 });
    await p.goto(`${relay.base}/#/`);
    await p.locator('main article.card').first().waitFor({ timeout: 15_000 });
    await noHorizontalScroll(p, 'inbox at 360x640');
    await touchTargets(p, 'inbox at 360x640');
    await p.setViewportSize({ width: 390, height: 844 });
    await p.goto(buildBotSession || `${relay.base}/#/sessions`);
    await p.locator('main .timeline li').first().waitFor({ timeout: 10_000 });
    // A fresh page: the command sent from the other one is still this console's own.
    const own = p.locator(`.audit .cmd[data-command="${cancelCommand}"]`);
    await own.waitFor({ timeout: 10_000 });
    check((await own.locator('.who').textContent()) === 'You (aep-console)', `after a reload the cancel is still ours: ${await own.textContent()}`);
    await own.scrollIntoViewIfNeeded();
    await shot(p, 'audit-390x844');
    check(/\d\d:\d\d/.test(await own.locator('.cmd-time').textContent()) && (await own.locator('.cmd-state').textContent()).includes('Done'),
      `with its time and result: ${await own.textContent()}`);
    const audit = await p.locator('.audit').textContent();
    check(!audit.includes('Someone') && !audit.includes('command not seen'), `no unnamed commands: ${audit}`);
    // Read at once: the demo agents keep adding events on top.
    const all = await p.locator('main ol.timeline > li').evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-at') || 0)));
    check(all[0] === Math.max(...all), `the phone timeline opens at the newest event too: ${all.slice(0, 5).join(', ')}`);
    await p.evaluate(() => window.scrollTo(0, 0));
    await noHorizontalScroll(p, 'session');
    await touchTargets(p, 'session');
    await shot(p, 'session-390x844');
    // One tap from the top to the newest events.
    await p.locator('button.to-latest').tap();
    await until(async () => {
      const top = await p.locator('main ol.timeline > li').first().evaluate((e) => e.getBoundingClientRect().top);
      return top > 0 && top < 844 / 2;
    }, 'the newest event is in view after one tap', 3_000);
    await shot(p, 'session-timeline-390x844');
    await phone.close();
    const dark = await chromium.newContext({ viewport: { width: 390, height: 844 }, colorScheme: 'dark', isMobile: true, hasTouch: true });
    const d = await dark.newPage();
    await d.goto(`${relay.base}/#token=${encodeURIComponent(token)}`);
    await d.locator('main article.card').first().waitFor({ timeout: 15_000 });
    await shot(d, 'inbox-390x844-dark');
    await dark.close();
  });

  await step('a dropped connection resumes: nothing shown twice, nothing missed', async () => {
    const agent = new TestAgent({ relay, agent: 'e2e-steady' });
    await agent.connect();
    agent.start('Keeps working while the console is away');
    const q1 = agent.ask('Resume check: question one?');
    agent.ask('Resume check: question two?');
    const ctx = await chromium.newContext({ viewport: { width: 1280, height: 800 } });
    const p = await ctx.newPage();
    await p.addInitScript(socketControl);
    await p.goto(`${relay.base}/#token=${encodeURIComponent(token)}`);
    await card(p, 'Resume check: question two?').waitFor({ timeout: 15_000 });
    await p.evaluate(() => { window.__aepSockets.block = true; window.__aepSockets.dropAll(); });
    await p.locator('.chip[data-state="reconnecting"]').waitFor({ timeout: 5_000 });
    // While the console is away: one request is withdrawn, three are raised.
    agent.emit('attention.resolved', { resolution: 'dismissed' }, { subject: q1.id, run: 'run-e2e' });
    let last;
    for (const n of ['three', 'four', 'five']) last = agent.ask(`Resume check: question ${n}?`);
    await relayHolds(relay, last);
    await p.evaluate(() => { window.__aepSockets.block = false; });
    await p.locator('.chip[data-state="live"]').waitFor({ timeout: 20_000 });
    await card(p, 'Resume check: question five?').waitFor({ timeout: 10_000 });
    for (const n of ['two', 'three', 'four', 'five']) {
      const count = await p.locator('main article.card', { hasText: `Resume check: question ${n}?` }).count();
      check(count === 1, `question ${n} is shown exactly once (${count})`);
    }
    check((await p.locator('main article.card', { hasText: 'Resume check: question one?' }).count()) === 0, 'the withdrawn request left the inbox');
    const ids = await inboxIds(p);
    check(new Set(ids).size === ids.length, 'no card is shown twice');
    await ctx.close();
    agent.drop();
  });

  await step('a resume past what the relay kept says history was trimmed', async () => {
    const small = new Relay({ port: await freePort(), token, demo: false, args: ['--buffer', '8'] });
    await small.start();
    const agent = new TestAgent({ relay: small, agent: 'e2e-chatty' });
    const ctx = await chromium.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      await agent.connect();
      agent.start('Talks a lot');
      agent.ask('Trim check: first question?');
      const p = await ctx.newPage();
      await p.addInitScript(socketControl);
      await p.goto(`${small.base}/#token=${encodeURIComponent(token)}`);
      await card(p, 'Trim check: first question?').waitFor({ timeout: 15_000 });
      check((await p.locator('[data-notice="trimmed"]').count()) === 0, 'no trimmed notice before anything was lost');
      await p.evaluate(() => { window.__aepSockets.block = true; window.__aepSockets.dropAll(); });
      await p.locator('.chip[data-state="reconnecting"]').waitFor({ timeout: 5_000 });
      for (let i = 0; i < 20; i++) agent.emit('progress.status', { phase: 'working', percent: i * 5 }, { run: 'run-e2e' });
      await relayHolds(small, agent.ask('Trim check: second question?'));
      await p.evaluate(() => { window.__aepSockets.block = false; });
      const notice = p.locator('[data-notice="trimmed"]');
      await notice.waitFor({ timeout: 20_000 });
      check((await notice.textContent()).includes('History was trimmed'), 'the notice says history was trimmed');
      await card(p, 'Trim check: second question?').waitFor({ timeout: 10_000 });
    } finally {
      await ctx.close();
      agent.drop();
      await small.stop();
    }
  });

  await step('commands are refused, not queued, while the relay is down; after a restart nothing is duplicated', async () => {
    await page.goto(`${relay.base}/#/`);
    survivor = new TestAgent({ relay, agent: 'e2e-survivor', reconnect: true });
    await survivor.connect();
    survivor.start('Outlives a relay restart');
    survivor.ask('First question before the restart?');
    const first = card(page, 'First question before the restart?');
    await first.waitFor({ timeout: 10_000 });
    const before = await inboxIds(page);
    await relay.stop();
    await page.locator('.chip[data-state="reconnecting"]').waitFor({ timeout: 10_000 });
    await page.locator('[data-banner="no-relay"]').waitFor({ timeout: 5_000 });
    await tapSettled(first, first.locator('button.option[data-option="allow"]'));
    const err = await first.locator('.send-error').textContent({ timeout: 3_000 });
    check(err.includes('is not connected') && err.includes('Nothing was queued'), `refused in words: ${err}`);
    check((await first.locator('.cmd').count()) === 0, 'no command is pending against a dead socket');
    await relay.start();
    await until(async () => survivor.ws && survivor.ws.readyState === 1, 'the test agent reconnected', 15_000);
    survivor.ask('Second question after the restart?');
    await page.locator('.chip[data-state="live"]').waitFor({ timeout: 30_000 });
    await card(page, 'Second question after the restart?').waitFor({ timeout: 15_000 });
    const after = await inboxIds(page);
    check(new Set(after).size === after.length, `no card is shown twice: ${after.length} cards, ${new Set(after).size} distinct`);
    const stillThere = before.filter((id) => after.includes(id));
    const firstId = await first.getAttribute('data-request');
    check(after.includes(firstId), 'the card raised before the restart is still there, once');
    check(stillThere.length >= 1, 'earlier cards survive the reconnect');
    const firstCount = await page.locator('main article.card', { hasText: 'First question before the restart?' }).count();
    check(firstCount === 1, `the first question appears once (${firstCount})`);
    await shot(page, 'after-restart-1280x800');
  });

  await step('no page errors, no policy violations', async () => {
    check(pageErrors.length === 0, `page errors: ${pageErrors.join(' | ')}`);
    const csp = await page.evaluate(() => window.__csp);
    check(csp.length === 0, `Content-Security-Policy violations: ${csp.join(' | ')}`);
    check(await page.evaluate(() => !!document.querySelector('meta[http-equiv="Content-Security-Policy"]')), 'the build carries its policy');
    check(dialogs.length === 0, `dialogs: ${dialogs.join(' | ')}`);
  });
} finally {
  if (survivor) survivor.drop();
  await chromium.close().catch(() => {});
  await relay.stop().catch(() => {});
}

console.log(`\nscreenshots:\n  ${shots.join('\n  ')}`);
console.log(`\n${results.length - failed} passed, ${failed} failed`);
if (failed) {
  console.log(`\nrelay log (tail):\n${relay.log.slice(-40).join('')}`);
  process.exit(1);
}
