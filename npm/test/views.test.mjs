// The package's declarations against what it really hands out: a real
// client, relay and agent go through a morning's flows (a permission
// answered, a form, a pause, a refused cancel, a vendor command, a
// timeout), every view the package returns or passes to a listener is
// collected, and each is written as an object literal typed with its
// declared interface into a TypeScript file that the compiler must accept
// under `strict` and `exactOptionalPropertyTypes`. An undeclared member is
// an excess property, a missing or retyped one a type error: the views and
// the `.d.ts` cannot drift apart unnoticed.
// Run: node --experimental-websocket --test npm/test/views.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { stage, waitFor, repo } from './support.mjs';
import { generate } from './stream.mjs';

let installed;
let stop;
let pkg;
let relay;
let agent;
let client;
/** `[declared type, value]` pairs, in the order they were seen. */
const samples = [];
const seen = (type, value) => samples.push([type, value]);
/** An `Accepted`: the ack is data; the outcome a promise of an event
 * (awaited when the test agent sends one: it does for answers). */
async function accepted(promise, { outcome: awaited = false } = {}) {
  const { outcome, ...rest } = await promise;
  assert.ok(outcome instanceof Promise, 'outcome is a promise');
  seen("Omit<Accepted, 'outcome'>", rest);
  if (awaited) seen('AepEvent', await outcome);
}

before(async () => {
  ({ installed, pkg, relay, agent, stop } = await stage());
  agent.emit({ type: 'session.started', session: 'views-1', data: { label: 'Views' } });
  agent.emit({ type: 'run.started', session: 'views-1', run: 'r1', data: { trigger: 'user' } });
  client = new pkg.AepClient({
    relays: [{ url: relay.url, token: relay.token, label: 'local' }],
    agent: 'views-console',
    host: 'console.test',
  });
  client.on('attention', (c) => seen(c.evicted ? 'EvictedCard' : 'Card', c));
  client.on('event', (e) => seen('AepEvent', e));
  client.on('command', (c) => seen('CommandUpdate', c));
  client.on('session', (s) => seen(s.evicted ? 'EvictedSession' : 'SessionSummary', s));
  client.on('status', (s) => seen('RelayStatus', s));
  client.on('violation', (v) => seen('Violation', v));
  await client.connect();
});

after(async () => {
  client?.close();
  await stop?.();
});

test('every view the package hands out type-checks against its declaration', async () => {
  // A permission answered.
  const ask = agent.ask('views-1', 'Delete the cache?');
  await waitFor(() => client.inbox().find((c) => c.id === ask.id), 'the request in the inbox');
  for (const c of client.inbox()) seen('Card', c);
  await accepted(client.respond(ask.id, { option: 'allow' }), { outcome: true });

  // A form, answered with values.
  const form = agent.target.event({
    type: 'attention.requested',
    session: 'views-1',
    run: 'r1',
    severity: 'notice',
    data: {
      kind: 'form',
      prompt: 'Where to deploy?',
      respond_via: ['control'],
      fields: [
        { id: 'region', type: 'select', label: 'Region', required: true, choices: [{ id: 'eu', label: 'Europe' }] },
        { id: 'replicas', type: 'number', label: 'Replicas', min: 1, max: 5 },
        { id: 'note', type: 'string', label: 'Note' },
        { id: 'now', type: 'boolean', label: 'Right away' },
      ],
    },
  });
  agent.target.registerRequest(form);
  agent.send(form);
  await waitFor(() => client.inbox().find((c) => c.id === form.id), 'the form in the inbox');
  for (const c of client.inbox()) seen('Card', c);
  await accepted(client.respond(form.id, { values: { region: 'eu', replicas: 2, note: 'ok', now: true } }), { outcome: true });

  // A pause and a resume, a cancel, a vendor command the agent does not
  // take, and a pause nobody acknowledges in time.
  await accepted(client.pause({ session: 'views-1' }));
  await accepted(client.resume({ session: 'views-1' }));
  const cancelled = await client.cancel({ session: 'views-1', run: 'nope', scope: 'run', reason: 'test' }).catch((e) => e);
  const vendor = await client.command('x.acme.control.reindex', { session: 'views-1', data: { full: true } }).catch((e) => e);
  agent.silent = true;
  const timedOut = await client.pause({ session: 'views-1' }).catch((e) => e);
  agent.silent = false;
  // A NackError's own members (what JSON would carry; `message` is not one).
  const nacks = [cancelled, vendor, timedOut].filter((e) => e instanceof pkg.NackError);
  assert.deepEqual(nacks.map((e) => e.kind).sort(), ['relay-refused', 'timeout'], 'the vendor command is refused by the relay; the silent pause times out');
  for (const e of nacks) seen('NackErrorFields', { ...e });
  agent.emit({ type: 'run.finished', session: 'views-1', run: 'r1', data: { duration_ms: 5 } });
  agent.emit({ type: 'session.ended', session: 'views-1', data: { reason: 'normal' } });
  await waitFor(() => client.sessions().find((s) => s.state === 'ended'), 'the session to end');

  seen('RelayStatus[]', client.status());
  seen('Card[]', client.inbox());
  seen('SessionSummary[]', client.sessions());
  seen('SessionDetail', client.session({ source: ask.source, name: 'views-1' }));
  seen('CommandView[]', client.commands());
  seen('Violation[]', client.violations());
  seen('RosterEntry[]', await client.roster());
  seen('{ [relay: string]: SessionPosition[] }', client.positions());

  // The pure helpers.
  const stream = generate({ events: 3_000, sessions: 40 });
  seen('Projection', pkg.projectState(stream, { limits: { maxSessions: 20, maxTimelinePerSession: 8 } }));
  seen('Projection', pkg.projectState(['{"not":"an event"}', '{']));
  seen('ReturnType<typeof validateEvent>', pkg.validateEvent(stream[0]));
  seen('ReturnType<typeof validateEvent>', pkg.validateEvent({ aep: '0.1', type: 'nope' }));
  seen('ReturnType<typeof validateFilter>', pkg.validateFilter({ type: 'attention.*' }));
  seen('ReturnType<typeof validateFilter>', pkg.validateFilter({ 'bad key': 1 }));

  const kinds = new Set(samples.map(([t]) => t));
  for (const t of ['Card', 'AepEvent', 'CommandUpdate', 'SessionSummary', 'RelayStatus', "Omit<Accepted, 'outcome'>", 'NackErrorFields', 'SessionDetail']) {
    assert.ok(kinds.has(t), `no ${t} was seen: the flow did not exercise it`);
  }
  const detail = samples.find(([t]) => t === 'SessionDetail')[1];
  assert.ok(detail.cards.length >= 2 && detail.commands.length >= 4 && detail.runs.length >= 1, 'the detail carries cards, commands and runs');

  const lines = [
    "import type * as A from 'aep-client';",
    "import type { validateEvent, validateFilter } from 'aep-client';",
    "type NackErrorFields = Omit<A.NackError, 'message' | 'stack' | 'cause'>;",
    "type Omit<T, K extends keyof T> = globalThis.Omit<T, K>;",
  ];
  const qualify = (t) => t.replace(/\b([A-Z][A-Za-z]+)\b/g, (name) => (['NackErrorFields', 'ReturnType', 'Omit'].includes(name) ? name : `A.${name}`));
  samples.forEach(([type, value], i) => {
    // Undefined members are left out, as JSON leaves them out.
    lines.push(`export const v${i}: ${qualify(type)} = ${JSON.stringify(value)};`);
  });
  const file = join(installed.dir, 'views.ts');
  writeFileSync(file, `${lines.join('\n')}\n`);
  writeFileSync(join(installed.dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      strict: true,
      noEmit: true,
      target: 'ES2022',
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      lib: ['ES2022'],
      types: [],
      skipLibCheck: false,
      exactOptionalPropertyTypes: true,
    },
    files: ['views.ts'],
  }));
  try {
    execFileSync(join(repo, 'npm', 'node_modules', '.bin', 'tsc'), ['-p', installed.dir], { stdio: 'pipe' });
  } catch (e) {
    const out = String(e.stdout);
    // Name the view each error is about, with its declared type (the
    // samples start on line 5, after the four lines of imports and types).
    const explained = out.replace(/views\.ts\((\d+),/g, (m, line) => {
      const sample = samples[Number(line) - 5];
      return sample ? `${m} [${sample[0]}] ` : m;
    });
    assert.fail(`views differ from the declarations:\n${explained.slice(0, 6000)}`);
  }
  console.log(`${samples.length} views of ${kinds.size} declared types matched the declarations`);
});
