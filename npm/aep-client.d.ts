// Type declarations of the aep-client package. Generated from the Rust types between the
// BEGIN and END markers; outside them only what Rust does not declare, each block saying why.

// Hand-kept: wasm-bindgen's loader, typed by the host's globals where it has them.
type GlobalInstance<Name extends string> =
  typeof globalThis extends Record<Name, abstract new (...args: never[]) => infer T> ? T : never;
/** A compiled `WebAssembly.Module`, where the environment declares one. */
export type WasmModule =
  typeof globalThis extends { WebAssembly: { Module: abstract new (...args: never[]) => infer M } } ? M : never;
/** The bytes of the `.wasm` file. */
export type WasmBytes = ArrayBuffer | ArrayBufferView;
/** A WebAssembly module source for `init`: a URL, a fetch response, the bytes, or a compiled module. */
export type InitInput = string | GlobalInstance<'URL'> | GlobalInstance<'Request'> | GlobalInstance<'Response'> | WasmBytes | WasmModule;
/** Loads the engine (`aep_client_bg.wasm` beside the module); call and await it once, first. */
export default function init(input?: InitInput | { module_or_path: InitInput }): Promise<void>;
/** Loads the engine synchronously from compiled bytes or a module. */
export function initSync(module: WasmBytes | WasmModule | { module: WasmBytes | WasmModule }): void;

// Hand-kept: a template literal type, and JSON shapes that are recursive or open.
/** A vendor command type `x.{vendor}.control.{verb}`. */
export type VendorCommandType = `x.${string}.control.${string}`;
export type CommandType = CoreCommandType | VendorCommandType;
/** A JSON value, as carried in payloads. */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
/** An attr-match filter: attribute → value, list of values, or comparison. */
export type Filter = { [attribute: string]: Json };
export type AttentionKind = 'permission' | 'input' | 'auth' | 'review' | 'form' | 'other' | (string & {});

// Hand-kept: events cross as the JSON of their exact bytes, extension attributes and all.
/** One AEP event: the envelope as sent on the wire. */
export interface AepEvent {
  aep: string; id: string; type: string; time: string; source: string; agent: string;
  subject?: string; session?: string; run?: string; step?: string; seq?: number; epoch?: number;
  cause?: string; traceparent?: string; severity?: Severity; capture?: Capture;
  data?: { [key: string]: Json };
  /** Extension attributes: string, integer or boolean. */
  [extension: string]: Json | undefined;
}

// Hand-kept: read by the engine's answer type, which declares no TypeScript.
/** An answer to an attention request. */
export type AnswerInput = { option: string; text?: string } | { text: string } | { values: { [fieldId: string]: Json } };

// BEGIN names, views and inputs generated from the engine, src/view.rs and src/input.rs (tests/declarations.rs); do not edit by hand.

/** AEP-0001 §8.1, lowest first. */
export type Severity = 'debug' | 'info' | 'notice' | 'warning' | 'error' | 'critical';

/** AEP-0001 §8.2, least content first. */
export type Capture = 'none' | 'metadata' | 'redacted' | 'full';

/** A registered `control.rejected` reason (AEP-0004 §3). */
export type NackReason = 'unsupported' | 'unauthorized' | 'busy' | 'refused' | 'invalid';

/** The core command types (AEP-0004 §2). */
export type CoreCommandType = 'control.attention.respond' | 'control.cancel' | 'control.pause' | 'control.resume';

/** Where a card stands. */
export type CardStatus = 'pending' | 'answered' | 'resolved' | 'timed-out' | 'abandoned';

/** Where a session stands. */
export type SessionState = 'active' | 'paused' | 'ended';

/** What a `control.cancel` stops. */
export type CancelScope = 'run' | 'session';

/**
 * One offered choice: `id` is what an answer carries, `label` what a
 * person reads.
 */
export interface Choice {
  id: string;
  label: string;
}

/**
 * The four field primitives of a form.
 */
export type FieldType = "string" | "number" | "boolean" | "select";

/**
 * One field of a form (AEP-0002 §5.2), as the engine read it.
 */
export interface FieldSpec {
  id: string;
  type: FieldType;
  label: string;
  required?: boolean;
  /**
   * `select` only: several choices may be picked (answer is an array).
   */
  multi?: boolean;
  /**
   * `select` only: free text is allowed instead of a choice id.
   */
  other?: boolean;
  choices?: Choice[];
  /**
   * `number` only, inclusive.
   */
  min?: number;
  /**
   * `number` only, inclusive.
   */
  max?: number;
}

/**
 * What a command's promise resolves with once the target accepted it.
 */
export interface Accepted {
  /**
   * The target's `control.accepted`.
   */
  ack: AepEvent;
  /**
   * Resolves with the first event the command caused.
   */
  outcome: Promise<AepEvent>;
}

/**
 * What an evicted card or session says in place of its status: the store
 * dropped it to stay within its bounds.
 */
export type Evicted = "evicted";

/**
 * How a card closed: resolved by its emitter, or expired.
 */
export type CloseHow = "resolved" | "timed-out";

/**
 * Where a run stands.
 */
export type RunState = "open" | "finished" | "failed" | "cancelled";

/**
 * Where a command's audit chain stands, as the stream shows it.
 */
export type ChainStatus = "awaiting-ack" | "accepted" | "rejected" | "completed";

/**
 * What a target's ack decided.
 */
export type AckDecision = "accepted" | "rejected";

/**
 * Which link an outcome's `cause` followed: the command, or its ack.
 */
export type OutcomeLink = "command" | "ack";

/**
 * Whose rule a violation broke: the stream's, the control profile's, or a
 * relay's complaint.
 */
export type ViolationOrigin = "stream" | "control" | "relay";

/**
 * Where a command stands on its way to a decision (the sender's
 * `CommandState`, without what each state holds).
 */
export type CommandState = "pending" | "accepted" | "rejected" | "relay-refused" | "timeout";

/**
 * A relay connection's lifecycle (the client's `State`, without what each
 * state holds).
 */
export type ConnectionState = "idle" | "connecting" | "handshaking" | "live" | "reconnecting" | "refused" | "closed";

/**
 * What just happened to a command, as the `command` listener is told.
 */
export type CommandChange = "sent" | "retried" | "accepted" | "rejected" | "relay-refused" | "timeout" | "outcome" | "violation";

/**
 * Why a request was refused before anything was sent (`AepError.code`).
 */
export type AepErrorCode = "invalid-options" | "invalid-filter" | "invalid-argument" | "invalid-answer" | "invalid-command" | "no-websocket" | "unknown-relay" | "unknown-request" | "unknown-command" | "not-over-control" | "unroutable" | "not-live" | "backpressure" | "not-permitted" | "not-vendor-command" | "already-decided" | "no-roster" | "duplicate-command";

/**
 * Who refused a command (`NackError.kind`): its target, a relay on the
 * target's behalf, or nobody within the ack window.
 */
export type NackKind = "rejected" | "relay-refused" | "timeout";

/**
 * A session's identity: the owning emitter's `source` and the session name.
 */
export interface SessionKey {
  source: string;
  name: string;
}

/**
 * A session position `(epoch, seq)`.
 */
export interface Position {
  epoch: number;
  seq: number;
}

/**
 * An attention request and everything seen about it. Agent-authored text
 * (prompt, labels) is data: render it as text, next to its provenance
 * (agent, source, relay). The request's facts are absent until its
 * `attention.requested` event was seen.
 */
export interface Card {
  id: string;
  session: SessionKey;
  status: CardStatus;
  needsAnswer: boolean;
  severity: Severity;
  firstSeen: number;
  /**
   * Ids of the commands seen for this card.
   */
  commands: string[];
  latencyMs?: number;
  kind?: AttentionKind;
  prompt?: string;
  options?: Choice[];
  fields?: FieldSpec[];
  fieldsError?: string;
  respondVia?: string[];
  acceptsControl?: boolean;
  expiresAt?: number;
  capture?: Capture;
  agent?: string;
  source?: string;
  run?: string;
  subject?: string;
  /**
   * Label of the relay the request arrived through.
   */
  relay?: string;
  time?: string;
  requestedAt?: number;
  receivedAt?: number;
  routed?: RoutedHop[];
  answer?: CardAnswer;
  close?: CardClose;
}

/**
 * A card dropped to stay within the store's bounds.
 */
export interface EvictedCard {
  id: string;
  session: SessionKey;
  status: Evicted;
}

/**
 * A consumer that forwarded a request (`attention.routed`).
 */
export interface RoutedHop {
  eventId: string;
  agent: string;
  source: string;
  time: string;
  relay?: string;
}

/**
 * The answer a card received (`attention.answered`).
 */
export interface CardAnswer {
  eventId: string;
  option?: string;
  text?: string;
  values?: { [fieldId: string]: Json };
  by?: string;
  via?: string;
  cause?: string;
  time: string;
}

/**
 * How a card closed.
 */
export interface CardClose {
  how: CloseHow;
  resolution?: string;
  latencyMs?: number;
  afterMs?: number;
  eventId: string;
  cause?: string;
  time: string;
}

/**
 * A session, short, for lists.
 */
export interface SessionSummary {
  key: SessionKey;
  source: string;
  name: string;
  agent: string;
  state: SessionState;
  label?: string;
  position?: Position;
  /**
   * Cards waiting on a person.
   */
  pending: number;
  events: number;
  firstSeen: number;
  updatedAt: number;
}

/**
 * A session dropped to stay within the store's bounds.
 */
export interface EvictedSession {
  key: SessionKey;
  source: string;
  name: string;
  state: Evicted;
}

/**
 * One run of a session.
 */
export interface RunView {
  name: string;
  status: RunState;
  events: number;
  startedEvent?: string;
  startedTime?: string;
  end?: RunEnd;
}

/**
 * The event that ended a run.
 */
export interface RunEnd {
  eventId: string;
  time: string;
  cause?: string;
  reason?: string;
  by?: string;
}

/**
 * A command's audit chain as the stream shows it (whoever sent it).
 */
export interface CommandChain {
  id: string;
  status: ChainStatus;
  type?: string;
  issued?: CommandIssued;
  ack?: CommandAck;
  outcome?: CommandOutcome;
  ackLatencyMs?: number;
  outcomeLatencyMs?: number;
}

/**
 * The command event itself.
 */
export interface CommandIssued {
  type: string;
  senderAgent: string;
  senderSource: string;
  run?: string;
  subject?: string;
  relay?: string;
  time: string;
}

/**
 * The target's ack of a command.
 */
export interface CommandAck {
  eventId: string;
  time: string;
  decision: AckDecision;
  reason?: string;
  detail?: string;
}

/**
 * The event that settled a command's outcome, and how it points back.
 */
export interface CommandOutcome {
  eventId: string;
  type: string;
  link: OutcomeLink;
  time: string;
}

/**
 * One session with its runs, cards and command chains: its summary and
 * what a session page shows beyond it.
 */
export interface SessionDetail extends SessionSummary {
  started?: SessionStart;
  end?: SessionEnd;
  runs: RunView[];
  cards: Card[];
  commands: CommandChain[];
}

/**
 * The `session.started` event of a session.
 */
export interface SessionStart {
  eventId: string;
  time: string;
  label?: string;
  parent?: string;
}

/**
 * The `session.ended` event of a session.
 */
export interface SessionEnd {
  eventId: string;
  time: string;
  reason?: string;
}

/**
 * A command this client sent, as it is followed.
 */
export interface CommandView {
  id: string;
  type: string;
  session?: string;
  run?: string;
  subject?: string;
  relay?: string;
  state: CommandState;
  sends: number;
  windowMs: number;
  firstSent: number;
  lastSent: number;
  settledAt?: number;
  deadline?: number;
  ackId?: string;
  reason?: string;
  detail?: string;
  relayCode?: string;
  outcomeId?: string;
  outcomeType?: string;
  ackLatencyMs?: number;
  outcomeLatencyMs?: number;
}

/**
 * What the `command` listener receives: the view and what just changed.
 */
export interface CommandUpdate extends CommandView {
  change: CommandChange;
}

/**
 * One relay connection's status.
 */
export interface RelayStatus {
  relay: string;
  state: ConnectionState;
  /**
   * Reconnect attempt.
   */
  attempt?: number;
  /**
   * When the reconnect happens (ms since the epoch).
   */
  retryAt?: number;
  /**
   * Why a refused connection was refused.
   */
  reason?: string;
  /**
   * Why the previous socket was lost.
   */
  lost?: string;
  /**
   * A relay error frame that refused none of this client's commands.
   */
  error?: RelayError;
  replayExhausted?: ReplayExhausted;
  closing?: string;
}

/**
 * A relay `error` frame that refused none of this client's commands.
 */
export interface RelayError {
  code: string;
  detail?: string;
  id?: string;
  cause?: string;
}

/**
 * Where the relay's history of a session being resumed now starts.
 */
export interface ReplayExhausted {
  session: string;
  epoch: number;
  seq: number;
}

/**
 * An agent's connection status, with what it holds back.
 */
export interface AgentStatus extends RelayStatus {
  /**
   * Events waiting for a live socket (kept across reconnects).
   */
  queued: number;
  /**
   * `debug`/`info` events dropped to make room in a full queue.
   */
  dropped: number;
}

/**
 * A broken rule: of the stream, of the control profile, or a relay's
 * complaint.
 */
export interface Violation {
  origin: ViolationOrigin;
  rule: string;
  detail: string;
  reference?: string;
  eventId?: string;
  session?: SessionKey;
  commandId?: string;
  relay?: string;
}

/**
 * A session a relay's roster lists, with its emitter's claim.
 */
export interface RosterEntry {
  relay: string;
  session: string;
  agent?: string;
  instance?: string;
  control?: RosterControl;
  emits?: string[];
}

/**
 * The commands a target takes and its ack window.
 */
export interface RosterControl {
  accepts?: string[];
  ackWindowMs?: number;
}

/**
 * What a fold of a whole stream amounts to.
 */
export interface Projection {
  sessions: SessionSummary[];
  inbox: Card[];
  violations: Violation[];
  counts: Counts;
  /**
   * What `limits` made the fold drop; all zero when it holds everything.
   */
  evicted: Evictions;
  /**
   * What could not be folded (`projectState`'s input only).
   */
  rejected: Rejected;
}

/**
 * How much a fold holds.
 */
export interface Counts {
  sessions: number;
  events: number;
  runs: number;
  cards: number;
  pending: number;
  commands: number;
  agents: number;
  unattached: number;
  violations: number;
}

/**
 * Inputs that were not events: how many, and the first few.
 */
export interface Rejected {
  count: number;
  first: RejectedLine[];
}

/**
 * One input that was not an event, by its index (line or element).
 */
export interface RejectedLine {
  index: number;
  error: string;
}

/**
 * What a bounded fold dropped, by kind (the store's `Evictions`).
 */
export interface Evictions {
  sessions: number;
  events: number;
  runs: number;
  cards: number;
  commands: number;
  agents: number;
  agentEvents: number;
  unattached: number;
  seenIds: number;
  changes: number;
  violations: number;
}

/**
 * A resume position: what `positions()` returns per relay and
 * `restorePositions` takes back.
 */
export interface SessionPosition {
  epoch: number;
  seq: number;
  session: string;
}

/**
 * A rule an event breaks on its own (`validateEvent`).
 */
export interface EventViolation {
  detail: string;
  rule: string;
}

/**
 * What `validateEvent` found.
 */
export interface EventValidation {
  valid: boolean;
  violations: EventViolation[];
}

/**
 * Why a filter is invalid.
 */
export interface FilterError {
  code: string;
  detail: string;
  key?: string;
}

/**
 * What `validateFilter` found.
 */
export interface FilterValidation {
  error?: FilterError;
  valid: boolean;
}

/**
 * How an accepted answer came to be what is applied (the engine's
 * `AppliedRule`).
 */
export type AnswerRule = "as-sent" | "text-named-option" | "unmatched-text-refused";

/**
 * What an accepted command asks the agent to do.
 */
export type TargetAction = { type: "respond"; request: string; answer: AnswerInput; rule: AnswerRule } | { type: "cancel"; scope: CancelScope; reason?: string } | { type: "pause" } | { type: "resume" } | { type: "vendor"; commandType: string; data: { [key: string]: Json } };

/**
 * What receiving a command came to; `ack` is the event already queued
 * (the JavaScript object of its exact bytes).
 */
export type Received = { kind: "fresh"; ack: AepEvent; action: TargetAction } | { kind: "nacked"; ack: AepEvent; reason: NackReason } | { kind: "duplicate"; ack: AepEvent };

/**
 * Who a command is for: a session, a run of it, and (optionally) the
 * relay to send it through.
 */
export interface Recipient {
  session: string;
  run?: string;
  /**
   * A relay label, overriding routing.
   */
  relay?: string;
}

/**
 * `cancel(args)`: a run or a whole session.
 */
export interface CancelArgs extends Recipient {
  scope: CancelScope;
  reason?: string;
}

/**
 * `command(type, args)`: a vendor command's target and payload.
 */
export interface VendorArgs extends Recipient {
  subject?: string;
  data?: { [key: string]: Json };
  /**
   * The payload's capture level (default `metadata`).
   */
  capture?: Capture;
}

/**
 * `projectState`'s `limits`: any of the store's bounds; a bound not given
 * is unlimited.
 */
export interface StoreLimits {
  maxSessions?: number;
  /**
   * Events, runs, cards and command chains held by all sessions together.
   */
  maxHeld?: number;
  maxTimelinePerSession?: number;
  maxRunsPerSession?: number;
  maxCardsPerSession?: number;
  maxCommandsPerSession?: number;
  maxAgents?: number;
  maxAgentEvents?: number;
  maxUnattached?: number;
  maxSeenIds?: number;
  maxViolations?: number;
}

/**
 * One relay of `new AepClient(options)`.
 */
export interface RelayOptions {
  /**
   * ws(s):// or http(s):// URL; an origin alone means `/socket`.
   */
  url: string;
  /**
   * Sent only as `?access_token=` on the upgrade; never logged.
   */
  token?: string;
  /**
   * Shown as provenance; defaults to the URL without its query.
   */
  label?: string;
}

/**
 * How subscriptions resume after a reconnect.
 */
export type Resume = "positions" | "all";

/**
 * `new AepClient(options)`.
 */
export interface AepClientOptions {
  relays: RelayOptions[];
  /**
   * The `agent` this client's commands carry.
   */
  agent: string;
  /**
   * Host part of the default source `aep://{host}/agent/{agent}`.
   */
  host?: string;
  /**
   * The `source` this client's commands carry (overrides `host`).
   */
  source?: string;
  filter?: Filter;
  /**
   * Capture ceiling asked of each relay.
   */
  capture?: Capture;
  /**
   * Ack window for targets that declared none (default 10 000 ms).
   */
  ackWindowMs?: number;
  pingIntervalMs?: number;
  /**
   * `positions` (default) or `all`: how subscriptions resume.
   */
  resume?: Resume;
  /**
   * Defaults to the global WebSocket (Node 20: `--experimental-websocket`).
   */
  WebSocket?: WebSocketConstructor;
}

/**
 * `new ControlTarget(options)`; `new AepAgent(options)` takes these too.
 */
export interface ControlTargetOptions {
  agent: string;
  accepts: CommandType[];
  host?: string;
  source?: string;
  /**
   * Stamped on every event. Defaults to the start-up time in ms, so that a
   * restarted agent is a new, later epoch and never repeats a position.
   */
  epoch?: number;
  /**
   * The capture ceiling of everything the target emits (AEP-0003 §9.1),
   * default `metadata`: a person's text (answers, reasons) is `full` content
   * and is dropped from outcomes below `full`. Nothing is redacted.
   */
  capture?: Capture;
}

/**
 * `new AepAgent(options)`.
 */
export interface AepAgentOptions extends ControlTargetOptions {
  /**
   * The relay, e.g. `http://127.0.0.1:8787`.
   */
  url: string;
  /**
   * Sent only in the socket URL; never logged or shown.
   */
  token?: string;
  /**
   * Declared in hello as `control.ack_window_ms`.
   */
  ackWindowMs?: number;
  pingIntervalMs?: number;
  /**
   * Asked, synchronously, about each first delivery of a command that passed
   * the protocol's checks. It must not call back into the agent.
   */
  decide?: (action: TargetAction) => Verdict;
  WebSocket?: WebSocketConstructor;
}

/**
 * One of an agent's own events, before the target stamps it.
 */
export interface EventDraft {
  type: string;
  session?: string;
  run?: string;
  step?: string;
  subject?: string;
  cause?: string;
  traceparent?: string;
  severity?: Severity;
  capture?: Capture;
  data?: { [key: string]: Json };
  /**
   * Defaults to the session's next; a named one must be above every seq already used.
   */
  seq?: number;
  epoch?: number;
}

// END names, views and inputs generated from the engine, src/view.rs and src/input.rs.

// Hand-kept: functions and promises, which are no data.
/** The WebSocket constructor the client uses (the global one, or e.g. `ws`). */
export type WebSocketConstructor = new (url: string) => {
  send(data: string): void; close(code?: number, reason?: string): void; binaryType: string;
  onopen: ((ev: never) => unknown) | null; onmessage: ((ev: never) => unknown) | null;
  onclose: ((ev: never) => unknown) | null; onerror: ((ev: never) => unknown) | null;
};
export type Unsubscribe = () => void;
/** What `decide` returns: `undefined` or `true` accepts; `false` refuses; `{ reject }` nacks with that reason. */
export type Verdict = undefined | boolean | { reject: NackReason; detail?: string };

// Hand-kept: wasm-bindgen's exports, with overloads and types narrowed beyond what it declares.
export class AepClient {
  constructor(options: AepClientOptions);
  /** Connects every relay; resolves once each has been live or refused. */
  connect(): Promise<RelayStatus[]>;
  close(): void;
  on(kind: 'attention', listener: (card: Card | EvictedCard) => void): Unsubscribe;
  on(kind: 'event', listener: (event: AepEvent, relay: string) => void): Unsubscribe;
  on(kind: 'command', listener: (command: CommandUpdate) => void): Unsubscribe;
  on(kind: 'session', listener: (session: SessionSummary | EvictedSession) => void): Unsubscribe;
  on(kind: 'status', listener: (status: RelayStatus) => void): Unsubscribe;
  on(kind: 'violation', listener: (violation: Violation) => void): Unsubscribe;
  /** Rejects with `NackError` when refused, `AepError` when not sent. */
  respond(requestId: string, answer: AnswerInput): Promise<Accepted>;
  cancel(args: CancelArgs): Promise<Accepted>;
  pause(target: string | Recipient): Promise<Accepted>;
  resume(target: string | Recipient): Promise<Accepted>;
  command(type: VendorCommandType, args: VendorArgs): Promise<Accepted>;
  /** Sends a command again with the same id, until an ack is seen. */
  retry(commandId: string): Promise<Accepted>;
  /** Asks one relay (by label) or every live relay for its roster. */
  roster(relay?: string): Promise<RosterEntry[]>;
  inbox(): Card[];
  sessions(): SessionSummary[];
  session(key: SessionKey): SessionDetail | null;
  /** Resume positions per relay label: what to persist. */
  positions(): { [relay: string]: SessionPosition[] };
  /** Seeds positions saved by `positions()`, before `connect()`: all or (`AepError`) none. Returns how many were taken. */
  restorePositions(saved: { [relay: string]: SessionPosition[] }): number;
  status(): RelayStatus[];
  commands(): CommandView[];
  violations(): Violation[];
  free(): void;
}
export class ControlTarget {
  constructor(options: ControlTargetOptions);
  readonly source: string; readonly agent: string; readonly accepts: string[];
  /** Builds one of the agent's events; session events take the next seq. */
  event(draft: EventDraft): AepEvent;
  registerRequest(requested: AepEvent, refusingOption?: string): void;
  closeRequest(id: string): boolean;
  handleCommand(command: AepEvent, decide?: (action: TargetAction) => Verdict): Received;
  answerOutcomes(command: AepEvent, action: Extract<TargetAction, { type: 'respond' }>): AepEvent[];
  outcome(command: AepEvent, draft: EventDraft): AepEvent;
  runCancelled(command: AepEvent, reason?: string): AepEvent;
  progressStatus(command: AepEvent, phase: string, message?: string): AepEvent;
  peekSeq(session: string): number;
  setNextSeq(session: string, seq: number): void;
  free(): void;
}
/** An agent on one relay: its events at increasing (epoch, seq), queued while cut off, every command acked. */
export class AepAgent {
  constructor(options: AepAgentOptions);
  /** Resolves once live, or refused. */
  connect(): Promise<AgentStatus>;
  close(): void;
  /** Every command, after its ack was queued: act on `received.kind === 'fresh'`. */
  on(kind: 'command', listener: (command: AepEvent, received: Received) => void): Unsubscribe;
  on(kind: 'status', listener: (status: AgentStatus) => void): Unsubscribe;
  on(kind: 'violation', listener: (detail: string) => void): Unsubscribe;
  /** Builds, stamps and sends one of the agent's own events. */
  emit(draft: EventDraft): AepEvent;
  /** Emits an `attention.requested` and registers it so answers are checked. */
  ask(draft: EventDraft, refusingOption?: string): AepEvent;
  /** Sends `attention.answered` and `attention.resolved` for an accepted respond. */
  answer(command: AepEvent, action: Extract<TargetAction, { type: 'respond' }>): AepEvent[];
  outcome(command: AepEvent, draft: EventDraft): AepEvent;
  runCancelled(command: AepEvent, reason?: string): AepEvent;
  progressStatus(command: AepEvent, phase: string, message?: string): AepEvent;
  closeRequest(id: string): boolean;
  status(): AgentStatus;
  free(): void;
}
export function validateEvent(event: AepEvent | string): EventValidation;
export function validateFilter(filter: Filter): FilterValidation;
/** Throws `AepError` (`invalid-filter`) for an invalid filter. */
export function matches(filter: Filter, event: AepEvent): boolean;
/** Folds a stream (events, JSON texts, or JSONL as text or UTF-8 bytes) into state, bounded by `options.limits`. */
export function projectState(events: ReadonlyArray<AepEvent | string> | string | Uint8Array, options?: { limits?: StoreLimits }): Projection;

// Hand-kept: the error classes, defined in JavaScript (src/js/errors.js) so `instanceof` works.
/**
 * A command that will not be carried out: its target's nack (`rejected`, with that `ack`), a relay's
 * refusal (`relay-refused`, with its `relayCode`), or no ack in time (`timeout`, `synthesized`: decided here).
 */
export class NackError extends Error {
  readonly name: 'NackError'; readonly kind: NackKind; readonly commandId: string; readonly synthesized: boolean;
  /** The nack reason, the relay's code, or `timeout`. */
  readonly reason: NackReason | 'timeout' | (string & {});
  readonly detail?: string; readonly relayCode?: string; readonly ack?: AepEvent;
}
/** A request refused before anything was sent. */
export class AepError extends Error { readonly name: 'AepError'; readonly code: AepErrorCode; }
