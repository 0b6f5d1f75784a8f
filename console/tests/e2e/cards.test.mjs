// What a request card shows before the first tap, on a phone (390×844):
// a long destructive command whole, in monospace, wrapped between tokens;
// an Edit request's diff; the destructive badge and the adapter's reason;
// answer buttons that stay on their own card, under the question they
// answer. The requests are shaped as the Claude Code adapter raises them
// (its mapping tests pin that shape); the demo's Claude Code agent shows
// the same.
//
// Run with scripts/test-console. Screenshots land in target/console-e2e/cards/.

import { mkdirSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { Relay, Steps, TestAgent, atRest, browser, cardIn, check, freePort, until, ROOT } from './lib.mjs';

const DIR = `${ROOT}target/console-e2e/cards`;
mkdirSync(DIR, { recursive: true });
const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 };
const CWD = '/home/dev/src/payments-api';

/** Twelve lines; what destroys sits below the third. */
const COMMAND_LINES = [
  `cd ${CWD}`,
  'git stash push --include-untracked -m before-reset',
  'git fetch origin --prune',
  'git checkout main && git reset --hard origin/main',
  'git clean -fdx && rm -rf ~/.cargo/registry',
  'rm -rf target/debug/incremental',
  'cargo update -p tokio --precise 1.38.0',
  'cargo build -p payments-api --locked',
  'cargo test --locked -p payments-api checkout -- --test-threads=1',
  'git switch -c fix/checkout-retry',
  'git stash pop',
  'git status --short',
];
const COMMAND = COMMAND_LINES.join('\n');
const REASON = 'discards work (git reset --hard); removes files recursively outside the project';
const RETRY = `${CWD}/src/checkout/retry.rs`;
const OLD = ['    let policy = RetryPolicy {', '        max_attempts: 3,', '        backoff: Duration::from_millis(50),', '    };'];
const NEW = ['    let policy = RetryPolicy {', '        max_attempts: 5,', '        backoff: Duration::from_millis(200),', '        jitter: true,', '    };'];

/** An `attention.requested` as the Claude Code adapter raises it for a
 * `PermissionRequest` of `tool` with `input` (capture `full`). */
function claudeAsk(agent, tool, input, { prompt, context, because }) {
  const data = {
    kind: 'permission', prompt, respond_via: ['control'],
    options: [{ id: 'allow', label: 'Allow' }, { id: 'deny', label: 'Deny' }],
    context: { tool, ...context, tool_input: input, cwd: CWD },
  };
  if (because) Object.assign(data, { destructive: true, destructive_because: because });
  return agent.emit('attention.requested', data, { run: 'run-e2e', severity: because ? 'warning' : 'info', capture: 'full' });
}

async function shot(page, name) {
  await atRest(page).catch(() => {});
  await page.screenshot({ path: `${DIR}/${name}.png`, fullPage: false });
}

/** Boxes overlap (by more than a hairline). */
function overlap(a, b) {
  return a && b && a.x + a.width > b.x + 1 && b.x + b.width > a.x + 1 && a.y + a.height > b.y + 1 && b.y + b.height > a.y + 1;
}

const steps = new Steps();
const step = steps.step.bind(steps);
const token = `cards-${randomBytes(12).toString('hex')}`;
const relay = new Relay({ port: await freePort(), token, demo: false });
await relay.start();
const chromium = await browser();
const errors = [];
const agent = new TestAgent({ relay, agent: 'claude-code' });
await agent.connect();
agent.start('payments-api');

const ctx = await chromium.newContext(PHONE);
const page = await ctx.newPage();
page.on('pageerror', (e) => errors.push(String(e)));
await page.goto(`${relay.base}/#token=${encodeURIComponent(token)}`);
await page.locator('.chip[data-state="live"]').waitFor({ timeout: 15_000 });

const edit = claudeAsk(agent, 'Edit', { file_path: RETRY, old_string: OLD.join('\n'), new_string: NEW.join('\n') }, {
  prompt: `Edit: ${RETRY}`,
  context: { changes: [{ path: RETRY, old: OLD.join('\n'), new: NEW.join('\n') }] },
});
const bash = claudeAsk(agent, 'Bash', { command: COMMAND, description: 'Start over from a clean main with a fresh dependency cache' }, {
  prompt: `Bash: ${COMMAND}`,
  context: { command: COMMAND, description: 'Start over from a clean main with a fresh dependency cache' },
  because: REASON,
});
const bashCard = cardIn(page, 'Bash: cd /home/dev/src/payments-api');
const editCard = cardIn(page, `Edit: ${RETRY}`);

try {
  await step('a destructive card shows its badge and the adapter\'s reason before any tap', async () => {
    await bashCard.waitFor({ timeout: 15_000 });
    const note = bashCard.locator('.destructive-note');
    await note.waitFor({ timeout: 5_000 });
    check(await note.isVisible(), 'the note is on screen');
    const words = (await note.innerText()).replace(/\s+/g, ' ');
    check(/destructive/i.test(words) && words.includes(REASON), `badge and reason: ${words}`);
    check((await bashCard.getAttribute('class')).split(' ').includes('expanded') === false, 'the card is still compact: nothing was tapped');
    await shot(page, 'destructive-before-any-tap-390x844');
  });

  await step('a 12-line destructive command is readable whole on its card: every line, monospace, no token broken', async () => {
    const block = bashCard.locator('.command-block');
    await block.waitFor({ timeout: 5_000 });
    const more = block.locator('button.show-all');
    if (await more.count()) {
      const words = await more.innerText();
      check(words.includes('12 lines'), `the fold says how much it hides: ${words}`);
      await more.click();
      await until(async () => (await block.locator('.line').count()) === 12, 'every line is shown after "show all"', 3_000);
    }
    const lines = block.locator('.line');
    check((await lines.count()) === 12, `12 lines: ${await lines.count()}`);
    const card = await bashCard.boundingBox();
    for (let i = 0; i < 12; i++) {
      const l = lines.nth(i);
      const text = (await l.innerText()).replace(/\s+/g, ' ').trim();
      check(text === COMMAND_LINES[i], `line ${i + 1} reads whole: ${JSON.stringify(text)}`);
      await l.scrollIntoViewIfNeeded();
      check(await l.isVisible(), `line ${i + 1} is visible`);
      const box = await l.boundingBox();
      check(box.x >= card.x && box.x + box.width <= card.x + card.width + 0.5, `line ${i + 1} stays inside the card`);
    }
    const measured = await block.evaluate((b) => {
      const pre = b.querySelector('pre');
      const style = getComputedStyle(pre);
      const lineHeight = parseFloat(style.lineHeight);
      const broken = [...pre.querySelectorAll('.tok')]
        .filter((t) => t.getBoundingClientRect().height > lineHeight * 1.5 || t.getClientRects().length !== 1)
        .map((t) => t.textContent);
      const probe = document.createElement('span');
      probe.style.fontFamily = 'monospace';
      document.body.append(probe);
      const generic = getComputedStyle(probe).fontFamily;
      probe.remove();
      return {
        family: style.fontFamily, broken, generic,
        widths: [pre.scrollWidth, pre.clientWidth],
        clipped: style.overflow !== 'visible' && pre.scrollHeight > pre.clientHeight + 1,
        tokens: pre.querySelectorAll('.tok').length,
      };
    });
    check(/mono/i.test(measured.family), `monospace: ${measured.family}`);
    check(measured.tokens > 50, `the command is set token by token: ${measured.tokens}`);
    check(measured.broken.length === 0, `no token broken across lines: ${measured.broken.join(' | ')}`);
    check(measured.widths[0] <= measured.widths[1] + 1, `nothing hidden sideways: ${measured.widths}`);
    check(!measured.clipped, 'nothing cut off below');
    const hard = block.locator('.tok', { hasText: /^--hard$/ });
    check((await hard.count()) === 1, '--hard is one token');
    await bashCard.locator('.command-block').scrollIntoViewIfNeeded();
    await shot(page, 'long-command-390x844');
  });

  await step('a Claude Code Edit request shows its diff: the file, the lines removed and the lines added', async () => {
    await editCard.waitFor({ timeout: 10_000 });
    const change = editCard.locator('.change');
    await change.waitFor({ timeout: 5_000 });
    check((await change.locator('.change-path').innerText()).includes('src/checkout/retry.rs'), 'names the file');
    const removed = await change.locator('.diff-line[data-mark="removed"] .text').allInnerTexts();
    const added = await change.locator('.diff-line[data-mark="added"] .text').allInnerTexts();
    const norm = (a) => a.map((t) => t.replace(/\s+/g, ' ').trim());
    check(JSON.stringify(norm(removed)) === JSON.stringify(norm([OLD[1], OLD[2]])), `removed: ${JSON.stringify(removed)}`);
    check(JSON.stringify(norm(added)) === JSON.stringify(norm([NEW[1], NEW[2], NEW[3]])), `added: ${JSON.stringify(added)}`);
    const said = await change.locator('.diff-line[data-mark="removed"] .sr-only').first().innerText();
    check(said.includes('removed'), `a removed line says so without colour: ${said}`);
    check(await change.locator('.diff-line[data-mark="added"]').first().isVisible(), 'the diff is on screen without a tap');
    check((await change.locator('.change-size').innerText()).includes('+3'), 'its size is stated');
    await change.scrollIntoViewIfNeeded();
    await shot(page, 'edit-diff-390x844');
  });

  await step('with one card\'s details open, no other card\'s buttons overlap it, and a prompt is on screen with its buttons', async () => {
    // More cards around it, then the Bash card's details opened.
    for (let i = 0; i < 3; i++) {
      claudeAsk(agent, 'Bash', { command: `cargo test -p payments-api shard-${i}` }, {
        prompt: `Bash: cargo test -p payments-api shard-${i}`, context: { command: `cargo test -p payments-api shard-${i}` },
      });
    }
    await cardIn(page, 'shard-2').waitFor({ timeout: 10_000 });
    const toggle = bashCard.locator('button.details-toggle');
    await toggle.scrollIntoViewIfNeeded();
    await toggle.click();
    await until(async () => (await toggle.getAttribute('aria-expanded')) === 'true', 'the details open', 3_000);
    const height = await page.evaluate(() => document.documentElement.scrollHeight);
    let seen = 0;
    for (let y = 0; y <= height; y += 120) {
      await page.evaluate((to) => window.scrollTo(0, to), y);
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
      const state = await page.evaluate(() => {
        const box = (e) => {
          const r = e.getBoundingClientRect();
          return { x: r.x, y: r.y, width: r.width, height: r.height };
        };
        return [...document.querySelectorAll('main article.card')].map((c) => ({
          id: c.getAttribute('data-request'),
          card: box(c),
          buttons: [...c.querySelectorAll('.actions button')].filter((b) => b.offsetParent).map(box),
          options: c.querySelector('.options') && box(c.querySelector('.options')),
          prompt: c.querySelector('.prompt') && box(c.querySelector('.prompt')),
        }));
      });
      const open = state.find((s) => s.id === bash.id);
      for (const other of state.filter((s) => s.id !== bash.id)) {
        for (const b of other.buttons) {
          check(!overlap(b, open.card), `at ${y}px, a button of ${other.id} lies over the open card: ${JSON.stringify(b)} / ${JSON.stringify(open.card)}`);
        }
      }
      // What is on screen: below the sticky tabs, above the bottom edge.
      // Buttons on screen with room above them for their question (more
      // than the few pixels a scroll can leave between them at the top
      // edge) have that question in view too.
      const top = await page.evaluate(() => document.querySelector('.tabs').getBoundingClientRect().bottom);
      const bottom = 844;
      for (const s of state) {
        const inView = (r) => r && r.y < bottom && r.y + r.height > top;
        const roomAbove = (r) => r && r.y >= top + 100 && r.y + r.height <= bottom;
        if (roomAbove(s.options)) {
          seen++;
          check(inView(s.prompt), `at ${y}px, ${s.id}'s buttons are on screen (${JSON.stringify(s.options)}) but not its prompt (${JSON.stringify(s.prompt)})`);
        }
      }
    }
    check(seen > 0, 'buttons were seen on screen');
    await bashCard.locator('.options').scrollIntoViewIfNeeded();
    await shot(page, 'details-open-buttons-390x844');
  });

  await step('an agent that sends no context is shown by its prompt alone, and nothing is invented', async () => {
    const q = agent.ask('Restart the payments worker?', undefined, { severity: 'info' });
    const c = cardIn(page, q.data.prompt);
    await c.waitFor({ timeout: 10_000 });
    check((await c.locator('.request-detail').count()) === 0, 'no details block');
    check((await c.locator('.destructive-note').count()) === 0, 'no destructive note');
  });

  await step('the demo\'s Claude Code agent asks the long destructive command and the edit, shown the same way', async () => {
    const demo = new Relay({ port: await freePort(), token, demo: true });
    await demo.start();
    const p = await ctx.newPage();
    try {
      p.on('pageerror', (e) => errors.push(String(e)));
      await p.goto(`${demo.base}/#token=${encodeURIComponent(token)}`);
      const b = cardIn(p, 'Bash: cd /home/dev/src/payments-api');
      await b.waitFor({ timeout: 30_000 });
      check((await b.locator('.destructive-note').innerText()).includes('outside the project'), 'the reason is on the card');
      check((await b.locator('.command-block pre').getAttribute('data-lines')) === '12', 'twelve lines');
      const e = cardIn(p, 'Edit: /home/dev/src/payments-api/src/checkout/retry.rs');
      await e.waitFor({ timeout: 30_000 });
      check((await e.locator('.diff-line[data-mark="added"]').count()) >= 1, 'the edit shows its diff');
      await b.scrollIntoViewIfNeeded();
      await shot(p, 'demo-claude-code-390x844');
    } finally {
      await p.close();
      await demo.stop();
    }
  });

  await steps.noPageErrors(errors);
} finally {
  agent.drop();
  await ctx.close().catch(() => {});
  await chromium.close();
  await relay.stop();
}
steps.report();
