// End-to-end: the real Claude Code CLI asks permission, and a person
// answers from the console on a phone. Everything runs on loopback: a
// scripted Messages API (fake-model.mjs), the CLI with its telemetry,
// updates and error reports off and a fresh HOME, the adapter, the relay
// and the release console in headless Chromium at 390×844. Run it inside
// a network namespace of its own (scripts/test-claude-code does), so a
// stray lookup fails at once instead of leaving the machine.

import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ROOT, Relay, Steps, answerNow, browser, check, freePort, until, BIN_DIR, STATIC_DIR } from '../../../console/tests/e2e/lib.mjs';
import { AdapterProcess, allowDestructive, card, history as historyOf, openConsole, streamBroken } from '../../kit/e2e/support.mjs';
import { installPackage } from '../../../npm/test/support.mjs';
import { FakeModel } from './fake-model.mjs';

const HERE = new URL('.', import.meta.url).pathname;
const CLAUDE = join(HERE, 'node_modules/@anthropic-ai/claude-code-linux-x64/claude');
// E2E_ADAPTER runs another build of the adapter (an older one, to see a check fail).
const ADAPTER = process.env.E2E_ADAPTER || `${BIN_DIR}/aep-claude-code`;
const SHOTS = `${ROOT}target/claude-code-e2e`;
/** What Claude Code waits for a held hook, and the adapter before it gives up. */
const HOOK_TIMEOUT_S = 60;
const ATTENTION_TIMEOUT_S = 45;

if (!existsSync(CLAUDE)) throw new Error(`the Claude Code CLI is not installed at ${CLAUDE} (scripts/setup installs it)`);
mkdirSync(SHOTS, { recursive: true });

const token = `cc-${randomBytes(12).toString('hex')}`;
const { pkg, cleanup } = await installPackage();
const model = await new FakeModel().start();
const chromium = await browser();
const steps = new Steps();
const scratch = mkdtempSync(join(tmpdir(), 'cc-e2e-'));

/** The Claude Code adapter, for the relay at `relay`. */
class Adapter extends AdapterProcess {
  constructor({ relay, attentionTimeout = ATTENTION_TIMEOUT_S }) {
    super({ binary: ADAPTER, relay, token, attentionTimeout });
  }

  /** A new project directory connected to this adapter by `install`. */
  project(name) {
    const dir = join(scratch, name);
    mkdirSync(dir, { recursive: true });
    execFileSync(ADAPTER, ['install', '--project', dir, '--adapter', this.origin, '--hook-timeout', String(HOOK_TIMEOUT_S)]);
    return dir;
  }
}

/** Claude Code in `-p` mode in `dir`, with nothing of this machine but PATH. */
function claude(dir, prompt) {
  const home = join(dir, '.home');
  mkdirSync(home, { recursive: true });
  const env = {
    PATH: '/usr/bin:/bin',
    HOME: home,
    ANTHROPIC_BASE_URL: model.url,
    ANTHROPIC_API_KEY: 'sk-e2e-not-a-key',
    DISABLE_TELEMETRY: '1',
    DISABLE_AUTOUPDATER: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_ERROR_REPORTING: '1',
  };
  const started = Date.now();
  const proc = spawn(CLAUDE, ['-p', prompt, '--output-format', 'stream-json', '--verbose'], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout.on('data', (d) => (out += d));
  proc.stderr.on('data', (d) => (out += d));
  const killer = setTimeout(() => proc.kill('SIGKILL'), (HOOK_TIMEOUT_S + 60) * 1000);
  const done = new Promise((resolve) => proc.on('exit', (code) => {
    clearTimeout(killer);
    resolve({ code, out, seconds: (Date.now() - started) / 1000 });
  }));
  return { proc, done };
}

/** The tool result the model was sent for `id`, once it has been. */
const resultFor = (id, after) => until(() => model.toolResults.slice(after).find((r) => r.id === id), `the model got a result for ${id}`, 30_000);

const history = (relay) => historyOf(relay, token, 'claude-code');

/**
 * A new project whose Claude Code asks to `touch` `file` in it, with the
 * card for that up on the phone.
 */
async function asking(name, file) {
  const dir = adapter.project(name);
  const seen = model.toolResults.length;
  const run = claude(dir, `please RUN:touch ${dir}/${file}`);
  const c = card(page, `Bash: touch ${dir}/${file}`);
  await c.waitFor({ timeout: 30_000 });
  return { dir, seen, run, c };
}

// E2E_STATIC_DIR serves another console build, as in console/tests/e2e.
let relay = new Relay({ port: await freePort(), token, demo: false, staticDir: STATIC_DIR, args: ['--data-dir', join(scratch, 'history')] });
await relay.start();
const adapter = new Adapter({ relay });
await adapter.start();
const { ctx, page } = await openConsole(chromium, relay, token);

try {
  await steps.step('Allow on the phone: the command runs', async () => {
    const { dir, seen, run, c } = await asking('allow', 'allowed.txt');
    await page.screenshot({ path: `${SHOTS}/permission-phone.png` });
    await c.locator('button.option[data-option="allow"]').tap();
    const { code } = await run.done;
    check(existsSync(`${dir}/allowed.txt`), 'the file the command writes exists');
    // The settled row says who allowed it and how the command then ended.
    const row = page.locator('main article.settled', { hasText: `touch ${dir}/allowed.txt` }).first();
    await until(async () => /Allowed by .* Bash ran and completed/.test(await row.locator('.outcome').textContent().catch(() => '')),
      'the row says the allowed command ran and completed', 10_000);
    const result = await resultFor('toolu_e2e_1', seen);
    check(!result.error, `the model got the tool's own result (${result.content})`);
    check(code === 0, `claude exited 0 (${code})`);
  });

  await steps.step("Allow, and don't ask again: Claude Code keeps the rule, and the next turn runs the command without asking", async () => {
    const { dir, run, c } = await asking('remember', 'remembered.txt');
    const command = `touch ${dir}/remembered.txt`;
    const remember = c.locator('button.option', { hasText: `don't ask again for \`${command}\`` }).first();
    const label = (await remember.textContent()).trim();
    check(label.endsWith(' in remember'), `the option names the command and the project: ${label}`);
    await page.screenshot({ path: `${SHOTS}/remember-phone.png` });
    await answerNow(c, await remember.getAttribute('data-option'));
    const first = await run.done;
    check(first.code === 0 && existsSync(`${dir}/remembered.txt`), `the command ran (exit ${first.code})`);
    const kept = join(dir, '.claude', 'settings.local.json');
    check(existsSync(kept), 'Claude Code wrote the project\'s local settings');
    const settings = JSON.parse(readFileSync(kept, 'utf8'));
    check(settings.permissions?.allow?.includes(`Bash(${command})`), `Claude Code kept the rule: ${JSON.stringify(settings)}`);
    const askedFor = (events) => events.filter((e) => e.type === 'attention.requested' && e.data.prompt === `Bash: ${command}`);
    const before = askedFor(await history(relay)).length;
    rmSync(`${dir}/remembered.txt`);
    const again = await claude(dir, `please RUN:${command}`).done;
    check(again.code === 0 && existsSync(`${dir}/remembered.txt`), `the next turn ran it again (exit ${again.code})\n${again.out.slice(-1500)}`);
    // The second turn's hooks reached the adapter (its session and its
    // PreToolUse), and no permission request did.
    const sessions = (events) => events.filter((e) => e.type === 'session.started' && e.data.cwd === dir).map((e) => e.session);
    const events = await until(async () => {
      const all = await history(relay);
      const second = sessions(all)[1];
      return second && all.some((e) => e.type === 'tool.requested' && e.session === second) && all;
    }, 'the second turn\'s tool call reached the adapter', 10_000);
    const second = sessions(events)[1];
    check(askedFor(events).length === before, `no permission request for the second turn (${askedFor(events).length - before})`);
    check(!events.some((e) => e.type === 'attention.requested' && e.session === second), 'nothing was asked in the second session');
  });

  await steps.step('Deny on the phone: the command does not run, and the model is told', async () => {
    const { dir, seen, run, c } = await asking('deny', 'denied.txt');
    await c.locator('button.option[data-option="deny"]').tap();
    await run.done;
    check(!existsSync(`${dir}/denied.txt`), 'nothing was written');
    const result = await resultFor('toolu_e2e_1', seen);
    check(result.error && /Denied by .* from an AEP console/.test(result.content), `the model read the denial (${result.content})`);
  });

  await steps.step('A typed reply is a refusal whose words the model reads', async () => {
    const { dir, seen, run, c } = await asking('typed', 'typed.txt');
    const toggle = c.locator('button.details-toggle');
    if (await toggle.isVisible()) await toggle.tap();
    await c.locator('form.reply input[name="reply"]').fill('use a dry run first');
    await c.locator('form.reply button.send').tap();
    await run.done;
    check(!existsSync(`${dir}/typed.txt`), 'nothing was written');
    const result = await resultFor('toolu_e2e_1', seen);
    check(result.error && result.content.includes('use a dry run first'), `the model read the reply (${result.content})`);
  });

  await steps.step('A destructive command (rm -rf) takes a confirming tap, and the card names its project', async () => {
    const dir = adapter.project('wipe-me');
    mkdirSync(join(dir, 'build'), { recursive: true });
    writeFileSync(join(dir, 'build', 'out.o'), 'object code');
    const run = claude(dir, `please RUN:rm -rf ${dir}/build`);
    const c = card(page, `Bash: rm -rf ${dir}/build`);
    await c.waitFor({ timeout: 30_000 });
    await allowDestructive(page, c, { project: 'wipe-me', keeps: join(dir, 'build'), shot: `${SHOTS}/destructive-phone.png` });
    const { code } = await run.done;
    check(!existsSync(join(dir, 'build')), 'after the confirming tap the command ran');
    check(code === 0, `claude exited 0 (${code})`);
  });

  await steps.step('Two tool calls in one turn: each its own card and its own decision', async () => {
    const dir = adapter.project('two');
    const seen = model.toolResults.length;
    const run = claude(dir, `please TWO:touch ${dir}/first.txt|touch ${dir}/second.txt`);
    const first = card(page, `Bash: touch ${dir}/first.txt`);
    await first.waitFor({ timeout: 30_000 });
    // Claude Code asks for one, then the next: the second is not up yet
    // (should it ever ask for both at once, each is still answered alone).
    const together = await card(page, `Bash: touch ${dir}/second.txt`).isVisible();
    console.log(`      Claude Code asked for both at once: ${together}`);
    const second = card(page, `Bash: touch ${dir}/second.txt`);
    if (together) {
      // Answered in the opposite order, each lands on its own call.
      await second.locator('button.option[data-option="deny"]').tap();
      await first.locator('button.option[data-option="allow"]').tap();
    } else {
      await first.locator('button.option[data-option="allow"]').tap();
      await second.waitFor({ timeout: 30_000 });
      await second.locator('button.option[data-option="deny"]').tap();
    }
    await run.done;
    check(existsSync(`${dir}/first.txt`), 'the allowed call ran');
    check(!existsSync(`${dir}/second.txt`), 'the denied call did not');
    const one = await resultFor('toolu_e2e_1', seen);
    const two = await resultFor('toolu_e2e_2', seen);
    check(!one.error && two.error, `each result is its own call's (${JSON.stringify([one, two])})`);
  });

  await steps.step('The relay restarts while a request is held: answered after the reconnect', async () => {
    const dir = adapter.project('restart');
    const run = claude(dir, `please RUN:touch ${dir}/after-restart.txt`);
    const prompt = `Bash: touch ${dir}/after-restart.txt`;
    await card(page, prompt).waitFor({ timeout: 30_000 });
    await relay.stop();
    await until(async () => !(await (await fetch(`${adapter.origin}/healthz`)).json()).relay, 'the adapter sees the relay gone', 20_000);
    await relay.start();
    await until(async () => (await (await fetch(`${adapter.origin}/healthz`)).json()).relay, 'the adapter is back on the relay', 20_000);
    await page.locator('.chip[data-state="live"]').waitFor({ timeout: 30_000 });
    const c = card(page, prompt);
    await c.waitFor({ timeout: 30_000 });
    await c.locator('button.option[data-option="allow"]').tap();
    await run.done;
    check(existsSync(`${dir}/after-restart.txt`), 'the request was answered after the restart, and the command ran');
  });

  await steps.step('No answer: attention.timeout on the wire, and Claude Code decides (denied in -p)', async () => {
    const quick = new Adapter({ relay, attentionTimeout: 3 });
    await quick.start();
    try {
      const dir = quick.project('timeout');
      const run = claude(dir, `please RUN:touch ${dir}/unanswered.txt`);
      await card(page, `Bash: touch ${dir}/unanswered.txt`).waitFor({ timeout: 30_000 });
      const { seconds } = await run.done;
      check(!existsSync(`${dir}/unanswered.txt`), 'nothing was written');
      check(seconds < HOOK_TIMEOUT_S, `claude finished in ${seconds} s, before the hook's ${HOOK_TIMEOUT_S} s`);
      const events = await history(relay);
      const asked = events.find((e) => e.type === 'attention.requested' && e.data.prompt.includes('unanswered.txt'));
      const timedOut = events.find((e) => e.type === 'attention.timeout' && e.subject === asked?.id);
      check(timedOut && timedOut.data.after_ms >= 3_000, `attention.timeout names the request (${JSON.stringify(timedOut)})`);
    } finally {
      await quick.stop();
    }
  });

  await steps.step("Every event the adapter emitted passes the engine's validator", async () => {
    const events = await history(relay);
    const types = new Set(events.map((e) => e.type));
    for (const t of ['session.started', 'run.started', 'tool.requested', 'attention.requested', 'attention.answered',
      'attention.resolved', 'attention.timeout', 'tool.completed', 'run.finished', 'session.ended', 'control.accepted']) {
      check(types.has(t), `${t} was emitted`);
    }
    const bad = events.map((e) => [e, pkg.validateEvent(e)]).filter(([, r]) => !r.valid);
    check(bad.length === 0, `all ${events.length} valid: ${JSON.stringify(bad.slice(0, 3).map(([e, r]) => [e.type, r.violations]))}`);
    const broken = streamBroken(events);
    check(broken.length === 0, `permission requests graded, every tool call closed:\n${broken.join('\n')}`);
  });

  await steps.step('The session page shows the prompt and the tool calls', async () => {
    const events = await history(relay);
    const started = events.find((e) => e.type === 'run.started' && e.data.prompt?.includes('allowed.txt'));
    check(started, 'the allowed turn is in the history with its prompt');
    await page.goto(`${relay.base}/#/session/${encodeURIComponent(started.source)}/${encodeURIComponent(started.session)}`);
    const timeline = page.locator('ol.timeline');
    await timeline.waitFor({ timeout: 15_000 });
    await until(async () => (await timeline.innerText()).includes('RUN:touch'), 'the timeline shows the prompt', 10_000).catch(async (e) => {
      throw new Error(`${e.message}\n${await timeline.innerText()}`);
    });
    const text = await timeline.innerText();
    check(/Bash/.test(text), `the timeline names the tool:\n${text}`);
    await page.screenshot({ path: `${SHOTS}/session-phone.png`, fullPage: true });
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
