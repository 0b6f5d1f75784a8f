// The packed package against the real relay: installed from the tarball,
// imported through its exports map, talking over real WebSockets to an
// agent that answers with the package's ControlTarget.
// Run: node --experimental-websocket --test npm/test/e2e.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { stage, waitFor, Agent } from './support.mjs';

let pkg;
let stop;
let relay;
let agent;
let client;
const events = [];
const statuses = [];
const cards = new Map();

before(async () => {
  ({ pkg, relay, agent, stop } = await stage());
  agent.emit({ type: 'session.started', session: 'build-1', data: { label: 'Fix the build' } });

  client = new pkg.AepClient({
    relays: [{ url: relay.url, token: relay.token, label: 'local' }],
    agent: 'e2e-console',
    host: 'console.test',
  });
  client.on('event', (e, relayLabel) => events.push({ e, relay: relayLabel }));
  client.on('status', (s) => statuses.push(s));
  client.on('attention', (c) => cards.set(c.id, c));
  const connected = await client.connect();
  assert.deepEqual(connected.map((s) => [s.relay, s.state]), [['local', 'live']]);
});

after(async () => {
  client?.close();
  await stop?.();
});

const seen = (pred) => events.find(({ e }) => pred(e))?.e;

test('a permission request is answered: accepted, answered, resolved', async () => {
  const request = agent.ask('build-1', 'Run `rm -rf target`?');
  const card = await waitFor(() => client.inbox().find((c) => c.id === request.id), 'the request in the inbox');
  assert.equal(card.prompt, 'Run `rm -rf target`?');
  assert.equal(card.agent, 'e2e-agent');
  assert.equal(card.relay, 'local');
  assert.deepEqual(card.options.map((o) => o.id), ['allow', 'deny']);
  assert.equal(cards.get(request.id)?.status, 'pending', 'the attention listener saw it');
  // The agent's window comes with the relay's roster; the command below
  // carries it once the client has that roster, not before.
  await waitFor(async () => (await client.roster()).find((r) => r.session === 'build-1' && r.control?.ackWindowMs === 3000),
    'the roster to list build-1 with its window');

  const { ack, outcome } = await client.respond(request.id, { option: 'allow' });
  assert.equal(ack.type, 'control.accepted');
  assert.equal(ack.session, 'build-1');
  const command = seen((e) => e.type === 'control.attention.respond' && e.id === ack.cause);
  assert.ok(command, 'our own command is in the event feed');
  assert.equal(command.subject, request.id);
  assert.equal(command.agent, 'e2e-console');
  assert.ok(agent.received.some((e) => e.id === command.id), 'the agent received the command');

  const answered = await outcome;
  assert.equal(answered.type, 'attention.answered');
  assert.equal(answered.subject, request.id);
  assert.deepEqual(answered.data.answer, { option: 'allow' });

  const resolved = await waitFor(() => seen((e) => e.type === 'attention.resolved' && e.subject === request.id), 'attention.resolved');
  assert.equal(resolved.cause, command.id);
  await waitFor(() => cards.get(request.id)?.status === 'resolved', 'the card to close');
  assert.ok(!client.inbox().some((c) => c.id === request.id));
  const mine = client.commands().find((c) => c.id === command.id);
  assert.equal(mine.state, 'accepted');
  assert.equal(mine.outcomeType, 'attention.answered');
  assert.equal(mine.windowMs, 3000, "the agent's declared window, learnt from the roster");
});

test('a rejected answer surfaces as a NackError with the reason', async () => {
  const request = agent.ask('build-1', 'Push to main?');
  await waitFor(() => client.inbox().find((c) => c.id === request.id), 'the second request');
  // An option the card does not offer never leaves the client.
  const local = await client.respond(request.id, { option: 'maybe' }).then(() => null, (e) => e);
  assert.ok(local instanceof pkg.AepError && !(local instanceof pkg.NackError), `${local}`);
  assert.equal(local.code, 'invalid-answer');
  assert.match(local.message, /maybe/);
  assert.ok(!agent.received.some((e) => e.type === 'control.attention.respond' && e.data?.answer?.option === 'maybe'));

  // The agent stops taking answers to it: its refusal is a NackError.
  agent.target.closeRequest(request.id);
  const err = await client.respond(request.id, { option: 'allow' }).then(
    () => assert.fail('an answer to a closed request must be rejected'),
    (e) => e,
  );
  agent.target.registerRequest(request, 'deny');
  assert.ok(err instanceof pkg.NackError, `expected NackError, got ${err}`);
  assert.ok(err instanceof Error);
  assert.equal(err.kind, 'rejected');
  assert.equal(err.reason, 'invalid');
  assert.equal(err.synthesized, false);
  assert.match(err.detail, /no longer open/);
  assert.equal(err.ack.type, 'control.rejected');
  assert.equal(err.ack.cause, err.commandId);
  assert.ok(client.inbox().some((c) => c.id === request.id), 'the card stays open');

  // The same request can still be answered properly.
  const { ack } = await client.respond(request.id, { option: 'deny', text: 'not today' });
  assert.equal(ack.type, 'control.accepted');
});

test('a command to a session nobody owns is refused by the relay with no-route', async () => {
  const err = await client.pause('nobody-owns-this').then(() => assert.fail('must be refused'), (e) => e);
  assert.ok(err instanceof pkg.NackError);
  assert.equal(err.kind, 'relay-refused');
  assert.equal(err.relayCode, 'no-route');
  assert.equal(err.reason, 'no-route');
  assert.equal(err.synthesized, false);
});

test('silence past the declared window is a synthesized timeout', async () => {
  const silent = new Agent(pkg, relay, { agent: 'silent-agent', ackWindowMs: 400, silent: true });
  await silent.connect();
  silent.emit({ type: 'session.started', session: 'quiet-1', data: {} });
  await waitFor(async () => (await client.roster()).find((r) => r.session === 'quiet-1'), 'the roster to list quiet-1');
  const roster = await client.roster('local');
  assert.equal(roster.find((r) => r.session === 'quiet-1').control.ackWindowMs, 400);

  const started = Date.now();
  const err = await client.pause({ session: 'quiet-1' }).then(() => assert.fail('nobody acks'), (e) => e);
  assert.ok(err instanceof pkg.NackError);
  assert.equal(err.kind, 'timeout');
  assert.equal(err.reason, 'timeout');
  assert.equal(err.synthesized, true);
  assert.ok(Date.now() - started >= 350, 'not before the window');
  assert.ok(silent.received.some((e) => e.id === err.commandId), 'the command was delivered, just never acked');
  silent.close();
});

test('vendor commands and cancel reach the agent, which refuses what it does not take', async () => {
  const err = await client.command('x.acme.control.throttle', { session: 'build-1', data: { level: 2 } }).then(
    () => assert.fail('the agent does not accept vendor commands'),
    (e) => e,
  );
  assert.ok(err instanceof pkg.NackError);
  // Either the relay (from the declared accepts) or the agent refuses it.
  assert.ok(err.reason === 'unsupported' || err.relayCode === 'unsupported', `${err.kind} ${err.reason}`);

  const { ack } = await client.cancel({ session: 'build-1', scope: 'session', reason: 'done for today' });
  assert.equal(ack.type, 'control.accepted');
  const cancel = agent.received.find((e) => e.id === ack.cause);
  assert.equal(cancel.data.scope, 'session');
  assert.equal(cancel.capture, 'full', 'a person-written reason is content, sent as typed');
});

test('local refusals are AepErrors and nothing is sent', async () => {
  const unknown = await client.respond('NO-SUCH-REQUEST', { option: 'allow' }).catch((e) => e);
  assert.ok(unknown instanceof pkg.AepError);
  assert.equal(unknown.code, 'unknown-request');
  const bad = await client.respond('x', { values: {}, option: 'a' }).catch((e) => e);
  assert.equal(bad.code, 'invalid-answer');
  const scope = await client.cancel({ session: 'build-1', scope: 'everything' }).catch((e) => e);
  assert.equal(scope.code, 'invalid-argument');
  // Argument objects are read as their declared types: a wrong shape is refused before anything is sent.
  for (const [what, call] of [
    ['no session', () => client.pause({ run: 'r1' })],
    ['a reason that is not text', () => client.cancel({ session: 'build-1', scope: 'run', reason: 42 })],
    ['an unknown capture level', () => client.command('x.acme.control.throttle', { session: 'build-1', capture: 'most' })],
    ['a payload that is not an object', () => client.command('x.acme.control.throttle', { session: 'build-1', data: [1] })],
  ]) {
    const err = await call().then(() => null, (e) => e);
    assert.ok(err instanceof pkg.AepError && err.code === 'invalid-argument', `${what}: ${err && err.message}`);
  }
  assert.throws(() => client.on('nonsense', () => {}), (e) => e instanceof pkg.AepError && e.code === 'invalid-argument');
});

test('views: sessions, session detail, positions', async () => {
  const sessions = client.sessions();
  const build = sessions.find((s) => s.name === 'build-1');
  assert.equal(build.label, 'Fix the build');
  assert.equal(build.agent, 'e2e-agent');
  const detail = client.session(build.key);
  assert.ok(detail.cards.length >= 2);
  assert.ok(detail.commands.some((c) => c.status === 'completed'));
  assert.equal(client.session({ source: 'aep://nowhere/agent/x', name: 'x' }), null);
  const positions = client.positions();
  assert.ok(positions.local.some((p) => p.session === 'build-1' && p.seq > 0));
});

test('saved positions resume a new client after what it already took', async () => {
  const saved = JSON.parse(JSON.stringify(client.positions()));
  const last = saved.local.find((p) => p.session === 'build-1');
  assert.ok(last && last.seq > 1);

  const fresh = (agentName) => {
    const c = new pkg.AepClient({ relays: [{ url: relay.url, token: relay.token, label: 'local' }], agent: agentName });
    const got = [];
    c.on('event', (e) => got.push(e));
    return { c, got };
  };
  const replaying = fresh('replaying');
  const resuming = fresh('resuming');
  assert.throws(() => resuming.c.restorePositions({ local: [{ session: 'build-1', epoch: -1, seq: 'x' }] }),
    (e) => e instanceof pkg.AepError && e.code === 'invalid-argument');
  assert.equal(resuming.c.restorePositions({ ...saved, elsewhere: [{ session: 'x', epoch: 0, seq: 1 }] }), saved.local.length);
  await replaying.c.connect();
  await resuming.c.connect();
  agent.emit({ type: 'progress.status', session: 'build-1', data: { phase: 'after-the-save' } });
  const isNew = (e) => e.session === 'build-1' && e.data?.phase === 'after-the-save';
  await waitFor(() => replaying.got.some(isNew) && resuming.got.some(isNew), 'the new event on both clients');

  const old = (got) => got.filter((e) => e.session === 'build-1' && e.seq <= last.seq && (e.epoch ?? 0) === last.epoch);
  assert.ok(old(replaying.got).length >= 2, 'without saved positions the history is replayed');
  assert.deepEqual(old(resuming.got), [], 'with them, nothing up to the saved position comes again');
  for (const { c } of [replaying, resuming]) {
    c.close();
    c.free();
  }
});

test('the token never appears in statuses, labels or errors', async () => {
  const wrong = new pkg.AepClient({ relays: [{ url: relay.url, token: 'not-the-token-xyz' }], agent: 'intruder', pingIntervalMs: 0 });
  const seenStatuses = [];
  wrong.on('status', (s) => seenStatuses.push(s));
  wrong.connect();
  await waitFor(() => seenStatuses.some((s) => s.state === 'reconnecting' || s.state === 'refused'), 'the wrong token to be turned away');
  const text = JSON.stringify([seenStatuses, wrong.status(), wrong.positions()]) + String(await wrong.pause('x').catch((e) => e.message));
  assert.ok(!text.includes('not-the-token-xyz'), text);
  assert.ok(!JSON.stringify(statuses).includes(relay.token));
  wrong.close();
  wrong.free();
});

test('a wrong token is refused for good, not retried', async () => {
  const wrong = new pkg.AepClient({ relays: [{ url: relay.url, token: 'not-the-token-xyz', label: 'guarded' }], agent: 'intruder' });
  const seenStatuses = [];
  wrong.on('status', (s) => seenStatuses.push(s));
  const [status] = await wrong.connect();
  assert.equal(status.state, 'refused', JSON.stringify(seenStatuses));
  assert.match(status.reason, /not authorized.*401/);
  // The timer under test: a client that would retry does so within its
  // first backoff (500 ms at most); three of those pass with no attempt.
  await new Promise((r) => setTimeout(r, 1500));
  assert.equal(wrong.status()[0].state, 'refused', 'no reconnect after the relay refused the token');
  assert.ok(!JSON.stringify(seenStatuses).includes('not-the-token-xyz'));
  wrong.close();
  wrong.free();
});

test('a WebSocket constructor can be passed in', async () => {
  let made = 0;
  class Counting extends WebSocket {
    constructor(url) {
      super(url);
      made += 1;
    }
  }
  const c = new pkg.AepClient({ relays: [{ url: relay.url, token: relay.token }], agent: 'ctor-console', WebSocket: Counting });
  const [status] = await c.connect();
  assert.equal(status.state, 'live');
  assert.equal(made, 1);
  assert.equal(status.relay, `ws://127.0.0.1:${relay.port}/socket`, 'the default label is the URL without its query');
  c.close();
});

test('closing refuses new commands instead of queueing them', async () => {
  const c = new pkg.AepClient({ relays: [{ url: relay.url, token: relay.token }], agent: 'closing-console' });
  await c.connect();
  await waitFor(() => c.sessions().some((s) => s.name === 'build-1'), 'the replayed session');
  c.close();
  const err = await c.pause('build-1').catch((e) => e);
  assert.ok(err instanceof pkg.AepError);
  assert.equal(err.code, 'not-live');
  assert.match(err.message, /not sent/);
});
