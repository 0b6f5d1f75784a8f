// The console's service worker: turns the relay's Web Push into
// notifications, answers a request from its notification, and opens the
// console at a request. It caches nothing and handles no fetches, so
// every page and file still comes fresh from the relay.
//
// A push is JSON from the relay: {kind: "request", request, session,
// agent, prompt, severity, destructive, options: [{id, label, meaning}],
// url, capability},
// {kind: "closed", request} or {kind: "summary", waiting, prompt, url}.
// Agent text is shown as notification text (which renders no markup).

'use strict';

const ANSWER_PATH = '/push/answer';
const SUMMARY_TAG = 'aep-waiting-summary';
const TITLE = 'AEP console';
// Severities at which approving takes the console's second step: the
// notification offers Review instead of a one-tap approval.
const SEVERE = new Set(['error', 'critical']);

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

self.addEventListener('push', (event) => {
  let payload = {};
  try {
    payload = event.data ? event.data.json() : {};
  } catch {
    payload = {};
  }
  event.waitUntil(handlePush(payload));
});

self.addEventListener('notificationclick', (event) => {
  event.waitUntil(handleClick(event.notification, event.action));
});

/** What one push shows, or takes away. */
async function handlePush(p) {
  switch (p.kind) {
    case 'request':
      return self.registration.showNotification(`${p.agent || 'An agent'} asks`, requestOptions(p));
    case 'closed':
      return closeRequest(p.request);
    case 'summary':
      return self.registration.showNotification(TITLE, {
        body: p.prompt || `${p.waiting} requests are waiting`,
        tag: SUMMARY_TAG,
        data: { url: p.url || '/' },
      });
    default:
      return self.registration.showNotification(TITLE, { body: 'An agent may need you.', tag: SUMMARY_TAG, data: { url: '/' } });
  }
}

/** Whether approving `p` from a notification is safe with one tap. */
function oneTapSafe(p) {
  return !SEVERE.has(p.severity) && p.destructive !== true;
}

/** The notification's buttons: Deny, and Allow where one tap is safe,
 * else Review (which opens the console at the card). */
function actions(p) {
  const options = Array.isArray(p.options) ? p.options : [];
  // The relay says what each option means (grants, refuses, neither).
  const refuse = options.find((o) => o.meaning === 'refuses');
  const grant = options.find((o) => o.meaning === 'grants');
  const out = [];
  if (p.capability && refuse) out.push({ action: `answer:${refuse.id}`, title: refuse.label || 'Deny' });
  if (p.capability && grant && oneTapSafe(p)) out.push({ action: `answer:${grant.id}`, title: grant.label || 'Allow' });
  else out.push({ action: 'review', title: 'Review' });
  return out;
}

function requestOptions(p) {
  return {
    body: p.prompt || '(no prompt)',
    // A later push for the same request (closed, an answer's outcome)
    // replaces this one.
    tag: p.request,
    renotify: false,
    requireInteraction: !oneTapSafe(p),
    data: p,
    actions: actions(p),
  };
}

/** A settled request's notification goes; what became of an answer
 * given from it stays, for the person to read. */
async function closeRequest(request) {
  if (!request) return;
  for (const n of await self.registration.getNotifications({ tag: request })) {
    if (!(n.data && n.data.kind === 'outcome')) n.close();
  }
}

/** A tap on a notification: an answer button posts the answer, anything
 * else opens the console at the request. */
async function handleClick(notification, action) {
  const p = notification.data || {};
  if (action && action.startsWith('answer:')) return answer(p, action.slice('answer:'.length));
  notification.close();
  return openConsole(p);
}

/** Posts the notification's answer, then says what became of it. */
async function answer(p, option) {
  const label = ((p.options || []).find((o) => o.id === option) || {}).label || option;
  const data = { kind: 'outcome', request: p.request, session: p.session, url: p.url };
  // At once, under the same tag: the buttons go (no second answer) while
  // the relay waits for the agent.
  await self.registration.showNotification(`${label}: sending\u2026`, { body: p.prompt || '', tag: p.request, data });
  let said;
  try {
    const response = await fetch(new URL(ANSWER_PATH, self.location.origin), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      credentials: 'omit',
      body: JSON.stringify({ capability: p.capability, option, request: p.request }),
    });
    const body = await response.json().catch(() => ({}));
    said = outcome(response.status, body, p.agent || 'The agent', label);
  } catch {
    said = { title: 'Answer not sent', body: 'The relay could not be reached. Answer from the console.' };
  }
  // Under the request's tag: it replaces any notification of it, and a
  // tap on it opens the console (it answers nothing more).
  await self.registration.showNotification(said.title, {
    body: said.body,
    tag: p.request,
    data: { ...data, outcome: said.outcome },
  });
  return said;
}

/** The words for the relay's answer to `POST /push/answer`. */
function outcome(status, body, agent, label) {
  if (status === 200 && body.ack === 'accepted') {
    return { outcome: 'accepted', title: `${label}: sent`, body: `${agent} took the answer.` };
  }
  if (status === 200 && body.ack === 'rejected') {
    const reason = typeof body.reason === 'string' ? body.reason : body.reason ? JSON.stringify(body.reason) : 'no reason given';
    return { outcome: 'rejected', title: `${agent} refused ${label}`, body: `Reason: ${reason}` };
  }
  if (status === 200 && body.ack === 'timeout') {
    return { outcome: 'timeout', title: `No word from ${agent}`, body: `${label} was sent; the agent has not confirmed it. Check in the console.` };
  }
  const detail = body.detail || body.error || `the relay answered ${status}`;
  return { outcome: body.error || `http-${status}`, title: 'Answer not sent', body: `${detail}` };
}

/** Focuses a console window and shows it the request, else opens one. */
async function openConsole(p) {
  const url = new URL(p.url || '/', self.location.origin).href;
  const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
  const open = windows.find((w) => new URL(w.url).origin === self.location.origin);
  if (open) {
    await open.focus().catch(() => {});
    open.postMessage({ kind: 'open', request: p.request || null, session: p.session || null });
    return open;
  }
  return self.clients.openWindow(url);
}
