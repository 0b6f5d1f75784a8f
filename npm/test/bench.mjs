// projectState over a generated 100 000-event stream of 1 024 sessions
// (stream.mjs), in Node, from the packed package.
// Rates are compared, in the same process, with the projection a JavaScript
// dashboard would write for itself (plain-fold.mjs, which must reach the
// same counts) and with parsing the same text with JSON.parse line by line.
// Targets: projectState(jsonl) at 5x the plain fold of the same text and
// 0.5x the JSON.parse rate; projectState(objects) at 2x the plain fold of
// the same array.
// Run: node npm/test/bench.mjs   (after scripts/build-npm)
import assert from 'node:assert/strict';

import { installPackage } from './support.mjs';
import { generate } from './stream.mjs';
import { plainFold } from './plain-fold.mjs';

function rate(n, ms) {
  return `${Math.round(n / (ms / 1000)).toLocaleString('en-US')} events/s (${ms.toFixed(0)} ms)`;
}

/** Median of a list of timings. */
function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function time(f) {
  const t = performance.now();
  const out = f();
  return [performance.now() - t, out];
}

const ROUNDS = Number(process.env.AEP_BENCH_ROUNDS || 5);

const { pkg, cleanup } = await installPackage();
try {
  const stream = generate();
  const jsonl = stream.map((e) => JSON.stringify(e)).join('\n');
  console.log(`stream: ${stream.length} events, ${(jsonl.length / 1048576).toFixed(1)} MiB of JSON, ${ROUNDS} rounds (medians)`);
  pkg.projectState(stream.slice(0, 2000)); // warm up

  // The three are interleaved round by round, so that a burst of load on a
  // shared machine lands on all of them alike; medians are compared.
  const ms = { objects: [], text: [], parse: [], stringify: [], plainText: [], plainObjects: [] };
  let fromObjects;
  let fromText;
  for (let round = 0; round < ROUNDS; round++) {
    let t;
    [t, fromObjects] = time(() => pkg.projectState(stream));
    ms.objects.push(t);
    [t, fromText] = time(() => pkg.projectState(jsonl));
    ms.text.push(t);
    let parsed;
    [t, parsed] = time(() => jsonl.split('\n').map((line) => JSON.parse(line)));
    ms.parse.push(t);
    assert.equal(parsed.length, stream.length);
    let plain;
    [t, plain] = time(() => plainFold(jsonl));
    ms.plainText.push(t);
    [t] = time(() => plainFold(stream));
    ms.plainObjects.push(t);
    for (const k of ['sessions', 'events', 'runs', 'cards', 'pending', 'commands', 'agents']) {
      assert.equal(plain.counts[k], fromText.counts[k], `the plain fold and projectState agree on ${k}`);
    }
    // What the array path spends in JavaScript before the module sees text.
    [t] = time(() => JSON.stringify(stream));
    ms.stringify.push(t);
  }
  const [objectsMs, textMs, parseMs, stringifyMs, plainTextMs, plainObjectsMs] =
    [ms.objects, ms.text, ms.parse, ms.stringify, ms.plainText, ms.plainObjects].map(median);

  assert.equal(fromObjects.rejected.count, 0, JSON.stringify(fromObjects.rejected.first.slice(0, 3)));
  assert.deepEqual(fromObjects.counts, fromText.counts, 'objects and JSONL fold to the same state');
  assert.ok(fromObjects.counts.sessions > 0 && fromObjects.counts.cards > 0 && fromObjects.counts.commands > 0);
  const first = (xs) => `first round ${xs[0].toFixed(0)} ms`;
  console.log(`projectState(array of objects): ${rate(stream.length, objectsMs)}; ${first(ms.objects)}`);
  console.log(`projectState(JSONL string):     ${rate(stream.length, textMs)}; ${first(ms.text)}`);
  console.log(`text.split + JSON.parse:        ${rate(stream.length, parseMs)}; ${first(ms.parse)}`);
  console.log(`JSON.stringify(array) alone:    ${rate(stream.length, stringifyMs)}`);
  console.log(`plain JS fold (JSONL string):   ${rate(stream.length, plainTextMs)}`);
  console.log(`plain JS fold (array):          ${rate(stream.length, plainObjectsMs)}`);
  const x = (base, t) => (base / t).toFixed(2);
  console.log(`JSONL:   ${x(plainTextMs, textMs)}x the plain fold (target 5x), ${x(parseMs, textMs)}x JSON.parse (target 0.5x)`);
  console.log(`objects: ${x(plainObjectsMs, objectsMs)}x the plain fold (target 2x)`);
  assert.deepEqual(Object.values(fromText.evicted).filter((n) => n > 0), [], 'the whole stream is held');
  console.log(`state: ${JSON.stringify(fromText.counts)}`);
} finally {
  cleanup();
}
