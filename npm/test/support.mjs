// Shared by the package tests: installs the packed tarball into a temp
// directory, starts the real relay binary, and plays an agent over a
// plain WebSocket with the package's ControlTarget.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, readdirSync, rmSync, mkdirSync, cpSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { randomBytes } from 'node:crypto';
import { createServer, connect } from 'node:net';

const here = dirname(fileURLToPath(import.meta.url));
export const repo = resolve(here, '..', '..');

/** The tarball `scripts/build-npm` produced. */
export function tarball() {
  const dist = join(repo, 'dist');
  const found = readdirSync(dist).filter((f) => /^aep-client-.*\.tgz$/.test(f));
  if (found.length !== 1) throw new Error(`expected one dist/aep-client-*.tgz, found ${found.length}: run scripts/build-npm`);
  return join(dist, found[0]);
}

/** Installs the tarball into a fresh directory; returns the directory and
 * the package imported through its own `exports` map. */
export async function installPackage() {
  const dir = mkdtempSync(join(tmpdir(), 'aep-npm-'));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  execFileSync('npm', ['install', tarball(), '--no-audit', '--no-fund', '--loglevel=error'], { cwd: dir, stdio: 'pipe' });
  writeFileSync(join(dir, 'load.mjs'), "export * from 'aep-client';\nexport { default } from 'aep-client';\n");
  const pkg = await import(pathToFileURL(join(dir, 'load.mjs')).href);
  await pkg.default();
  return { dir, pkg, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** What most package tests start from: the package installed, a relay
 * started and an agent connected to it. `stop` undoes all three. */
export async function stage() {
  const installed = await installPackage();
  const relay = await startRelay();
  const agent = new Agent(installed.pkg, relay);
  await agent.connect();
  const stop = async () => {
    agent.close();
    await relay.stop();
    installed.cleanup();
  };
  return { installed, pkg: installed.pkg, relay, agent, stop };
}

export function relayBinary() {
  return process.env.AEP_RELAY_BIN || join(repo, 'target', 'debug', 'aep-relay');
}

/** Starts the relay on an ephemeral port. Resolves `{ url, port, token, stop }`. */
export function startRelay({ demo = false, token = randomBytes(12).toString('hex'), staticDir } = {}) {
  const dir = staticDir ?? mkdtempSync(join(tmpdir(), 'aep-static-'));
  const args = ['--listen', '127.0.0.1:0', '--static-dir', dir];
  if (demo) args.push('--demo', '--demo-seed', '7');
  // The token goes through the environment, not the command line.
  const child = spawn(relayBinary(), args, {
    env: { ...process.env, AEP_TOKEN: token, RUST_LOG: process.env.RUST_LOG ?? 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  return new Promise((resolvePromise, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`relay did not start: ${stderr}`)), 30_000);
    child.on('exit', (code) => reject(new Error(`relay exited (${code}): ${stderr}`)));
    child.stdout.on('data', (d) => {
      out += d;
      const m = /listening on http:\/\/([0-9.]+):(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        const port = Number(m[2]);
        resolvePromise({
          port,
          url: `http://127.0.0.1:${port}`,
          token,
          staticDir: dir,
          stderr: () => stderr,
          stop: () => new Promise((done) => {
            child.removeAllListeners('exit');
            child.once('exit', () => done());
            child.kill('SIGTERM');
          }),
        });
      }
    });
  });
}

/** Polls `predicate` until it returns a truthy value. */
export async function waitFor(predicate, what, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await predicate();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * An agent on a plain WebSocket: hello as an emitter declaring its control
 * block, its own events built by the package's ControlTarget, and every
 * command answered by it (unless `silent`).
 */
export class Agent {
  constructor(pkg, relay, { agent = 'e2e-agent', ackWindowMs = 3000, silent = false } = {}) {
    this.target = new pkg.ControlTarget({
      agent,
      host: 'agents.test',
      accepts: ['control.attention.respond', 'control.cancel', 'control.pause', 'control.resume'],
      // A test agent: its text is made up and may travel in full.
      capture: 'full',
    });
    this.relay = relay;
    this.ackWindowMs = ackWindowMs;
    this.silent = silent;
    this.received = [];
  }

  async connect() {
    this.ws = new WebSocket(`ws://127.0.0.1:${this.relay.port}/socket?access_token=${encodeURIComponent(this.relay.token)}`);
    this.ws.onmessage = (m) => this.onFrame(JSON.parse(m.data));
    await new Promise((ok, fail) => {
      this.ws.onopen = ok;
      this.ws.onerror = () => fail(new Error('agent socket failed'));
    });
    const hello = new Promise((ok) => { this.helloSeen = ok; });
    this.ws.send(JSON.stringify({
      type: 'hello',
      versions: ['0.1'],
      role: 'emitter',
      identity: { agent: this.target.agent },
      capabilities: { control: { accepts: this.target.accepts, ack_window_ms: this.ackWindowMs } },
    }));
    await hello;
  }

  onFrame(frame) {
    if (frame.type === 'hello') {
      this.helloSeen();
      return;
    }
    if (!('aep' in frame)) return;
    this.received.push(frame);
    if (!frame.type.startsWith('control.') || frame.type === 'control.accepted' || frame.type === 'control.rejected') return;
    if (this.silent) return;
    const r = this.target.handleCommand(frame);
    this.send(r.ack);
    if (r.kind === 'fresh' && r.action.type === 'respond') {
      for (const e of this.target.answerOutcomes(frame, r.action)) this.send(e);
    }
  }

  send(event) {
    this.ws.send(JSON.stringify(event));
    return event;
  }

  /** Emits an event of this agent (the target assigns seq). */
  emit(draft) {
    return this.send(this.target.event(draft));
  }

  /** Raises a permission request and registers it for answer checks. */
  ask(session, prompt) {
    const e = this.target.event({
      type: 'attention.requested',
      session,
      subject: 'shell',
      severity: 'warning',
      data: {
        kind: 'permission',
        prompt,
        options: [{ id: 'allow', label: 'Allow' }, { id: 'deny', label: 'Deny' }],
      },
    });
    this.target.registerRequest(e, 'deny');
    return this.send(e);
  }

  close() {
    this.ws?.close();
  }
}

/** Copies the unpacked package into the relay's static dir under /pkg/. */
export function servePackage(installedDir, staticDir) {
  const target = join(staticDir, 'pkg');
  mkdirSync(target, { recursive: true });
  cpSync(join(installedDir, 'node_modules', 'aep-client'), target, { recursive: true });
  return target;
}

/** A loopback proxy to the relay; `cut()` drops every connection and refuses new ones until `restore()`. */
export function startProxy(port) {
  const sockets = new Set();
  let up = true;
  const server = createServer((client) => {
    if (!up) {
      client.destroy();
      return;
    }
    const upstream = connect(port, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {});
    }
    client.pipe(upstream).pipe(client);
  });
  return new Promise((ok) => server.listen(0, '127.0.0.1', () => ok({
    url: `http://127.0.0.1:${server.address().port}`,
    cut() {
      up = false;
      for (const s of sockets) s.destroy();
    },
    restore() { up = true; },
    close() {
      this.cut();
      server.close();
    },
  })));
}
