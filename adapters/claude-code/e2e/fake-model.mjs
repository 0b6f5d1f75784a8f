// A scripted stand-in for the Anthropic Messages API on loopback: enough
// of its streaming replies for the real Claude Code CLI to run a turn.
// It reads what to do from the last user message:
//   "RUN:<command>"          → one Bash tool call
//   "TWO:<first>|<second>"   → two Bash tool calls in one reply
//   tool results             → a closing text that quotes them
// and keeps every tool result it was sent, so a test can see what the
// model was told (a denial's message, say).

import { createServer } from 'node:http';

export class FakeModel {
  constructor() {
    this.toolResults = [];
    this.requests = 0;
  }

  async start() {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => this.answer(req, res, body));
    });
    await new Promise((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${this.server.address().port}`;
    return this;
  }

  stop() {
    this.server.closeAllConnections?.();
    return new Promise((r) => this.server.close(r));
  }

  answer(req, res, raw) {
    this.requests++;
    let body = {};
    try {
      body = JSON.parse(raw);
    } catch {}
    const messages = body.messages || [];
    const last = [...messages].reverse().find((m) => m.role === 'user');
    const content = typeof last?.content === 'string' ? [{ type: 'text', text: last.content }] : last?.content || [];
    const results = content.filter((c) => c.type === 'tool_result');
    const text = content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
    const tools = (body.tools || []).length > 0;
    if (results.length) {
      this.toolResults.push(...results.map((r) => ({ id: r.tool_use_id, error: !!r.is_error, content: flatten(r.content) })));
      return reply(res, body.model, [textBlock(`GOT: ${results.map((r) => flatten(r.content)).join(' | ')}`)], 'end_turn');
    }
    const two = /TWO:(.+)\|(.+)$/m.exec(text);
    const one = /RUN:(.+)$/m.exec(text);
    if (tools && two) return reply(res, body.model, [bash('toolu_e2e_1', two[1]), bash('toolu_e2e_2', two[2])], 'tool_use');
    if (tools && one) return reply(res, body.model, [bash('toolu_e2e_1', one[1])], 'tool_use');
    reply(res, body.model, [textBlock('ok')], 'end_turn');
  }
}

function flatten(content) {
  if (typeof content === 'string') return content;
  return (content || []).map((c) => c.text ?? '').join('');
}

const textBlock = (text) => ({ start: { type: 'text', text: '' }, delta: { type: 'text_delta', text } });
const bash = (id, command) => ({
  start: { type: 'tool_use', id, name: 'Bash', input: {} },
  delta: { type: 'input_json_delta', partial_json: JSON.stringify({ command, description: 'as the test asks' }) },
});

function reply(res, model, blocks, stop) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const send = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  send('message_start', {
    message: { id: `msg_${Date.now()}`, type: 'message', role: 'assistant', model, content: [], stop_reason: null, usage: { input_tokens: 1, output_tokens: 1 } },
  });
  blocks.forEach((b, index) => {
    send('content_block_start', { index, content_block: b.start });
    send('content_block_delta', { index, delta: b.delta });
    send('content_block_stop', { index });
  });
  send('message_delta', { delta: { stop_reason: stop }, usage: { output_tokens: 5 } });
  send('message_stop', {});
  res.end();
}
