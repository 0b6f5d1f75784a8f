// A scripted stand-in for the OpenAI Responses API on loopback: enough of
// its streaming replies for the real Codex CLI to run a turn. It reads
// what to do from the latest user message:
//   "RUN:<command>"          → one escalated `exec_command` call, which
//                              makes Codex ask for approval
//   function_call_output     → a closing message that quotes it
// Codex's own auto-review (a request whose output schema is
// `codex_output_schema`) is answered with a verdict that denies. Every
// tool output and every review is kept, so a test can see what the model
// was told (a denial's message, say) and whether Codex reviewed by itself.

import { createServer } from 'node:http';

export class FakeResponses {
  constructor() {
    this.toolResults = [];
    this.reviews = [];
    this.requests = [];
    this.calls = 0;
  }

  async start() {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => this.answer(req, res, body));
    });
    await new Promise((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${this.server.address().port}/v1`;
    return this;
  }

  stop() {
    this.server.closeAllConnections?.();
    return new Promise((r) => this.server.close(r));
  }

  answer(req, res, raw) {
    this.requests.push(`${req.method} ${req.url}`);
    if (req.method !== 'POST' || !req.url.endsWith('/responses')) {
      res.writeHead(404, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ error: { message: `not scripted: ${req.method} ${req.url}` } }));
    }
    let body = {};
    try {
      body = JSON.parse(raw);
    } catch {}
    const input = Array.isArray(body.input) ? body.input : [];
    if (body.text?.format?.name === 'codex_output_schema') {
      this.reviews.push({ input, schema: body.text.format.schema });
      return stream(res, [message(JSON.stringify(verdict(body.text.format.schema)))]);
    }
    const outputs = input.filter((i) => i.type === 'function_call_output');
    const last = input[input.length - 1];
    if (last?.type === 'function_call_output') {
      for (const o of outputs) {
        if (!this.toolResults.some((r) => r.id === o.call_id && r.turn === this.calls)) {
          this.toolResults.push({ id: o.call_id, turn: this.calls, content: flatten(o.output) });
        }
      }
      return stream(res, [message(`GOT: ${flatten(last.output)}`)]);
    }
    const text = [...input].reverse().find((i) => i.role === 'user' && /RUN:/.test(flatten(i.content)));
    const run = text && /RUN:(.+)$/m.exec(flatten(text.content));
    const tools = (body.tools || []).map((t) => t.name);
    if (run && tools.includes('exec_command')) {
      this.calls++;
      return stream(res, [execCommand(`call_e2e_${this.calls}`, run[1].trim())]);
    }
    stream(res, [message('ok')]);
  }
}

/** What Codex's reviewer says: the lowest risk verdict the schema allows is not sought; it refuses. */
function verdict(schema) {
  const out = {};
  for (const [name, prop] of Object.entries(schema?.properties || {})) {
    if (prop.enum) out[name] = prop.enum.find((v) => /deny|reject|block|high/i.test(String(v))) ?? prop.enum[prop.enum.length - 1];
    else if (prop.type === 'boolean') out[name] = false;
    else if (prop.type === 'number' || prop.type === 'integer') out[name] = 100;
    else if (prop.type === 'array') out[name] = [];
    else out[name] = 'the fake reviewer refuses everything';
  }
  return out;
}

function flatten(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((c) => c.text ?? c.output ?? '').join('');
  return JSON.stringify(content ?? '');
}

const message = (text) => ({
  item: { type: 'message', id: `msg_${Math.random().toString(36).slice(2)}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text, annotations: [] }] },
  deltas: (index, item) => [['response.output_text.delta', { item_id: item.id, output_index: index, content_index: 0, delta: text }]],
});

const execCommand = (callId, cmd) => {
  const args = JSON.stringify({ cmd, sandbox_permissions: 'require_escalated', justification: 'the test asks for it' });
  return {
    item: { type: 'function_call', id: `fc_${callId}`, call_id: callId, name: 'exec_command', arguments: args, status: 'completed' },
    deltas: (index, item) => [
      ['response.function_call_arguments.delta', { item_id: item.id, output_index: index, delta: args }],
      ['response.function_call_arguments.done', { item_id: item.id, output_index: index, arguments: args }],
    ],
  };
};

function stream(res, outputs) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const send = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  const id = `resp_${Date.now()}`;
  send('response.created', { response: { id, status: 'in_progress', output: [] } });
  outputs.forEach(({ item, deltas }, index) => {
    const empty = item.type === 'message' ? { ...item, content: [] } : { ...item, arguments: '' };
    send('response.output_item.added', { output_index: index, item: empty });
    for (const [type, data] of deltas(index, item)) send(type, data);
    send('response.output_item.done', { output_index: index, item });
  });
  const usage = { input_tokens: 1, input_tokens_details: { cached_tokens: 0 }, output_tokens: 1, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 2 };
  send('response.completed', { response: { id, status: 'completed', output: outputs.map((o) => o.item), usage } });
  res.end();
}
