// The plain-JS dashboard example in headless Chromium (playwright-core),
// served by the real relay together with the packed package, answering a
// request raised by the relay's demonstration agents.
// Run: node --experimental-websocket --test npm/test/dashboard.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

import { installPackage, startRelay, servePackage, repo } from './support.mjs';

const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run',
];

let installed;
let relay;
let browser;

before(async () => {
  installed = await installPackage();
  relay = await startRelay({ demo: true });
  // What the relay must serve: the package under /pkg/, the example under /examples/.
  servePackage(installed.dir, relay.staticDir);
  mkdirSync(join(relay.staticDir, 'examples'), { recursive: true });
  cpSync(join(repo, 'www', 'examples'), join(relay.staticDir, 'examples'), { recursive: true });
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: CHROMIUM_ARGS });
});

after(async () => {
  await browser?.close();
  await relay?.stop();
  installed?.cleanup();
});

test('the dashboard lists pending requests and answers one', async () => {
  const page = await browser.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('dialog', async (d) => { problems.push(`dialog: ${d.message()}`); await d.dismiss(); });
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('response', (r) => { if (r.status() >= 400) problems.push(`${r.status()} ${new URL(r.url()).pathname}`); });

  await page.goto(`${relay.url}/examples/dashboard.html`);
  await page.fill('#token', relay.token);
  await page.click('button[type=submit]');
  await page.waitForSelector('#status[data-state="live"]', { timeout: 15_000 });
  assert.equal(await page.inputValue('#token'), '', 'the token does not stay in the page');

  // Agent-authored text is shown as text: the demo's markup-laden prompt
  // appears literally and creates no element.
  const card = page.locator('li.card', { has: page.locator('.prompt', { hasText: '<img src=x' }) }).first();
  await card.waitFor({ timeout: 30_000 });
  assert.equal(await page.locator('li.card img, li.card script').count(), 0);
  const id = await card.getAttribute('data-id');
  const provenance = await card.locator('.provenance').textContent();
  assert.match(provenance, /session .+ · via /, 'each card names its agent, session and relay');

  // Answer it: accepted, then the outcome, and its buttons go away.
  await card.locator('button[data-option="allow"]').click();
  await page.waitForFunction(
    (rid) => document.querySelector(`li.card[data-id="${rid}"] .result`)?.textContent.includes('attention.answered'),
    id,
    { timeout: 15_000 },
  );
  const result = await page.locator(`li.card[data-id="${id}"] .result`).textContent();
  assert.match(result, /^accepted by .+; attention\.answered$/);
  await page.waitForFunction((rid) => !document.querySelector(`li.card[data-id="${rid}"] button`), id, { timeout: 15_000 });
  assert.deepEqual(problems, []);
  await page.close();
});
