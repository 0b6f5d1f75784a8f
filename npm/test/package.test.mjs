// The packed tarball as a consumer gets it: what ships, which entry each
// kind of consumer resolves (Node reads the .wasm file; a browser or
// bundler entry never reaches a Node built-in), and that the hand-written
// class and function declarations name exactly what the module exports.
// Run: node --test npm/test/package.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync, writeFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { pathToFileURL, fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

import { installPackage } from './support.mjs';

// The TypeScript compiler the package's own build uses (npm/node_modules).
const require = createRequire(new URL('../', import.meta.url));

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

/** What the `.d.ts` declares: exported functions and classes, and each
 * class's members (methods, accessors, properties), read with the
 * TypeScript compiler's own parser. */
function declared(text) {
  const ts = require('typescript');
  const file = ts.createSourceFile('aep-client.d.ts', text, ts.ScriptTarget.Latest, true);
  const exported = (node) => node.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
  const functions = new Set();
  const classes = new Map();
  for (const node of file.statements) {
    if (ts.isFunctionDeclaration(node) && exported(node)) functions.add(node.name.text);
    if (ts.isClassDeclaration(node) && exported(node)) {
      const members = { instance: new Set(), statics: new Set() };
      for (const m of node.members) {
        if (!m.name || ts.isConstructorDeclaration(m)) continue;
        const isStatic = m.modifiers?.some((x) => x.kind === ts.SyntaxKind.StaticKeyword);
        (isStatic ? members.statics : members.instance).add(m.name.text);
      }
      classes.set(node.name.text, members);
    }
  }
  return { functions, classes };
}

test('the declarations name exactly what the module exports, member by member', () => {
  const { functions, classes } = declared(readFileSync(join(root, 'aep-client.d.ts'), 'utf8'));
  const runtime = installed.pkg;
  const values = Object.keys(runtime).filter((k) => typeof runtime[k] === 'function');
  const isClass = (f) => /^class\b/.test(Function.prototype.toString.call(f));
  const runtimeClasses = values.filter((k) => isClass(runtime[k]));
  const runtimeFunctions = values.filter((k) => !isClass(runtime[k]) && k !== 'default');
  assert.deepEqual([...classes.keys()].sort(), runtimeClasses.sort(), 'exported classes');
  assert.deepEqual([...functions].filter((f) => f !== 'init').sort(), runtimeFunctions.sort(), 'exported functions');
  // wasm-bindgen's own bookkeeping on every class it exports (`free` is declared: it releases the instance).
  const plumbing = new Set(['constructor', '__destroy_into_raw']);
  for (const [name, members] of classes) {
    const cls = runtime[name];
    if (Object.getPrototypeOf(cls.prototype) === Error.prototype) {
      // An error's fields are set per instance; its class adds no methods.
      continue;
    }
    const have = Object.getOwnPropertyNames(cls.prototype).filter((m) => !plumbing.has(m)).sort();
    assert.deepEqual([...members.instance].sort(), have, `${name}: declared members vs the module's`);
    const statics = Object.getOwnPropertyNames(cls).filter((m) => !['length', 'name', 'prototype', '__wrap'].includes(m)).sort();
    assert.deepEqual([...members.statics].sort(), statics, `${name}: declared static members vs the module's`);
  }
});
