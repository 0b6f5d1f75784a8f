// The projection a JavaScript dashboard would write for itself, without the
// package: the baseline `projectState` is measured against (bench.mjs).
// It does the same work the engine's fold does on a well-formed stream and
// no more: parse, check each envelope's required members, dedupe on
// `(source, id)`, file events under their sessions, track runs and their
// ends, rebuild attention cards from `subject` and command chains from
// `cause` (acks and outcomes), and keep agent-scoped events per agent.
// `pending` counts what still waits for a person (no answer and no terminal
// event), the reading the engine takes; `open` also counts requests answered
// but not yet resolved, which AEP-0002 allows transiently (the emitter owns
// resolution).
// Written to be fast the way plain JavaScript is: Maps keyed by strings,
// one pass, no classes on the hot path.

const RUN_ENDS = new Set(['run.finished', 'run.failed', 'run.cancelled']);
const CARD_CLOSES = new Set(['attention.resolved', 'attention.timeout', 'attention.cancelled']);
const ACKS = new Set(['control.accepted', 'control.rejected']);
const CAPTURES = new Set(['none', 'metadata', 'redacted', 'full']);
const TYPE = /^(?:x\.[a-z0-9-]+\.)?[a-z_]+(?:\.[a-z_]+)+$/;

/** Why an envelope is refused, or undefined when it is well formed. */
function refusal(e) {
  if (e === null || typeof e !== 'object' || Array.isArray(e)) return 'not an object';
  if (e.aep !== '0.1') return 'aep';
  if (typeof e.id !== 'string' || e.id.length !== 26) return 'id';
  if (typeof e.type !== 'string' || !TYPE.test(e.type)) return 'type';
  if (typeof e.time !== 'string' || Number.isNaN(Date.parse(e.time))) return 'time';
  if (typeof e.source !== 'string' || !e.source.startsWith('aep://')) return 'source';
  if (typeof e.agent !== 'string' || e.agent === '') return 'agent';
  if (e.session !== undefined && typeof e.session !== 'string') return 'session';
  if (e.seq !== undefined && !(Number.isInteger(e.seq) && e.seq >= 0)) return 'seq';
  if (e.capture !== undefined && !CAPTURES.has(e.capture)) return 'capture';
  if (e.data !== undefined && (e.data === null || typeof e.data !== 'object')) return 'data';
  return undefined;
}

/** Commands and attention hops carry their sender's `source`: they address a session by name. */
function isForeign(type) {
  return (type.startsWith('control.') && !ACKS.has(type)) || type === 'attention.routed';
}

export function plainFold(input) {
  const lines = typeof input === 'string' ? input.split('\n') : input;
  const seen = new Map();
  const sessions = new Map();
  const byName = new Map();
  const agents = new Map();
  const commands = new Map();
  const unattached = [];
  const rejected = [];
  let events = 0;

  const sessionOf = (e) => {
    const key = e.source + '\u0000' + e.session;
    let s = sessions.get(key);
    if (s === undefined) {
      s = { source: e.source, name: e.session, agent: e.agent, events: [], seq: -1, runs: new Map(), cards: new Map(), ended: false };
      sessions.set(key, s);
      const named = byName.get(e.session);
      if (named === undefined) byName.set(e.session, [s]);
      else named.push(s);
    }
    return s;
  };
  // The session a foreign event belongs to: the only one of its name, or the
  // one holding the card or command it refers to.
  const target = (e) => {
    const named = byName.get(e.session);
    if (named === undefined) return undefined;
    if (named.length === 1) return named[0];
    const ref = e.subject ?? e.cause;
    return named.find((s) => s.cards.has(ref) || (e.run !== undefined && s.runs.has(e.run)));
  };

  for (let i = 0; i < lines.length; i++) {
    let e = lines[i];
    if (typeof e === 'string') {
      if (e === '') continue;
      try {
        e = JSON.parse(e);
      } catch {
        rejected.push({ at: i, why: 'not JSON' });
        continue;
      }
    }
    const why = refusal(e);
    if (why !== undefined) {
      rejected.push({ at: i, why });
      continue;
    }
    const key = e.source + '\u0000' + e.id;
    const prior = seen.get(key);
    if (prior !== undefined) {
      if (prior !== e.type) rejected.push({ at: i, why: 'id reused' });
      continue;
    }
    seen.set(key, e.type);
    const type = e.type;

    if (e.session === undefined) {
      const list = agents.get(e.source);
      if (list === undefined) agents.set(e.source, [e]);
      else list.push(e);
      continue;
    }
    events++;
    if (isForeign(type)) {
      const s = target(e);
      if (s === undefined) unattached.push(e);
      else s.events.push(e);
      if (type === 'attention.routed') {
        const card = s?.cards.get(e.subject);
        if (card !== undefined) card.routes.push(e.source);
      } else {
        commands.set(e.id, { command: e, session: s, ack: undefined, outcomes: [] });
      }
      continue;
    }

    const s = sessionOf(e);
    s.events.push(e);
    if (e.seq !== undefined && e.seq > s.seq) s.seq = e.seq;
    if (type === 'session.ended') s.ended = true;
    if (e.run !== undefined) {
      let run = s.runs.get(e.run);
      if (run === undefined) {
        run = { id: e.run, started: undefined, ended: undefined };
        s.runs.set(e.run, run);
      }
      if (type === 'run.started') run.started = e;
      else if (RUN_ENDS.has(type)) run.ended = e;
    }
    if (type === 'attention.requested') {
      s.cards.set(e.id, { request: e, answered: undefined, closed: undefined, routes: [] });
    } else if (type.startsWith('attention.')) {
      const card = s.cards.get(e.subject);
      if (card !== undefined) {
        if (type === 'attention.answered') card.answered = e;
        else if (CARD_CLOSES.has(type)) card.closed = e;
      }
    }
    if (e.cause !== undefined) {
      const chain = commands.get(e.cause);
      if (chain !== undefined) {
        if (ACKS.has(type)) chain.ack = e;
        else chain.outcomes.push(e);
        if (chain.session === undefined) {
          chain.session = s;
          s.events.push(chain.command);
          const at = unattached.indexOf(chain.command);
          if (at >= 0) unattached.splice(at, 1);
        }
      }
    }
  }

  let runs = 0;
  let cards = 0;
  let pending = 0;
  let open = 0;
  for (const s of sessions.values()) {
    runs += s.runs.size;
    cards += s.cards.size;
    for (const card of s.cards.values()) {
      if (card.closed !== undefined) continue;
      open++;
      if (card.answered === undefined) pending++;
    }
  }
  return {
    sessions,
    agents,
    commands,
    rejected,
    counts: { sessions: sessions.size, events, runs, cards, pending, open, commands: commands.size, agents: agents.size, unattached: unattached.length },
  };
}
