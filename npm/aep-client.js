// Entry point of the aep-client package: the engine's bindings, the error
// classes, and an `init` that also works in Node (where `fetch` cannot
// read the .wasm file next to this module).
import wasmInit from './aep_client.js';

export * from './aep_client.js';
export { NackError, AepError } from './__ERRORS_MODULE__';

const isNode = typeof process !== 'undefined' && process.versions != null && process.versions.node != null
  && typeof window === 'undefined';

/** Loads the engine; call (and await) once before anything else. */
export default async function init(input) {
  if (input === undefined && isNode) {
    const { readFile } = await import('node:fs/promises');
    const bytes = await readFile(new URL('./aep_client_bg.wasm', import.meta.url));
    await wasmInit({ module_or_path: bytes });
    return;
  }
  await wasmInit(input === undefined ? undefined : input);
}
