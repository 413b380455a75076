//! Round trips, the managers' own answers, malformed and overlong lines.

use super::*;

fn ok() -> PmiStatus {
    PmiStatus::OK
}

#[test]
fn every_command_round_trips() {
    let failed = PmiStatus {
        rc: -1,
        msg: Some("key_x_not_found".into()),
    };
    let all = [
        PmiCommand::Init {
            version: 1,
            subversion: 1,
        },
        PmiCommand::InitAck { pmi_id: 3 },
        PmiCommand::GetMaxes,
        PmiCommand::GetMyKvsname,
        PmiCommand::GetUniverseSize,
        PmiCommand::GetAppnum,
        PmiCommand::Put {
            kvsname: "kvs_1_0".into(),
            key: "addr-3".into(),
            value: "[::1]:80".into(),
        },
        PmiCommand::Get {
            kvsname: "kvs_1_0".into(),
            key: "addr-3".into(),
        },
        PmiCommand::BarrierIn,
        PmiCommand::Finalize,
        PmiCommand::Abort { exit_code: -7 },
        PmiCommand::ResponseToInit {
            status: ok(),
            version: 1,
            subversion: 1,
        },
        PmiCommand::InitAcked,
        PmiCommand::Set {
            key: "size".into(),
            value: "4".into(),
        },
        PmiCommand::Maxes {
            status: ok(),
            maxes: PmiMaxes {
                kvsname_max: 256,
                keylen_max: 64,
                vallen_max: 1024,
            },
        },
        PmiCommand::MyKvsname {
            status: ok(),
            kvsname: "12.0".into(),
        },
        PmiCommand::UniverseSize {
            status: ok(),
            size: -1,
        },
        PmiCommand::Appnum {
            status: ok(),
            appnum: 0,
        },
        PmiCommand::PutResult { status: ok() },
        PmiCommand::GetResult {
            status: ok(),
            value: Some("v".into()),
        },
        PmiCommand::GetResult {
            status: failed.clone(),
            value: None,
        },
        PmiCommand::BarrierOut { status: failed },
        PmiCommand::FinalizeAck { status: ok() },
    ];
    for command in all {
        let bytes = command.encode().unwrap();
        assert_eq!(bytes.last(), Some(&b'\n'));
        assert_eq!(PmiCommand::parse(&bytes).unwrap(), command, "{bytes:?}");
    }
}

#[test]
fn answers_as_hydra_and_slurm_write_them_parse() {
    let hydra_miss = b"cmd=get_result rc=-1 msg=key_addr-0_not_found value=unknown\n";
    assert_eq!(
        PmiCommand::parse(hydra_miss).unwrap(),
        PmiCommand::GetResult {
            status: PmiStatus {
                rc: -1,
                msg: Some("key_addr-0_not_found".into())
            },
            value: Some("unknown".into()),
        }
    );
    let slurm_init = b"cmd=response_to_init rc=0 pmi_version=1 pmi_subversion=1\n";
    assert!(matches!(
        PmiCommand::parse(slurm_init).unwrap(),
        PmiCommand::ResponseToInit { status, version: 1, subversion: 1 } if status.is_ok()
    ));
    let hydra_maxes = b"cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024";
    assert!(matches!(
        PmiCommand::parse(hydra_maxes).unwrap(),
        PmiCommand::Maxes {
            maxes: PmiMaxes {
                vallen_max: 1024,
                ..
            },
            ..
        }
    ));
    let mapping = b"cmd=get_result rc=0 msg=success value=(vector,(0,1,1))\n";
    assert!(PmiCommand::parse(mapping).is_ok());
    // Everything after a pair's first `=` is its value.
    let line = PmiLine::parse(b"cmd=get_result rc=0 value=a=b").unwrap();
    assert_eq!(line.get("value"), Some("a=b"));
}

/// A line and what its error must match.
type Case = (&'static [u8], fn(&PmiLineError) -> bool);

#[test]
fn malformed_lines_are_typed_errors() {
    use PmiLineError as E;
    let cases: [Case; 10] = [
        (b"", |e| matches!(e, E::NoCommand(_))),
        (b"put key=a", |e| matches!(e, E::NoCommand(_))),
        (b"cmd= key=a", |e| matches!(e, E::NoCommand(_))),
        (b"mcmd=spawn\n", |e| matches!(e, E::MultiLine)),
        (b"cmd=put key", |e| matches!(e, E::NotAPair(_))),
        (b"cmd=put =v", |e| matches!(e, E::NotAPair(_))),
        (b"cmd=put key=a key=b", |e| matches!(e, E::DuplicateKey(_))),
        (b"cmd=put\tkey=a", |e| {
            matches!(e, E::BadByte { byte: b'\t', .. })
        }),
        (b"cmd=put key=a\nb", |e| {
            matches!(e, E::BadByte { byte: b'\n', .. })
        }),
        (b"cmd=put key=\xff", |e| {
            matches!(e, E::BadByte { byte: 0xff, .. })
        }),
    ];
    for (line, expected) in cases {
        let e = PmiLine::parse(line).unwrap_err();
        assert!(expected(&e), "{line:?}: {e:?}");
    }
    let cases: [Case; 4] = [
        (b"cmd=frobnicate", |e| matches!(e, E::UnknownCommand(_))),
        (b"cmd=put key=a value=b", |e| {
            matches!(e, E::MissingKey { key: "kvsname", .. })
        }),
        (b"cmd=maxes kvsname_max=x keylen_max=1 vallen_max=1", |e| {
            matches!(e, E::NotANumber { .. })
        }),
        (b"cmd=set size=1 rank=2", |e| matches!(e, E::NotAPair(_))),
    ];
    for (line, expected) in cases {
        let e = PmiCommand::parse(line).unwrap_err();
        assert!(expected(&e), "{line:?}: {e:?}");
    }
}

#[test]
fn unwritable_values_and_overlong_lines_are_refused() {
    for value in ["a b", "a=b", "a\nb", "é"] {
        let put = PmiCommand::Put {
            kvsname: "k".into(),
            key: "key".into(),
            value: value.into(),
        };
        assert!(
            matches!(put.encode(), Err(PmiLineError::Unwritable(_))),
            "{value:?}"
        );
    }
    assert!(matches!(
        PmiLine::new("put").with("", "v").encode(),
        Err(PmiLineError::Unwritable(_))
    ));
    let long = PmiLine::new("put").with("value", "x".repeat(MAX_LINE));
    assert!(matches!(long.encode(), Err(PmiLineError::TooLong { .. })));
    let mut text = b"cmd=put value=".to_vec();
    text.resize(MAX_LINE + 10, b'x');
    assert!(matches!(
        PmiLine::parse(&text),
        Err(PmiLineError::TooLong { .. })
    ));
}

#[test]
fn the_framer_cuts_lines_and_bounds_what_it_holds() {
    let mut framer = LineFramer::new();
    framer.push(b"cmd=initack\ncmd=set size=4\ncmd=set ra");
    assert_eq!(framer.next_line().unwrap().unwrap(), b"cmd=initack");
    assert_eq!(framer.next_line().unwrap().unwrap(), b"cmd=set size=4");
    assert!(framer.next_line().is_none());
    framer.push(b"nk=2\n");
    assert_eq!(framer.next_line().unwrap().unwrap(), b"cmd=set rank=2");
    assert_eq!(framer.pending(), 0);

    let mut framer = LineFramer::new();
    framer.push(&vec![b'x'; MAX_LINE]);
    assert!(matches!(
        framer.next_line(),
        Some(Err(PmiLineError::TooLong { .. }))
    ));
}

#[test]
fn random_lines_never_panic_and_what_parses_writes_back() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(15);
    let pieces: [&[u8]; 22] = [
        b"cmd=",
        b"get_result",
        b"set",
        b"initack",
        b"put",
        b"maxes",
        b"barrier_out",
        b"rc=",
        b"msg=",
        b"value=",
        b"key=",
        b"kvsname=",
        b"pmiid=",
        b"kvsname_max=",
        b"1",
        b"-",
        b"=",
        b"a",
        b" ",
        b"\n",
        b"\x00",
        b"\xff",
    ];
    let mut written_back = 0;
    for _ in 0..50_000 {
        let mut bytes = b"cmd=".to_vec();
        for _ in 0..rng.gen_range(0..12) {
            bytes.extend_from_slice(pieces[rng.gen_range(0..pieces.len())]);
        }
        let mut framer = LineFramer::new();
        framer.push(&bytes);
        let mut lines = vec![bytes.clone()];
        while let Some(Ok(line)) = framer.next_line() {
            lines.push(line);
        }
        for line in lines {
            if let Ok(command) = PmiCommand::parse(&line) {
                if let Ok(again) = command.encode() {
                    assert_eq!(PmiCommand::parse(&again).as_ref(), Ok(&command), "{line:?}");
                    written_back += 1;
                }
            }
        }
    }
    assert!(written_back > 500, "only {written_back} lines parsed");
}
