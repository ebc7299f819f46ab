//! A fault-injecting TCP proxy to put between inrush and a real server (plain TCP): it loses a
//! statement's answer or the statement itself, goes silent, resets, delays or paces what it
//! carries, so a test can say what inrush must do when the network does that. Std threads and
//! sockets only: every thread looks at its flags at least every 20 ms, and dropping the
//! [`Proxy`] ends them all.

use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long any thread blocks before it looks at its flags again.
const POLL: Duration = Duration::from_millis(20);
/// How long the listener sleeps when nobody connects: what a new connection may wait.
const ACCEPT_POLL: Duration = Duration::from_millis(5);
/// Loopback connects at once or is refused; this only bounds a full backlog.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// How long the server's side of a lost answer stays open, what it sends discarded.
const DRAIN: Duration = Duration::from_secs(1);
/// The most one read takes.
const CHUNK: usize = 64 << 10;
/// What the delay line of a link without a bandwidth cap holds at most: 160 MB/s at 100 ms.
const UNLIMITED_IN_FLIGHT: usize = 16 << 20;

/// A proxy on 127.0.0.1 in front of one server; dropping it closes every connection it carries.
pub struct Proxy {
    port: u16,
    shared: Arc<Shared>,
    listener: Option<JoinHandle<()>>,
}

/// A fault for the first connection whose client sends `pattern`.
#[derive(Clone, Debug)]
pub struct Fault {
    /// SQL text as the client sends it (the protocols carry queries raw): `b"COMMIT"`.
    pub pattern: Vec<u8>,
    pub action: Action,
    /// How many connections it strikes before it disarms.
    pub times: usize,
    /// How many matches it lets pass first (the second connection's COMMIT of a load whose
    /// connections commit one after the other).
    pub skip: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// The bytes up to and including the chunk holding the pattern reach the server; then the
    /// client's side is reset (RST, SO_LINGER 0) and nothing more the server sends reaches the
    /// client; the server's side gets a graceful FIN after the forwarded bytes, so the server
    /// still reads and executes them (a COMMIT whose answer is lost). The server's side stays
    /// open for a second, what it answers discarded, then closes.
    AnswerLost,
    /// The chunk holding the pattern is not forwarded, and both sides are reset (a statement
    /// that never reached the server). Earlier chunks still in the delay line are lost with it,
    /// as a reset loses what is in flight.
    NeverArrives,
    /// The chunk holding the pattern is forwarded, then that connection goes silent both ways,
    /// kept open until `heal` (which closes it) or drop, or until its client closes it.
    StallAfter,
}

/// What the proxy's handle tells its threads.
#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    stalled: AtomicBool,
    latency_ns: AtomicU64,
    /// Bytes a second each way per connection; 0: unlimited.
    bandwidth: AtomicU64,
    /// Bumped by `heal` and `reset_all`: a connection compares them with what it saw.
    heals: AtomicU64,
    resets: AtomicU64,
    /// Armed faults in the order they were armed; `times` counts down.
    faults: Mutex<Vec<Fault>>,
    struck: AtomicUsize,
    connections: AtomicUsize,
}

impl Shared {
    fn latency(&self) -> Duration {
        Duration::from_nanos(self.latency_ns.load(SeqCst))
    }
}

impl Proxy {
    /// Listens on 127.0.0.1, a free port, and forwards every connection to `upstream`.
    pub fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free port on 127.0.0.1");
        let port = listener.local_addr().expect("the proxy's address").port();
        // So the listener sees `stop` without a connection to wake it.
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let shared = Arc::new(Shared::default());
        let listener = {
            let shared = shared.clone();
            std::thread::spawn(move || listen(listener, upstream, shared))
        };
        Proxy {
            port,
            shared,
            listener: Some(listener),
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Arms `fault`: it strikes the first connection (accepted before or after) whose
    /// client->server bytes contain its pattern, `times` times in all (then disarms).
    pub fn arm(&self, fault: Fault) {
        if fault.times > 0 {
            self.shared.faults.lock().expect("the faults").push(fault);
        }
    }

    /// How many times armed faults have struck so far.
    pub fn struck(&self) -> usize {
        self.shared.struck.load(SeqCst)
    }

    /// Every connection, open now or accepted later, goes silent: no byte forwarded either way,
    /// sockets kept open (a server that went quiet, a dead NAT entry). A new connection still
    /// gets its own to the server, whose greeting (MariaDB's) is held. A client that hangs up
    /// meanwhile closes its server's side too, unless bytes it sent wait unread: those reach
    /// the server after `heal`, then its FIN, as a healed network would deliver them.
    pub fn stall(&self) {
        self.shared.stalled.store(true, SeqCst);
    }

    /// Undoes `stall` (the connections it silenced carry on where they were), latency and
    /// bandwidth, and closes the connections a `StallAfter` silenced; new connections pass
    /// normally.
    pub fn heal(&self) {
        let shared = &self.shared;
        shared.latency_ns.store(0, SeqCst);
        shared.bandwidth.store(0, SeqCst);
        shared.heals.fetch_add(1, SeqCst);
        shared.stalled.store(false, SeqCst);
    }

    /// Every connection open now is reset (RST to the client, connection to the server closed).
    pub fn reset_all(&self) {
        self.shared.resets.fetch_add(1, SeqCst);
    }

    /// Each chunk is delivered `delay` after it was read, in both directions (a delay line, so
    /// throughput holds up: up to 16 MiB in flight each way); chunks read before keep their
    /// own delay.
    pub fn set_latency(&self, delay: Duration) {
        let nanos = u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX);
        self.shared.latency_ns.store(nanos, SeqCst);
    }

    /// At most `bytes_per_second` each way per connection (token bucket); None = unlimited.
    pub fn set_bandwidth(&self, bytes_per_second: Option<u64>) {
        // 0 stands for unlimited; a link that carries nothing is what `stall` is for.
        let rate = bytes_per_second.map_or(0, |b| b.max(1));
        self.shared.bandwidth.store(rate, SeqCst);
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.shared.connections.load(SeqCst)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, SeqCst);
        if let Some(listener) = self.listener.take() {
            let _ = listener.join();
        }
    }
}

/// Accepts until the proxy is dropped, then waits for every connection's threads.
fn listen(listener: TcpListener, upstream: SocketAddr, shared: Arc<Shared>) {
    let mut connections: Vec<JoinHandle<()>> = Vec::new();
    while !shared.stop.load(SeqCst) {
        match listener.accept() {
            Ok((client, _)) => {
                shared.connections.fetch_add(1, SeqCst);
                let born = shared.resets.load(SeqCst);
                let shared = shared.clone();
                connections.retain(|c| !c.is_finished());
                connections.push(std::thread::spawn(move || {
                    serve(client, upstream, shared, born)
                }));
            }
            // Nobody connecting (or a passing failure, such as too many open files).
            Err(_) => std::thread::sleep(ACCEPT_POLL),
        }
    }
    // Newcomers are refused while the others end.
    drop(listener);
    for connection in connections {
        let _ = connection.join();
    }
}

/// One connection: its twin to the server, then a pump each way (this thread's carries the
/// client's bytes).
fn serve(client: TcpStream, upstream: SocketAddr, shared: Arc<Shared>, born: u64) {
    let Ok(server) = TcpStream::connect_timeout(&upstream, CONNECT_TIMEOUT) else {
        // A refused connection, as the client would have seen it without the proxy.
        reset_on_close(&client);
        return;
    };
    // Some systems hand out accepted sockets in the listener's non-blocking mode.
    let _ = client.set_nonblocking(false);
    for socket in [&client, &server] {
        // The protocols are chatty: coalescing small writes would add delays of our own.
        let _ = socket.set_nodelay(true);
        // A write the peer does not take must come back to look at the flags too.
        let _ = socket.set_write_timeout(Some(POLL));
    }
    let link = Arc::new(Link {
        born,
        ..Link::default()
    });
    let (client, server) = (Arc::new(client), Arc::new(server));
    let back = Pump::new(&shared, &link, false, server.clone(), client.clone());
    let back = std::thread::spawn(move || back.run());
    Pump::new(&shared, &link, true, client, server).run();
    let _ = back.join();
}

/// Makes the socket's last close send a RST instead of a FIN (SO_LINGER 0).
fn reset_on_close(socket: &TcpStream) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a live socket's descriptor, and an option value that outlives the call.
    unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

/// A timeout (the flags are due a look), not a failure.
fn blocked(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
    )
}

/// What the two directions of one connection tell each other.
#[derive(Default)]
struct Link {
    /// `Shared::resets` when it was accepted: a `reset_all` since resets it.
    born: u64,
    /// Its client was reset: both pumps drop their handles to it (the last one sends the RST).
    client_gone: AtomicBool,
    /// `Shared::heals` + 1 when a `StallAfter` silenced it; 0: not silenced.
    silenced: AtomicU64,
    /// Both directions end now.
    done: AtomicBool,
}

/// One direction of one connection: reads its source, holds each chunk in a delay line until
/// it is due, and writes it to its sink as fast as the token bucket lets it.
struct Pump {
    shared: Arc<Shared>,
    link: Arc<Link>,
    /// Client to server: where faults look for their patterns.
    upstream: bool,
    /// None once the client's side is gone (the client is `from` upstream, `to` back).
    from: Option<Arc<TcpStream>>,
    to: Option<Arc<TcpStream>>,
    queue: VecDeque<Chunk>,
    queued: usize,
    /// The source's FIN came: the sink gets one once the queue is delivered.
    eof: bool,
    bucket: Bucket,
    /// The previous chunk's last bytes, for a pattern split across two reads.
    tail: Vec<u8>,
    /// When the server's side of a lost answer closes.
    drain_until: Option<Instant>,
}

struct Chunk {
    due: Instant,
    bytes: Vec<u8>,
    sent: usize,
}

impl Pump {
    fn new(
        shared: &Arc<Shared>,
        link: &Arc<Link>,
        upstream: bool,
        from: Arc<TcpStream>,
        to: Arc<TcpStream>,
    ) -> Pump {
        Pump {
            shared: shared.clone(),
            link: link.clone(),
            upstream,
            from: Some(from),
            to: Some(to),
            queue: VecDeque::new(),
            queued: 0,
            eof: false,
            bucket: Bucket {
                tokens: 0.0,
                last: Instant::now(),
            },
            tail: Vec::new(),
            drain_until: None,
        }
    }

    fn run(mut self) {
        let mut buf = vec![0; CHUNK];
        while self.alive() {
            let stalled = self.shared.stalled.load(SeqCst);
            let silenced = self.link.silenced.load(SeqCst) != 0;
            // A silenced connection's client still gets nothing; its server, what was sent.
            let hold = stalled || (silenced && !self.upstream);
            if !hold && self.deliver().is_err() {
                self.abort();
                return;
            }
            let ended = self.eof || self.from.is_none();
            if ended && self.queue.is_empty() {
                if let Some(to) = &self.to {
                    let _ = to.shutdown(Shutdown::Write);
                }
                return;
            }
            let wait = if hold { POLL } else { self.wait() };
            if stalled || silenced {
                self.watch_client(wait);
            } else if ended || self.queued >= self.cap() {
                std::thread::sleep(wait);
            } else if !self.read(&mut buf, wait) {
                return;
            }
        }
    }

    /// Acts on what the proxy, a fault or the other direction decided; false: this pump ends.
    fn alive(&mut self) -> bool {
        let (shared, link) = (&*self.shared, &*self.link);
        if shared.stop.load(SeqCst) || link.done.load(SeqCst) {
            return false;
        }
        if shared.resets.load(SeqCst) != link.born {
            if let Some(client) = self.client() {
                reset_on_close(client);
            }
            return false;
        }
        let silenced = link.silenced.load(SeqCst);
        if silenced != 0 && silenced != shared.heals.load(SeqCst) + 1 {
            return false;
        }
        if link.client_gone.load(SeqCst) {
            if self.upstream {
                self.from = None;
            } else if self.to.take().is_some() {
                self.queue.clear();
                self.queued = 0;
                self.drain_until = Some(Instant::now() + DRAIN);
            }
        }
        self.drain_until.is_none_or(|t| Instant::now() < t)
    }

    fn client(&self) -> Option<&TcpStream> {
        match self.upstream {
            true => self.from.as_deref(),
            false => self.to.as_deref(),
        }
    }

    /// Resets both sides, as a broken connection would.
    fn abort(&self) {
        for socket in [&self.from, &self.to].into_iter().flatten() {
            reset_on_close(socket);
        }
        self.link.done.store(true, SeqCst);
    }

    /// Writes what is due to the sink, as far as the bucket and the sink take it.
    fn deliver(&mut self) -> std::io::Result<()> {
        let Some(mut to) = self.to.as_deref() else {
            return Ok(());
        };
        let rate = self.shared.bandwidth.load(SeqCst);
        while let Some(front) = self.queue.front_mut() {
            if front.due > Instant::now() {
                break;
            }
            let n = self.bucket.allow(rate, front.bytes.len() - front.sent);
            if n == 0 {
                break;
            }
            match to.write(&front.bytes[front.sent..front.sent + n]) {
                Ok(n) => {
                    self.bucket.spend(rate, n);
                    self.queued -= n;
                    front.sent += n;
                    if front.sent == front.bytes.len() {
                        self.queue.pop_front();
                    }
                }
                Err(e) if blocked(&e) => break,
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// How long the pump may block before its queue has something to deliver (at most POLL).
    fn wait(&mut self) -> Duration {
        let rate = self.shared.bandwidth.load(SeqCst);
        let wait = match self.queue.front() {
            None => POLL,
            Some(front) => match front.due.checked_duration_since(Instant::now()) {
                Some(until_due) if !until_due.is_zero() => until_due,
                _ => self.bucket.wait(rate, front.bytes.len() - front.sent),
            },
        };
        wait.clamp(Duration::from_millis(1), POLL)
    }

    /// What the delay line may hold before the pump stops reading: what the link carries during
    /// the latency, plus a chunk, so a slow link pushes back on its sender as a real one does.
    fn cap(&self) -> usize {
        let latency = self.shared.latency();
        if latency.is_zero() {
            return CHUNK;
        }
        CHUNK
            + match self.shared.bandwidth.load(SeqCst) {
                0 => UNLIMITED_IN_FLIGHT,
                rate => (rate as f64 * latency.as_secs_f64()) as usize,
            }
    }

    /// While silent nothing is read, but a client that hangs up ends the connection.
    fn watch_client(&self, wait: Duration) {
        let client = match self.upstream {
            true => self.from.as_deref(),
            false => None,
        };
        let Some(client) = client else {
            return std::thread::sleep(wait);
        };
        let _ = client.set_read_timeout(Some(wait));
        match client.peek(&mut [0]) {
            Ok(0) => self.link.done.store(true, SeqCst),
            // Bytes wait unread: a FIN behind them shows only once they are read.
            Ok(_) => std::thread::sleep(wait),
            Err(e) if blocked(&e) => {}
            Err(_) => self.abort(),
        }
    }

    /// Reads a chunk (waiting at most `wait`) and queues it; false: the connection ended.
    fn read(&mut self, buf: &mut [u8], wait: Duration) -> bool {
        let Some(mut from) = self.from.as_deref() else {
            return true;
        };
        let _ = from.set_read_timeout(Some(wait));
        match from.read(buf) {
            Ok(0) => self.eof = true,
            Ok(n) => return self.take(&buf[..n]),
            Err(e) if blocked(&e) => {}
            Err(_) => {
                self.abort();
                return false;
            }
        }
        true
    }

    /// Queues a chunk for delivery, unless a fault it completes says otherwise; false: the
    /// fault reset the connection.
    fn take(&mut self, data: &[u8]) -> bool {
        // A lost answer's server: what it sends goes nowhere.
        if self.to.is_none() {
            return true;
        }
        let action = match self.upstream {
            true => self.strike(data),
            false => None,
        };
        if action == Some(Action::NeverArrives) {
            self.abort();
            return false;
        }
        let due = Instant::now() + self.shared.latency();
        self.queue.push_back(Chunk {
            due,
            bytes: data.to_vec(),
            sent: 0,
        });
        self.queued += data.len();
        match action {
            Some(Action::AnswerLost) => {
                if let Some(client) = &self.from {
                    reset_on_close(client);
                }
                self.link.client_gone.store(true, SeqCst);
            }
            Some(Action::StallAfter) => {
                let silenced = self.shared.heals.load(SeqCst) + 1;
                self.link.silenced.store(silenced, SeqCst);
            }
            _ => {}
        }
        true
    }

    /// The action of the first armed fault whose pattern ends in `data`, now struck.
    fn strike(&mut self, data: &[u8]) -> Option<Action> {
        let mut faults = self.shared.faults.lock().expect("the faults");
        if faults.is_empty() {
            self.tail.clear();
            return None;
        }
        let mut window = std::mem::take(&mut self.tail);
        let old = window.len();
        window.extend_from_slice(data);
        let hit = faults.iter().position(|f| {
            // A match wholly in the tail was the previous chunk's to find.
            let start = old.saturating_sub(f.pattern.len().saturating_sub(1));
            contains(&window[start..], &f.pattern)
        });
        let longest = faults.iter().map(|f| f.pattern.len()).max().unwrap_or(0);
        let keep = longest.saturating_sub(1);
        self.tail = window[window.len().saturating_sub(keep)..].to_vec();
        let i = hit?;
        if faults[i].skip > 0 {
            faults[i].skip -= 1;
            return None;
        }
        let action = faults[i].action;
        faults[i].times -= 1;
        if faults[i].times == 0 {
            faults.remove(i);
        }
        self.shared.struck.fetch_add(1, SeqCst);
        Some(action)
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

/// A token bucket: `rate` bytes a second, in bursts of a fiftieth of a second's worth.
struct Bucket {
    tokens: f64,
    last: Instant,
}

impl Bucket {
    /// Tokens short of what `want` needs to go (a burst at most); negative: to spare.
    fn missing(&mut self, rate: u64, want: usize) -> f64 {
        let burst = (rate as f64 / 50.0).max(1.0);
        let now = Instant::now();
        let earned = now.duration_since(self.last).as_secs_f64() * rate as f64;
        self.tokens = (self.tokens + earned).min(burst);
        self.last = now;
        (want as f64).min(burst) - self.tokens
    }

    /// How much of `want` may go now: all of it, a burst, or nothing yet.
    fn allow(&mut self, rate: u64, want: usize) -> usize {
        if rate == 0 {
            return want;
        }
        match self.missing(rate, want) > 0.0 {
            true => 0,
            false => want.min(self.tokens as usize),
        }
    }

    /// How long until `allow` lets some of `want` go.
    fn wait(&mut self, rate: u64, want: usize) -> Duration {
        if rate == 0 {
            return Duration::ZERO;
        }
        Duration::from_secs_f64(self.missing(rate, want).max(0.0) / rate as f64)
    }

    fn spend(&mut self, rate: u64, n: usize) {
        // Unlimited bytes cost nothing, so a cap set later starts from a full bucket.
        if rate > 0 {
            self.tokens -= n as f64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUIET: Duration = Duration::from_millis(300);
    const SOON: Duration = Duration::from_secs(1);

    /// How a connection the echo server took ended.
    #[derive(Clone, Copy, Debug, PartialEq)]
    enum End {
        Fin,
        Reset,
    }

    #[derive(Clone, Debug, Default)]
    struct Log {
        bytes: Vec<u8>,
        end: Option<End>,
    }

    /// A server on 127.0.0.1 that sends back what it reads and logs what each connection
    /// brought, in the order they came.
    struct Echo {
        addr: SocketAddr,
        logs: Arc<Mutex<Vec<Log>>>,
        stop: Arc<AtomicBool>,
        thread: Option<JoinHandle<()>>,
    }

    impl Echo {
        fn start() -> Echo {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            listener.set_nonblocking(true).unwrap();
            let logs = Arc::new(Mutex::new(Vec::new()));
            let stop = Arc::new(AtomicBool::new(false));
            let thread = {
                let (logs, stop) = (logs.clone(), stop.clone());
                std::thread::spawn(move || {
                    while !stop.load(SeqCst) {
                        match listener.accept() {
                            Ok((socket, _)) => {
                                let k = {
                                    let mut logs = logs.lock().unwrap();
                                    logs.push(Log::default());
                                    logs.len() - 1
                                };
                                let logs = logs.clone();
                                std::thread::spawn(move || echo(socket, &logs, k));
                            }
                            Err(_) => std::thread::sleep(ACCEPT_POLL),
                        }
                    }
                })
            };
            Echo {
                addr,
                logs,
                stop,
                thread: Some(thread),
            }
        }

        /// Connection `k`'s log once `done` holds of it (within 5 s).
        fn wait(&self, k: usize, done: impl Fn(&Log) -> bool) -> Log {
            let deadline = Instant::now() + Duration::from_secs(5);
            loop {
                let log = self
                    .logs
                    .lock()
                    .unwrap()
                    .get(k)
                    .cloned()
                    .unwrap_or_default();
                if done(&log) {
                    return log;
                }
                assert!(Instant::now() < deadline, "connection {k}: {log:?}");
                std::thread::sleep(Duration::from_millis(5));
            }
        }

        fn log(&self, k: usize) -> Log {
            self.wait(k, |_| true)
        }

        fn ended(&self, k: usize) -> Log {
            self.wait(k, |log| log.end.is_some())
        }
    }

    impl Drop for Echo {
        fn drop(&mut self) {
            self.stop.store(true, SeqCst);
            if let Some(thread) = self.thread.take() {
                let _ = thread.join();
            }
        }
    }

    /// Ends when the proxy closes its side, as every proxy does when dropped.
    fn echo(mut socket: TcpStream, logs: &Mutex<Vec<Log>>, k: usize) {
        socket.set_nonblocking(false).unwrap();
        let mut buf = vec![0; 64 << 10];
        let end = loop {
            match socket.read(&mut buf) {
                Ok(0) => break End::Fin,
                Ok(n) => {
                    logs.lock().unwrap()[k].bytes.extend_from_slice(&buf[..n]);
                    let _ = socket.write_all(&buf[..n]);
                }
                Err(_) => break End::Reset,
            }
        };
        logs.lock().unwrap()[k].end = Some(end);
    }

    fn connect(proxy: &Proxy) -> TcpStream {
        TcpStream::connect(("127.0.0.1", proxy.port())).unwrap()
    }

    /// Sends `bytes` and expects them back.
    fn round_trip(client: &mut TcpStream, bytes: &[u8]) {
        client.write_all(bytes).unwrap();
        client
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut back = vec![0; bytes.len()];
        client.read_exact(&mut back).unwrap();
        assert_eq!(back, bytes);
    }

    #[derive(Debug, PartialEq)]
    enum Next {
        Bytes(Vec<u8>),
        Eof,
        Reset,
        Silence,
    }

    /// What the client's next read brings within `within`.
    fn next(client: &mut TcpStream, within: Duration) -> Next {
        client.set_read_timeout(Some(within)).unwrap();
        let mut buf = [0; 4096];
        match client.read(&mut buf) {
            Ok(0) => Next::Eof,
            Ok(n) => Next::Bytes(buf[..n].to_vec()),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                Next::Silence
            }
            Err(_) => Next::Reset,
        }
    }

    fn closed(next: Next) -> bool {
        matches!(next, Next::Eof | Next::Reset)
    }

    fn fault(pattern: &[u8], action: Action, times: usize) -> Fault {
        Fault {
            pattern: pattern.to_vec(),
            action,
            times,
            skip: 0,
        }
    }

    /// Writes `data` from a thread of its own while the caller reads it back.
    fn echoed(client: &mut TcpStream, data: &[u8]) -> Vec<u8> {
        let mut writer = client.try_clone().unwrap();
        let sent = data.to_vec();
        let writer = std::thread::spawn(move || writer.write_all(&sent).unwrap());
        client
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut back = vec![0; data.len()];
        client.read_exact(&mut back).unwrap();
        writer.join().unwrap();
        back
    }

    #[test]
    fn bytes_pass_both_ways_and_a_half_close_reaches_the_server() {
        let echo = Echo::start();
        let proxy = Proxy::start(echo.addr);
        let mut client = connect(&proxy);
        let data: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
        assert_eq!(echoed(&mut client, &data), data);
        client.shutdown(Shutdown::Write).unwrap();
        let log = echo.ended(0);
        assert_eq!(log.end, Some(End::Fin));
        assert_eq!(log.bytes, data);
        // The server's FIN comes back once it has answered everything.
        assert_eq!(next(&mut client, SOON), Next::Eof);
        assert_eq!(proxy.connections(), 1);
    }

    #[test]
    fn an_answer_lost_after_the_pattern_never_reaches_the_client() {
        let echo = Echo::start();
        let proxy = Proxy::start(echo.addr);
        proxy.arm(fault(b"COMMIT", Action::AnswerLost, 1));
        let mut client = connect(&proxy);
        round_trip(&mut client, b"BEGIN");
        client.write_all(b"COMMIT").unwrap();
        assert_eq!(next(&mut client, SOON), Next::Reset);
        // The server read it all, then a graceful end: it would have committed.
        let log = echo.ended(0);
        assert_eq!(log.bytes, b"BEGINCOMMIT");
        assert_eq!(log.end, Some(End::Fin));
        assert_eq!(proxy.struck(), 1);
    }

    #[test]
    fn a_statement_that_never_arrives_is_never_seen_by_the_server() {
        let echo = Echo::start();
        let proxy = Proxy::start(echo.addr);
        proxy.arm(fault(b"XA PREPARE", Action::NeverArrives, 1));
        let mut client = connect(&proxy);
        round_trip(&mut client, b"XA END 'x'");
        client.write_all(b"XA PREPARE 'x'").unwrap();
        assert_eq!(next(&mut client, SOON), Next::Reset);
        let log = echo.ended(0);
        assert_eq!(log.bytes, b"XA END 'x'");
        assert_eq!(log.end, Some(End::Reset));
        assert_eq!(proxy.struck(), 1);
    }

    #[test]
    fn a_pattern_split_across_two_reads_is_still_found() {
        let echo = Echo::start();
        let proxy = Proxy::start(echo.addr);
        proxy.arm(fault(b"COMMIT", Action::NeverArrives, 1));
        let mut client = connect(&proxy);
        round_trip(&mut client, b"COM");
        // The server has the first half: the second comes in a read of its own.
        assert_eq!(echo.log(0).bytes, b"COM");
        client.write_all(b"MIT").unwrap();
        assert_eq!(next(&mut client, SOON), Next::Reset);
        assert_eq!(echo.ended(0).bytes, b"COM");
        assert_eq!(proxy.struck(), 1);
    }

    #[test]
    fn a_fault_strikes_connections_open_before_or_after_it_is_armed_then_disarms() {
        let echo = Echo::start();
        let proxy = Proxy::start(echo.addr);
        let mut open = connect(&proxy);
        round_trip(&mut open, b"SELECT 1");
        proxy.arm(fault(b"COMMIT", Action::NeverArrives, 2));
        open.write_all(b"COMMIT").unwrap();
        assert_eq!(next(&mut open, SOON), Next::Reset);
        let mut later = connect(&proxy);
        later.write_all(b"COMMIT").unwrap();
        assert_eq!(next(&mut later, SOON), Next::Reset);
        let mut third = connect(&proxy);
        round_trip(&mut third, b"COMMIT");
        assert_eq!(proxy.struck(), 2);
        assert_eq!(proxy.connections(), 3);
    }

    #[test]
    fn a_fault_lets_its_skipped_matches_pass_and_strikes_the_next() {
        let echo = Echo::start();
        let proxy = Proxy::start(echo.addr);
        proxy.arm(Fault {
            skip: 1,
            ..fault(b"COMMIT", Action::NeverArrives, 1)
        });
        let mut first = connect(&proxy);
        round_trip(&mut first, b"COMMIT");
        let mut second = connect(&proxy);
        second.write_all(b"COMMIT").unwrap();
        assert_eq!(next(&mut second, SOON), Next::Reset);
        assert_eq!(proxy.struck(), 1);
    }

    #[test]
    fn a_stall_after_the_pattern_forwards_it_then_silences_the_connection_until_heal() {
        let echo = Echo::start();
        let proxy = Proxy::start(echo.addr);
        proxy.arm(fault(b"COMMIT", Action::StallAfter, 1));
        let mut client = connect(&proxy);
        client.write_all(b"COMMIT").unwrap();
        echo.wait(0, |log| log.bytes == b"COMMIT");
        assert_eq!(next(&mut client, QUIET), Next::Silence);
        client.write_all(b"ROLLBACK").unwrap();
        assert_eq!(next(&mut client, QUIET), Next::Silence);
        assert_eq!(echo.log(0).bytes, b"COMMIT");
        assert_eq!(echo.log(0).end, None);
        proxy.heal();
        assert!(closed(next(&mut client, SOON)));
        let mut fresh = connect(&proxy);
        round_trip(&mut fresh, b"COMMIT");
        assert_eq!(proxy.struck(), 1);
    }

    #[test]
    fn a_stalled_proxy_forwards_nothing_but_keeps_sockets_open_until_healed() {
        let echo = Echo::start();
        let proxy = Proxy::start(echo.addr);
        let mut open = connect(&proxy);
        round_trip(&mut open, b"a");
        proxy.stall();
        open.write_all(b"b").unwrap();
        assert_eq!(next(&mut open, QUIET), Next::Silence);
        let mut later = connect(&proxy);
        later.write_all(b"c").unwrap();
        assert_eq!(next(&mut later, QUIET), Next::Silence);
        assert_eq!(echo.log(0).bytes, b"a");
        assert_eq!(echo.log(1).bytes, b"");
        proxy.heal();
        // What waited goes on; new connections pass.
        assert_eq!(next(&mut open, SOON), Next::Bytes(b"b".to_vec()));
        assert_eq!(next(&mut later, SOON), Next::Bytes(b"c".to_vec()));
        let mut fresh = connect(&proxy);
        round_trip(&mut fresh, b"d");
    }

    #[test]
    fn reset_all_resets_every_open_connection_and_later_ones_pass() {
        let echo = Echo::start();
        let proxy = Proxy::start(echo.addr);
        let (mut a, mut b) = (connect(&proxy), connect(&proxy));
        round_trip(&mut a, b"a");
        round_trip(&mut b, b"b");
        proxy.reset_all();
        assert_eq!(next(&mut a, SOON), Next::Reset);
        assert_eq!(next(&mut b, SOON), Next::Reset);
        echo.ended(0);
        echo.ended(1);
        let mut later = connect(&proxy);
        round_trip(&mut later, b"c");
    }

    #[test]
    fn latency_delays_every_chunk_each_way() {
        let echo = Echo::start();
        let proxy = Proxy::start(echo.addr);
        proxy.set_latency(Duration::from_millis(100));
        let mut client = connect(&proxy);
        let start = Instant::now();
        round_trip(&mut client, b"ping");
        let elapsed = start.elapsed();
        assert!(elapsed >= Duration::from_millis(2 * 90), "{elapsed:?}");
    }

    #[test]
    fn a_bandwidth_cap_paces_each_direction() {
        let echo = Echo::start();
        let proxy = Proxy::start(echo.addr);
        proxy.set_bandwidth(Some(1_000_000));
        let mut client = connect(&proxy);
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 249) as u8).collect();
        let start = Instant::now();
        assert_eq!(echoed(&mut client, &data), data);
        let elapsed = start.elapsed();
        assert!(elapsed >= Duration::from_millis(150), "{elapsed:?}");
    }

    #[test]
    fn dropping_the_proxy_ends_every_connection_even_a_silenced_one() {
        let echo = Echo::start();
        let proxy = Proxy::start(echo.addr);
        proxy.arm(fault(b"COMMIT", Action::StallAfter, 1));
        let (mut plain, mut silenced) = (connect(&proxy), connect(&proxy));
        round_trip(&mut plain, b"SELECT 1");
        silenced.write_all(b"COMMIT").unwrap();
        assert_eq!(next(&mut silenced, QUIET), Next::Silence);
        drop(proxy);
        assert!(closed(next(&mut plain, SOON)));
        assert!(closed(next(&mut silenced, SOON)));
        echo.ended(0);
        echo.ended(1);
    }

    #[test]
    fn a_refused_upstream_resets_the_client() {
        let gone = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = gone.local_addr().unwrap();
        drop(gone);
        let proxy = Proxy::start(addr);
        let mut client = connect(&proxy);
        assert_eq!(next(&mut client, SOON), Next::Reset);
        assert_eq!(proxy.connections(), 1);
    }
}
