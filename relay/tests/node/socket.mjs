// A relay socket opened with Node's built-in WebSocket (undici), which
// offers permessage-deflate as browsers do. Driven over stdio by a test:
// each stdin line is a JSON command, {"send": "<text>"} or {"close": true};
// each stdout line is a JSON observation: open (with the negotiated
// extensions), message, error, close (code, reason, wasClean).
//
//   node --experimental-websocket socket.mjs ws://127.0.0.1:PORT/socket?access_token=…
import { createInterface } from 'node:readline';

const say = (observation) => process.stdout.write(JSON.stringify(observation) + '\n');
const ws = new WebSocket(process.argv[2]);
ws.onopen = () => say({ event: 'open', extensions: ws.extensions });
ws.onmessage = (m) => say({ event: 'message', data: String(m.data) });
ws.onerror = () => say({ event: 'error' });
ws.onclose = (c) => {
  say({ event: 'close', code: c.code, reason: c.reason, wasClean: c.wasClean });
  process.exit(0);
};
createInterface({ input: process.stdin }).on('line', (line) => {
  const command = JSON.parse(line);
  if (command.send !== undefined) ws.send(command.send);
  if (command.close) ws.close();
});
