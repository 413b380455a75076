//! What `threadwire-dsm`'s messages weigh on the wire, beside the Strings
//! DSM's Table 1 (the seed: "Typical Message Sizes in Strings", an 8192-byte
//! page).
//!
//! Ours, from the protocol (`threadwire-dsm`'s `protocol` module) and
//! threadwire's active messages: a request is one `Am` frame, a
//! [`FRAME_HEADER`]-byte header and the payload; its reply one data frame,
//! the header, the answer and one status byte ([`REPLY_STATUS`]). `n` and
//! `m` count write notices, [`NOTICE`] bytes each. Not counted: the
//! `Credit` frame (header and 8 bytes) that returns each request's cost to
//! its sender, gathered over several requests.

use super::UNIT;
use serde::Serialize;

/// threadwire's frame header (`threadwire_wire::frame::HEADER_LEN`).
pub const FRAME_HEADER: usize = 32;
/// The status byte that ends an active message's reply.
pub const REPLY_STATUS: usize = 1;
/// A write notice: unit (u32) and version (u64).
pub const NOTICE: usize = 12;

/// What the seed says of its Fig 13 (the figure's values are not in its
/// text).
pub const SEED_FIGURE_13: &str =
    "Strings (seed, Fig 13): round-trip times of its messages on each \
     network at several payload sizes, \"measured for request-reply pairs, with no event handling \
     at the server side\"; it \"introduces a fair amount of latency when compared to the raw UDP \
     data\" (the figure's values are not in the text)";

/// One event of Table 1, with ours beside it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Message {
    /// The seed's name of the event.
    pub event: &'static str,
    /// The seed's request bytes (`≥` for the lock grant, whose queue
    /// travels with it).
    pub seed_request: &'static str,
    /// The seed's reply bytes.
    pub seed_reply: &'static str,
    /// Our message of the event: `handler request` or `… reply`.
    pub ours: &'static str,
    /// Our request's bytes, as a formula of notices where they vary.
    pub request: String,
    /// Our reply's bytes, likewise.
    pub reply: String,
}

fn request(payload: usize) -> usize {
    FRAME_HEADER + payload
}

fn reply(answer: usize) -> usize {
    FRAME_HEADER + answer + REPLY_STATUS
}

/// `bytes`, plus [`NOTICE`] bytes per notice counted by `notices`.
fn sized(bytes: usize, notices: Option<char>) -> String {
    match notices {
        None => bytes.to_string(),
        Some(k) => format!("{bytes} + {NOTICE}{k}"),
    }
}

/// Table 1's events, each beside ours.
pub fn messages() -> Vec<Message> {
    let none = "–".to_string();
    vec![
        Message {
            event: "Get Page",
            seed_request: "40",
            seed_reply: "8226",
            ours: "dsm.fetch: unit; version, unit",
            request: sized(request(4), None),
            reply: sized(reply(8 + UNIT), None),
        },
        Message {
            event: "Lock Acquire",
            seed_request: "36",
            seed_reply: "28",
            ours: "dsm.acquire: lock; granted, or node to follow",
            request: sized(request(4), None),
            reply: format!("{} or {}", reply(1), reply(1 + 4)),
        },
        Message {
            event: "Lock Grant",
            seed_request: "≥ 36",
            seed_reply: "28",
            ours: "dsm.follow: lock; epoch, n notices",
            request: sized(request(4), None),
            reply: sized(reply(1 + 8), Some('n')),
        },
        Message {
            event: "Barrier Arrival",
            seed_request: "32",
            seed_reply: "28",
            ours: "dsm.barrier request: epoch, allocated, n notices",
            request: sized(request(8 + 8), Some('n')),
            reply: none.clone(),
        },
        Message {
            event: "Barrier Release",
            seed_request: "32",
            seed_reply: "28",
            ours: "dsm.barrier reply: m merged notices",
            request: none,
            reply: sized(reply(1), Some('m')),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_8_kib_page_and_a_bare_lock_cost_what_the_protocol_says() {
        let m = messages();
        assert_eq!((m[0].request.as_str(), m[0].reply.as_str()), ("36", "8233"));
        assert_eq!(m[1].reply, "34 or 38");
        assert_eq!(m[2].reply, "42 + 12n");
        assert_eq!(m[3].request, "48 + 12n");
        assert_eq!(m[4].reply, "34 + 12m");
    }
}
