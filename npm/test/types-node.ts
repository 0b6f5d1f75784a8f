// A Node-only TypeScript project: ES2022 library only, no DOM, no Node
// types, skipLibCheck off. The declarations must check on their own.
import init, { AepClient, AepAgent, projectState, type AepEvent, type WasmBytes } from 'aep-client';

declare const bytes: WasmBytes;
declare const WebSocketImpl: ConstructorParameters<typeof AepClient>[0]['WebSocket'];

export async function start(): Promise<number> {
  await init({ module_or_path: bytes });
  const client = new AepClient({ relays: [{ url: 'http://127.0.0.1:8787' }], agent: 'node-only', ...(WebSocketImpl ? { WebSocket: WebSocketImpl } : {}) });
  const agent = new AepAgent({ url: 'http://127.0.0.1:8787', agent: 'node-agent', accepts: ['control.pause'] });
  agent.on('command', (command: AepEvent) => { void command.id; });
  const projection = projectState('');
  client.close();
  return projection.sessions.length;
}
