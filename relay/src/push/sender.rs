//! The push task: turns request openings and closings into pushes, one
//! per device of each principal who may answer, and sends them with
//! retries. Runs on a thread of its own at a lower priority (encrypting
//! for a thousand devices takes real CPU): pushes use what ingest and
//! fan-out leave. The switchboard only ever enqueues.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aep_engine::UnixMs;
use reqwest::{header, StatusCode};
use tokio::sync::{watch, Semaphore};

use super::message;
use super::requests::{Change, Request};
use super::subscriptions::Device;
use super::Push;

/// Pushes in flight at once.
const CONCURRENCY: usize = 64;
/// Longest `Retry-After` honoured; a longer one ends the attempts.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
/// How often expiries and pending summaries are looked at.
const TICK: Duration = Duration::from_millis(200);

/// The HTTP client toward push services: rustls with the system's roots
/// and any `--push-ca`.
pub fn client(extra_roots: &[PathBuf]) -> Result<reqwest::Client, String> {
    let mut builder = reqwest::Client::builder()
        .use_rustls_tls()
        .timeout(Duration::from_secs(30))
        .connect_timeout(Duration::from_secs(10));
    for path in extra_roots {
        let pem = std::fs::read(path).map_err(|e| format!("--push-ca {}: {e}", path.display()))?;
        let certs =
            reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| format!("--push-ca {}: {e}", path.display()))?;
        for cert in certs {
            builder = builder.add_root_certificate(cert);
        }
    }
    builder.build().map_err(|e| format!("push client: {e}"))
}

/// Niceness of the push thread: below every relay thread, not idle-only.
const NICENESS: i32 = 10;

/// Starts the push thread, with its own single-threaded runtime.
pub fn spawn(push: Arc<Push>, client: reqwest::Client, stop: watch::Receiver<bool>) -> Result<(), String> {
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| format!("push runtime: {e}"))?;
    std::thread::Builder::new()
        .name("aep-push".into())
        .spawn(move || {
            lower_priority();
            runtime.block_on(run(push, client, stop));
        })
        .map_err(|e| format!("push thread: {e}"))?;
    Ok(())
}

/// Lowers this thread's priority (on Linux the nice value is per thread).
#[cfg(target_os = "linux")]
fn lower_priority() {
    // SAFETY: plain system calls on the calling thread, no pointers.
    let done = unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, NICENESS) };
    if done != 0 {
        tracing::debug!("push thread keeps its priority: {}", std::io::Error::last_os_error());
    }
}

/// Elsewhere the thread keeps the process's priority.
#[cfg(not(target_os = "linux"))]
fn lower_priority() {}

pub fn now_ms() -> UnixMs {
    UnixMs(SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0))
}

/// One push to one device.
struct Outgoing {
    device: Device,
    body: Vec<u8>,
    topic: String,
    ttl: Duration,
    urgency: &'static str,
}

/// Per device: when its recent request pushes left, and whether a
/// summary is due instead of more.
#[derive(Default)]
struct Burst {
    recent: VecDeque<Instant>,
    summary_due: Option<Instant>,
}

struct Task {
    push: Arc<Push>,
    client: reqwest::Client,
    slots: Arc<Semaphore>,
    bursts: HashMap<String, Burst>,
}

pub async fn run(push: Arc<Push>, client: reqwest::Client, mut stop: watch::Receiver<bool>) {
    let mut task = Task { push, client, slots: Arc::new(Semaphore::new(CONCURRENCY)), bursts: HashMap::new() };
    let mut tick = tokio::time::interval(TICK);
    loop {
        tokio::select! {
            events = task.push.queue.drain() => {
                // Who is notified is looked up once per batch of events.
                let mut devices = None;
                for event in events {
                    match task.push.requests.apply(&event) {
                        Change::Opened(request) => {
                            let devices = devices.get_or_insert_with(|| task.answering_devices());
                            task.opened(&request, devices)
                        }
                        Change::Closed(request) => {
                            let devices = devices.get_or_insert_with(|| task.answering_devices());
                            task.closed(&request, devices)
                        }
                        Change::Nothing => {}
                    }
                }
            }
            _ = tick.tick() => task.tick(),
            _ = stop.changed() => return,
        }
    }
}

impl Task {
    /// The devices of every principal that may answer requests now: a
    /// viewer's or a revoked principal's devices get nothing.
    fn answering_devices(&self) -> Vec<Device> {
        let answering = self.push.answering();
        self.push.subscriptions.all().into_iter().filter(|d| answering.contains(d.principal.as_str())).collect()
    }

    fn opened(&mut self, request: &Request, devices: &[Device]) {
        let now = now_ms();
        let ttl = message::ttl(request, now, self.push.config.default_ttl);
        if ttl.is_zero() {
            return;
        }
        let options: Vec<String> = request.options.iter().map(|(id, _)| id.clone()).collect();
        for device in devices {
            if !self.admit(&device.endpoint) {
                self.push.counters.collapsed.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            let capability = self.push.capabilities.issue(
                &request.id,
                &request.session,
                &device.principal,
                options.clone(),
                now.0 / 1000,
            );
            let body = message::request(request, &capability);
            let urgency = message::urgency(request.severity);
            self.send(Outgoing { device: device.clone(), body, topic: message::topic(&request.id), ttl, urgency });
        }
    }

    fn closed(&self, request: &Request, devices: &[Device]) {
        for device in devices.iter().cloned() {
            let body = message::closed(request);
            let ttl = self.push.config.default_ttl;
            self.send(Outgoing { device, body, topic: message::topic(&request.id), ttl, urgency: "normal" });
        }
    }

    /// Whether one more request push may go to this device now; if not, a
    /// summary is scheduled for the end of the window.
    fn admit(&mut self, endpoint: &str) -> bool {
        let (limit, window) = (self.push.config.burst, self.push.config.burst_window);
        if !self.bursts.contains_key(endpoint) {
            self.bursts.insert(endpoint.to_owned(), Burst::default());
        }
        let burst = self.bursts.get_mut(endpoint).expect("just inserted");
        let now = Instant::now();
        while burst.recent.front().is_some_and(|t| now.duration_since(*t) >= window) {
            burst.recent.pop_front();
        }
        if burst.recent.len() < limit && burst.summary_due.is_none() {
            burst.recent.push_back(now);
            return true;
        }
        burst.summary_due.get_or_insert(now + window);
        false
    }

    fn tick(&mut self) {
        let expired = self.push.requests.take_expired(now_ms());
        if !expired.is_empty() {
            let devices = self.answering_devices();
            for request in expired {
                self.closed(&request, &devices);
            }
        }
        let now = Instant::now();
        let due: Vec<String> = self
            .bursts
            .iter_mut()
            .filter(|(_, b)| b.summary_due.is_some_and(|at| at <= now))
            .map(|(endpoint, b)| {
                b.summary_due = None;
                b.recent.clear();
                b.recent.push_back(now);
                endpoint.clone()
            })
            .collect();
        let window = self.push.config.burst_window;
        self.bursts
            .retain(|_, b| b.summary_due.is_some() || b.recent.back().is_some_and(|t| now.duration_since(*t) < window));
        if due.is_empty() {
            return;
        }
        let waiting = self.push.requests.count_open(now_ms());
        if waiting == 0 {
            return;
        }
        for device in self.answering_devices().into_iter().filter(|d| due.contains(&d.endpoint)) {
            let body = message::summary(waiting);
            let ttl = self.push.config.default_ttl;
            self.send(Outgoing { device, body, topic: message::SUMMARY_TOPIC.into(), ttl, urgency: "normal" });
        }
    }

    fn send(&self, outgoing: Outgoing) {
        let (push, client, slots) = (self.push.clone(), self.client.clone(), self.slots.clone());
        tokio::spawn(async move {
            let Ok(_slot) = slots.acquire_owned().await else { return };
            deliver(&push, &client, outgoing).await;
        });
    }
}

/// How one attempt ended.
enum Attempt {
    Sent,
    /// The subscription is gone (404, 410): forget the device.
    Gone,
    /// Worth trying again, after this long.
    Retry(Duration),
    Failed(String),
}

async fn deliver(push: &Push, client: &reqwest::Client, out: Outgoing) {
    let failed = |why: String| {
        push.counters.failed.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(principal = %out.device.principal, "push not delivered: {why}");
    };
    let (Some(key), Some(auth)) = (out.device.public_key(), out.device.auth_secret()) else {
        return failed("the subscription's keys are unusable".into());
    };
    let body = match web_push_native::encrypt(out.body.clone(), &key, &auth) {
        Ok(body) => body,
        Err(e) => return failed(format!("encryption: {e}")),
    };
    let Ok(url) = reqwest::Url::parse(&out.device.endpoint) else { return failed("bad endpoint".into()) };
    let audience = url.origin().ascii_serialization();
    let lifetime = Duration::from_secs(12 * 3600);
    let authorization = match push.vapid.authorization(&audience, &push.config.contact, lifetime) {
        Ok(a) => a,
        Err(e) => return failed(e),
    };
    let mut backoff = push.config.retry_base;
    for attempt in 1..=push.config.max_attempts.max(1) {
        let sent = client
            .post(url.clone())
            .header("TTL", out.ttl.as_secs().to_string())
            .header("Urgency", out.urgency)
            .header("Topic", &out.topic)
            .header(header::CONTENT_ENCODING, "aes128gcm")
            .header(header::CONTENT_TYPE, "application/octet-stream")
            .header(header::AUTHORIZATION, &authorization)
            .body(body.clone())
            .send()
            .await;
        let outcome = match sent {
            Ok(response) => judge(&response, backoff),
            Err(e) => Attempt::Retry(backoff).or_failed(format!("{e}"), attempt == push.config.max_attempts),
        };
        match outcome {
            Attempt::Sent => {
                push.counters.sent.fetch_add(1, Ordering::Relaxed);
                return;
            }
            Attempt::Gone => {
                push.counters.removed.fetch_add(1, Ordering::Relaxed);
                push.subscriptions.remove_endpoint(&out.device.endpoint);
                tracing::info!(principal = %out.device.principal, "push subscription gone; removed");
                return;
            }
            Attempt::Failed(why) => return failed(why),
            Attempt::Retry(wait) if attempt < push.config.max_attempts && wait <= MAX_RETRY_AFTER => {
                push.counters.retried.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(wait).await;
                backoff *= 2;
            }
            Attempt::Retry(_) => return failed(format!("still refused after {attempt} attempts")),
        }
    }
}

impl Attempt {
    fn or_failed(self, why: String, last: bool) -> Attempt {
        if last {
            Attempt::Failed(why)
        } else {
            self
        }
    }
}

/// What a push service's answer means (RFC 8030 §5, §8.4).
fn judge(response: &reqwest::Response, backoff: Duration) -> Attempt {
    let status = response.status();
    if status.is_success() {
        return Attempt::Sent;
    }
    if status == StatusCode::NOT_FOUND || status == StatusCode::GONE {
        return Attempt::Gone;
    }
    if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
        let after = response.headers().get(header::RETRY_AFTER).and_then(|v| v.to_str().ok());
        return Attempt::Retry(after.and_then(|v| retry_after(v, SystemTime::now())).unwrap_or(backoff));
    }
    Attempt::Failed(format!("the push service answered {status}"))
}

/// A `Retry-After` value, delay-seconds or an HTTP-date (RFC 9110
/// §10.2.3), as the wait from `now`; a date already past waits nothing.
fn retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let now = httpdate::parse_http_date("Fri, 04 Dec 2026 10:00:00 GMT").unwrap();
        assert_eq!(retry_after(" 7 ", now), Some(Duration::from_secs(7)));
        assert_eq!(retry_after("Fri, 04 Dec 2026 10:00:30 GMT", now), Some(Duration::from_secs(30)));
        assert_eq!(retry_after("Fri, 04 Dec 2026 09:00:00 GMT", now), Some(Duration::ZERO));
        assert_eq!(retry_after("soon", now), None);
    }
}
