//! Forwards TCP between a client and a server, and lets a test cut, stall or delay the connection.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use super::{Result, io_error};

/// What the proxy does with bytes, for open and new connections alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Forward,
    Stall,
    Cut,
}

/// A TCP proxy on loopback that a test controls: it can cut every connection, or stall them
/// (stop forwarding without closing, like a dead network path), and restore them; or strand the
/// connections open now for good while new ones work (a path that a NAT or load balancer
/// dropped without telling either end).
///
/// Put it between a client and kube-apiserver with
/// [`ControlPlane::client_through`](super::ControlPlane::client_through).
#[derive(Debug)]
pub struct TcpProxy {
    addr: SocketAddr,
    mode: Arc<watch::Sender<Mode>>,
    accepted: Arc<AtomicUsize>,
    /// One flag per open connection: set, it forwards nothing ever again.
    stranded: Arc<Mutex<Vec<watch::Sender<bool>>>>,
    /// How long bytes from the server are held before the client gets them, in microseconds.
    delay: Arc<AtomicU64>,
    task: JoinHandle<()>,
}

impl TcpProxy {
    /// Listens on a free loopback port and forwards every connection to `upstream`.
    ///
    /// # Errors
    /// The listening socket could not be opened.
    pub async fn start(upstream: SocketAddr) -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(io_error("opening the proxy's listening socket"))?;
        let addr = listener
            .local_addr()
            .map_err(io_error("reading the proxy's address"))?;
        let mode = Arc::new(watch::Sender::new(Mode::Forward));
        let accepted = Arc::new(AtomicUsize::new(0));
        let stranded = Arc::default();
        let delay = Arc::new(AtomicU64::new(0));
        let task = tokio::spawn(accept_loop(
            listener,
            upstream,
            Arc::clone(&mode),
            Arc::clone(&accepted),
            Arc::clone(&stranded),
            Arc::clone(&delay),
        ));
        Ok(Self {
            addr,
            mode,
            accepted,
            stranded,
            delay,
            task,
        })
    }

    /// The address clients connect to.
    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Closes every open connection and refuses new ones until [`Self::restore`].
    pub fn cut(&self) {
        self.mode.send_replace(Mode::Cut);
    }

    /// Stops forwarding bytes on open and new connections, without closing them.
    pub fn stall(&self) {
        self.mode.send_replace(Mode::Stall);
    }

    /// Stops forwarding on every connection open now, for good, without closing it; new
    /// connections are forwarded. Neither end hears of it: only a health check (a ping that
    /// gets no answer) or a timeout tells.
    pub fn strand(&self) {
        for flag in self.stranded.lock().drain(..) {
            flag.send_replace(true);
        }
    }

    /// Holds every byte from the server for `delay` before the client gets it, on open and new
    /// connections, in order (`Duration::ZERO`: no more delay). Requests reach the server at
    /// once; answers and watch events come `delay` late, as over a slow path back. A client
    /// whose watches go through the proxy and whose writes do not sees its cache lag its writes.
    pub fn delay(&self, delay: Duration) {
        let micros = u64::try_from(delay.as_micros()).unwrap_or(u64::MAX);
        self.delay.store(micros, Ordering::SeqCst);
    }

    /// Forwards again; stalled bytes flow on.
    pub fn restore(&self) {
        self.mode.send_replace(Mode::Forward);
    }

    /// How many connections clients opened through the proxy so far.
    #[must_use]
    pub fn connections_accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.mode.send_replace(Mode::Cut);
        self.task.abort();
    }
}

async fn accept_loop(
    listener: TcpListener,
    upstream: SocketAddr,
    mode: Arc<watch::Sender<Mode>>,
    accepted: Arc<AtomicUsize>,
    stranded: Arc<Mutex<Vec<watch::Sender<bool>>>>,
    delay: Arc<AtomicU64>,
) {
    while let Ok((client, _)) = listener.accept().await {
        accepted.fetch_add(1, Ordering::SeqCst);
        if *mode.borrow() == Mode::Cut {
            continue; // dropping the socket refuses the connection
        }
        let mode = mode.subscribe();
        let (strand, strand_rx) = watch::channel(false);
        stranded.lock().push(strand);
        let delay = Arc::clone(&delay);
        tokio::spawn(async move {
            let Ok(server) = TcpStream::connect(upstream).await else {
                return;
            };
            let (client_read, client_write) = client.into_split();
            let (server_read, server_write) = server.into_split();
            let up = Gate(mode.clone(), strand_rx.clone());
            tokio::join!(
                pump(client_read, server_write, up),
                pump_delayed(server_read, client_write, Gate(mode, strand_rx), delay)
            );
        });
    }
}

/// What lets one direction of a connection forward: the proxy's mode and the connection's
/// stranded flag.
#[derive(Clone)]
struct Gate(watch::Receiver<Mode>, watch::Receiver<bool>);

/// Copies bytes one way until either side closes or the proxy cuts; holds them while stalled.
async fn pump(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, mut mode: Gate) {
    let mut buf = vec![0_u8; 16 * 1024];
    loop {
        if !wait_until_forwarding(&mut mode).await {
            return;
        }
        let read = tokio::select! {
            read = from.read(&mut buf) => read,
            _ = mode.0.changed() => continue,
            _ = mode.1.changed() => continue,
        };
        let n = match read {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if !wait_until_forwarding(&mut mode).await || to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

/// As [`pump`], holding each chunk read for the proxy's delay at the time it was read: a
/// reader queues chunks with their due time, a writer sends them on in order when due.
async fn pump_delayed(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    gate: Gate,
    delay: Arc<AtomicU64>,
) {
    let (due, mut queued) = mpsc::unbounded_channel::<(tokio::time::Instant, Vec<u8>)>();
    let mut read_gate = gate.clone();
    let read = async move {
        let mut buf = vec![0_u8; 16 * 1024];
        loop {
            if !wait_until_forwarding(&mut read_gate).await {
                return;
            }
            let read = tokio::select! {
                read = from.read(&mut buf) => read,
                _ = read_gate.0.changed() => continue,
                _ = read_gate.1.changed() => continue,
            };
            let n = match read {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let hold = Duration::from_micros(delay.load(Ordering::SeqCst));
            if due
                .send((tokio::time::Instant::now() + hold, buf[..n].to_vec()))
                .is_err()
            {
                return;
            }
        }
    };
    let mut write_gate = gate;
    let write = async move {
        while let Some((at, bytes)) = queued.recv().await {
            tokio::time::sleep_until(at).await;
            if !wait_until_forwarding(&mut write_gate).await || to.write_all(&bytes).await.is_err()
            {
                return;
            }
        }
    };
    tokio::join!(read, write);
}

/// Waits while stalled or stranded; false once the proxy cuts or goes away.
async fn wait_until_forwarding(gate: &mut Gate) -> bool {
    loop {
        let stranded = *gate.1.borrow_and_update();
        match *gate.0.borrow_and_update() {
            Mode::Forward if !stranded => return true,
            Mode::Cut => return false,
            Mode::Forward | Mode::Stall => {}
        }
        let changed = tokio::select! {
            changed = gate.0.changed() => changed.is_ok(),
            // A dropped flag (the proxy gone) changes nothing: the mode says when to stop.
            _ = gate.1.changed(), if !stranded => true,
        };
        if !changed {
            return false;
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::time::Instant;

    use super::*;

    #[tokio::test]
    async fn a_delay_holds_what_the_server_sends_and_not_what_the_client_sends()
    -> anyhow::Result<()> {
        let server = TcpListener::bind("127.0.0.1:0").await?;
        let proxy = TcpProxy::start(server.local_addr()?).await?;
        let delay = Duration::from_millis(300);
        proxy.delay(delay);
        let echo = tokio::spawn(async move {
            let (mut socket, _) = server.accept().await?;
            let mut byte = [0_u8; 1];
            socket.read_exact(&mut byte).await?;
            let arrived = Instant::now();
            socket.write_all(&byte).await?;
            anyhow::Ok(arrived)
        });
        let mut client = TcpStream::connect(proxy.addr()).await?;
        let sent = Instant::now();
        client.write_all(b"x").await?;
        let mut byte = [0_u8; 1];
        client.read_exact(&mut byte).await?;
        let answered = sent.elapsed();
        let arrived = echo.await?? - sent;
        assert!(
            arrived < delay / 2,
            "the request took {arrived:?} to reach the server"
        );
        assert!(
            answered >= delay,
            "the answer came after {answered:?}, not held {delay:?}"
        );
        Ok(())
    }
}
