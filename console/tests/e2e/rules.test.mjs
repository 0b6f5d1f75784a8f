// Standing rules from a phone: from a demo agent's card an operator makes
// a rule ("Always: Allow", changed to match every `Run \`` request of
// build-bot); the next matching requests are answered by the relay with no
// tap, the Audit view says "answered by rule … (made by alice at …)", a
// severe request of the same agent still waits for a person; revoked from
// the Menu's Rules view, the next matching request waits for a person.
// Against the release relay with its demo agents, keeping --data-dir.
//
// Run with scripts/test-console.

import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { Relay, Steps, answerNow, browser, check, freePort, sleep, until, ROOT } from './lib.mjs';

const DIR = `${ROOT}target/console-e2e/rules`;
rmSync(DIR, { recursive: true, force: true });
mkdirSync(DIR, { recursive: true });

const steps = new Steps();
const step = steps.step.bind(steps);
const hex = (s) => createHash('sha256').update(s).digest('hex');
const alice = `alice-${randomBytes(12).toString('hex')}`;
writeFileSync(`${DIR}/credentials`, `alice operator,viewer ${hex(alice)}\n`);

const owner = `owner-${randomBytes(12).toString('hex')}`;
const relay = new Relay({
  port: await freePort(), token: owner,
  args: ['--credentials', `${DIR}/credentials`, '--data-dir', `${DIR}/data`],
});
await relay.start();

const chromium = await browser();
const ctx = await chromium.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 });
const page = await ctx.newPage();
const errors = [];
page.on('pageerror', (e) => errors.push(e.message));

/** build-bot's asks: the three the rule is for, and the two it is not. */
const MATCHING = ['Run `rm -rf build/`', 'Run `cargo test', 'Run `git push'];
const SANITISER = 'docs/sanitiser-check.html';
const SEVERE = 'Run `docker compose down -v`';

const buildBot = () => page.locator('main article.card', { has: page.locator('.card-agent', { hasText: 'build-bot' }) });
const buildBotCard = (text) => buildBot().filter({ hasText: text }).first();

async function relayGet(path) {
  const r = await fetch(`${relay.base}${path}`, { headers: { authorization: `Bearer ${alice}` } });
  check(r.ok, `${path}: ${r.status}`);
  return r.json();
}

/** build-bot's decisions the relay audited, newest first. */
const decisions = async () => relayGet('/audit?format=json&agent=build-bot&limit=200');

/** Brings in requests waiting behind "N new", as a person does. */
async function bringIn() {
  const bar = page.locator('button.new-above');
  if (await bar.isVisible().catch(() => false)) await bar.click({ timeout: 1_000 }).catch(() => {});
}

/** Taps the answer of whichever of build-bot's non-matching requests is waiting, so it keeps asking. */
async function keepBuildBotGoing() {
  await bringIn();
  for (const text of [SANITISER, SEVERE]) {
    const c = buildBotCard(text);
    if (await c.isVisible().catch(() => false)) {
      await answerNow(c, 'deny').catch(() => {});
    }
  }
}

let rule;
try {
  await page.goto(`${relay.base}/#token=${encodeURIComponent(alice)}`);
  await page.locator('.chip[data-state="live"]').waitFor({ timeout: 15_000 });

  await step('from a build-bot card, "Always: Allow" changed to match every `Run `… request makes a rule and answers that card', async () => {
    const first = await until(async () => {
      await keepBuildBotGoing();
      for (const text of MATCHING) {
        const c = buildBotCard(text);
        if (await c.isVisible().catch(() => false)) return { c, text };
      }
      return null;
    }, 'a build-bot request the rule is for', 60_000, 200);
    const { c } = first;
    await c.locator('.rule-maker button.rule-open').click();
    await c.locator('select[name="rule-match"]').selectOption('prefix');
    await c.locator('input[name="rule-pattern"]').fill('Run `');
    await page.screenshot({ path: `${DIR}/rule-form.png`, fullPage: false });
    await c.locator('.rule-maker button.rule-make[data-option="allow"]').click();
    const listed = await until(async () => (await relayGet('/rules')).rules, 'the relay keeps the rule', 10_000);
    check(listed.length === 1 && listed[0].author === 'alice' && listed[0].agent === 'build-bot', `one rule by alice: ${JSON.stringify(listed)}`);
    check(listed[0].match === 'prefix' && listed[0].pattern === 'Run `' && listed[0].session === null, `as set: ${JSON.stringify(listed[0])}`);
    rule = listed[0];
    await until(async () => (await decisions()).filter((d) => d.rule && d.rule.id === rule.id).length === 1,
      'the card it was made from is answered by the rule', 10_000);
  });

  await step('the next three matching requests are answered with no tap, and a severe one still waits for a person', async () => {
    let severeSeen = false;
    await until(async () => {
      await bringIn();
      // The severe request is asked in turn: it waits for a person, with no "Always" on its card.
      const severe = buildBotCard(SEVERE);
      if (await severe.isVisible().catch(() => false)) {
        check(await severe.locator('.rule-maker').count() === 0, 'no rule is offered for a request of severity error');
        await sleep(1_500);
        check(await severe.isVisible(), 'the severe request is not answered by the rule');
        severeSeen = true;
      }
      await keepBuildBotGoing();
      const byRule = (await decisions()).filter((d) => d.rule && d.rule.id === rule.id);
      return byRule.length >= 4 && severeSeen;
    }, 'three more requests answered by the rule, and the severe one seen waiting', 180_000, 300);
    const byRule = (await decisions()).filter((d) => d.rule && d.rule.id === rule.id);
    check(byRule.every((d) => d.who === 'alice' && d.answer === 'allow'), `on alice's behalf: ${JSON.stringify(byRule)}`);
    check(byRule.every((d) => MATCHING.some((m) => d.prompt.startsWith(m))), `only matching requests: ${byRule.map((d) => d.prompt)}`);
    await until(async () => (await decisions()).filter((d) => d.rule && d.rule.id === rule.id)
      .every((d) => d.ack === 'accepted' && d.outcome === 'attention.resolved'), 'each was acked and resolved by the agent', 10_000);
    const byPerson = (await decisions()).filter((d) => !d.rule && MATCHING.some((m) => d.prompt.startsWith(m)));
    check(byPerson.length === 0, `no matching request took a tap: ${JSON.stringify(byPerson)}`);
  });

  await step('the Audit view says "answered by rule … (made by alice at HH:MM)"', async () => {
    await page.evaluate(() => { window.location.hash = '#/audit'; });
    await page.locator('h1#audit-title').waitFor();
    const made = await page.evaluate((at) => {
      const d = new Date(at);
      return `${String(d.getHours()).padStart(2, '0')}:${String(d.getMinutes()).padStart(2, '0')}`;
    }, rule.made_at);
    const words = `answered by rule ${rule.id} (made by alice at ${made})`;
    const row = page.locator('li.audit-row', { hasText: words });
    await until(async () => (await row.count()) >= 4, `four rows say "${words}"`, 10_000);
    await row.first().locator('summary').click();
    const detail = await row.first().locator('dl.audit-detail').textContent();
    check(detail.includes(words), `the detail says it too: ${detail}`);
    await page.screenshot({ path: `${DIR}/audit-by-rule.png`, fullPage: true });
  });

  await step('revoked from the Menu\'s Rules view, the next matching request waits for a person', async () => {
    await page.locator('button.menu-toggle').click();
    await page.locator('a[data-open="rules"]').click();
    await page.locator('h1#rules-title').waitFor();
    const item = page.locator(`li.rule[data-rule="${rule.id}"]`);
    await item.waitFor({ timeout: 10_000 });
    check((await item.textContent()).includes('made by alice'), 'the rule names its author');
    await page.screenshot({ path: `${DIR}/rules-view.png`, fullPage: true });
    await item.locator('button[data-revoke]').click();
    await until(async () => (await item.getAttribute('data-state')) === 'revoked', 'the view shows it revoked', 10_000);
    check((await relayGet('/rules')).rules[0].state === 'revoked', 'the relay revoked it');
    const answeredByRule = (await decisions()).filter((d) => d.rule).length;
    await page.evaluate(() => { window.location.hash = '#/'; });
    const waiting = await until(async () => {
      await keepBuildBotGoing();
      for (const text of MATCHING) {
        const c = buildBotCard(text);
        if (await c.isVisible().catch(() => false)) return c;
      }
      return null;
    }, 'the next matching request of build-bot', 120_000, 300);
    await sleep(3_000);
    check(await waiting.isVisible(), 'it is still waiting in the inbox');
    check((await waiting.getAttribute('data-status')) === 'pending', `still pending: ${await waiting.getAttribute('data-status')}`);
    check((await decisions()).filter((d) => d.rule).length === answeredByRule, 'the revoked rule answered nothing more');
  });

  await steps.noPageErrors(errors);
} finally {
  await chromium.close();
  await relay.stop();
}
steps.report();
