// Error classes of the JavaScript API. They live in JavaScript so that
// `instanceof` and stack traces work as for any other Error.

/**
 * A command that will not be carried out: the target's `control.rejected`
 * (kind "rejected"), a relay refusing it on the target's behalf (kind
 * "relay-refused", with `relayCode`), or no ack within the window (kind
 * "timeout", `synthesized` true: known only locally, never sent).
 */
export class NackError extends Error {
  constructor(fields) {
    super(fields.message);
    this.name = 'NackError';
    this.kind = fields.kind;
    this.reason = fields.reason;
    this.synthesized = fields.synthesized === true;
    this.commandId = fields.commandId;
    if (fields.detail !== undefined) this.detail = fields.detail;
    if (fields.relayCode !== undefined) this.relayCode = fields.relayCode;
    if (fields.ack !== undefined) this.ack = fields.ack;
  }
}

/** A request the client refused before anything was sent; `code` says why. */
export class AepError extends Error {
  constructor(code, message) {
    super(message);
    this.name = 'AepError';
    this.code = code;
  }
}

export function makeNackError(fields) {
  return new NackError(fields);
}

export function makeAepError(code, message) {
  return new AepError(code, message);
}
