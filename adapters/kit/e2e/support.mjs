// What every adapter's end-to-end test does the same way: run the
// adapter binary against a relay, open the console on a phone, find a
// request's card, and read back every event the adapter emitted.

import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { check, freePort, steadied, until } from '../../../console/tests/e2e/lib.mjs';

export const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 };

/** An adapter binary serving hooks on a port of its own for the relay at `relay`. */
export class AdapterProcess {
  constructor({ binary, relay, token, attentionTimeout }) {
    Object.assign(this, { binary, relay, token, attentionTimeout });
    this.log = [];
  }

  async start() {
    this.port = await freePort();
    this.origin = `http://127.0.0.1:${this.port}`;
    const args = ['serve', '--relay', this.relay.base, '--listen', `127.0.0.1:${this.port}`,
      '--attention-timeout', String(this.attentionTimeout), '--capture', 'redacted'];
    this.proc = spawn(this.binary, args, { env: { PATH: process.env.PATH, AEP_TOKEN: this.token, RUST_LOG: 'info' }, stdio: ['ignore', 'pipe', 'pipe'] });
    this.proc.stdout.on('data', (d) => this.log.push(String(d)));
    this.proc.stderr.on('data', (d) => this.log.push(String(d)));
    this.exited = new Promise((r) => this.proc.on('exit', r));
    await until(async () => (await (await fetch(`${this.origin}/healthz`)).json()).relay, `the adapter reaches the relay\n${this.log.join('')}`, 20_000);
  }

  async stop() {
    if (this.proc.exitCode !== null) return;
    this.proc.kill('SIGINT');
    const t = setTimeout(() => this.proc.kill('SIGKILL'), 5_000);
    await this.exited;
    clearTimeout(t);
  }
}

/** The console on a phone, connected to `relay` with `token`. */
export async function openConsole(chromium, relay, token) {
  const ctx = await chromium.newContext(PHONE);
  const page = await ctx.newPage();
  await page.goto(`${relay.base}/#token=${encodeURIComponent(token)}`);
  await page.locator('.chip[data-state="live"]').waitFor({ timeout: 20_000 });
  return { ctx, page };
}

/** The first request card on `page` that says `text`. */
export const card = (page, text) => page.locator('main article.card', { hasText: text }).first();

/** Every event the relay holds from `agent`. */
export async function history(relay, token, agent) {
  const r = await fetch(`${relay.base}/stream?live=0&from=all`, { headers: { authorization: `Bearer ${token}` } });
  const text = await r.text();
  return text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6))).filter((e) => e.agent === agent);
}

/**
 * Allows the destructive request in card `c` as a person must: the card
 * is a warning naming `project`; a first tap only asks (nothing is sent,
 * `keeps` is still there; the phone is photographed into `shot`), and a
 * second, deliberate tap sends the answer.
 */
export async function allowDestructive(page, c, { project, keeps, shot }) {
  check((await c.getAttribute('data-severity')) === 'warning', `graded a warning (${await c.getAttribute('data-severity')})`);
  const named = (await c.locator('.card-project').textContent()).trim();
  check(named.includes(project), `the card names the project that asks: ${named}`);
  const allow = c.locator('button.option[data-option="allow"]');
  await allow.scrollIntoViewIfNeeded();
  await steadied(c);
  await allow.tap();
  await until(async () => (await allow.textContent()).includes('Tap again'), 'the first tap asks again', 5_000, 50);
  const asked = (await allow.textContent()).trim();
  check(asked.includes('Tap again to Allow (destructive)'), `the first tap only asks, saying why: ${asked}`);
  check((await c.locator('.hold').count()) === 0, 'the first tap sends nothing');
  check(existsSync(keeps), 'and nothing is removed');
  await page.screenshot({ path: shot });
  // The button ignores taps for a moment after the first (a double tap is
  // not both steps): a person taps again until it acts.
  await until(async () => {
    await allow.tap({ timeout: 5_000 });
    return (await c.locator('.hold').count()) > 0;
  }, 'the second, deliberate tap holds the answer', 10_000, 50);
}

const SEVERITIES = ['debug', 'info', 'notice', 'warning', 'error', 'critical'];

/**
 * What every adapter's stream promises, as a list of what breaks it: a
 * permission request is at least a `notice` (a destructive one a
 * `warning`), and in each session every `tool.requested` is closed by a
 * `tool.completed`, `tool.failed` or `tool.denied` of the same call.
 */
export function streamBroken(events) {
  const broken = [];
  const rank = (s) => SEVERITIES.indexOf(s ?? 'info');
  for (const e of events.filter((e) => e.type === 'attention.requested' && e.data?.kind === 'permission')) {
    const least = e.data.destructive ? 'warning' : 'notice';
    if (rank(e.severity) < rank(least)) broken.push(`"${e.data.prompt}" is ${e.severity ?? 'info'}, less than ${least}`);
  }
  const open = new Map();
  for (const e of events) {
    const tool = e.data?.tool;
    if (!e.type.startsWith('tool.') || !tool) continue;
    const calls = open.get(e.session) ?? [];
    open.set(e.session, calls);
    if (e.type === 'tool.requested') {
      calls.push(e);
      continue;
    }
    const same = (r) => (tool.call_id && r.data.tool.call_id ? r.data.tool.call_id === tool.call_id : r.data.tool.name === tool.name);
    const at = calls.findIndex(same);
    if (at < 0) broken.push(`${e.type} ${JSON.stringify(tool)} closes no open call`);
    else calls.splice(at, 1);
  }
  for (const calls of open.values()) {
    for (const r of calls) broken.push(`tool.requested ${JSON.stringify(r.data.tool)} (${r.id}) was never closed`);
  }
  return broken;
}
