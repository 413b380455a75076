use super::*;
use std::io::Write;
use std::net::{TcpListener, TcpStream as StdStream};
use std::time::{Duration, Instant};
use threadwire_wire::Format;

fn pair(max_frame: u64) -> (TcpChannel, TcpChannel, StdStream) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let a = StdStream::connect(l.local_addr().unwrap()).unwrap();
    let (b, _) = l.accept().unwrap();
    let raw = b.try_clone().unwrap();
    (
        TcpChannel::new(a, max_frame).unwrap(),
        TcpChannel::new(b, max_frame).unwrap(),
        raw,
    )
}

/// Drives both sides until `want` frames arrived or the receiver failed.
fn pump(tx: &TcpChannel, rx: &TcpChannel, want: usize) -> Result<Vec<Frame>, ChannelError> {
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while got.len() < want {
        assert!(
            Instant::now() < deadline,
            "timed out with {} of {want} frames",
            got.len()
        );
        let _ = tx.flush();
        rx.receive(|f| got.push(f))?;
    }
    Ok(got)
}

#[test]
fn frames_of_all_sizes_arrive_in_order() {
    let (a, b, _) = pair(1 << 30);
    let sizes = [
        0usize,
        1,
        31,
        32,
        33,
        1000,
        65_535,
        65_536,
        200_000,
        4 << 20,
        7,
    ];
    for (i, &n) in sizes.iter().enumerate() {
        let data: Vec<u8> = (0..n).map(|j| (i * 31 + j) as u8).collect();
        let h = FrameHeader::data(1, 2, i as u32, Format::OPAQUE, n as u64);
        a.send(&h, Payload::from_vec(data))
            .map_err(|(e, _)| e)
            .unwrap();
    }
    let got = pump(&a, &b, sizes.len()).unwrap();
    for (i, f) in got.iter().enumerate() {
        assert_eq!(f.header.tag, i as u32);
        assert_eq!(f.payload.len(), sizes[i]);
        assert!(f
            .payload
            .iter()
            .enumerate()
            .all(|(j, &x)| x == (i * 31 + j) as u8));
    }
    assert_eq!(a.queued_bytes(), 0);
}

#[test]
fn garbage_and_oversize_and_truncation_are_errors() {
    for (bytes, expect) in [
        (vec![0xAAu8; 64], "magic"),
        (
            FrameHeader::data(0, 0, 0, Format::OPAQUE, 1 << 40)
                .encode()
                .to_vec(),
            "exceeds",
        ),
    ] {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut raw = StdStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        let ch = TcpChannel::new(s, 1 << 20).unwrap();
        raw.write_all(&bytes).unwrap();
        let err = pump(&ch, &ch, 1).unwrap_err();
        assert!(err.to_string().contains(expect), "{err}");
    }
    // A header promising 100 bytes, then end of stream after 10.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut raw = StdStream::connect(l.local_addr().unwrap()).unwrap();
    let (s, _) = l.accept().unwrap();
    let ch = TcpChannel::new(s, 1 << 20).unwrap();
    raw.write_all(&FrameHeader::data(0, 0, 0, Format::OPAQUE, 100).encode())
        .unwrap();
    raw.write_all(&[1; 10]).unwrap();
    drop(raw);
    assert!(matches!(pump(&ch, &ch, 1), Err(ChannelError::Io(_))));
}

#[test]
fn orderly_close_is_closed() {
    let (a, b, _) = pair(1 << 20);
    a.close();
    drop(a);
    assert!(matches!(pump(&b, &b, 1), Err(ChannelError::Closed)));
}

/// Combining: 8 threads sending at once on one channel, mostly finding the
/// writer busy and handing their frames over. Every frame arrives, each
/// thread's in the order it sent them, and nothing stays queued.
#[test]
fn concurrent_senders_combine_and_keep_each_threads_order() {
    const THREADS: u32 = 8;
    const PER_THREAD: u32 = 2_000;
    let (a, b, _) = pair(1 << 20);
    let a = std::sync::Arc::new(a);
    let senders: Vec<_> = (0..THREADS)
        .map(|t| {
            let a = a.clone();
            std::thread::spawn(move || {
                for i in 0..PER_THREAD {
                    // Sizes vary so that some writes are partial.
                    let n = if i % 97 == 0 {
                        70_000
                    } else {
                        8 + (i % 5) as usize
                    };
                    let data = vec![t as u8; n];
                    let h = FrameHeader::data(t, 0, i, Format::OPAQUE, n as u64);
                    a.send(&h, Payload::from_vec(data))
                        .map_err(|(e, _)| e)
                        .expect("send");
                }
            })
        })
        .collect();
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    let want = (THREADS * PER_THREAD) as usize;
    while got.len() < want {
        assert!(Instant::now() < deadline, "{} of {want} frames", got.len());
        let _ = a.flush();
        b.receive(|f| got.push(f)).expect("receive");
    }
    for s in senders {
        s.join().expect("sender");
    }
    let mut next = vec![0u32; THREADS as usize];
    for f in &got {
        let t = f.header.source_thread as usize;
        assert_eq!(f.header.tag, next[t], "thread {t}'s frames out of order");
        assert!(f.payload.iter().all(|&x| x == t as u8));
        next[t] += 1;
    }
    assert!(next.iter().all(|&n| n == PER_THREAD));
    let deadline = Instant::now() + Duration::from_secs(10);
    while a.queued_bytes() > 0 {
        assert!(Instant::now() < deadline, "bytes left queued");
        let _ = a.flush();
        let _ = b.receive(|_| {});
    }
}

/// The socket's congestion control, as the kernel reports it.
fn congestion_control(c: &TcpChannel) -> String {
    let mut name = [0u8; 16];
    let mut len = name.len() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `name` and the
    // length it wrote into `len`.
    let r = unsafe {
        libc::getsockopt(
            c.stream.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_mut_ptr().cast(),
            &mut len,
        )
    };
    assert_eq!(r, 0, "{}", io::Error::last_os_error());
    let name = &name[..len as usize];
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    String::from_utf8_lossy(&name[..end]).into_owned()
}

#[test]
fn same_host_connections_use_reno() {
    let (a, b, _) = pair(1 << 20);
    assert_eq!(congestion_control(&a), SAME_HOST_CONGESTION_CONTROL);
    assert_eq!(congestion_control(&b), SAME_HOST_CONGESTION_CONTROL);
}

/// The kernel's quiet times grow while nothing passes, and a frame resets
/// them on both ends.
#[test]
fn quiet_counts_from_the_last_data() {
    let (a, b, _) = pair(1 << 20);
    let pause = Duration::from_millis(60);
    std::thread::sleep(pause);
    let before = b.quiet().unwrap();
    assert!(before.received >= pause / 2, "{before:?}");
    let header = FrameHeader::data(0, 0, 1, Format::OPAQUE, 3);
    a.send(&header, Payload::from_vec(vec![1, 2, 3])).unwrap();
    pump(&a, &b, 1).unwrap();
    let (sent, received) = (a.quiet().unwrap().sent, b.quiet().unwrap().received);
    assert!(
        sent < pause / 2 && received < pause / 2,
        "{sent:?} {received:?}"
    );
}

/// Whether the kernel holds `TCP_NODELAY` set on `c`'s socket.
fn nodelay(c: &TcpChannel) -> bool {
    c.stream.nodelay().unwrap()
}

fn small(tag: u32) -> (FrameHeader, Payload) {
    let h = FrameHeader::data(1, 2, tag, Format::OPAQUE, 8);
    (h, Payload::from_vec(tag.to_le_bytes().repeat(2)))
}

fn send_small(c: &TcpChannel, tags: std::ops::Range<u32>) {
    for tag in tags {
        let (h, p) = small(tag);
        c.send(&h, p).map_err(|(e, _)| e).unwrap();
    }
}

/// A watch that counts the corks it is told of.
fn watch() -> (Arc<Corking>, Arc<std::sync::atomic::AtomicUsize>) {
    let told = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let t = told.clone();
    let watch = Corking::new(move || {
        t.fetch_add(1, Ordering::SeqCst);
    });
    (watch, told)
}

#[test]
fn a_watched_stream_corks_and_uncorks_on_demand() {
    let (a, b, _) = pair(1 << 20);
    let (w, told) = watch();
    a.watch_corking(w.clone());
    assert!(nodelay(&a), "a channel starts with TCP_NODELAY");
    send_small(&a, 0..CORK_AFTER - 1);
    assert!(!a.is_corked() && nodelay(&a), "not yet a stream");
    send_small(&a, CORK_AFTER - 1..CORK_AFTER);
    assert!(a.is_corked() && !nodelay(&a), "corked after {CORK_AFTER}");
    assert!(w.any());
    assert_eq!(told.load(Ordering::SeqCst), 1);
    // Frames sent while corked arrive, in order, once uncorked.
    send_small(&a, CORK_AFTER..200);
    assert!(a.uncork());
    assert!(!a.uncork(), "uncorked once");
    assert!(nodelay(&a) && !w.any());
    let got = pump(&a, &b, 200).unwrap();
    for (i, f) in got.iter().enumerate() {
        assert_eq!(f.header.tag, i as u32);
        assert_eq!(f.payload, (i as u32).to_le_bytes().repeat(2));
    }
}

#[test]
fn bare_headers_and_answers_keep_a_channel_uncorked() {
    let (a, b, _) = pair(1 << 20);
    let (w, _) = watch();
    a.watch_corking(w.clone());
    // Doorbells and heartbeats are bare headers: never a stream.
    let bell = FrameHeader::control(threadwire_wire::FrameKind::Doorbell, 0, 0);
    for _ in 0..3 * CORK_AFTER {
        a.send(&bell, Payload::from_vec(Vec::new()))
            .map_err(|(e, _)| e)
            .unwrap();
    }
    assert!(!a.is_corked());
    // A conversation: the peer answers before the count runs out.
    for round in 0..4 {
        send_small(&a, 0..CORK_AFTER - 1);
        let (h, p) = small(round);
        b.send(&h, p).map_err(|(e, _)| e).unwrap();
        pump(&b, &a, 1).unwrap();
        assert!(!a.is_corked(), "round {round}");
    }
    // An unwatched channel never corks.
    send_small(&b, 0..3 * CORK_AFTER);
    assert!(!b.is_corked() && nodelay(&b));
    assert!(!w.any());
}

#[test]
fn an_idle_corked_channel_uncorks_at_the_second_look() {
    let (a, _b, _) = pair(1 << 20);
    let (w, _) = watch();
    a.watch_corking(w.clone());
    send_small(&a, 0..CORK_AFTER);
    assert!(a.is_corked());
    assert!(!a.uncork_if_idle(), "it sent since it corked");
    send_small(&a, 0..1);
    assert!(!a.uncork_if_idle(), "it sent since the last look");
    assert!(a.uncork_if_idle(), "nothing sent since the last look");
    assert!(nodelay(&a) && !w.any());
}

#[test]
fn closing_or_dropping_a_corked_channel_releases_the_count() {
    let (a, b, _) = pair(1 << 20);
    let (w, _) = watch();
    a.watch_corking(w.clone());
    b.watch_corking(w.clone());
    send_small(&a, 0..CORK_AFTER);
    send_small(&b, 0..CORK_AFTER);
    assert!(a.is_corked() && b.is_corked());
    a.close();
    assert!(!a.is_corked() && w.any());
    drop(b);
    assert!(!w.any());
}
