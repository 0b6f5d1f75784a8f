// A plain-JS dashboard on the aep-client package: connects to the relay
// that serves this page, lists pending attention requests, answers them.
// Served with the package at /pkg/ (see the package README).
import init, { AepClient, NackError, AepError } from '/pkg/aep-client.js';

const list = document.getElementById('inbox');
const status = document.getElementById('status');
const empty = document.getElementById('empty');
/** Outcome lines per request id, kept across redraws. */
const results = new Map();
let client;

function el(tag, props = {}, ...children) {
  const node = Object.assign(document.createElement(tag), props);
  // Agent-authored text goes in as text, never as markup.
  for (const c of children) node.append(c);
  return node;
}

function render() {
  const cards = client.inbox();
  const answered = [...results.keys()].filter((id) => !cards.some((c) => c.id === id));
  list.replaceChildren(...cards.map(cardView), ...answered.map((id) => resultOnly(id)));
  empty.hidden = cards.length > 0 || answered.length > 0;
}

function cardView(card) {
  const li = el('li', { className: 'card' });
  li.dataset.id = card.id;
  li.dataset.severity = card.severity;
  li.append(
    el('div', { className: 'provenance' }, `${card.agent ?? 'unknown agent'} · session ${card.session.name} · via ${card.relay ?? '?'} · ${card.kind ?? ''}`),
    el('div', { className: 'prompt' }, card.prompt ?? '(no prompt)'),
  );
  if (card.acceptsControl === false) {
    li.append(el('div', { className: 'result' }, 'Answer this where the agent asked (out of band).'));
  } else if (card.options && card.options.length > 0) {
    for (const o of card.options) {
      const b = el('button', { type: 'button' }, o.label);
      b.dataset.option = o.id;
      b.addEventListener('click', () => answer(card.id, { option: o.id }));
      li.append(b);
    }
  } else {
    const input = el('input', { type: 'text', placeholder: 'Your answer' });
    const b = el('button', { type: 'button' }, 'Send');
    b.addEventListener('click', () => answer(card.id, { text: input.value }));
    li.append(input, b);
  }
  const r = results.get(card.id);
  if (r) li.append(resultLine(r));
  return li;
}

function resultOnly(id) {
  const li = el('li', { className: 'card' });
  li.dataset.id = id;
  li.append(resultLine(results.get(id)));
  return li;
}

function resultLine(r) {
  const d = el('div', { className: 'result' }, r.text);
  d.dataset.kind = r.kind;
  return d;
}

async function answer(id, value) {
  results.set(id, { kind: 'pending', text: 'sending…' });
  render();
  try {
    const { ack, outcome } = await client.respond(id, value);
    results.set(id, { kind: 'ok', text: `accepted by ${ack.agent}` });
    render();
    const done = await outcome;
    results.set(id, { kind: 'ok', text: `accepted by ${ack.agent}; ${done.type}` });
  } catch (e) {
    if (e instanceof NackError) {
      const why = e.kind === 'timeout' ? 'no answer from the agent in time' : `${e.kind}: ${e.reason}`;
      results.set(id, { kind: 'error', text: `not done (${why})${e.detail ? `: ${e.detail}` : ''}` });
    } else if (e instanceof AepError) {
      results.set(id, { kind: 'error', text: `not sent: ${e.message}` });
    } else {
      throw e;
    }
  }
  render();
}

document.getElementById('login').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const token = document.getElementById('token');
  await init();
  client?.close();
  client = new AepClient({ relays: [{ url: location.origin, token: token.value, label: location.host }], agent: 'dashboard-example', host: location.hostname });
  // The token lives only in the client; the field is cleared.
  token.value = '';
  client.on('status', (s) => {
    status.dataset.state = s.state;
    status.textContent = s.state;
  });
  client.on('attention', render);
  await client.connect();
  render();
});
