// A deterministic AEP stream with the mix of the native store bench
// (examples/bench_store.rs): sessions of 40 agents, runs ending every way,
// tool calls, attention arcs (options and forms; answered, timed out,
// routed), commands from several consoles with acks and outcomes, pause and
// cancel, a vendor type, heartbeats and about 5 % redeliveries, interleaved.
// Used by the projectState benchmark and the tests.

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

/** `events` events of `sessions` sessions, the same for the same arguments. */
export function generate({ events = 100_000, sessions = 1_024 } = {}) {
  const r = rng(42);
  const scripts = Array.from({ length: sessions }, (_, s) => script(r, s));
  const cursor = new Array(sessions).fill(0);
  const live = Array.from({ length: sessions }, (_, s) => s);
  const stream = [];
  while (stream.length < events && live.length > 0) {
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
  return stream.slice(0, events);
}
