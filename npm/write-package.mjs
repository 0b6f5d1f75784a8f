// Turns wasm-pack's output directory into the aep-client npm package:
// the entry module, the hand-written type declarations, the README and a
// package.json that lists exactly what ships.
import { readFileSync, writeFileSync, readdirSync, statSync, rmSync, existsSync } from 'node:fs';
import { join, relative } from 'node:path';

const [pkgDir, npmDir] = process.argv.slice(2);
if (!pkgDir || !npmDir) {
  console.error('usage: node write-package.mjs <pkg dir> <npm template dir>');
  process.exit(2);
}

function find(dir, name) {
  for (const entry of readdirSync(dir)) {
    const p = join(dir, entry);
    if (statSync(p).isDirectory()) {
      const hit = find(p, name);
      if (hit) return hit;
    } else if (entry === name) {
      return p;
    }
  }
  return null;
}

const errors = find(join(pkgDir, 'snippets'), 'errors.js');
if (!errors) {
  console.error('write-package: the errors.js snippet is missing from the wasm-pack output');
  process.exit(1);
}
const errorsModule = './' + relative(pkgDir, errors).split('\\').join('/');
for (const entry of ['aep-client.js', 'aep-client.node.js']) {
  const text = readFileSync(join(npmDir, entry), 'utf8').replace('./__ERRORS_MODULE__', errorsModule);
  writeFileSync(join(pkgDir, entry), text);
}
writeFileSync(join(pkgDir, 'aep-client.d.ts'), readFileSync(join(npmDir, 'aep-client.d.ts')));
writeFileSync(join(pkgDir, 'README.md'), readFileSync(join(npmDir, 'README.md')));
writeFileSync(join(pkgDir, 'LICENSE'), readFileSync(join(npmDir, '..', 'LICENSE')));
for (const stale of ['.gitignore', 'aep_client.d.ts', 'aep_client_bg.wasm.d.ts']) {
  if (existsSync(join(pkgDir, stale))) rmSync(join(pkgDir, stale));
}

const generated = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
const pkg = {
  name: 'aep-client',
  version: generated.version,
  description: 'AEP (Agent Event Protocol) client: watch relays, answer attention requests, follow commands to their outcome. Rust engine compiled to WebAssembly.',
  license: 'Apache-2.0',
  type: 'module',
  main: './aep-client.js',
  module: './aep-client.js',
  types: './aep-client.d.ts',
  exports: {
    // Node gets the entry that reads the .wasm file; browsers and bundlers
    // one without any Node built-in.
    '.': { types: './aep-client.d.ts', node: './aep-client.node.js', browser: './aep-client.js', default: './aep-client.js' },
    './aep_client_bg.wasm': './aep_client_bg.wasm',
    './package.json': './package.json',
  },
  files: ['aep-client.js', 'aep-client.node.js', 'aep-client.d.ts', 'aep_client.js', 'aep_client_bg.wasm', 'snippets/', 'README.md', 'LICENSE'],
  sideEffects: false,
  engines: { node: '>=20' },
  keywords: ['aep', 'agent-event-protocol', 'agents', 'approval', 'websocket', 'wasm'],
};
writeFileSync(join(pkgDir, 'package.json'), JSON.stringify(pkg, null, 2) + '\n');
console.log(`write-package: ${pkg.name}@${pkg.version} (errors from ${errorsModule})`);
