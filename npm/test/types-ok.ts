// Compiles against the package's declarations: every public call with the
// types a dashboard would use. Checked by `tsc --noEmit` (must pass).
import init, {
  AepClient,
  AepError,
  ControlTarget,
  NackError,
  matches,
  projectState,
  validateEvent,
  validateFilter,
  type Accepted,
  type AepEvent,
  type Card,
  type Projection,
  type RelayStatus,
  type RosterEntry,
  type SessionDetail,
  type TargetAction,
} from 'aep-client';

export async function dashboard(): Promise<void> {
  await init();
  const client = new AepClient({
    relays: [{ url: 'wss://relay.example', token: 't', label: 'prod' }],
    agent: 'dash',
    filter: { type: ['attention.*'] },
    capture: 'redacted',
    ackWindowMs: 5000,
  });
  const off = client.on('attention', (card) => {
    if (card.status !== 'evicted' && card.needsAnswer) {
      const labels: string[] = (card.options ?? []).map((o) => o.label);
      console.log(card.prompt, labels, card.relay);
    }
  });
  client.on('event', (event: AepEvent, relay: string) => console.log(event.type, event.seq, relay));
  client.on('command', (c) => console.log(c.id, c.state, c.change, c.relayCode));
  client.on('status', (s: RelayStatus) => console.log(s.relay, s.state, s.retryAt));
  client.on('violation', (v) => console.log(v.rule, v.detail));
  client.on('session', (s) => console.log(s.key.source, s.state));
  const statuses: RelayStatus[] = await client.connect();
  console.log(statuses.length);

  const inbox: Card[] = client.inbox();
  const first = inbox[0];
  if (first) {
    try {
      const accepted: Accepted = await client.respond(first.id, { option: 'allow' });
      const outcome: AepEvent = await accepted.outcome;
      console.log(accepted.ack.cause, outcome.type);
    } catch (e) {
      if (e instanceof NackError) console.log(e.kind, e.reason, e.detail, e.synthesized, e.relayCode);
      else if (e instanceof AepError) console.log(e.code, e.message);
    }
  }
  await client.respond('r', { text: 'yes please' });
  await client.respond('r', { values: { name: 'x', count: 3, tags: ['a'] } });
  await client.cancel({ session: 's', run: 'r1', scope: 'run', reason: 'stop' });
  await client.pause('s');
  await client.resume({ session: 's', relay: 'prod' });
  await client.command('x.acme.control.throttle', { session: 's', data: { level: 2 } });
  const roster: RosterEntry[] = await client.roster('prod');
  console.log(roster[0]?.control?.ackWindowMs);
  const detail: SessionDetail | null = client.session({ source: 'aep://h/agent/a', name: 's' });
  console.log(detail?.runs.length, client.positions()['prod']?.[0]?.seq);
  const restored: number = client.restorePositions(client.positions());
  console.log(restored);
  off();
  client.close();
}

export function helpers(events: AepEvent[]): Projection {
  const checked = validateEvent(events[0] ?? '{}');
  if (!checked.valid) console.log(checked.violations.map((v) => v.rule));
  const f = validateFilter({ type: ['attention.*'] });
  if (f.valid && events[0]) console.log(matches({ type: ['attention.*'] }, events[0]));
  return projectState(events);
}

export function agent(command: AepEvent): AepEvent[] {
  const target = new ControlTarget({ agent: 'a', accepts: ['control.attention.respond', 'x.acme.control.go'] });
  const request = target.event({ type: 'attention.requested', session: 's', data: { kind: 'permission' } });
  target.registerRequest(request, 'deny');
  const r = target.handleCommand(command, (action: TargetAction) =>
    action.type === 'respond' ? undefined : { reject: 'refused', detail: 'not now' },
  );
  if (r.kind === 'fresh' && r.action.type === 'respond') {
    return [r.ack, ...target.answerOutcomes(command, r.action)];
  }
  return [r.ack];
}
