// An agent written with the package's AepAgent, against the real relay and
// answered by the package's AepClient: hello with its control block, acks
// sent for it, outcomes through helpers, positions that never repeat, and
// events queued while cut off sent after the reconnect.
// Run: node --experimental-websocket --test npm/test/agent.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { installPackage, startRelay, startProxy, waitFor } from './support.mjs';

let pkg;
let installed;
let relay;
let proxy;
let agent;
let client;
const commands = [];
const statuses = [];

before(async () => {
  installed = await installPackage();
  pkg = installed.pkg;
  relay = await startRelay();
  proxy = await startProxy(relay.port);
  agent = new pkg.AepAgent({
    url: proxy.url,
    token: relay.token,
    agent: 'js-agent',
    host: 'agents.test',
    accepts: ['control.attention.respond', 'control.pause'],
    ackWindowMs: 4000,
    capture: 'full',
  });
  agent.on('status', (s) => statuses.push(s));
  agent.on('command', (command, received) => {
    commands.push({ command, received });
    if (received.kind !== 'fresh') return;
    if (received.action.type === 'respond') agent.answer(command, received.action);
    if (received.action.type === 'pause') agent.progressStatus(command, 'paused');
  });
  const status = await agent.connect();
  assert.equal(status.state, 'live');

  client = new pkg.AepClient({
    relays: [{ url: relay.url, token: relay.token, label: 'local' }],
    agent: 'agent-test-console',
  });
  await client.connect();
});

after(async () => {
  client?.close();
  agent?.close();
  proxy?.close();
  await relay?.stop();
  installed?.cleanup();
});

test('a console answers an AepAgent: ack by the agent, outcome by its helper', async () => {
  const started = agent.emit({ type: 'session.started', session: 'js-1', data: {} });
  const request = agent.ask({
    type: 'attention.requested',
    session: 'js-1',
    severity: 'warning',
    data: { kind: 'permission', prompt: 'Drop the cache?', options: [{ id: 'allow', label: 'Allow' }, { id: 'deny', label: 'Deny' }] },
  }, 'deny');
  assert.equal(started.seq, 0);
  assert.equal(request.seq, 1, 'seq continues per session');
  assert.ok(request.epoch > 0 && request.epoch === started.epoch, 'one epoch, seeded from the start-up time');

  await waitFor(() => client.inbox().find((c) => c.id === request.id), 'the request in the console');
  const roster = await client.roster('local');
  const claim = roster.find((r) => r.session === 'js-1');
  assert.deepEqual(claim?.control?.accepts, ['control.attention.respond', 'control.pause'], 'hello declared what it takes');

  const { ack, outcome } = await client.respond(request.id, { option: 'allow' });
  assert.equal(ack.type, 'control.accepted');
  assert.equal(ack.agent, 'js-agent');
  assert.equal(ack.seq, 2);
  const answered = await outcome;
  assert.equal(answered.type, 'attention.answered');
  assert.deepEqual(answered.data.answer, { option: 'allow' });
  assert.equal(commands.at(-1).received.kind, 'fresh');

  const { ack: paused } = await client.pause('js-1');
  assert.equal(paused.type, 'control.accepted');
  await waitFor(() => client.sessions().find((s) => s.name === 'js-1')?.state === 'paused', 'the session paused');
});

test('a form answered through an AepAgent at its default ceiling keeps its choices and numbers', async () => {
  const formAgent = new pkg.AepAgent({
    url: relay.url,
    token: relay.token,
    agent: 'js-form-agent',
    host: 'agents.test',
    accepts: ['control.attention.respond'],
    ackWindowMs: 4000,
  });
  formAgent.on('command', (command, received) => {
    if (received.kind === 'fresh' && received.action.type === 'respond') formAgent.answer(command, received.action);
  });
  assert.equal((await formAgent.connect()).state, 'live');
  try {
    const started = formAgent.emit({ type: 'session.started', session: 'js-form', data: {} });
    const request = formAgent.ask({
      type: 'attention.requested',
      session: 'js-form',
      data: {
        kind: 'form',
        prompt: 'Where to?',
        fields: [
          { id: 'env', type: 'select', label: 'Environment', required: true,
            choices: [{ id: 'staging', label: 'Staging' }, { id: 'production', label: 'Production' }] },
          { id: 'n', type: 'number', label: 'Replicas' },
        ],
      },
    });
    await waitFor(() => client.inbox().find((c) => c.id === request.id), 'the form in the console');
    const { ack, outcome } = await client.respond(request.id, { values: { env: 'staging', n: 2 } });
    assert.equal(ack.type, 'control.accepted');
    const answered = await outcome;
    assert.equal(answered.type, 'attention.answered');
    assert.deepEqual(answered.data.answer, { values: { env: 'staging', n: 2 } }, 'a choice id is structure, not text');
    assert.equal(answered.capture, 'metadata');
    const projection = pkg.projectState([started, request, ack, answered]);
    assert.deepEqual(projection.violations, [], 'the package\'s own fold finds the answer complete');
  } finally {
    formAgent.close();
  }
});

test('a command the agent does not take is nacked for it, unsupported', async () => {
  const err = await client.cancel({ session: 'js-1', scope: 'session' }).then(() => null, (e) => e);
  assert.ok(err instanceof pkg.NackError, `${err}`);
  assert.ok(err.reason === 'unsupported' || err.relayCode === 'unsupported', `${err.kind} ${err.reason} ${err.relayCode}`);
});

test('events emitted while cut off are sent after the reconnect, nothing lost', async () => {
  const down = new Promise((ok) => agent.on('status', (s) => { if (s.state !== 'live') ok(); }));
  proxy.cut();
  await down;
  const queued = agent.emit({ type: 'progress.status', session: 'js-1', severity: 'notice', data: { phase: 'working offline' } });
  assert.equal(agent.status().queued, 1, 'waiting for a socket');
  proxy.restore();
  await waitFor(() => agent.status().state === 'live', 'the agent back', 20_000);
  await waitFor(async () => (await fetchReplay()).includes(queued.id), 'the queued event at the relay', 20_000);
  assert.equal(agent.status().queued, 0);
  assert.equal(agent.status().dropped, 0);
});

async function fetchReplay() {
  const filter = encodeURIComponent(JSON.stringify({ session: ['js-1'] }));
  const res = await fetch(`${relay.url}/stream?from=all&live=0&filter=${filter}`, { headers: { authorization: `Bearer ${relay.token}` } });
  return res.text();
}
