//! `cepmctl`: command-line access to cepm.

use std::process::ExitCode;

use cepm::{umad, AttrId, Cepm, PortInfo};
use cepm_proto::mad::{MadHeader, MAD_SIZE};
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
    /// Send one CM MAD (header only, zero body) to a port's own RoCE v2 GID through ib_umad,
    /// so that it reaches cepm's agent as if a peer had sent it.
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
    },
}

fn parse_attr(s: &str) -> Result<AttrId, String> {
    cepm::parse_attr(s).ok_or_else(|| format!("unknown CM attribute '{s}'"))
}

fn print_port(p: &PortInfo) {
    let link = if p.roce { "RoCE" } else { "InfiniBand" };
    println!("{} port {} ({link})", p.device, p.port);
    let counts: Vec<String> = AttrId::ALL
        .iter()
        .filter(|&&a| p.rx(a) != 0)
        .map(|&a| format!("{}={}", a.name(), p.rx(a)))
        .collect();
    let counts = if counts.is_empty() { "none".to_string() } else { counts.join(" ") };
    println!("  received: {counts}");
    if p.rx_other_attr != 0 || p.rx_malformed != 0 {
        println!("  other attribute: {}, malformed: {}", p.rx_other_attr, p.rx_malformed);
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
        Command::RxCount { device, port, attr } => {
            let q = Cepm::open()?.query()?;
            let p = q.ports.iter().find(|p| p.device == device && p.port == port).ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::NotFound, format!("{device} port {port} is not managed by cepm"))
            })?;
            println!("{}", p.rx(attr));
        }
        Command::SendMad { device, port, attr, count } => {
            let gid = umad::roce_v2_ipv4_gid(&device, port)?;
            let mut agent = umad::SendAgent::open(&device, port)?;
            for i in 0..count {
                let mut mad = [0u8; MAD_SIZE];
                MadHeader::cm(attr, u64::from(i), 0).encode(&mut mad);
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
