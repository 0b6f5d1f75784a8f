// Type declarations of the aep-client package: every object that crosses
// the boundary between JavaScript and the engine.

// ----- initialisation ---------------------------------------------------------

/**
 * The instance type of a global constructor when the environment declares
 * one (the DOM library, or Node's types); otherwise `never`. It keeps these
 * declarations free of any library beyond ES2022.
 */
type GlobalInstance<Name extends string> =
  typeof globalThis extends Record<Name, abstract new (...args: never[]) => infer T> ? T : never;

/** A compiled `WebAssembly.Module`, where the environment declares one. */
export type WasmModule =
  typeof globalThis extends { WebAssembly: { Module: abstract new (...args: never[]) => infer M } } ? M : never;

/** The bytes of the `.wasm` file. */
export type WasmBytes = ArrayBuffer | ArrayBufferView;

/** A WebAssembly module source for `init`: a URL, a fetch response, the bytes, or a compiled module. */
export type InitInput = string | GlobalInstance<'URL'> | GlobalInstance<'Request'> | GlobalInstance<'Response'> | WasmBytes | WasmModule;

/**
 * Loads the engine. In browsers it fetches `aep_client_bg.wasm` next to
 * the module; in Node it reads that file. Call (and await) once before
 * anything else.
 */
export default function init(input?: InitInput | { module_or_path: InitInput }): Promise<void>;

/** Loads the engine synchronously from compiled bytes or a module. */
export function initSync(module: WasmBytes | WasmModule | { module: WasmBytes | WasmModule }): void;

// ----- the wire ---------------------------------------------------------------

/** A vendor command type `x.{vendor}.control.{verb}`. */
export type VendorCommandType = `x.${string}.control.${string}`;
export type CommandType = CoreCommandType | VendorCommandType;

/** A JSON value, as carried in payloads. */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/** One AEP event: the envelope as sent on the wire. */
export interface AepEvent {
  aep: string;
  id: string;
  type: string;
  time: string;
  source: string;
  agent: string;
  subject?: string;
  session?: string;
  run?: string;
  step?: string;
  seq?: number;
  epoch?: number;
  cause?: string;
  traceparent?: string;
  severity?: Severity;
  capture?: Capture;
  data?: { [key: string]: Json };
  /** Extension attributes: string, integer or boolean. */
  [extension: string]: Json | undefined;
}

/** An attr-match filter: attribute → value, list of values, or comparison. */
export type Filter = { [attribute: string]: Json };

/** An answer to an attention request. */
export type AnswerInput =
  | { option: string; text?: string }
  | { text: string }
  | { values: { [fieldId: string]: Json } };

export interface Choice {
  id: string;
  label: string;
}

export interface FieldSpec {
  id: string;
  type: 'string' | 'number' | 'boolean' | 'select';
  label: string;
  required?: boolean;
  multi?: boolean;
  other?: boolean;
  choices?: Choice[];
  min?: number;
  max?: number;
}

// ----- state views ------------------------------------------------------------

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

/** Where a command stands on its way to a decision. */
export type CommandState = 'pending' | 'accepted' | 'rejected' | 'relay-refused' | 'timeout';

/** A relay connection's lifecycle. */
export type ConnectionState = 'idle' | 'connecting' | 'handshaking' | 'live' | 'reconnecting' | 'refused' | 'closed';

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
  status: 'evicted';
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
  how: 'resolved' | 'timed-out';
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
  state: 'evicted';
}

/**
 * One run of a session.
 */
export interface RunView {
  name: string;
  status: 'open' | 'finished' | 'failed' | 'cancelled';
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
  status: 'awaiting-ack' | 'accepted' | 'rejected' | 'completed';
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
  decision: 'accepted' | 'rejected';
  reason?: string;
  detail?: string;
}

/**
 * The event that settled a command's outcome, and how it points back.
 */
export interface CommandOutcome {
  eventId: string;
  type: string;
  link: 'command' | 'ack';
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
  origin: 'stream' | 'control' | 'relay';
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
 * Who a command is for: a session, a run of it, and (optionally) the
 * relay to send it through.
 */
export interface Target {
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
export interface CancelArgs extends Target {
  scope: 'run' | 'session';
  reason?: string;
}

/**
 * `command(type, args)`: a vendor command's target and payload.
 */
export interface VendorArgs extends Target {
  subject?: string;
  data?: { [key: string]: Json };
  /**
   * The payload's capture level (default `metadata`).
   */
  capture?: Capture;
}

// END names, views and inputs generated from the engine, src/view.rs and src/input.rs.

export type AttentionKind = 'permission' | 'input' | 'auth' | 'review' | 'form' | 'other' | (string & {});

export type CommandChange = 'sent' | 'retried' | 'accepted' | 'rejected' | 'relay-refused' | 'timeout' | 'outcome' | 'violation';

export interface SessionPosition {
  session: string;
  epoch: number;
  seq: number;
}

// ----- the client -------------------------------------------------------------

/** The WebSocket constructor the client uses (the global one, or e.g. `ws`). */
export type WebSocketConstructor = new (url: string) => {
  send(data: string): void;
  close(code?: number, reason?: string): void;
  binaryType: string;
  onopen: ((ev: never) => unknown) | null;
  onmessage: ((ev: never) => unknown) | null;
  onclose: ((ev: never) => unknown) | null;
  onerror: ((ev: never) => unknown) | null;
};

export interface RelayOptions {
  /** ws(s):// or http(s):// URL; an origin alone means `/socket`. */
  url: string;
  /** Sent only as `?access_token=` on the upgrade; never logged. */
  token?: string;
  /** Shown as provenance; defaults to the URL without its query. */
  label?: string;
}

export interface AepClientOptions {
  relays: RelayOptions[];
  /** The `agent` this client's commands carry. */
  agent: string;
  /** Host part of the default source `aep://{host}/agent/{agent}`. */
  host?: string;
  /** The `source` this client's commands carry (overrides `host`). */
  source?: string;
  filter?: Filter;
  /** Capture ceiling asked of each relay. */
  capture?: Capture;
  /** Ack window for targets that declared none (default 10 000 ms). */
  ackWindowMs?: number;
  pingIntervalMs?: number;
  /** `positions` (default) or `all`: how subscriptions resume. */
  resume?: 'positions' | 'all';
  /** Defaults to the global WebSocket (Node 20: `--experimental-websocket`). */
  WebSocket?: WebSocketConstructor;
}

/** Settles when the target decided: `ack` is its `control.accepted`, and
 * `outcome` resolves with the first event the command caused. */
export interface Accepted {
  ack: AepEvent;
  outcome: Promise<AepEvent>;
}

export type Unsubscribe = () => void;

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
  pause(target: string | Target): Promise<Accepted>;
  resume(target: string | Target): Promise<Accepted>;
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
  /**
   * Seeds positions saved from `positions()` in an earlier run, so
   * subscriptions resume after them instead of replaying. Call before
   * `connect()`. Throws `AepError` (`invalid-argument`) and takes nothing
   * when the shape is wrong; skips labels this client does not have.
   * Returns how many positions were taken.
   */
  restorePositions(saved: { [relay: string]: SessionPosition[] }): number;
  status(): RelayStatus[];
  commands(): CommandView[];
  violations(): Violation[];
  free(): void;
}

/** A command that will not be carried out. */
export class NackError extends Error {
  readonly name: 'NackError';
  /** `rejected` (the target's nack), `relay-refused`, or `timeout`. */
  readonly kind: 'rejected' | 'relay-refused' | 'timeout';
  /** The nack reason, the relay's code, or `timeout`. */
  readonly reason: NackReason | 'timeout' | (string & {});
  readonly detail?: string;
  /** True for a timeout: decided locally, never sent by anyone. */
  readonly synthesized: boolean;
  /** The relay's error code (`no-route`, `unsupported`, `ambiguous`, `unauthorized`, …). */
  readonly relayCode?: string;
  readonly commandId: string;
  /** The target's `control.rejected` event. */
  readonly ack?: AepEvent;
}

export type AepErrorCode =
  | 'invalid-options'
  | 'invalid-filter'
  | 'invalid-argument'
  | 'invalid-answer'
  | 'invalid-command'
  | 'no-websocket'
  | 'unknown-relay'
  | 'unknown-request'
  | 'unknown-command'
  | 'not-over-control'
  | 'unroutable'
  | 'not-live'
  | 'backpressure'
  | 'not-permitted'
  | 'not-vendor-command'
  | 'already-decided'
  | 'no-roster'
  | 'duplicate-command';

/** A request refused before anything was sent. */
export class AepError extends Error {
  readonly name: 'AepError';
  readonly code: AepErrorCode;
}

// ----- pure helpers -----------------------------------------------------------

export interface EventViolation {
  rule: string;
  detail: string;
}

export function validateEvent(event: AepEvent | string): { valid: boolean; violations: EventViolation[] };
export function validateFilter(filter: Filter): { valid: boolean; error?: { code: string; key?: string; detail: string } };
/** Throws `AepError` (`invalid-filter`) for an invalid filter. */
export function matches(filter: Filter, event: AepEvent): boolean;

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

/** Bounds for `projectState`; a bound not given is unlimited. */
export interface StoreLimits {
  maxSessions?: number;
  /** Events, runs, cards and command chains held by all sessions together. */
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
 * Folds a stream (events, JSON texts, or one JSONL text as a string or as
 * UTF-8 bytes) into state. The fold holds the whole stream unless
 * `options.limits` bounds it; `evicted` says what the bounds dropped,
 * `rejected` which inputs (by index, or line) were not events.
 */
export function projectState(
  events: ReadonlyArray<AepEvent | string> | string | Uint8Array,
  options?: { limits?: StoreLimits },
): Projection;

// ----- the agent side ---------------------------------------------------------

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
  /** Defaults to the session's next; a named one must be above every seq already used. */
  seq?: number;
  epoch?: number;
}

export type TargetAction =
  | { type: 'respond'; request: string; answer: AnswerInput; rule: 'as-sent' | 'text-named-option' | 'unmatched-text-refused' }
  | { type: 'cancel'; scope: 'run' | 'session'; reason?: string }
  | { type: 'pause' }
  | { type: 'resume' }
  | { type: 'vendor'; commandType: string; data: { [key: string]: Json } };

/** `undefined` or `true` accepts; `false` refuses; `{ reject }` nacks with that reason. */
export type Verdict = undefined | boolean | { reject: NackReason; detail?: string };

export type Received =
  | { kind: 'fresh'; ack: AepEvent; action: TargetAction }
  | { kind: 'nacked'; ack: AepEvent; reason: NackReason }
  | { kind: 'duplicate'; ack: AepEvent };

export class ControlTarget {
  constructor(options: ControlTargetOptions);
  readonly source: string;
  readonly agent: string;
  readonly accepts: string[];
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

export interface AepAgentOptions extends ControlTargetOptions {
  /** The relay, e.g. `http://127.0.0.1:8787`. */
  url: string;
  /** Sent only in the socket URL; never logged or shown. */
  token?: string;
  /** Declared in hello as `control.ack_window_ms`. */
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
 * An agent on one relay: hello with the commands it takes, its events at
 * strictly increasing (epoch, seq) positions, what it queues while cut off
 * sent after the reconnect, and every command acknowledged as it arrives.
 */
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
