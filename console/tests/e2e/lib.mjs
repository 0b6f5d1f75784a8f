// Shared pieces of the console's end-to-end tests: the real relay process,
// headless Chromium, and a minimal AEP emitter written from the spec
// (hello, sequenced events, acks) for the cases the demo agents cannot
// stage on cue (an agent that goes away, an agent that outlives a relay).

import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { randomBytes } from 'node:crypto';
import { chromium } from 'playwright-core';

export const ROOT = new URL('../../../', import.meta.url).pathname;

/**
 * Where the binaries under test are (the relay, the adapters): the release
 * build of this checkout unless AEP_BIN_DIR names the one build the test
 * command made for every end-to-end stage.
 */
export const BIN_DIR = process.env.AEP_BIN_DIR || `${ROOT}target/release`;

/** The console build under test: dist/ unless E2E_STATIC_DIR names another. */
export const STATIC_DIR = process.env.E2E_STATIC_DIR || `${ROOT}dist`;

export const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run',
];

export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

export async function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/**
 * The release relay binary with its demo agents, serving dist/. `base`
 * is where it is reached (`https://…` when `args` give it TLS).
 */
export class Relay {
  constructor({ port, token, seed = 7, staticDir = STATIC_DIR, demo = true, args = [], base = `http://127.0.0.1:${port}` }) {
    Object.assign(this, { port, token, seed, staticDir, demo, args, base });
    this.log = [];
  }

  async start() {
    const bin = `${BIN_DIR}/aep-relay`;
    // The token goes through the environment, never the command line.
    const args = ['--listen', `127.0.0.1:${this.port}`, '--static-dir', this.staticDir];
    if (this.demo) args.push('--demo', '--demo-seed', String(this.seed));
    args.push(...this.args);
    const env = { ...process.env, AEP_TOKEN: this.token, RUST_LOG: 'warn' };
    this.proc = spawn(bin, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const keep = (d) => {
      this.log.push(String(d));
      if (this.log.length > 400) this.log.shift();
    };
    this.proc.stdout.on('data', keep);
    this.proc.stderr.on('data', keep);
    this.exited = new Promise((r) => this.proc.on('exit', r));
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      try {
        const r = await fetch(`${this.base}/healthz`);
        if (r.ok) return;
      } catch {}
      await sleep(100);
    }
    throw new Error(`relay did not start:\n${this.log.join('')}`);
  }

  async stop() {
    if (!this.proc || this.proc.exitCode !== null) return;
    this.proc.kill('SIGTERM');
    const t = setTimeout(() => this.proc.kill('SIGKILL'), 8_000);
    await this.exited;
    clearTimeout(t);
  }
}

export async function browser() {
  return chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
}

/**
 * A page init script that lets a test cut the page's WebSockets the way a
 * network drop does (`__aepSockets.dropAll()`), and hold off new ones
 * (`__aepSockets.block = true`), so what happens while the console is away
 * is under the test's control.
 */
export function socketControl() {
  const Native = window.WebSocket;
  const open = new Set();
  window.__aepSockets = {
    block: false,
    dropAll() {
      for (const s of open) s.close(4000, 'dropped by the test');
    },
  };
  window.WebSocket = class extends Native {
    constructor(...args) {
      if (window.__aepSockets.block) throw new DOMException('held off by the test', 'NetworkError');
      super(...args);
      open.add(this);
      this.addEventListener('close', () => open.delete(this));
    }
  };
}

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
export function ulid(now = Date.now()) {
  let t = '';
  let ms = now;
  for (let i = 0; i < 10; i++) {
    t = CROCKFORD[ms % 32] + t;
    ms = Math.floor(ms / 32);
  }
  const r = randomBytes(16);
  let rand = '';
  for (let i = 0; i < 16; i++) rand += CROCKFORD[r[i] % 32];
  return t + rand;
}

/**
 * A small emitter: one session, sequenced events, acks for commands.
 * `reconnect: true` makes it come back after its socket is lost (as a real
 * agent does when its relay restarts), continuing its sequence.
 */
export class TestAgent {
  constructor({ relay, agent = 'e2e-agent', session, reconnect = false, ackWindowMs = 10_000, ignore = 0, outcomeAfterMs = 0 }) {
    this.relay = relay;
    this.agent = agent;
    this.session = session || `e2e-${randomBytes(3).toString('hex')}`;
    this.source = `aep://e2e.test/agent/${agent}/session/${this.session}`;
    this.seq = 0;
    this.reconnect = reconnect;
    this.closed = false;
    this.commands = [];
    this.ackWindowMs = ackWindowMs;
    // Commands to leave unanswered (as if lost), before acting on the rest.
    this.ignore = ignore;
    // How long an answered request stays open before its outcome, as an
    // agent busy with other work keeps it.
    this.outcomeAfterMs = outcomeAfterMs;
    this.acks = new Map();
  }

  async connect() {
    const url = `${this.relay.base.replace(/^http/, 'ws')}/socket?access_token=${encodeURIComponent(this.relay.token)}`;
    const ws = new WebSocket(url);
    this.ws = ws;
    await new Promise((resolve, reject) => {
      ws.onerror = () => reject(new Error('test agent: socket failed'));
      ws.onopen = () => {
        ws.send(JSON.stringify({
          type: 'hello', versions: ['0.1'], role: 'emitter',
          identity: { agent: this.agent, instance: `e2e/${this.session}` },
          capabilities: {
            emits: ['session', 'run', 'attention', 'control'],
            control: { accepts: ['control.attention.respond'], ack_window_ms: this.ackWindowMs },
          },
        }));
      };
      ws.onmessage = (m) => {
        const f = JSON.parse(String(m.data));
        if (f.type === 'hello') {
          ws.onmessage = (m2) => this.onFrame(JSON.parse(String(m2.data)));
          resolve();
        } else if (f.type === 'error') {
          reject(new Error(`test agent refused: ${f.code}`));
        }
      };
    });
    ws.onclose = () => {
      if (this.closed || !this.reconnect) return;
      const again = async () => {
        while (!this.closed) {
          try {
            await this.connect();
            return;
          } catch {
            await sleep(100);
          }
        }
      };
      again();
    };
  }

  onFrame(f) {
    if (f.type === 'ping') this.ws.send(JSON.stringify({ type: 'pong', t: f.t }));
    if (typeof f.type === 'string' && f.type.startsWith('control.') && f.id && f.agent !== this.agent) {
      this.commands.push(f);
      if (this.ignore > 0) {
        this.ignore--;
        return;
      }
      // A command seen before gets its recorded ack again, byte for byte.
      if (this.acks.has(f.id)) {
        this.ws.send(this.acks.get(f.id));
        return;
      }
      const ack = this.emit('control.accepted', {}, { cause: f.id });
      this.acks.set(f.id, JSON.stringify(ack));
      if (f.type === 'control.attention.respond') {
        const answer = (f.data && f.data.answer) || {};
        const outcome = () => {
          if (this.closed) return;
          this.emit('attention.answered', { answer, by: f.agent, via: 'control' }, { subject: f.subject, cause: f.id, run: 'run-e2e' });
          this.emit('attention.resolved', { resolution: 'answered' }, { subject: f.subject, cause: f.id, run: 'run-e2e' });
        };
        if (this.outcomeAfterMs) setTimeout(outcome, this.outcomeAfterMs);
        else outcome();
      }
    }
  }

  emit(type, data = {}, extra = {}) {
    const e = {
      aep: '0.1', id: ulid(), type, time: new Date().toISOString(), source: this.source, agent: this.agent,
      session: this.session, seq: ++this.seq, epoch: 0, capture: 'redacted', data, ...extra,
    };
    this.ws.send(JSON.stringify(e));
    return e;
  }

  start(label) {
    this.emit('session.started', { label });
    this.emit('run.started', { trigger: 'user', prompt: 'end-to-end test' }, { run: 'run-e2e' });
  }

  ask(prompt, options = [['allow', 'Allow'], ['deny', 'Deny']], { severity = 'warning', data = {} } = {}) {
    return this.emit('attention.requested', {
      kind: 'permission', prompt, options: options.map(([id, label]) => ({ id, label })), respond_via: ['control'], ...data,
    }, { run: 'run-e2e', severity });
  }

  /** Goes away without a word, like a process that died. */
  drop() {
    this.closed = true;
    try { this.ws.close(); } catch {}
  }
}

/** The colour `locator` is shown in, and the colour of success (`--ok`). */
export async function successColour(locator) {
  return locator.evaluate((e) => {
    const probe = document.createElement('span');
    probe.style.color = 'var(--ok)';
    document.body.append(probe);
    const ok = getComputedStyle(probe).color;
    probe.remove();
    return { ok, shown: getComputedStyle(e).color };
  });
}

/** Throws `message` unless `cond`. */
export function check(cond, message) {
  if (!cond) throw new Error(message);
}

/** Polls `fn` until it returns something truthy, or fails naming `message`. */
export async function until(fn, message, timeout = 10_000, every = 100) {
  const deadline = Date.now() + timeout;
  let last;
  while (Date.now() < deadline) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    await sleep(every);
  }
  throw new Error(`${message} (waited ${timeout} ms; last: ${last})`);
}

/** Named steps that keep going after a failure and count what failed. */
export class Steps {
  constructor() {
    this.failed = 0;
    this.passed = 0;
  }

  async step(name, fn) {
    const t0 = Date.now();
    try {
      await fn();
      this.passed++;
      console.log(`ok    ${name} (${Date.now() - t0} ms)`);
    } catch (e) {
      this.failed++;
      console.log(`FAIL  ${name} (${Date.now() - t0} ms)\n      ${String(e && e.stack || e).split('\n').join('\n      ')}`);
    }
  }

  /** The last check of a file: the pages raised no errors (`errors`, collected from `pageerror`). */
  async noPageErrors(errors) {
    await this.step('no page errors', async () => {
      check(errors.length === 0, `page errors: ${errors.join(' | ')}`);
    });
  }

  /** Says the counts; a failure fails the run. */
  report() {
    console.log(`\n${this.passed} passed, ${this.failed} failed`);
    if (this.failed) process.exit(1);
  }
}

/**
 * Sends the answer held in card `c` at once, with its "Send now" (an
 * answer is held on the device for a few seconds, to be undone). Its
 * buttons take no tap while the hold's entrance runs (console.css: the
 * second half of a double tap is neither Undo nor Send now).
 */
export async function sendNow(c) {
  const button = c.locator('.hold button.send-now');
  await until(() => button.evaluate((b) => b.closest('.hold-buttons').getAnimations().length === 0, null, { timeout: 1_000 }),
    'the held answer\'s buttons take taps', 5_000, 50);
  await button.click({ timeout: 5_000 });
}

/**
 * The first `main article.card` holding `text`; its `waitFor` brings in
 * requests waiting behind "N new" (requests that arrive above what is
 * shown wait there), as a person does to see them.
 */
export function cardIn(page, text) {
  const l = page.locator('main article.card', { hasText: text }).first();
  const waitFor = async (opts = {}) => {
    const bar = page.locator('button.new-above');
    const deadline = Date.now() + (opts.timeout ?? 30_000);
    while (Date.now() < deadline) {
      if (await l.isVisible().catch(() => false)) return;
      if (await bar.isVisible().catch(() => false)) await bar.click({ timeout: 1_000 }).catch(() => {});
      await sleep(100);
    }
    throw new Error(`no card with "${text}" came into the inbox`);
  };
  return new Proxy(l, {
    get(target, key) {
      if (key === 'waitFor') return waitFor;
      const v = target[key];
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

/**
 * Two animation frames in `page`: whatever the last change asked to be
 * drawn (or to run before the next paint) has been.
 */
export async function frames(page) {
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
}

/**
 * Until `page` is at rest: drawn, no card still settling into place after
 * something moved it, and no CSS transition or animation running.
 */
export async function atRest(page, timeout = 10_000) {
  await until(async () => {
    await frames(page);
    return page.evaluate(() => !document.querySelector('[data-steady="settling"]')
      && document.getAnimations().every((a) => a.playState !== 'running' || a.effect?.getComputedTiming().endTime === Infinity));
  }, 'the page comes to rest', timeout, 50);
}

/**
 * What `relay` says it holds now (its `/healthz` to a caller with the
 * token): sessions, buffered events, live claims, counters.
 */
export async function relayStats(relay) {
  const r = await fetch(`${relay.base}/healthz`, { headers: { authorization: `Bearer ${relay.token}` } });
  check(r.ok, `the relay reports its state: ${r.status}`);
  return r.json();
}

/**
 * Until `relay` holds `event` (as sent by a TestAgent) in its replay
 * buffer, read back by a one-pass `/stream` of its session: the relay has
 * taken it, and whatever its emitter sent before it.
 */
export async function relayHolds(relay, event, timeout = 10_000) {
  const filter = encodeURIComponent(JSON.stringify({ session: event.session }));
  await until(async () => {
    const r = await fetch(`${relay.base}/stream?live=0&from=all&filter=${filter}`, { headers: { authorization: `Bearer ${relay.token}` } });
    return r.ok && (await r.text()).includes(event.id);
  }, `the relay holds ${event.type} ${event.id}`, timeout);
}

/**
 * Taps `button` inside card `c` once the card has stopped moving: a card
 * that was just pushed by something arriving or a banner appearing takes
 * no tap for a moment (its buttons say so with aria-disabled), as a
 * person would see and wait for. Scrolled to first: coming into view
 * starts that moment too.
 */
export async function tapSettled(c, button) {
  await button.scrollIntoViewIfNeeded();
  await steadied(c);
  await button.click();
}

/**
 * Until card `c` has been seen in place long enough to take a tap: the
 * card says so itself (`data-steady="ready"`). Read after four frames: a
 * scroll just made is noted in one frame and measured in the next.
 */
export async function steadied(c) {
  await until(async () => {
    await frames(c.page());
    await frames(c.page());
    return (await c.getAttribute('data-steady')) === 'ready';
  }, 'the card settles', 10_000, 50);
}

/**
 * The second tap of a two-step approval on `button` in card `c`, once it
 * is taken. After the first tap the button ignores taps for a moment (a
 * double tap is not both steps) and shows nothing of it: a person taps
 * "Tap again to …" until it acts, and the card says so by leaving its
 * `confirming` state.
 */
export async function confirmTap(c, button) {
  await until(async () => {
    await button.click({ timeout: 5_000 });
    return (await c.locator('button.option.confirming').count()) === 0;
  }, 'the approval takes its second tap', 10_000, 50);
}

/**
 * Answers card `c` with `option` and sends it at once: the approval's
 * second tap when the card asks for one, then "Send now".
 */
export async function answerNow(c, option) {
  const button = c.locator(`button.option[data-option="${option}"]`);
  const held = c.locator('.hold button.send-now');
  // A tap the card refused (it moved just then, which a loaded machine
  // makes likelier) holds nothing: a person sees that and taps again.
  await until(async () => {
    if (await held.count()) return true;
    await tapSettled(c, button);
    if (await c.locator('button.option.confirming').count()) await confirmTap(c, button);
    return held.waitFor({ timeout: 3_000 }).then(() => true, () => false);
  }, 'the answer is held on the device', 20_000, 50);
  await sendNow(c);
}
