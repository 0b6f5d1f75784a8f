// The packed package against the real relay, through a TCP proxy the test
// can cut: nothing an agent asks is lost to an outage, and a client's own
// acks and outcomes reach it whatever its filter.
// Run: node --experimental-websocket --test npm/test/resilience.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { stage, startProxy, waitFor } from './support.mjs';

let pkg;
let stop;
let relay;
let agent;
let proxy;

before(async () => {
  ({ pkg, relay, agent, stop } = await stage());
  proxy = await startProxy(relay.port);
});

after(async () => {
  proxy?.close();
  await stop?.();
});

function client(options = {}) {
  return new pkg.AepClient({
    relays: [{ url: proxy.url, token: relay.token, label: 'local' }],
    agent: 'resilience-console',
    host: 'console.test',
    ...options,
  });
}

test('a filter without control.* still sees its own ack and outcome', async () => {
  agent.emit({ type: 'session.started', session: 'filtered-1', data: {} });
  const c = client({ filter: { type: ['attention.*', 'session.*'] } });
  try {
    await c.connect();
    const request = agent.ask('filtered-1', 'Deploy to production?');
    await waitFor(() => c.inbox().find((card) => card.id === request.id), 'the request in the inbox');
    const { ack, outcome } = await c.respond(request.id, { option: 'allow' });
    assert.equal(ack.type, 'control.accepted');
    const answered = await outcome;
    assert.equal(answered.type, 'attention.answered');
    assert.equal(answered.subject, request.id);
  } finally {
    c.close();
  }
});

test('a request raised by a session that started during an outage shows after it', async () => {
  agent.emit({ type: 'session.started', session: 'before-outage', data: {} });
  const c = client();
  try {
    await c.connect();
    await waitFor(() => c.sessions().some((s) => s.name === 'before-outage'), 'the known session');
    const disconnected = new Promise((ok) => c.on('status', (s) => { if (s.state !== 'live') ok(); }));
    proxy.cut();
    await disconnected;
    agent.emit({ type: 'session.started', session: 'during-outage', data: {} });
    const request = agent.ask('during-outage', 'Rotate the signing key?');
    proxy.restore();
    const card = await waitFor(() => c.inbox().find((x) => x.id === request.id), 'the request raised during the outage', 30_000);
    assert.equal(card.prompt, 'Rotate the signing key?');
  } finally {
    proxy.restore();
    c.close();
  }
});
