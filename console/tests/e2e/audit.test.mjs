// The Audit view on a phone: two operators answer requests from their own
// consoles; the Audit view, opened from History and filtered to one of
// them, lists exactly that person's decisions with local times and dates,
// and Export downloads the same rows. Against the release relay keeping
// its audit trail in --data-dir.
//
// Run with scripts/test-console.

import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Relay, Steps, TestAgent, answerNow, browser, cardIn, check, freePort, until, ROOT } from './lib.mjs';

const DIR = `${ROOT}target/console-e2e/audit`;
rmSync(DIR, { recursive: true, force: true });
mkdirSync(DIR, { recursive: true });

const steps = new Steps();
const step = steps.step.bind(steps);
const hex = (s) => createHash('sha256').update(s).digest('hex');
const tokens = { alice: `alice-${randomBytes(12).toString('hex')}`, bob: `bob-${randomBytes(12).toString('hex')}` };
writeFileSync(`${DIR}/credentials`, Object.entries(tokens).map(([name, t]) => `${name} operator,viewer ${hex(t)}\n`).join(''));

const owner = `owner-${randomBytes(12).toString('hex')}`;
const relay = new Relay({
  port: await freePort(), token: owner, demo: false,
  args: ['--credentials', `${DIR}/credentials`, '--data-dir', `${DIR}/data`],
});
await relay.start();
const agent = new TestAgent({ relay, agent: 'e2e-audit-agent' });
await agent.connect();
agent.start('Audited work');

const chromium = await browser();
const PHONE = {
  viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2,
  timezoneId: 'America/New_York', acceptDownloads: true,
};
const errors = [];
async function open(name) {
  const ctx = await chromium.newContext(PHONE);
  const page = await ctx.newPage();
  page.on('pageerror', (e) => errors.push(`${name}: ${e.message}`));
  await page.goto(`${relay.base}/#token=${encodeURIComponent(tokens[name])}`);
  await page.locator('.chip[data-state="live"]').waitFor({ timeout: 15_000 });
  return page;
}

/** The person's rows, as the relay's audit has them. */
async function rowsOf(name) {
  const r = await fetch(`${relay.base}/audit?principal=${name}&format=json`, { headers: { authorization: `Bearer ${owner}` } });
  check(r.ok, `the audit answers: ${r.status}`);
  return r.json();
}

/** The person's decisions, as the relay's audit has them. */
async function decisionsOf(name) {
  return (await rowsOf(name)).map((row) => row.command);
}

try {
  const alice = await open('alice');
  const bob = await open('bob');

  await step('two operators answer requests from their phones', async () => {
    const asked = [
      [alice, 'Audit: delete build/ (alice, 1)?', 'allow'],
      [bob, 'Audit: push to main (bob)?', 'deny'],
      [alice, 'Audit: rotate the key (alice, 2)?', 'allow'],
    ];
    for (const [page, prompt, option] of asked) {
      const before = agent.commands.length;
      agent.ask(prompt);
      const c = cardIn(page, prompt);
      await c.waitFor({ timeout: 15_000 });
      await answerNow(c, option);
      await until(() => agent.commands.length === before + 1, `the answer to "${prompt}" reached the agent`, 10_000);
    }
    const by = (who) => agent.commands.filter((c) => c.agent === who).map((c) => c.id);
    check(by('alice').length === 2 && by('bob').length === 1, `sent as each person: ${agent.commands.map((c) => c.agent)}`);
    await until(async () => (await decisionsOf('alice')).length === 2 && (await decisionsOf('bob')).length === 1,
      'the relay audited every answer', 10_000);
  });

  await step('the Audit view, opened from History and filtered to one person, lists exactly their decisions with local dates', async () => {
    await alice.locator('nav.tabs a[href="#/history"]').click();
    await alice.locator('a[data-open="audit"]').click();
    await alice.locator('h1#audit-title').waitFor();
    await until(async () => (await alice.locator('li.audit-row').count()) === 3, 'every decision is listed at first', 10_000);
    await alice.locator('input[name="who"]').fill('bob');
    await alice.locator('form.audit-filter button[type="submit"]').click();
    const expected = await decisionsOf('bob');
    await until(async () => {
      const shown = await alice.locator('li.audit-row').evaluateAll((rows) => rows.map((r) => r.dataset.command));
      return JSON.stringify(shown) === JSON.stringify(expected);
    }, `exactly bob's decisions: ${expected}`, 10_000);
    const rows = alice.locator('li.audit-row');
    check((await rows.first().getAttribute('data-who')) === 'bob', 'the row names the person');
    const time = rows.first().locator('time.audit-time');
    const [text, iso] = [await time.textContent(), await time.getAttribute('datetime')];
    const local = await alice.evaluate((at) => new Date(at).toLocaleString('default'), iso);
    check(text === local, `local time with its date (${text} / ${local})`);
    check(text.includes(String(new Date(iso).getFullYear())), `the date is shown: ${text}`);
    const summary = await rows.first().locator('summary').textContent();
    check(summary.includes('deny'), `the answer is in the row: ${summary}`);
    check(summary.includes('Audit: push to main (bob)?'), `the row names the request: ${summary}`);
    const words = await rowsOf('bob');
    check(summary.includes(words[0].result) && words[0].result === 'the agent acted on the answer',
      `and says in words what the agent did: ${summary}`);
    const box = await rows.first().boundingBox();
    check(box.height <= 120, `one compact row on a phone: ${box.height} px`);
    await rows.first().locator('summary').click();
    await alice.screenshot({ path: `${DIR}/audit-phone.png`, fullPage: true });
    const detail = await rows.first().locator('dl.audit-detail').textContent();
    check(detail.includes('Audit: push to main (bob)?'), `the request is one tap away: ${detail}`);
    check(detail.includes('attention.resolved'), `and its outcome: ${detail}`);
  });

  await step('axe finds nothing serious or critical in the Audit view on a phone', async () => {
    const axe = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
    await alice.evaluate(axe);
    const found = await alice.evaluate(async () => (await window.axe.run(document)).violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`));
    check(found.length === 0, `axe: ${found.join(' | ')}`);
  });

  await step('Export downloads the same rows as CSV and JSONL', async () => {
    const expected = await decisionsOf('bob');
    const [csv] = await Promise.all([alice.waitForEvent('download'), alice.locator('button[data-export="csv"]').click()]);
    const text = readFileSync(await csv.path(), 'utf8');
    const lines = text.trim().split('\n');
    check(lines[0] === '"time","who","agent","session","label","verb","command","prompt","answer","ack","outcome","latency_ms","result"',
      `a CSV header: ${lines[0]}`);
    check(lines.length === 1 + expected.length, `one row per decision: ${text}`);
    check(expected.every((id) => text.includes(id)) && lines.slice(1).every((l) => l.includes(',"bob",')), `bob's rows: ${text}`);
    const shown = await alice.locator('li.audit-row .audit-result').allTextContents();
    check(lines.slice(1).every((l, i) => l.endsWith(`,"${shown[i]}"`)), `the CSV's result is the row's words: ${text} / ${shown}`);
    check(text.includes('Audit: push to main (bob)?') && text.includes('deny'), `with the prompt and the answer: ${text}`);
    const [jsonl] = await Promise.all([alice.waitForEvent('download'), alice.locator('button[data-export="jsonl"]').click()]);
    const exported = readFileSync(await jsonl.path(), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    const [records, signed] = [exported.slice(0, -1), exported.at(-1)];
    const commands = records.filter((r) => r.kind === 'command' && r.event).map((r) => r.command);
    check(JSON.stringify(commands) === JSON.stringify(expected), `the same commands in JSONL: ${commands}`);
    check(records.every((r) => r.hash && r.prev), 'with the chain');
    check(JSON.stringify(signed.commands) === JSON.stringify(expected) && signed.head && signed.signature,
      `ending with the signed head: ${JSON.stringify(signed)}`);
  });

  await steps.noPageErrors(errors);
} finally {
  await chromium.close();
  agent.drop();
  await relay.stop();
}
steps.report();
