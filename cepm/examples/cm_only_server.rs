//! A CM-only server on the `cepm` crate: listen on a service ID, accept every connection
//! (no QP: a made-up QPN goes in the REP), answer disconnects, and print each event.
//!
//! ```sh
//! cargo run -p cepm --example cm_only_server -- 0x0000000001064e99
//! cepmctl connect --cm-only --service-id 0x0000000001064e99   # from another shell
//! ```
//!
//! It shows the event API: [`Cepm::next_event`] waits with `poll(2)` (so the same fd can sit
//! in an event loop), and a REQ's new CEP is claimed with [`Cepm::get_request`].

use std::{io, time::Duration};

use cepm::{event::event_name, psn::random_psn, sys, Cepm};

fn main() -> io::Result<()> {
    let service_id = std::env::args()
        .nth(1)
        .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "usage: cm_only_server SERVICE_ID_HEX",
            )
        })?;
    let cepm = Cepm::open()?;
    let listener = cepm.create(0)?;
    cepm.listen(listener, service_id, u64::MAX)?;
    println!("listening on {service_id:#018x}; Ctrl-C to stop");
    let mut next_qpn = 0x30_0000;
    loop {
        // Wake up now and then even when idle: a real server would do its other work here.
        let Some(ev) = cepm.next_event(Some(Duration::from_secs(5)))? else {
            continue;
        };
        println!(
            "event {} on CEP {} (status {})",
            event_name(ev.kind),
            ev.handle,
            ev.status
        );
        match ev.kind {
            sys::CEPM_EVENT_REQ_RECEIVED => {
                let (handle, req) = cepm.get_request(listener, 0)?;
                println!(
                    "  REQ from comm ID {:#x}, QPN {:#x}: accepting as CEP {handle}",
                    req.remote_comm_id, req.remote_qpn
                );
                let rep = sys::cepm_accept {
                    handle,
                    local_qpn: next_qpn,
                    starting_psn: random_psn()?,
                    ..Default::default()
                };
                next_qpn += 1;
                cepm.prepare_rep(&rep)?;
                cepm.send_rep(handle)?;
            }
            sys::CEPM_EVENT_DREQ_RECEIVED => cepm.send_drep(ev.handle, b"")?,
            sys::CEPM_EVENT_TIMEWAIT_EXIT
            | sys::CEPM_EVENT_REJ_RECEIVED
            | sys::CEPM_EVENT_REP_ERROR
            | sys::CEPM_EVENT_DEVICE_REMOVAL => {
                cepm.destroy(ev.handle)?;
            }
            _ => {}
        }
    }
}
