//! `cepmctl`: command-line access to cepm.

use std::process::ExitCode;

use cepm::{umad, AttrId, Cepm, PortInfo};
use cepm_proto::{
    cm_mad::{CmMad, CmMsg},
    dreq::Dreq,
    mad::{MadHeader, MAD_SIZE},
    pdata::PrivateData,
    req::Req,
};
use clap::{Parser, Subcommand};

/// Inspect and drive cepm, the InfiniBand/RoCE connection manager (/dev/cepm).
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the module's ABI version.
    Abi,
    /// List the managed ports with their receive counters.
    Ports,
    /// Print how many MADs with one attribute a port has received.
    RxCount {
        /// RDMA device, e.g. rxe0.
        device: String,
        /// Port number.
        port: u32,
        /// Attribute: a name (REQ, SIDR_REQ, ...) or an ID (0x10).
        #[arg(value_parser = parse_attr)]
        attr: AttrId,
    },
    /// Print how many MADs with one attribute a port has sent.
    TxCount {
        /// RDMA device, e.g. rxe0.
        device: String,
        /// Port number.
        port: u32,
        /// Attribute: a name (REQ, SIDR_REQ, ...) or an ID (0x10).
        #[arg(value_parser = parse_attr)]
        attr: AttrId,
    },
    /// Send CM MADs to a port's own RoCE v2 GID through ib_umad, so that they reach cepm's
    /// agent as if a peer had sent them. The body is all zero unless --valid is given.
    SendMad {
        /// RDMA device, e.g. rxe0.
        device: String,
        /// Port number.
        port: u32,
        /// Attribute: a name (REQ, SIDR_REQ, ...) or an ID (0x10).
        #[arg(value_parser = parse_attr)]
        attr: AttrId,
        /// How many to send.
        #[arg(long, default_value_t = 1)]
        count: u32,
        /// Send a well-formed message (REQ and DREQ only) for this service ID / comm ID.
        #[arg(long)]
        valid: bool,
        /// Service ID of a --valid REQ.
        #[arg(long, default_value_t = 0x0000_0000_0106_4e20)]
        service_id: u64,
        /// Sender's comm ID in a --valid message.
        #[arg(long, default_value_t = 0x1234_5678)]
        comm_id: u32,
    },
}

fn parse_attr(s: &str) -> Result<AttrId, String> {
    cepm::parse_attr(s).ok_or_else(|| format!("unknown CM attribute '{s}'"))
}

/// "REQ=1 DREQ=2", or "none", for the non-zero counts of `count`.
fn attr_counts(count: impl Fn(AttrId) -> u64) -> String {
    let counts: Vec<String> =
        AttrId::ALL.iter().filter(|&&a| count(a) != 0).map(|&a| format!("{}={}", a.name(), count(a))).collect();
    if counts.is_empty() { "none".to_string() } else { counts.join(" ") }
}

fn print_port(p: &PortInfo) {
    let link = if p.roce { "RoCE" } else { "InfiniBand" };
    println!("{} port {} ({link})", p.device, p.port);
    println!("  received: {}", attr_counts(|a| p.rx(a)));
    if p.rx_other_attr != 0 || p.rx_malformed != 0 || p.rx_invalid != 0 {
        println!("  other attribute: {}, malformed: {}, invalid: {}", p.rx_other_attr, p.rx_malformed, p.rx_invalid);
    }
    println!("  sent: {}", attr_counts(|a| p.tx(a)));
    if p.tx_errors != 0 {
        println!("  send errors: {}", p.tx_errors);
    }
}

fn invalid_input(msg: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, msg)
}

fn find_port(device: &str, port: u32) -> std::io::Result<PortInfo> {
    let q = Cepm::open()?.query()?;
    q.ports.into_iter().find(|p| p.device == device && p.port == port).ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::NotFound, format!("{device} port {port} is not managed by cepm"))
    })
}

/// A minimal well-formed message: what a peer with comm ID `comm_id` could send.
fn valid_message(attr: AttrId, service_id: u64, comm_id: u32) -> std::io::Result<CmMsg> {
    match attr {
        AttrId::Req => Ok(CmMsg::Req(Req {
            local_comm_id: comm_id,
            service_id,
            local_qpn: 0x00_1234,
            starting_psn: 0x00_5678,
            remote_cm_response_timeout: 20,
            local_cm_response_timeout: 20,
            retry_count: 7,
            rnr_retry_count: 7,
            max_cm_retries: 15,
            pkey: 0xffff,
            path_mtu: 3,
            ..Default::default()
        })),
        AttrId::Dreq => Ok(CmMsg::Dreq(Dreq {
            local_comm_id: comm_id,
            remote_comm_id: comm_id ^ 0xffff_ffff,
            remote_qpn: 0x00_1234,
            private_data: PrivateData::empty(),
        })),
        _ => Err(invalid_input(format!("--valid supports REQ and DREQ, not {}", attr.name()))),
    }
}

fn run(cli: Cli) -> std::io::Result<()> {
    match cli.command {
        Command::Abi => println!("{}", Cepm::open()?.query()?.abi_version),
        Command::Ports => {
            let q = Cepm::open()?.query()?;
            println!("cepm ABI {}, {} managed port(s)", q.abi_version, q.ports.len());
            q.ports.iter().for_each(print_port);
        }
        Command::RxCount { device, port, attr } => println!("{}", find_port(&device, port)?.rx(attr)),
        Command::TxCount { device, port, attr } => println!("{}", find_port(&device, port)?.tx(attr)),
        Command::SendMad { device, port, attr, count, valid, service_id, comm_id } => {
            let gid = umad::roce_v2_ipv4_gid(&device, port)?;
            let mut agent = umad::SendAgent::open(&device, port)?;
            for i in 0..count {
                let mut mad = [0u8; MAD_SIZE];
                let tid = u64::from(i);
                if valid {
                    let msg = valid_message(attr, service_id, comm_id.wrapping_add(i))?;
                    CmMad::new(tid, 0, msg).encode(&mut mad).map_err(|e| invalid_input(format!("encode: {e:?}")))?;
                } else {
                    MadHeader::cm(attr, tid, 0).encode(&mut mad);
                }
                agent.send(gid.index, gid.raw, &mad)?;
            }
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cepmctl: {e}");
            ExitCode::FAILURE
        }
    }
}
