// The packed tarball as a consumer gets it: what ships, and which entry
// each kind of consumer resolves (Node reads the .wasm file; a browser or
// bundler entry never reaches a Node built-in).
// Run: node --test npm/test/package.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync, writeFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { pathToFileURL, fileURLToPath } from 'node:url';

import { installPackage } from './support.mjs';

let installed;
let root;

before(async () => {
  installed = await installPackage();
  root = join(installed.dir, 'node_modules', 'aep-client');
});

after(() => installed?.cleanup());

test('the tarball ships its licence and both entries', () => {
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  assert.equal(manifest.license, 'Apache-2.0');
  assert.match(readFileSync(join(root, 'LICENSE'), 'utf8'), /Apache License\s+Version 2\.0/);
  for (const f of ['aep-client.js', 'aep-client.node.js', 'aep-client.d.ts', 'aep_client_bg.wasm']) {
    assert.ok(existsSync(join(root, f)), `${f} ships`);
  }
});

test('Node resolves the Node entry; browsers and bundlers one without Node built-ins', async () => {
  // Resolved from inside the consumer's own directory, as its code would.
  writeFileSync(join(installed.dir, 'where.mjs'), "export const entry = import.meta.resolve('aep-client');\n");
  const { entry } = await import(pathToFileURL(join(installed.dir, 'where.mjs')).href);
  const resolved = fileURLToPath(entry);
  assert.equal(resolved, join(root, 'aep-client.node.js'));
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const dot = manifest.exports['.'];
  assert.equal(dot.browser, './aep-client.js');
  assert.equal(dot.default, './aep-client.js');

  // Every module the browser entry reaches, followed through its static imports.
  const seen = new Set();
  const visit = (file) => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g)) {
      const spec = m[1] ?? m[2];
      assert.ok(!spec.startsWith('node:') && !['fs', 'fs/promises', 'path', 'url'].includes(spec),
        `${file} imports ${spec}: a bundler would externalize it for the browser`);
      if (spec.startsWith('.')) visit(join(dirname(file), spec));
    }
  };
  visit(join(root, 'aep-client.js'));
  assert.ok(seen.size >= 3, `followed ${[...seen].join(', ')}`);
});
