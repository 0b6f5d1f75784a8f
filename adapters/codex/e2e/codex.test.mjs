// End-to-end: the real Codex CLI asks permission, and a person answers
// from the console on a phone. Everything runs on loopback: a scripted
// Responses API (fake-responses.mjs), `codex exec` with on-request
// approvals, analytics off and a fresh HOME, the adapter (its own binary
// as Codex's hook command, trusted through `install --trust`), the relay
// and the release console in headless Chromium at 390×844. Run it inside
// a network namespace of its own (scripts/test-codex does), so a stray
// lookup fails at once instead of leaving the machine.

import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ROOT, Relay, Steps, browser, check, freePort, until, BIN_DIR, STATIC_DIR } from '../../../console/tests/e2e/lib.mjs';
import { AdapterProcess, allowDestructive, card, history as historyOf, openConsole, streamBroken } from '../../kit/e2e/support.mjs';
import { installPackage } from '../../../npm/test/support.mjs';
import { FakeResponses } from './fake-responses.mjs';

const HERE = new URL('.', import.meta.url).pathname;
const CODEX = join(HERE, 'node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex');
// E2E_ADAPTER runs another build of the adapter (an older one, to see a check fail).
const ADAPTER = process.env.E2E_ADAPTER || `${BIN_DIR}/aep-codex`;
const SHOTS = `${ROOT}target/codex-e2e`;
/** What Codex lets the held hook run, and the adapter waits before it gives up. */
const HOOK_TIMEOUT_S = 60;
const ATTENTION_TIMEOUT_S = 45;

if (!existsSync(CODEX)) throw new Error(`the Codex CLI is not installed at ${CODEX} (scripts/setup installs it)`);
mkdirSync(SHOTS, { recursive: true });

const token = `cx-${randomBytes(12).toString('hex')}`;
const { pkg, cleanup } = await installPackage();
const model = await new FakeResponses().start();
const chromium = await browser();
const steps = new Steps();
const scratch = mkdtempSync(join(tmpdir(), 'codex-e2e-'));
/** Each Codex thread id seen, by project. */
const threads = {};

/** The Codex adapter, for the relay at `relay`. */
class Adapter extends AdapterProcess {
  constructor({ relay, attentionTimeout = ATTENTION_TIMEOUT_S }) {
    super({ binary: ADAPTER, relay, token, attentionTimeout });
  }

  /**
   * A new project with a Codex home of its own, its model the fake one,
   * connected to this adapter by `install --trust`.
   */
  project(name) {
    const dir = join(scratch, name);
    const home = join(dir, '.home');
    mkdirSync(join(home, '.codex'), { recursive: true });
    const config = join(home, '.codex', 'config.toml');
    writeFileSync(config, [
      'model = "fake-model"',
      'model_provider = "fake"',
      '',
      '[model_providers.fake]',
      'name = "fake"',
      `base_url = "${model.url}"`,
      'wire_api = "responses"',
      'env_key = "FAKE_API_KEY"',
      '',
    ].join('\n'));
    const said = execFileSync(ADAPTER, ['install', '--config', config, '--adapter', this.origin, '--hook-timeout', String(HOOK_TIMEOUT_S),
      '--trust', '--codex', CODEX], { env: { PATH: '/usr/bin:/bin', HOME: home } }).toString();
    return { dir, home, said };
  }
}

/**
 * `codex exec` with `args` in `project`, quiet (analytics off) and with
 * nothing of this machine but PATH. Spawned, never run synchronously: the
 * scripted model answers from this process.
 */
function codexExec({ dir, home }, args) {
  const env = { PATH: '/usr/bin:/bin', HOME: home, CODEX_HOME: join(home, '.codex'), FAKE_API_KEY: 'sk-e2e-not-a-key' };
  return spawn(CODEX, ['exec', '--skip-git-repo-check', '-c', 'analytics.enabled=false', ...args], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** `codex exec` with on-request approvals in `project`. */
function codex(project, prompt) {
  const { dir } = project;
  const started = Date.now();
  const proc = codexExec(project, ['--approve-for-me', prompt]);
  let out = '';
  proc.stdout.on('data', (d) => (out += d));
  proc.stderr.on('data', (d) => (out += d));
  const killer = setTimeout(() => proc.kill('SIGKILL'), (HOOK_TIMEOUT_S + 60) * 1000);
  const done = new Promise((resolve) => proc.on('exit', (code) => {
    clearTimeout(killer);
    const thread = /session id: (\S+)/.exec(out)?.[1];
    if (thread) threads[dir] = thread;
    resolve({ code, out, seconds: (Date.now() - started) / 1000 });
  }));
  return { proc, done };
}

/** The first tool output the model was sent after `after`. */
const resultAfter = (after) => until(() => model.toolResults[after], 'the model got the tool call\'s result', 30_000);

const history = (relay) => historyOf(relay, token, 'codex');

/** A new project whose Codex asks to `touch` `file` in it, with its card up on the phone. */
async function asking(adapter, name, file) {
  const project = adapter.project(name);
  const seen = model.toolResults.length;
  const run = codex(project, `please RUN:touch ${project.dir}/${file}`);
  const c = card(page, `touch ${project.dir}/${file}`);
  await c.waitFor({ timeout: 30_000 }).catch(async (e) => {
    run.proc.kill('SIGKILL');
    throw new Error(`${e.message}\ncodex said:\n${(await run.done).out.slice(-3000)}`);
  });
  return { ...project, seen, run, c };
}

let relay = new Relay({ port: await freePort(), token, demo: false, staticDir: STATIC_DIR, args: ['--data-dir', join(scratch, 'history')] });
await relay.start();
const adapter = new Adapter({ relay });
await adapter.start();
const { ctx, page } = await openConsole(chromium, relay, token);

try {
  await steps.step('install --trust says what it trusts: exactly the adapter\'s hooks, by key', async () => {
    const { home, said } = adapter.project('trust');
    const trusted = said.split('\n').filter((l) => l.startsWith('trusted '));
    check(trusted.length === 10, `ten hooks trusted:\n${said}`);
    check(trusted.every((l) => l.includes(join(home, '.codex', 'config.toml')) && l.includes(' hook --adapter ')), `each names its key and command:\n${said}`);
  });

  await steps.step('Codex takes the hooks as installed: `codex exec --json` reports no error about them', async () => {
    const proc = codexExec(adapter.project('as-installed'), ['--json', 'say ok']);
    let out = '';
    proc.stdout.on('data', (d) => (out += d));
    proc.stderr.on('data', (d) => (out += d));
    const killer = setTimeout(() => proc.kill('SIGKILL'), 60_000);
    await new Promise((resolve) => proc.on('exit', resolve));
    clearTimeout(killer);
    const items = out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
    check(items.some((i) => i.type === 'turn.completed'), `the turn completed:\n${out.slice(-1500)}`);
    const errors = items.filter((i) => i.type === 'error' || i.item?.type === 'error').map((i) => i.message ?? i.item.message);
    const aboutHooks = errors.filter((m) => /hook/i.test(m));
    check(aboutHooks.length === 0, `no error about the adapter's hooks: ${JSON.stringify(aboutHooks)}`);
  });

  await steps.step('Allow on the phone: the command runs', async () => {
    const { dir, seen, run, c } = await asking(adapter, 'allow', 'allowed.txt');
    await page.screenshot({ path: `${SHOTS}/permission-phone.png` });
    await c.locator('button.option[data-option="allow"]').tap();
    const { code, out } = await run.done;
    check(existsSync(`${dir}/allowed.txt`), `the file the command writes exists\n${out.slice(-2000)}`);
    const result = await resultAfter(seen);
    check(/Process exited with code 0/.test(result.content), `the model got the command's own result (${result.content})`);
    check(code === 0, `codex exited 0 (${code})`);
  });

  await steps.step('Deny on the phone: the command does not run, and the model is told', async () => {
    const { dir, seen, run, c } = await asking(adapter, 'deny', 'denied.txt');
    await c.locator('button.option[data-option="deny"]').tap();
    await run.done;
    check(!existsSync(`${dir}/denied.txt`), 'nothing was written');
    const result = await resultAfter(seen);
    check(/Denied by .* from an AEP console/.test(result.content), `the model read the denial (${result.content})`);
  });

  await steps.step('A typed reply is a refusal whose words the model reads', async () => {
    const { dir, seen, run, c } = await asking(adapter, 'typed', 'typed.txt');
    const toggle = c.locator('button.details-toggle');
    if (await toggle.isVisible()) await toggle.tap();
    await c.locator('form.reply input[name="reply"]').fill('use a dry run first');
    await c.locator('form.reply button.send').tap();
    await run.done;
    check(!existsSync(`${dir}/typed.txt`), 'nothing was written');
    const result = await resultAfter(seen);
    check(result.content.includes('use a dry run first'), `the model read the reply (${result.content})`);
  });

  await steps.step('A destructive command (rm -rf) takes a confirming tap, and the card names its project', async () => {
    const project = adapter.project('wipe-me');
    const { dir } = project;
    mkdirSync(join(dir, 'build'), { recursive: true });
    writeFileSync(join(dir, 'build', 'out.o'), 'object code');
    const run = codex(project, `please RUN:rm -rf ${dir}/build`);
    const c = card(page, `rm -rf ${dir}/build`);
    await c.waitFor({ timeout: 30_000 });
    await allowDestructive(page, c, { project: 'wipe-me', keeps: join(dir, 'build'), shot: `${SHOTS}/destructive-phone.png` });
    const { code } = await run.done;
    check(!existsSync(join(dir, 'build')), 'after the confirming tap the command ran');
    check(code === 0, `codex exited 0 (${code})`);
  });

  await steps.step('No answer: attention.timeout on the wire, and Codex reviews the request by itself', async () => {
    const quick = new Adapter({ relay, attentionTimeout: 3 });
    await quick.start();
    try {
      const reviews = model.reviews.length;
      const { dir, seen, run } = await asking(quick, 'timeout', 'unanswered.txt');
      const { seconds } = await run.done;
      check(seconds < HOOK_TIMEOUT_S, `codex finished in ${seconds} s, before the hook's ${HOOK_TIMEOUT_S} s`);
      const events = await history(relay);
      const asked = events.find((e) => e.type === 'attention.requested' && e.data.prompt.includes('unanswered.txt'));
      const timedOut = events.find((e) => e.type === 'attention.timeout' && e.subject === asked?.id);
      check(timedOut && timedOut.data.after_ms >= 3_000, `attention.timeout names the request (${JSON.stringify(timedOut)})`);
      // With no decision from the hook, Codex asks its own reviewer (a
      // second model request); the scripted reviewer refuses.
      check(model.reviews.length === reviews + 1, `Codex asked its reviewer once (${model.reviews.length - reviews})`);
      check(!existsSync(`${dir}/unanswered.txt`), 'the reviewer refused, so nothing was written');
      const result = await resultAfter(seen);
      console.log(`      Codex after the timeout: ${result.content.slice(0, 160)}`);
      check(/rejected/i.test(result.content), `the model was told its reviewer rejected it (${result.content})`);
    } finally {
      await quick.stop();
    }
  });

  await steps.step("Every event the adapter emitted passes the engine's validator, on Codex's thread and turn", async () => {
    const events = await history(relay);
    const types = new Set(events.map((e) => e.type));
    for (const t of ['session.started', 'run.started', 'tool.requested', 'attention.requested', 'attention.answered',
      'attention.resolved', 'attention.timeout', 'tool.completed', 'run.finished', 'control.accepted']) {
      check(types.has(t), `${t} was emitted (${[...types].join(', ')})`);
    }
    const bad = events.map((e) => [e, pkg.validateEvent(e)]).filter(([, r]) => !r.valid);
    check(bad.length === 0, `all ${events.length} valid: ${JSON.stringify(bad.slice(0, 3).map(([e, r]) => [e.type, r.violations]))}`);
    const broken = streamBroken(events);
    check(broken.length === 0, `permission requests graded, every tool call closed:\n${broken.join('\n')}`);
    // The thread is the session, the turn the run.
    const dir = join(scratch, 'allow');
    const thread = threads[dir];
    check(thread, 'codex printed its thread id');
    const mine = events.filter((e) => e.session === thread);
    const started = mine.find((e) => e.type === 'run.started');
    const asked = mine.find((e) => e.type === 'attention.requested');
    check(started && asked && asked.run === started.run, `the request is in the turn's run (${started?.run}, ${asked?.run})`);
    check(asked.subject === 'Bash', `the request's subject is the tool (${asked.subject})`);
  });
} finally {
  await ctx.close();
  await chromium.close();
  await adapter.stop();
  await relay.stop();
  await model.stop();
  cleanup();
  rmSync(scratch, { recursive: true, force: true });
}

console.log(`${steps.passed} passed, ${steps.failed} failed`);
if (steps.failed) {
  console.log(`adapter log:\n${adapter.log.join('').slice(-4000)}`);
  process.exit(1);
}
