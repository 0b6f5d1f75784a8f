// projectState over a generated 100 000-event stream, in Node, from the
// packed package. The stream follows the mix of the native store bench
// (examples/bench_store.rs): 1 024 sessions of 40 agents, runs ending every
// way, tool calls, attention arcs (options and forms; answered, timed out,
// routed), commands from several consoles with acks and outcomes, pause and
// cancel, a vendor type, heartbeats and about 5 % redeliveries, interleaved.
// Rates are compared with parsing the same text with JSON.parse, line by
// line, in the same process: projectState(jsonl) should reach 1.2x that
// rate, projectState(objects) 0.75x.
// Run: node npm/test/bench.mjs   (after scripts/build-npm)
import assert from 'node:assert/strict';

import { installPackage } from './support.mjs';

const EVENTS = 100_000;
const SESSIONS = 1_024;
const AGENTS = 40;
const T0 = 1_783_000_000_000;

function rng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { below: (n) => Math.floor(next() * n), chance: (p) => next() * 100 < p };
}

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
function ulid(ms, r) {
  let s = '';
  for (let i = 9; i >= 0; i--) s += CROCKFORD[Math.floor(ms / 32 ** i) % 32];
  for (let i = 0; i < 16; i++) s += CROCKFORD[r.below(32)];
  return s;
}

function script(r, s) {
  const agent = `agent-${s % AGENTS}`;
  const session = `s${s}`;
  const source = `aep://host-${s % 10}/agent/${agent}/session/${session}`;
  const out = [];
  let seq = 0;
  let t = r.below(60_000);
  const id = () => { t += 1 + r.below(400); return ulid(T0 + t, r); };
  const time = () => new Date(T0 + t).toISOString();
  const owner = (type, extra = {}) => {
    const e = { aep: '0.1', id: id(), type, time: time(), source, agent, session, seq: seq++, ...extra };
    out.push(e);
    return e.id;
  };
  const foreign = (type, who, extra = {}) => {
    const e = { aep: '0.1', id: id(), type, time: time(), source: `aep://consoles/agent/${who}`, agent: who, session, ...extra };
    out.push(e);
    return e.id;
  };
  const attention = (run, cause) => {
    const form = r.chance(20);
    const data = form
      ? { kind: 'form', prompt: 'Configure', respond_via: ['control'], fields: [
        { id: 'name', type: 'string', label: 'Name', required: true },
        { id: 'db', type: 'select', label: 'DB', other: true, choices: [{ id: '1', label: 'pg' }] }] }
      : { kind: 'permission', prompt: 'Permission requested: Bash', options: [{ id: 'allow', label: 'Allow' }, { id: 'deny', label: 'Deny' }] };
    const severity = ['notice', 'warning', 'error'][r.below(3)];
    const req = owner('attention.requested', { run, cause, severity, capture: 'redacted', data });
    if (r.chance(60)) foreign('attention.routed', 'telegram-sink', { subject: req, cause: req });
    if (r.chance(80)) {
      const console_ = `console-${r.below(3)}`;
      const answer = form ? { values: { name: 'svc', db: 'MariaDB' } } : { option: 'allow' };
      const cmd = foreign('control.attention.respond', console_, { subject: req, cause: req, data: { answer } });
      owner('control.accepted', { cause: cmd });
      const ans = owner('attention.answered', { subject: req, cause: cmd, capture: 'redacted', data: { answer, via: 'control', by: console_ } });
      owner('attention.resolved', { subject: req, cause: ans, data: { resolution: 'answered' } });
    } else {
      owner('attention.timeout', { subject: req, cause: req, data: { after_ms: 30000 } });
    }
  };
  const run = (n) => {
    const runId = `r${n}`;
    const started = owner('run.started', { run: runId, data: { trigger: 'user' } });
    let last = started;
    for (let k = 0, steps = 2 + r.below(5); k < steps; k++) {
      const tool = ['Bash', 'Read', 'Write', 'Grep'][r.below(4)];
      const call = `t${n}_${k}`;
      const req = owner('tool.requested', { run: runId, subject: tool, cause: last, data: { tool: { name: tool, call_id: call } } });
      const done = r.chance(90) ? 'tool.completed' : 'tool.failed';
      last = owner(done, { run: runId, subject: tool, cause: req, data: { tool: { name: tool, call_id: call }, error: { type: 'io' } } });
    }
    if (r.chance(5)) owner('x.acme.session.mood', { run: runId, acmeregion: 'eu-1' });
    if (r.chance(50)) attention(runId, last);
    if (r.chance(8)) {
      const console_ = `console-${r.below(3)}`;
      const pause = foreign('control.pause', console_, {});
      const ack = owner('control.accepted', { cause: pause });
      owner('progress.status', { cause: ack, data: { phase: 'paused' } });
      const resume = foreign('control.resume', console_, {});
      owner('control.accepted', { cause: resume });
    }
    if (r.chance(10)) {
      const cancel = foreign('control.cancel', 'console-0', { run: runId, data: { scope: 'run' } });
      owner('control.accepted', { cause: cancel });
      owner('run.cancelled', { run: runId, cause: cancel, data: { by: 'control' } });
    } else if (r.chance(10)) {
      owner('run.failed', { run: runId, cause: last, data: { reason: 'tool_error' } });
    } else {
      owner('run.finished', { run: runId, cause: started, data: { duration_ms: 1000 } });
    }
  };
  owner('session.started', { data: { client: { name: 'bench' } } });
  for (let n = 0, runs = 8 + r.below(8); n < runs; n++) run(n);
  if (r.chance(70)) owner('session.ended', { data: { reason: 'normal' } });
  return out;
}

export function generate() {
  const r = rng(42);
  const scripts = Array.from({ length: SESSIONS }, (_, s) => script(r, s));
  const cursor = new Array(SESSIONS).fill(0);
  const live = Array.from({ length: SESSIONS }, (_, s) => s);
  const stream = [];
  while (stream.length < EVENTS && live.length > 0) {
    const at = r.below(live.length);
    const s = live[at];
    if (cursor[s] >= scripts[s].length) {
      live[at] = live[live.length - 1];
      live.pop();
      continue;
    }
    stream.push(scripts[s][cursor[s]++]);
    if (r.chance(5) && stream.length > 1) stream.push(stream[r.below(stream.length)]);
    if (r.chance(1)) {
      const agent = `agent-${r.below(AGENTS)}`;
      stream.push({ aep: '0.1', id: ulid(T0 + stream.length, r), type: 'agent.heartbeat', time: new Date(T0).toISOString(),
        source: `aep://host-0/agent/${agent}`, agent, data: { tick: stream.length } });
    }
  }
  return stream.slice(0, EVENTS);
}

function rate(n, ms) {
  return `${Math.round(n / (ms / 1000)).toLocaleString('en-US')} events/s (${ms.toFixed(0)} ms)`;
}

/** Median of a list of timings. */
function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function time(f) {
  const t = performance.now();
  const out = f();
  return [performance.now() - t, out];
}

const ROUNDS = Number(process.env.AEP_BENCH_ROUNDS || 5);

const { pkg, cleanup } = await installPackage();
try {
  const stream = generate();
  const jsonl = stream.map((e) => JSON.stringify(e)).join('\n');
  console.log(`stream: ${stream.length} events, ${(jsonl.length / 1048576).toFixed(1)} MiB of JSON, ${ROUNDS} rounds (medians)`);
  pkg.projectState(stream.slice(0, 2000)); // warm up

  // The three are interleaved round by round, so that a burst of load on a
  // shared machine lands on all of them alike; medians are compared.
  const ms = { objects: [], text: [], parse: [], stringify: [] };
  let fromObjects;
  let fromText;
  for (let round = 0; round < ROUNDS; round++) {
    let t;
    [t, fromObjects] = time(() => pkg.projectState(stream));
    ms.objects.push(t);
    [t, fromText] = time(() => pkg.projectState(jsonl));
    ms.text.push(t);
    let parsed;
    [t, parsed] = time(() => jsonl.split('\n').map((line) => JSON.parse(line)));
    ms.parse.push(t);
    assert.equal(parsed.length, stream.length);
    // What the array path spends in JavaScript before the module sees text.
    [t] = time(() => JSON.stringify(stream));
    ms.stringify.push(t);
  }
  const [objectsMs, textMs, parseMs, stringifyMs] = [ms.objects, ms.text, ms.parse, ms.stringify].map(median);

  assert.equal(fromObjects.rejected.count, 0, JSON.stringify(fromObjects.rejected.first.slice(0, 3)));
  assert.deepEqual(fromObjects.counts, fromText.counts, 'objects and JSONL fold to the same state');
  assert.ok(fromObjects.counts.sessions > 0 && fromObjects.counts.cards > 0 && fromObjects.counts.commands > 0);
  const first = (xs) => `first round ${xs[0].toFixed(0)} ms`;
  console.log(`projectState(array of objects): ${rate(stream.length, objectsMs)}; ${first(ms.objects)}`);
  console.log(`projectState(JSONL string):     ${rate(stream.length, textMs)}; ${first(ms.text)}`);
  console.log(`text.split + JSON.parse:        ${rate(stream.length, parseMs)}; ${first(ms.parse)}`);
  console.log(`JSON.stringify(array) alone:    ${rate(stream.length, stringifyMs)}`);
  const ratio = (t) => (parseMs / t).toFixed(2);
  console.log(`rate vs JSON.parse: JSONL ${ratio(textMs)}x (target 1.2x), objects ${ratio(objectsMs)}x (target 0.75x)`);
  assert.deepEqual(Object.values(fromText.evicted).filter((n) => n > 0), [], 'the whole stream is held');
  console.log(`state: ${JSON.stringify(fromText.counts)}`);
} finally {
  cleanup();
}
