use super::*;

#[test]
fn requests_parse() {
    assert_eq!(parse("nodes"), Ok(Request::Nodes));
    assert_eq!(parse(" hosts  "), Ok(Request::Hosts));
    assert_eq!(parse("job"), Ok(Request::Job));
    assert_eq!(
        parse("add-hosts local netns:twh1"),
        Ok(Request::Vm(VmOp::AddHosts {
            hosts: vec!["local".into(), "netns:twh1".into()]
        }))
    );
    assert_eq!(
        parse("remove-hosts\tssh:node7"),
        Ok(Request::Vm(VmOp::RemoveHosts {
            hosts: vec!["ssh:node7".into()]
        }))
    );
    assert_eq!(
        parse("add-nodes 2"),
        Ok(Request::Vm(VmOp::AddNodes {
            count: 2,
            program: String::new(),
            args: None,
            host: String::new(),
            env: vec![],
        }))
    );
    assert_eq!(
        parse("add-nodes\t1\t--host\tnetns:a\t--\t/bin/prog\t\t--host"),
        Ok(Request::Vm(VmOp::AddNodes {
            count: 1,
            program: "/bin/prog".into(),
            args: Some(vec![String::new(), "--host".into()]),
            host: "netns:a".into(),
            env: vec![],
        }))
    );
    assert_eq!(
        parse("add-nodes 1 /bin/prog"),
        Ok(Request::Vm(VmOp::AddNodes {
            count: 1,
            program: "/bin/prog".into(),
            args: Some(vec![]),
            host: String::new(),
            env: vec![],
        }))
    );
}

#[test]
fn join_takes_no_arguments() {
    assert_eq!(parse("join"), Ok(Request::Join));
    assert!(parse("join now").is_err());
}

#[test]
fn garbage_requests_are_refused_with_a_reason() {
    let refused = |line: &str, says: &str| {
        let why = parse(line).expect_err(line);
        assert!(why.contains(says), "{line:?}: {why}");
    };
    refused("", "empty request");
    refused("   \t ", "unknown request");
    refused("frobnicate now", "unknown request \"frobnicate\"");
    refused("\u{0}\u{7f}ÿ", "unknown request");
    refused("nodes extra", "`nodes` takes no arguments");
    refused("add-hosts", "needs at least one host");
    refused("add-hosts mars", "\"mars\" is not");
    refused("remove-hosts netns:", "is not");
    refused("add-nodes", "needs a number of nodes");
    refused("add-nodes 0", "from 1, not \"0\"");
    refused("add-nodes -3", "from 1");
    refused("add-nodes 99999999999", "from 1");
    refused("add-nodes many", "from 1");
    refused("add-nodes 1 --host", "`--host` needs a host");
    refused("add-nodes 1 --host venus", "\"venus\" is not");
    let long = "x".repeat(10_000);
    let why = parse(&long).unwrap_err();
    assert!(why.len() < 200, "the error repeats the garbage: {why}");
}

#[test]
fn oversized_or_binary_requests_are_refused() {
    let big = vec![b'a'; MAX_REQUEST + 1];
    let why = read_request(&big[..], REQUEST_TIMEOUT).unwrap_err();
    assert!(why.contains("at most"), "{why}");
    let mut big_line = vec![b'b'; 3 * MAX_REQUEST];
    big_line.push(b'\n');
    assert!(read_request(&big_line[..], REQUEST_TIMEOUT).is_err());
    let binary = b"nodes\xff\xfe\n".to_vec();
    let why = read_request(&binary[..], REQUEST_TIMEOUT).unwrap_err();
    assert!(why.contains("UTF-8"), "{why}");
    assert_eq!(
        read_request(&b"hosts\r\nmore"[..], REQUEST_TIMEOUT),
        Ok("hosts".to_string())
    );
    let exact = [vec![b'c'; MAX_REQUEST], b"\n".to_vec()].concat();
    assert_eq!(
        read_request(&exact[..], REQUEST_TIMEOUT).unwrap().len(),
        MAX_REQUEST
    );
}

#[test]
fn answers_parse_back() {
    assert_eq!(
        ok(&[vec!["0".into(), "a\tb".into(), String::new()]]),
        "ok\n0\ta b\t-\n"
    );
    assert_eq!(error("no\nway"), "error: no way\n");
    assert_eq!(
        vm_answer(&VmAnswer::Nodes(vec![4, 5])),
        "ok\n4\n5\n".to_string()
    );
}

/// A console whose "job" answers every request with its own name: a
/// silent client does not hold up the others, garbage gets an error
/// line, and the socket goes with the console.
#[test]
fn a_silent_client_holds_nobody_up_and_the_socket_goes() {
    let dir = std::env::temp_dir().join(format!("twcon-unit-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (tx, rx) = mpsc::channel();
    let console = Console::open_in(&dir, 0xabcdef, tx).expect("console opens");
    let socket = dir.join("0000000000abcdef");
    let mode = std::fs::metadata(&socket).unwrap().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
    std::thread::spawn(move || {
        while let Ok(Internal::Console { request, reply }) = rx.recv() {
            let _ = reply.send(ok(&[vec![format!("{request:?}")]]));
        }
    });
    let _silent = UnixStream::connect(&socket).unwrap();
    let started = Instant::now();
    let rows = ask(&socket, &["hosts"]).expect("an answer");
    assert_eq!(rows, [["Hosts"]]);
    assert!(started.elapsed() < Duration::from_secs(2));
    match ask(&socket, &["add-nodes", "zero"]) {
        Err(ConsoleError::Refused(why)) => assert!(why.contains("number of nodes"), "{why}"),
        other => panic!("{other:?}"),
    }
    let mut raw = UnixStream::connect(&socket).unwrap();
    raw.write_all(&[0xff; 100]).unwrap();
    raw.write_all(b"\n").unwrap();
    let mut answer = String::new();
    raw.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("error: "), "{answer}");
    assert!(matches!(
        ask(&socket, &["a\tb"]),
        Err(ConsoleError::BadField(_))
    ));
    drop(console);
    assert!(!socket.exists());
    // The accepting thread has ended (it is the only one of its name).
    let accepting = || {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .any(|name| name.trim() == "console")
    };
    let until = Instant::now() + Duration::from_secs(2);
    while accepting() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!accepting(), "the accepting thread outlived its console");
    assert!(ask(&socket, &["hosts"]).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_directory_open_to_others_is_refused() {
    let dir = std::env::temp_dir().join(format!("twcon-open-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (tx, _rx) = mpsc::channel();
    let e = Console::open_in(&dir, 1, tx).err().expect("refused");
    assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
    let _ = std::fs::remove_dir_all(&dir);
}
