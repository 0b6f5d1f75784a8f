// A real phone reaches the relay: the release console in headless Chromium
// at phone size, over https:// on a name that is not loopback, trusting a
// CA made here, opened by the link `aep-relay pair` printed for it. It
// connects as its own principal, and `aep-relay unpair` ends it alone.
//
// Run with scripts/test-console. The CA is made first and the file runs
// again with Node trusting it (NODE_EXTRA_CA_CERTS is read at start-up),
// so the test agent reaches the relay over wss:// too.

import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { chromium } from 'playwright-core';
import { CHROMIUM_ARGS, Relay, Steps, TestAgent, answerNow, cardIn, check, freePort, until, ROOT, BIN_DIR } from './lib.mjs';

const NAME = 'phone.test';
const DIR = `${ROOT}target/console-e2e/phone`;

if (!process.env.AEP_PHONE_TLS) {
  rmSync(DIR, { recursive: true, force: true });
  mkdirSync(DIR, { recursive: true });
  makeCertificates(DIR);
  const again = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url)], {
    stdio: 'inherit',
    env: { ...process.env, AEP_PHONE_TLS: DIR, NODE_EXTRA_CA_CERTS: `${DIR}/ca.pem` },
  });
  process.exit(again.status ?? 1);
}

/** A CA, a leaf for `phone.test` (and 127.0.0.1) signed by it, and a home
 * whose NSS database trusts the CA, for Chromium. */
function makeCertificates(dir) {
  const ssl = (...args) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  ssl('ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'ca.key');
  ssl('req', '-x509', '-new', '-key', 'ca.key', '-sha256', '-days', '2', '-subj', '/CN=AEP console test CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign', '-out', 'ca.pem');
  ssl('ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'leaf.sec1');
  ssl('pkcs8', '-topk8', '-nocrypt', '-in', 'leaf.sec1', '-out', 'leaf.key');
  ssl('req', '-new', '-key', 'leaf.key', '-subj', `/CN=${NAME}`, '-out', 'leaf.csr');
  writeFileSync(`${dir}/leaf.ext`, `subjectAltName=DNS:${NAME},IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n`);
  ssl('x509', '-req', '-in', 'leaf.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2',
    '-sha256', '-extfile', 'leaf.ext', '-out', 'leaf.pem');
  const nss = `${dir}/home/.pki/nssdb`;
  mkdirSync(nss, { recursive: true });
  execFileSync('certutil', ['-d', `sql:${nss}`, '-N', '--empty-password']);
  execFileSync('certutil', ['-d', `sql:${nss}`, '-A', '-t', 'C,,', '-n', 'aep-test-ca', '-i', `${dir}/ca.pem`]);
}

/** `aep-relay pair`: adds a device to the credentials file; its link. */
function pair(name, credentials, publicUrl) {
  const out = execFileSync(`${BIN_DIR}/aep-relay`, ['pair', '--name', name, '--credentials', credentials, '--public-url', publicUrl], { encoding: 'utf8' });
  const link = out.match(/https:\/\/\S+#token=\S+/);
  check(link, `pair printed a link: ${out}`);
  return link[0];
}

/** Waits until the relay, which reads the credentials file again within
 * a second of a change, takes `link`'s token (or no longer does). */
async function taken(link, expect = true) {
  const token = decodeURIComponent(link.split('#token=')[1]);
  await until(async () => {
    const r = await fetch(`${relay.base}/events`, { headers: { authorization: `Bearer ${token}` } });
    return (r.status !== 401) === expect;
  }, `the relay ${expect ? 'takes' : 'refuses'} the token`, 5_000);
}

function unpair(name, credentials) {
  execFileSync(`${BIN_DIR}/aep-relay`, ['unpair', name, '--credentials', credentials], { encoding: 'utf8' });
}

const steps = new Steps();
const step = steps.step.bind(steps);

const token = `phone-${randomBytes(12).toString('hex')}`;
const port = await freePort();
const publicUrl = `https://${NAME}:${port}`;
const credentials = `${DIR}/credentials`;
writeFileSync(credentials, '');
const relay = new Relay({
  port, token, demo: false, base: `https://127.0.0.1:${port}`,
  args: ['--tls-cert', `${DIR}/leaf.pem`, '--tls-key', `${DIR}/leaf.key`, '--credentials', credentials, '--public-url', publicUrl],
});
await relay.start();
const phoneBrowser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: [...CHROMIUM_ARGS, `--host-resolver-rules=MAP ${NAME} 127.0.0.1, MAP lan.test 127.0.0.1`],
  env: { ...process.env, HOME: `${DIR}/home` },
});
const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 };
const agent = new TestAgent({ relay, agent: 'e2e-phone-agent' });
await agent.connect();
agent.start('Asks a phone');

const pixel = pair('pixel-7', credentials, publicUrl);
const alice = pair('alice-phone', credentials, publicUrl);
await taken(pixel);
await taken(alice);
const opened = [];

async function open(link) {
  const ctx = await phoneBrowser.newContext(PHONE);
  const page = await ctx.newPage();
  await page.goto(link);
  await page.locator('.chip[data-state="live"]').waitFor({ timeout: 15_000 });
  opened.push(ctx);
  return page;
}

try {
  await step('a phone opens its paired link over https:// on its name: a secure context, connected as its own principal', async () => {
    const page = await open(pixel);
    check(page.url().startsWith(`${publicUrl}/`), `on the public name: ${page.url()}`);
    check(!page.url().includes('token'), `the token left the address bar: ${page.url()}`);
    check(await page.evaluate(() => window.isSecureContext), 'a secure context');
    check((await page.locator('[data-banner="insecure"]').count()) === 0, 'no insecure-page banner');
    const q = agent.ask('Phone: roll back the deploy?');
    const c = cardIn(page, q.data.prompt);
    await c.waitFor({ timeout: 10_000 });
    await answerNow(c, 'allow');
    await until(() => agent.commands.length === 1, 'the answer reached the agent', 10_000);
    check(agent.commands[0].agent === 'pixel-7', `recorded under the device's own name: ${agent.commands[0].agent}`);
  });

  await step('installable from the phone: the manifest opens standalone at the console, its icons are served', async () => {
    const page = opened[0].pages()[0];
    const found = await page.evaluate(async () => {
      const link = document.querySelector('link[rel="manifest"]');
      if (!link) return null;
      const manifest = await (await fetch(link.href)).json();
      const start = new URL(manifest.start_url, link.href).href;
      const scope = new URL(manifest.scope || './', link.href).href;
      const icons = await Promise.all(manifest.icons.map(async (i) => [i.sizes, (await fetch(new URL(i.src, link.href))).status]));
      return { display: manifest.display, start, scope, icons };
    });
    check(found, 'the page links a manifest');
    check(found.display === 'standalone', `standalone: ${found.display}`);
    check(found.start === `${publicUrl}/` && found.start.startsWith(found.scope), `starts at the console: ${found.start} in ${found.scope}`);
    check(found.icons.some(([sizes, status]) => sizes === '512x512' && status === 200), `a 512 px icon: ${JSON.stringify(found.icons)}`);
    check(found.icons.every(([, status]) => status === 200), `every icon is served: ${JSON.stringify(found.icons)}`);
  });

  await step('a page over plain HTTP from another name says it is not a secure context, and what that costs', async () => {
    const lanPort = await freePort();
    const lan = new Relay({ port: lanPort, token, demo: false, args: ['--public-url', `http://lan.test:${lanPort}`] });
    await lan.start();
    const ctx = await phoneBrowser.newContext(PHONE);
    try {
      const page = await ctx.newPage();
      await page.goto(`http://lan.test:${lanPort}/`);
      const banner = page.locator('[data-banner="insecure"]');
      await banner.waitFor({ timeout: 10_000 });
      check(!(await page.evaluate(() => window.isSecureContext)), 'not a secure context');
      const words = await banner.textContent();
      check(/in clear/.test(words) && /notifications/.test(words) && /On your phone/.test(words), `says why and where to look: ${words}`);
    } finally {
      await ctx.close();
      await lan.stop();
    }
  });

  await step('a browser not trusting the CA is refused the page', async () => {
    const plain = await chromium.launch({ executablePath: '/usr/bin/chromium', args: [...CHROMIUM_ARGS, `--host-resolver-rules=MAP ${NAME} 127.0.0.1`] });
    try {
      const page = await (await plain.newContext()).newPage();
      const error = await page.goto(publicUrl).then(() => null, (e) => String(e));
      check(error && /ERR_CERT_AUTHORITY_INVALID/.test(error), `refused: ${error}`);
    } finally {
      await plain.close();
    }
  });

  await step('unpair ends that phone alone: it is disconnected and refused, the other paired phone stays', async () => {
    const [pixelPage] = opened.length ? [opened[0].pages()[0]] : [await open(pixel)];
    const alicePage = await open(alice);
    unpair('pixel-7', credentials);
    await pixelPage.locator('[data-banner="refused"]').waitFor({ timeout: 15_000 });
    check((await pixelPage.locator('.chip[data-state="live"]').count()) === 0, 'the unpaired phone is not live');
    check((await alicePage.locator('.chip[data-state="live"]').count()) === 1, 'the other phone stays live');
    const q = agent.ask('Phone: restart the queue?');
    const c = cardIn(alicePage, q.data.prompt);
    await c.waitFor({ timeout: 10_000 });
    await answerNow(c, 'deny');
    await until(() => agent.commands.length === 2, 'the other phone still answers', 10_000);
    check(agent.commands[1].agent === 'alice-phone', `under its own name: ${agent.commands[1].agent}`);
  });
} finally {
  agent.drop();
  for (const ctx of opened) await ctx.close().catch(() => {});
  await phoneBrowser.close();
  await relay.stop();
}
steps.report();
