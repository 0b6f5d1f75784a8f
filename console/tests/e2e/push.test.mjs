// Notifications on a phone: the release console in headless Chromium at
// phone size, the release relay with an operator principal of its own
// (`--credentials`), a data directory, and a fake push service on
// loopback (HTTPS, trusted through `--push-ca`) standing in for the
// browser's. The console's service worker registers; what the relay
// really sent is decrypted here (RFC 8291 aes128gcm, with the keys this
// test made for the device, since `pushManager.subscribe()` cannot reach a
// push service offline) and delivered to the worker through the DevTools
// protocol; the worker's own handlers then answer from the notification,
// as a tap on its button does.
//
// Run with scripts/test-console.

import { execFileSync } from 'node:child_process';
import { createDecipheriv, createECDH, createHash, hkdfSync, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:https';
import { chromium as playwright } from 'playwright-core';
import { CHROMIUM_ARGS, Relay, Steps, TestAgent, browser, check, freePort, until, ROOT } from './lib.mjs';

const DIR = `${ROOT}target/console-e2e/push`;
const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 };
const OWNER = 'phone-owner';
const AGENT = 'e2e-push-agent';
/** The relay's burst rule (relay/src/push): request pushes a device gets within the window, beyond which one summary follows. */
const BURST = 3;
const BURST_WINDOW_MS = 10_000;

/** A CA and a leaf for `localhost` signed by it, for the push service. */
function makeCertificates(dir) {
  const ssl = (...args) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  ssl('ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'ca.key');
  ssl('req', '-x509', '-new', '-key', 'ca.key', '-sha256', '-days', '2', '-subj', '/CN=AEP push test CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign', '-out', 'ca.pem');
  ssl('ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'leaf.sec1');
  ssl('pkcs8', '-topk8', '-nocrypt', '-in', 'leaf.sec1', '-out', 'leaf.key');
  ssl('req', '-new', '-key', 'leaf.key', '-subj', '/CN=localhost', '-out', 'leaf.csr');
  writeFileSync(`${dir}/leaf.ext`, 'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n');
  ssl('x509', '-req', '-in', 'leaf.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2',
    '-sha256', '-extfile', 'leaf.ext', '-out', 'leaf.pem');
}

/** A push service that takes every push (201) and keeps it, with when it came. */
async function pushService(dir) {
  const received = [];
  const server = createServer({ key: readFileSync(`${dir}/leaf.key`), cert: readFileSync(`${dir}/leaf.pem`) }, (req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      received.push({ path: req.url, headers: req.headers, body: Buffer.concat(chunks), at: Date.now() });
      res.writeHead(201).end();
    });
  });
  const port = await freePort();
  await new Promise((r) => server.listen(port, '127.0.0.1', r));
  return { received, origin: `https://localhost:${port}`, close: () => server.close() };
}

const b64url = (buf) => Buffer.from(buf).toString('base64url');

/** The browser's half of RFC 8291: the plaintext of one `aes128gcm` push. */
function decrypt(body, device) {
  const salt = body.subarray(0, 16);
  const idlen = body[20];
  const serverKey = body.subarray(21, 21 + idlen);
  const sealed = body.subarray(21 + idlen);
  const secret = device.ecdh.computeSecret(serverKey);
  const info = Buffer.concat([Buffer.from('WebPush: info\0'), device.ecdh.getPublicKey(), serverKey]);
  const ikm = Buffer.from(hkdfSync('sha256', secret, device.auth, info, 32));
  const cek = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: aes128gcm\0'), 16));
  const nonce = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: nonce\0'), 12));
  const d = createDecipheriv('aes-128-gcm', cek, nonce);
  d.setAuthTag(sealed.subarray(sealed.length - 16));
  const plain = Buffer.concat([d.update(sealed.subarray(0, sealed.length - 16)), d.final()]);
  let end = plain.length - 1;
  while (end >= 0 && plain[end] === 0) end--;
  check(plain[end] === 2, 'the push is one final record (delimiter 2)');
  return plain.subarray(0, end).toString('utf8');
}

rmSync(DIR, { recursive: true, force: true });
mkdirSync(`${DIR}/data`, { recursive: true });
makeCertificates(DIR);
const service = await pushService(DIR);

const ownerToken = `owner-${randomBytes(12).toString('hex')}`;
const agentToken = `agent-${randomBytes(12).toString('hex')}`;
const sha = (t) => createHash('sha256').update(t).digest('hex');
writeFileSync(`${DIR}/credentials`, `${OWNER} operator,viewer ${sha(ownerToken)}\n${AGENT} agent ${sha(agentToken)}\n`);

const port = await freePort();
const relay = new Relay({
  port,
  token: `admin-${randomBytes(12).toString('hex')}`,
  demo: false,
  // insecure.test: a name that is not loopback, for a page that is not a secure context.
  args: ['--credentials', `${DIR}/credentials`, '--data-dir', `${DIR}/data`, '--push-ca', `${DIR}/ca.pem`, '--allow-host', 'insecure.test'],
});
await relay.start();

const steps = new Steps();
const step = steps.step.bind(steps);
const pageErrors = [];
const chromium = await browser();

/** The device this test registers for the owner: keys made here. */
const ecdh = createECDH('prime256v1');
ecdh.generateKeys();
const device = { ecdh, auth: randomBytes(16), endpoint: `${service.origin}/push/phone-1` };

const relayApi = (path, init = {}) => fetch(`${relay.base}${path}`, {
  ...init,
  headers: { authorization: `Bearer ${ownerToken}`, 'content-type': 'application/json', ...(init.headers || {}) },
});

/** The pushes that reached the device so far, decrypted. */
const pushesTo = (d) => service.received.filter((p) => `${service.origin}${p.path}` === d.endpoint).map((p) => ({ ...p, text: decrypt(p.body, d) }));

async function nextPush(d, seen, what) {
  const got = await until(() => pushesTo(d).length > seen && pushesTo(d)[seen], `a push reaches the device (${what})`, 10_000);
  return { text: got.text, payload: JSON.parse(got.text) };
}

/**
 * Until a request raised now gets a push of its own on device `d`, past
 * the relay's burst window. `asked` was raised when the device had had
 * `seen` pushes: either it was held back and the summary owed for it has
 * come (which opens a new window), or it was pushed itself and the oldest
 * of the last three counted pushes is a window old.
 */
async function burstOver(d, seen, asked) {
  await until(() => {
    const all = pushesTo(d).map((p) => ({ at: p.at, ...JSON.parse(p.text) }));
    if (all.slice(seen).some((p) => p.kind === 'summary')) return true;
    if (!all.slice(seen).some((p) => p.kind === 'request' && p.request === asked.id)) return false;
    const counted = all.filter((p) => p.kind === 'request' || p.kind === 'summary');
    const oldest = counted[counted.length - BURST];
    // protocol timer under test: the relay's burst window (10 s).
    return !oldest || Date.now() - oldest.at >= BURST_WINDOW_MS;
  }, 'the device\'s burst window is over', BURST_WINDOW_MS + 5_000);
}

try {
  const ctx = await chromium.newContext(PHONE);
  await ctx.grantPermissions(['notifications'], { origin: relay.base });
  const page = await ctx.newPage();
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  const cdp = await ctx.newCDPSession(page);
  const registrations = new Map();
  cdp.on('ServiceWorker.workerRegistrationUpdated', ({ registrations: list }) => {
    for (const r of list) if (!r.isDeleted) registrations.set(r.scopeURL, r.registrationId);
  });
  await cdp.send('ServiceWorker.enable');
  await page.goto(`${relay.base}/#token=${encodeURIComponent(ownerToken)}`);
  await page.locator('.chip[data-state="live"]').waitFor({ timeout: 15_000 });

  const notifications = (tag) => page.evaluate(async (t) => {
    const reg = await navigator.serviceWorker.getRegistration();
    const list = await reg.getNotifications(t ? { tag: t } : {});
    return list.map((n) => ({ title: n.title, body: n.body, tag: n.tag, actions: n.actions.map((a) => ({ action: a.action, title: a.title })), requireInteraction: n.requireInteraction }));
  }, tag);
  const deliver = (text) => cdp.send('ServiceWorker.deliverPushMessage', { origin: relay.base, registrationId: registrations.get(`${relay.base}/`), data: text });
  /**
   * Delivers a push until what it should do is seen, as a push service
   * retransmits what a browser did not take (RFC 8030 §6.2). DevTools
   * answers before the worker is even started and drops any failure to
   * dispatch, and now and then (a few runs in a hundred, under load) a
   * delivery is lost that way; a redelivery is printed, and three lost in
   * a row fail the step.
   */
  const deliverUntil = async (text, seen, what) => {
    for (let attempt = 1; ; attempt++) {
      await deliver(text);
      try {
        return await until(seen, what, 4_000);
      } catch (e) {
        if (attempt === 3) throw e;
        console.log(`      (delivered again: ${what})`);
      }
    }
  };
  /**
   * Whether the worker has finished handling a push of `kind` for
   * `request`, so a push that should change nothing can be seen to have
   * been handled. The worker keeps the record from the first call on (a
   * restarted worker starts a new one).
   */
  const handled = async (kind, request) => {
    const worker = ctx.serviceWorkers()[0] || await ctx.waitForEvent('serviceworker');
    return worker.evaluate(([k, r]) => {
      if (!self.__handled) {
        self.__handled = [];
        const inner = handlePush;
        handlePush = async (p) => {
          try {
            return await inner(p);
          } finally {
            self.__handled.push(p);
          }
        };
      }
      return self.__handled.some((p) => p.kind === k && p.request === r);
    }, [kind, request]);
  };
  /** Runs the worker's own click handler on the notification tagged `tag`, as a tap on `action` ('' for its body). */
  const tap = async (tag, action) => {
    const worker = ctx.serviceWorkers()[0] || await ctx.waitForEvent('serviceworker');
    return worker.evaluate(async ([t, a]) => {
      const [n] = await self.registration.getNotifications({ tag: t });
      if (!n) throw new Error(`no notification tagged ${t}`);
      const r = await handleClick(n, a);
      return r && r.outcome !== undefined ? r : null;
    }, [tag, action]);
  };

  await step('the console registers its service worker at /, served as JavaScript, and it caches nothing', async () => {
    const scope = await page.evaluate(async () => {
      const reg = await navigator.serviceWorker.ready;
      return reg.scope;
    });
    check(scope === `${relay.base}/`, `the worker's scope is the console's: ${scope}`);
    await until(() => registrations.has(`${relay.base}/`), 'DevTools names the registration', 5_000);
    const r = await fetch(`${relay.base}/sw.js`);
    check(r.ok && /javascript/.test(r.headers.get('content-type')), `sw.js is served as JavaScript: ${r.status} ${r.headers.get('content-type')}`);
    const source = await r.text();
    check(!/caches\.|addEventListener\('fetch'/.test(source), 'the worker keeps no cache and handles no fetches');
  });

  const panel = page.locator('details.push');
  const sw = panel.locator('button[role="switch"]');
  await step('the switch is off; turned on where the browser cannot subscribe, it says so and notifies while the console is open', async () => {
    await page.locator('button.menu-toggle').click();
    await panel.locator('summary').click();
    await until(async () => (await panel.getAttribute('data-state')) === 'off', 'the state is off', 5_000);
    check((await sw.getAttribute('aria-checked')) === 'false', 'the switch is not checked');
    check((await panel.locator('summary').textContent()).includes('Off'), 'the summary says Off');
    await sw.click();
    // Offline, headless Chromium refuses pushManager.subscribe(): said, not swallowed.
    const problem = panel.locator('.push-problem');
    await until(async () => !(await problem.isHidden()), 'a problem is shown', 10_000);
    const words = await problem.textContent();
    check(words.startsWith('Could not turn on notifications with the console closed:'), `the problem is said: ${words}`);
    await until(async () => (await panel.getAttribute('data-state')) === 'on-while-open', 'on while the console is open', 5_000);
    check((await sw.getAttribute('aria-checked')) === 'true', 'the switch is checked');
  });

  await step('"Send a test notification" shows one through the worker', async () => {
    await panel.locator('button[data-push="test"]').click();
    const shown = await until(async () => (await notifications('aep-test'))[0], 'the test notification shows', 5_000);
    check(shown.title === 'AEP console', `its title: ${shown.title}`);
  });

  await step('a device registered for the operator is listed under its name, and pushes reach it', async () => {
    const r = await relayApi('/push/subscriptions', {
      method: 'POST',
      body: JSON.stringify({ endpoint: device.endpoint, keys: { p256dh: b64url(ecdh.getPublicKey()), auth: b64url(device.auth) } }),
    });
    check(r.status === 201, `registered: ${r.status} ${await r.text()}`);
    await panel.locator('summary').click();
    await panel.locator('summary').click();
    await until(async () => (await panel.locator('.push-devices li').count()) === 1, 'one device listed', 5_000);
    const title = await panel.locator('.push-devices-title').textContent();
    check(title.includes(OWNER), `the list names the principal: ${title}`);
  });

  const agent = new TestAgent({ relay: { base: relay.base, token: agentToken }, agent: AGENT });
  await agent.connect();
  agent.start('Push from the phone');

  let request;
  let requestPush;
  await step('a request push shows a notification with the agent, prompt, tag and Deny / Allow', async () => {
    request = agent.ask('Push: deploy the staging build?');
    requestPush = await nextPush(device, 0, 'the request');
    const p = requestPush.payload;
    check(p.kind === 'request' && p.request === request.id && p.agent === AGENT, `the relay's payload: ${requestPush.text}`);
    check(typeof p.capability === 'string' && p.capability.length > 20, 'it carries a capability');
    const [n] = await deliverUntil(requestPush.text, async () => { const l = await notifications(request.id); return l.length && l; }, 'the notification shows');
    check(n.title === `${AGENT} asks`, `title: ${n.title}`);
    check(n.body === 'Push: deploy the staging build?', `body: ${n.body}`);
    check(n.tag === request.id, 'tagged with the request id');
    const actions = JSON.stringify(n.actions);
    check(actions === JSON.stringify([{ action: 'answer:deny', title: 'Deny' }, { action: 'answer:allow', title: 'Allow' }]), `actions: ${actions}`);
  });

  await step('Allow from the notification reaches the agent under the operator\'s name, and the agent\'s ack is shown', async () => {
    const said = await tap(request.id, 'answer:allow');
    check(said && said.outcome === 'accepted', `the worker's outcome: ${JSON.stringify(said)}`);
    await until(() => agent.commands.length === 1, 'the agent gets the command', 5_000);
    const c = agent.commands[0];
    check(c.type === 'control.attention.respond' && c.subject === request.id, `command: ${c.type} ${c.subject}`);
    check(c.agent === OWNER, `sent under the operator's name: ${c.agent}`);
    check(c.data.answer.option === 'allow', `the option: ${JSON.stringify(c.data)}`);
    const [n] = await notifications(request.id);
    check(n && n.title === 'Allow: sent' && n.actions.length === 0, `the follow-up: ${JSON.stringify(n)}`);
  });

  await step('the closed push takes a request\'s notification away, and leaves what became of an answer', async () => {
    const closed = await nextPush(device, 1, 'closed');
    check(closed.payload.kind === 'closed' && closed.payload.request === request.id, `closed: ${closed.text}`);
    await handled('closed', request.id);
    await deliverUntil(closed.text, () => handled('closed', request.id), 'the worker handled the closed push');
    const [kept] = await notifications(request.id);
    check(kept && kept.title === 'Allow: sent', `the outcome stays: ${JSON.stringify(kept)}`);
    const withdrawn = agent.ask('Push: restart the worker pool?');
    const shown = await nextPush(device, 2, 'another request');
    await deliverUntil(shown.text, async () => (await notifications(withdrawn.id)).length === 1, 'its notification shows');
    agent.emit('attention.resolved', { resolution: 'dismissed' }, { subject: withdrawn.id, run: 'run-e2e' });
    const gone = await nextPush(device, 3, 'closed');
    check(gone.payload.kind === 'closed' && gone.payload.request === withdrawn.id, `closed: ${gone.text}`);
    await deliverUntil(gone.text, async () => (await notifications(withdrawn.id)).length === 0, 'no notification for the settled request');
  });

  await step('the capability works once: a second answer is refused and the notification says so', async () => {
    const again = await page.evaluate(async ([p]) => {
      const reg = await navigator.serviceWorker.getRegistration();
      await reg.showNotification('again', { tag: p.request, data: p });
      return true;
    }, [requestPush.payload]);
    check(again, 'a notification with the spent capability');
    const said = await tap(request.id, 'answer:deny');
    check(said && said.outcome !== 'accepted', `refused: ${JSON.stringify(said)}`);
    const [n] = await notifications(request.id);
    check(n.title === 'Answer not sent' && /already used|settled|no longer open/.test(n.body), `the refusal is said: ${JSON.stringify(n)}`);
    check(agent.commands.length === 1, 'nothing more reached the agent');
  });

  await step('a critical request offers Review, not Allow; its URL and its notification open the console at the card', async () => {
    const critical = agent.ask('Push: drop the production database?', undefined, { severity: 'critical' });
    const push = await nextPush(device, 4, 'the critical request');
    check(push.payload.severity === 'critical', `severity: ${push.text}`);
    const [n] = await deliverUntil(push.text, async () => { const l = await notifications(critical.id); return l.length && l; }, 'the notification shows');
    check(JSON.stringify(n.actions) === JSON.stringify([{ action: 'answer:deny', title: 'Deny' }, { action: 'review', title: 'Review' }]), `actions: ${JSON.stringify(n.actions)}`);
    check(n.requireInteraction, 'it stays until dealt with');
    // The push's URL, as a window opened by the notification loads it.
    await page.goto(`${relay.base}${push.payload.url}`);
    const focused = () => page.evaluate(() => document.activeElement && document.activeElement.id);
    await until(async () => (await focused()) === `card-${critical.id}`, 'the card has the focus', 15_000);
    check(!(await page.evaluate(() => location.search)), 'the address keeps no query');
    // A tap on Review with the console open: that window shows the card.
    await page.evaluate(() => document.body.focus());
    await page.locator('nav.tabs a[href="#/history"]').click();
    await tap(critical.id, 'review');
    await until(async () => (await focused()) === `card-${critical.id}`, 'the open console shows the card', 10_000);
    const said = await (async () => {
      // Review took its notification away; the same push shows it again.
      await until(async () => (await notifications(critical.id)).length === 0, 'Review closed the notification', 5_000);
      await deliverUntil(push.text, async () => (await notifications(critical.id)).length, 'shown again');
      return tap(critical.id, 'answer:deny');
    })();
    check(said && said.outcome === 'accepted', `Deny from the notification: ${JSON.stringify(said)}`);
    await until(() => agent.commands.some((c) => c.subject === critical.id && c.data.answer.option === 'deny'), 'the agent gets Deny', 5_000);
  });

  await step('a request held behind "N new" is brought in and shown when its notification is tapped', async () => {
    await page.locator('nav.tabs a[href="#/"]').click();
    const seen = pushesTo(device).length;
    const below = agent.ask('Push: a request the reader is looking at?', undefined, { severity: 'info' });
    await until(async () => (await page.locator(`#card-${below.id}`).count()) > 0, 'a card is shown', 10_000);
    // Past the relay's burst window (3 request pushes a device in 10 s),
    // so this request gets a push of its own rather than a summary.
    await burstOver(device, seen, below);
    // Arriving most urgent, it would land above what is shown: it waits.
    const above = agent.ask('Push: a request that lands above the reader?', undefined, { severity: 'critical' });
    const got = await until(() => pushesTo(device).find((p) => JSON.parse(p.text).kind === 'request' && JSON.parse(p.text).request === above.id), 'a push for the held request', 10_000);
    const push = { text: got.text };
    await until(async () => page.locator('button.new-above').isVisible(), 'the "N new" pill', 10_000);
    check(!(await page.locator(`#card-${above.id}`).count()), 'the request waits behind "N new"');
    await deliverUntil(push.text, async () => (await notifications(above.id)).length, 'its notification shows');
    await tap(above.id, 'review');
    const focused = () => page.evaluate(() => document.activeElement && document.activeElement.id);
    await until(async () => (await focused()) === `card-${above.id}`, 'the tapped request is brought in and has the focus', 10_000);
    const said = await (async () => {
      await deliverUntil(push.text, async () => (await notifications(above.id)).length, 'shown again');
      return tap(above.id, 'answer:deny');
    })();
    check(said && said.outcome === 'accepted', `Deny from the notification: ${JSON.stringify(said)}`);
    agent.emit('attention.resolved', { resolution: 'dismissed' }, { subject: below.id, run: 'run-e2e' });
  });

  await step('a burst of requests becomes one "N requests are waiting" notification', async () => {
    const before = pushesTo(device).length;
    for (let i = 1; i <= 4; i++) agent.ask(`Push: burst request ${i}?`);
    const summary = await until(() => pushesTo(device).slice(before).find((p) => JSON.parse(p.text).kind === 'summary'), 'a summary push', 20_000);
    const [n] = await deliverUntil(summary.text, async () => { const l = await notifications('aep-waiting-summary'); return l.length && l; }, 'the summary shows');
    check(/^\d+ requests are waiting$/.test(n.body), `one notification says how many wait: ${JSON.stringify(n)}`);
  });

  await step('a device is removed from the list, and from the relay', async () => {
    if (!(await panel.isVisible())) await page.locator('button.menu-toggle').click();
    if (!(await panel.evaluate((d) => d.open))) await panel.locator('summary').click();
    await until(async () => (await panel.locator('.push-devices li').count()) === 1, 'the device listed', 5_000);
    await panel.locator('.push-devices li button').click();
    await until(async () => (await panel.locator('.push-devices li').count()) === 0, 'the list is empty', 5_000);
    const listed = await (await relayApi('/push/subscriptions')).json();
    check(listed.subscriptions.length === 0, `the relay forgot it: ${JSON.stringify(listed)}`);
    await page.screenshot({ path: `${ROOT}target/console-e2e/push-panel-390x844.png` });
  });

  agent.drop();
  await ctx.close();

  await step('on a page that is not a secure context the switch is unavailable and says why', async () => {
    const other = await playwright.launch({
      executablePath: '/usr/bin/chromium',
      args: [...CHROMIUM_ARGS, '--host-resolver-rules=MAP insecure.test 127.0.0.1'],
    });
    try {
      const p = await other.newPage({ viewport: PHONE.viewport });
      p.on('pageerror', (e) => pageErrors.push(String(e)));
      await p.goto(`http://insecure.test:${port}/#token=${encodeURIComponent(ownerToken)}`);
      check(!(await p.evaluate(() => isSecureContext)), 'the page is not a secure context');
      await p.locator('button.menu-toggle').click({ timeout: 15_000 });
      const d = p.locator('details.push');
      await d.locator('summary').click();
      await until(async () => (await d.getAttribute('data-state')) === 'insecure', 'the state says so', 5_000);
      check(await d.locator('button[role="switch"]').isDisabled(), 'the switch cannot be turned on');
      const why = await p.locator('#push-explain').textContent();
      check(why.includes('HTTPS'), `it says why: ${why}`);
    } finally {
      await other.close();
    }
  });

  await steps.noPageErrors(pageErrors);
} finally {
  await chromium.close().catch(() => {});
  await relay.stop();
  service.close();
}
steps.report();
