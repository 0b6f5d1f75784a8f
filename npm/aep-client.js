// Entry point of the aep-client package for browsers and bundlers: the
// engine's bindings, the error classes, and `init`, which fetches the .wasm
// next to this module unless given the module or its bytes. Node resolves
// to aep-client.node.js instead (package.json `exports` conditions), so no
// bundler ever sees a Node built-in.
import wasmInit from './aep_client.js';

export * from './aep_client.js';
export { NackError, AepError } from './__ERRORS_MODULE__';

/** Loads the engine; call (and await) once before anything else. */
export default async function init(input) {
  await wasmInit(input === undefined ? undefined : input);
}
