// Entry point of the aep-client package in Node: the same exports as the
// browser entry, with an `init` that reads the .wasm next to this module
// (Node's fetch cannot read files).
import { readFile } from 'node:fs/promises';
import wasmInit from './aep_client.js';

export * from './aep_client.js';
export { NackError, AepError } from './__ERRORS_MODULE__';

/** Loads the engine; call (and await) once before anything else. */
export default async function init(input) {
  if (input === undefined) {
    const bytes = await readFile(new URL('./aep_client_bg.wasm', import.meta.url));
    await wasmInit({ module_or_path: bytes });
    return;
  }
  await wasmInit(input);
}
