//! Independent oracles for cepm's CM codec, run by `proto/check.sh`.
//!
//! `oracle iba BIN [CASES]`: BIN is the C program built by `oracle/build-iba-oracle.sh` from
//! Linux's `include/rdma/iba.h` + `ibta_vol1_c12.h`. For random messages of all 12
//! attributes it sends every field value by its Linux macro name; the C side builds the
//! MAD with `IBA_SET` (Linux's bytes must equal ours, header and reserved bits included)
//! and reads every field back out of *our* bytes with `IBA_GET` (each must equal the value
//! we encoded). Every Linux field macro must be exercised.
//!
//! `oracle tshark [CASES] [PCAP]`: writes our MADs as RoCEv2 frames (Ethernet/IPv4/UDP
//! 4791/BTH UD SEND/DETH/MAD/ICRC) to a pcap, has `tshark -T pdml` dissect them, and compares
//! every field Wireshark's InfiniBand dissector shows with what we encoded. Wireshark only
//! dissects the MAD header, REQ (with the IP CM private data), REP, REJ, RTU, DREQ and DREP.

#[path = "../tests/support/gen.rs"]
mod gen;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::process::{Command, ExitCode, Stdio};

use cepm_proto::cm_mad::{CmMad, CmMsg};
use cepm_proto::cma_hdr::{CmaAddrs, CmaHdr};
use cepm_proto::mad::{AttrId, MAD_SIZE};
use cepm_proto::path::CmPath;
use cepm_proto::pdata::PrivateData;
use cepm_proto::service_id::{ip_service_id, PortSpace};
use gen::Rng;

/// One oracle case: our MAD, our bytes, and its fields under Linux's names.
type IbaCase = (CmMad, [u8; MAD_SIZE], Vec<(String, Val)>);

/// An expected field value.
#[derive(Clone, Debug, PartialEq)]
enum Val {
    Int(u64),
    Bytes(Vec<u8>),
}

fn int(v: impl Into<u64>) -> Val {
    Val::Int(v.into())
}

fn bytes(b: &[u8]) -> Val {
    Val::Bytes(b.to_vec())
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

fn req_path(prefix: &str, p: &CmPath, out: &mut Vec<(String, Val)>) {
    let f = |n: &str| format!("CM_REQ_{prefix}_{n}");
    out.push((f("LOCAL_PORT_LID"), int(p.local_lid)));
    out.push((f("REMOTE_PORT_LID"), int(p.remote_lid)));
    out.push((f("LOCAL_PORT_GID"), bytes(&p.local_gid)));
    out.push((f("REMOTE_PORT_GID"), bytes(&p.remote_gid)));
    out.push((f("FLOW_LABEL"), int(p.flow_label)));
    out.push((f("PACKET_RATE"), int(p.packet_rate)));
    out.push((f("TRAFFIC_CLASS"), int(p.traffic_class)));
    out.push((f("HOP_LIMIT"), int(p.hop_limit)));
    out.push((f("SL"), int(p.sl)));
    out.push((f("SUBNET_LOCAL"), int(p.subnet_local)));
    out.push((f("LOCAL_ACK_TIMEOUT"), int(p.local_ack_timeout)));
}

/// Our message's fields under Linux's macro names.
fn linux_fields(msg: &CmMsg) -> Vec<(String, Val)> {
    let mut v: Vec<(String, Val)> = Vec::new();
    let mut put = |name: &str, val: Val| v.push((name.to_string(), val));
    match msg {
        CmMsg::Req(m) => {
            let (tt, ext) = m.transport.to_wire();
            put("CM_REQ_LOCAL_COMM_ID", int(m.local_comm_id));
            put("CM_REQ_VENDOR_ID", int(m.vendor_id));
            put("CM_REQ_SERVICE_ID", int(m.service_id));
            put("CM_REQ_LOCAL_CA_GUID", int(m.local_ca_guid));
            put("CM_REQ_LOCAL_Q_KEY", int(m.local_qkey));
            put("CM_REQ_LOCAL_QPN", int(m.local_qpn));
            put("CM_REQ_RESPONDER_RESOURCES", int(m.responder_resources));
            put("CM_REQ_LOCAL_EECN", int(m.local_eecn));
            put("CM_REQ_INITIATOR_DEPTH", int(m.initiator_depth));
            put("CM_REQ_REMOTE_EECN", int(m.remote_eecn));
            put(
                "CM_REQ_REMOTE_CM_RESPONSE_TIMEOUT",
                int(m.remote_cm_response_timeout),
            );
            put("CM_REQ_TRANSPORT_SERVICE_TYPE", int(tt));
            put(
                "CM_REQ_END_TO_END_FLOW_CONTROL",
                int(m.end_to_end_flow_control),
            );
            put("CM_REQ_STARTING_PSN", int(m.starting_psn));
            put(
                "CM_REQ_LOCAL_CM_RESPONSE_TIMEOUT",
                int(m.local_cm_response_timeout),
            );
            put("CM_REQ_RETRY_COUNT", int(m.retry_count));
            put("CM_REQ_PARTITION_KEY", int(m.pkey));
            put("CM_REQ_PATH_PACKET_PAYLOAD_MTU", int(m.path_mtu));
            put("CM_REQ_RDC_EXISTS", int(m.rdc_exists));
            put("CM_REQ_RNR_RETRY_COUNT", int(m.rnr_retry_count));
            put("CM_REQ_MAX_CM_RETRIES", int(m.max_cm_retries));
            put("CM_REQ_SRQ", int(m.srq));
            put("CM_REQ_EXTENDED_TRANSPORT_TYPE", int(ext));
            put("CM_REQ_SAP_SUPPORTED", int(m.sap_supported));
            put("CM_REQ_PRIVATE_DATA", bytes(m.private_data.padded()));
            req_path("PRIMARY", &m.primary_path, &mut v);
            req_path("ALTERNATE", &m.alternate_path, &mut v);
        }
        CmMsg::Mra(m) => {
            put("CM_MRA_LOCAL_COMM_ID", int(m.local_comm_id));
            put("CM_MRA_REMOTE_COMM_ID", int(m.remote_comm_id));
            put("CM_MRA_MESSAGE_MRAED", int(m.message_mraed.to_u8()));
            put("CM_MRA_SERVICE_TIMEOUT", int(m.service_timeout));
            put("CM_MRA_PRIVATE_DATA", bytes(m.private_data.padded()));
        }
        CmMsg::Rej(m) => {
            put("CM_REJ_LOCAL_COMM_ID", int(m.local_comm_id));
            put("CM_REJ_REMOTE_COMM_ID", int(m.remote_comm_id));
            put("CM_REJ_MESSAGE_REJECTED", int(m.message_rejected.to_u8()));
            put("CM_REJ_REJECTED_INFO_LENGTH", int(m.ari.len() as u64));
            put("CM_REJ_REASON", int(m.reason));
            put("CM_REJ_ARI", bytes(m.ari.padded()));
            put("CM_REJ_PRIVATE_DATA", bytes(m.private_data.padded()));
        }
        CmMsg::Rep(m) => {
            put("CM_REP_LOCAL_COMM_ID", int(m.local_comm_id));
            put("CM_REP_REMOTE_COMM_ID", int(m.remote_comm_id));
            put("CM_REP_LOCAL_Q_KEY", int(m.local_qkey));
            put("CM_REP_LOCAL_QPN", int(m.local_qpn));
            put("CM_REP_VENDOR_ID_H", int(m.vendor_id >> 16));
            put("CM_REP_LOCAL_EE_CONTEXT_NUMBER", int(m.local_eecn));
            put("CM_REP_VENDOR_ID_M", int((m.vendor_id >> 8) & 0xff));
            put("CM_REP_STARTING_PSN", int(m.starting_psn));
            put("CM_REP_VENDOR_ID_L", int(m.vendor_id & 0xff));
            put("CM_REP_RESPONDER_RESOURCES", int(m.responder_resources));
            put("CM_REP_INITIATOR_DEPTH", int(m.initiator_depth));
            put("CM_REP_TARGET_ACK_DELAY", int(m.target_ack_delay));
            put("CM_REP_FAILOVER_ACCEPTED", int(m.failover_accepted));
            put(
                "CM_REP_END_TO_END_FLOW_CONTROL",
                int(m.end_to_end_flow_control),
            );
            put("CM_REP_RNR_RETRY_COUNT", int(m.rnr_retry_count));
            put("CM_REP_SRQ", int(m.srq));
            put("CM_REP_LOCAL_CA_GUID", int(m.local_ca_guid));
            put("CM_REP_PRIVATE_DATA", bytes(m.private_data.padded()));
        }
        CmMsg::Rtu(m) => {
            put("CM_RTU_LOCAL_COMM_ID", int(m.local_comm_id));
            put("CM_RTU_REMOTE_COMM_ID", int(m.remote_comm_id));
            put("CM_RTU_PRIVATE_DATA", bytes(m.private_data.padded()));
        }
        CmMsg::Dreq(m) => {
            put("CM_DREQ_LOCAL_COMM_ID", int(m.local_comm_id));
            put("CM_DREQ_REMOTE_COMM_ID", int(m.remote_comm_id));
            put("CM_DREQ_REMOTE_QPN_EECN", int(m.remote_qpn));
            put("CM_DREQ_PRIVATE_DATA", bytes(m.private_data.padded()));
        }
        CmMsg::Drep(m) => {
            put("CM_DREP_LOCAL_COMM_ID", int(m.local_comm_id));
            put("CM_DREP_REMOTE_COMM_ID", int(m.remote_comm_id));
            put("CM_DREP_PRIVATE_DATA", bytes(m.private_data.padded()));
        }
        CmMsg::Lap(m) => {
            let p = &m.alternate_path;
            put("CM_LAP_LOCAL_COMM_ID", int(m.local_comm_id));
            put("CM_LAP_REMOTE_COMM_ID", int(m.remote_comm_id));
            put("CM_LAP_REMOTE_QPN_EECN", int(m.remote_qpn));
            put(
                "CM_LAP_REMOTE_CM_RESPONSE_TIMEOUT",
                int(m.remote_cm_response_timeout),
            );
            put("CM_LAP_ALTERNATE_LOCAL_PORT_LID", int(p.local_lid));
            put("CM_LAP_ALTERNATE_REMOTE_PORT_LID", int(p.remote_lid));
            put("CM_LAP_ALTERNATE_LOCAL_PORT_GID", bytes(&p.local_gid));
            put("CM_LAP_ALTERNATE_REMOTE_PORT_GID", bytes(&p.remote_gid));
            put("CM_LAP_ALTERNATE_FLOW_LABEL", int(p.flow_label));
            put("CM_LAP_ALTERNATE_TRAFFIC_CLASS", int(p.traffic_class));
            put("CM_LAP_ALTERNATE_HOP_LIMIT", int(p.hop_limit));
            put("CM_LAP_ALTERNATE_PACKET_RATE", int(p.packet_rate));
            put("CM_LAP_ALTERNATE_SL", int(p.sl));
            put("CM_LAP_ALTERNATE_SUBNET_LOCAL", int(p.subnet_local));
            put(
                "CM_LAP_ALTERNATE_LOCAL_ACK_TIMEOUT",
                int(p.local_ack_timeout),
            );
            put("CM_LAP_PRIVATE_DATA", bytes(m.private_data.padded()));
        }
        CmMsg::Apr(m) => {
            put("CM_APR_LOCAL_COMM_ID", int(m.local_comm_id));
            put("CM_APR_REMOTE_COMM_ID", int(m.remote_comm_id));
            put(
                "CM_APR_ADDITIONAL_INFORMATION_LENGTH",
                int(m.additional_info.len() as u64),
            );
            put("CM_APR_AR_STATUS", int(m.ap_status));
            put(
                "CM_APR_ADDITIONAL_INFORMATION",
                bytes(m.additional_info.padded()),
            );
            put("CM_APR_PRIVATE_DATA", bytes(m.private_data.padded()));
        }
        CmMsg::SidrReq(m) => {
            put("CM_SIDR_REQ_REQUESTID", int(m.request_id));
            put("CM_SIDR_REQ_PARTITION_KEY", int(m.pkey));
            put("CM_SIDR_REQ_SERVICEID", int(m.service_id));
            put("CM_SIDR_REQ_PRIVATE_DATA", bytes(m.private_data.padded()));
        }
        CmMsg::SidrRep(m) => {
            put("CM_SIDR_REP_REQUESTID", int(m.request_id));
            put("CM_SIDR_REP_STATUS", int(m.status));
            put(
                "CM_SIDR_REP_ADDITIONAL_INFORMATION_LENGTH",
                int(m.additional_info.len() as u64),
            );
            put("CM_SIDR_REP_VENDOR_ID_H", int(m.vendor_id >> 8));
            put("CM_SIDR_REP_QPN", int(m.qpn));
            put("CM_SIDR_REP_VENDOR_ID_L", int(m.vendor_id & 0xff));
            put("CM_SIDR_REP_SERVICEID", int(m.service_id));
            put("CM_SIDR_REP_Q_KEY", int(m.qkey));
            put(
                "CM_SIDR_REP_ADDITIONAL_INFORMATION",
                bytes(m.additional_info.padded()),
            );
            put("CM_SIDR_REP_PRIVATE_DATA", bytes(m.private_data.padded()));
        }
        CmMsg::ClassPortInfo(m) => {
            put("CPI_BASE_VERSION", int(m.base_version));
            put("CPI_CLASS_VERSION", int(m.class_version));
            put("CPI_CAPABILITY_MASK", int(m.capability_mask));
            put("CPI_CAP_MASK2", int(m.cap_mask2));
            put("CPI_RESP_TIME", int(m.resp_time));
            put("CPI_REDIRECT_GID", bytes(&m.redirect_gid));
            put("CPI_REDIRECT_TC", int(m.redirect_tc));
            put("CPI_REDIRECT_SL", int(m.redirect_sl));
            put("CPI_REDIRECT_FL", int(m.redirect_fl));
            put("CPI_REDIRECT_LID", int(m.redirect_lid));
            put("CPI_REDIRECT_PKEY", int(m.redirect_pkey));
            put("CPI_REDIRECT_QP", int(m.redirect_qp));
            put("CPI_REDIRECT_QKEY", int(m.redirect_qkey));
            put("CPI_TRAP_GID", bytes(&m.trap_gid));
            put("CPI_TRAP_TC", int(m.trap_tc));
            put("CPI_TRAP_SL", int(m.trap_sl));
            put("CPI_TRAP_FL", int(m.trap_fl));
            put("CPI_TRAP_LID", int(m.trap_lid));
            put("CPI_TRAP_PKEY", int(m.trap_pkey));
            put("CPI_TRAP_HL", int(m.trap_hop_limit));
            put("CPI_TRAP_QP", int(m.trap_qp));
            put("CPI_TRAP_QKEY", int(m.trap_qkey));
        }
    }
    v
}

fn encode(mad: &CmMad) -> [u8; MAD_SIZE] {
    let mut buf = [0u8; MAD_SIZE];
    mad.encode(&mut buf).expect("generated messages encode");
    buf
}

/// Runs the Linux-macro oracle; returns the number of failures.
fn run_iba(bin: &str, cases: u64) -> usize {
    let list = match Command::new(bin).arg("--list").output() {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
        other => {
            eprintln!("iba oracle: cannot run {bin} --list: {other:?}");
            return 1;
        }
    };
    let known: BTreeSet<String> = list.lines().map(str::to_string).collect();

    let mut script = String::new();
    let mut expected: Vec<IbaCase> = Vec::new();
    for attr in AttrId::ALL {
        for i in 0..cases {
            let mad = gen::cm_mad_of(
                &mut Rng::new(0x1ba0_0000 + i * 16 + attr.index() as u64),
                attr,
            );
            let wire = encode(&mad);
            let fields = linux_fields(&mad.msg);
            let h = &mad.header;
            script.push_str("case\n");
            script.push_str(&format!(
                "hdr {:x} {:x} {:x} {:x} {:x} {:x} {:x} {:x} {:x} {:x}\n",
                h.base_version,
                h.mgmt_class,
                h.class_version,
                h.method,
                h.status,
                h.class_specific,
                h.tid,
                mad.msg.attr().to_u16(),
                h.reserved,
                h.attr_mod
            ));
            for (name, val) in &fields {
                match val {
                    Val::Int(x) => script.push_str(&format!("set {name} {x:x}\n")),
                    Val::Bytes(b) => script.push_str(&format!("mem {name} {}\n", hex(b))),
                }
            }
            script.push_str(&format!("wire {}\nend\n", hex(&wire)));
            expected.push((mad, wire, fields));
        }
    }

    let mut child = match Command::new(bin)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("iba oracle: cannot start {bin}: {e}");
            return 1;
        }
    };
    let mut stdin = child.stdin.take().expect("piped stdin");
    let writer = std::thread::spawn(move || stdin.write_all(script.as_bytes()));
    let out = child.wait_with_output().expect("oracle output");
    if writer.join().map(|r| r.is_err()).unwrap_or(true) || !out.status.success() {
        eprintln!("iba oracle: {bin} failed: {}", out.status);
        return 1;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();

    let mut failures = 0;
    let mut compared = 0;
    let mut covered: BTreeSet<String> = BTreeSet::new();
    for (mad, wire, fields) in &expected {
        let attr = mad.msg.attr().name();
        let built = lines
            .next()
            .and_then(|l| l.strip_prefix("built "))
            .and_then(unhex);
        match built {
            Some(b) if b == wire => {}
            Some(b) => {
                failures += 1;
                let diff: Vec<String> = (0..MAD_SIZE)
                    .filter(|&i| b[i] != wire[i])
                    .map(|i| {
                        format!(
                            "MAD byte {i} (data {}): linux {:02x} cepm {:02x}",
                            i as i64 - 24,
                            b[i],
                            wire[i]
                        )
                    })
                    .collect();
                eprintln!(
                    "iba oracle: {attr}: Linux's IBA_SET bytes differ from ours:\n  {}",
                    diff.join("\n  ")
                );
            }
            None => {
                eprintln!("iba oracle: malformed oracle output");
                return failures + 1;
            }
        }
        for (name, val) in fields {
            let got = lines
                .next()
                .and_then(|l| l.strip_prefix("got "))
                .and_then(|l| l.split_once(' '));
            let Some((got_name, got_val)) = got else {
                eprintln!("iba oracle: malformed oracle output");
                return failures + 1;
            };
            compared += 1;
            covered.insert(got_name.to_string());
            let ok = got_name == name
                && match val {
                    Val::Int(x) => u64::from_str_radix(got_val, 16).ok() == Some(*x),
                    Val::Bytes(b) => unhex(got_val).as_deref() == Some(b.as_slice()),
                };
            if !ok {
                failures += 1;
                eprintln!("iba oracle: {attr}: IBA_GET({name}) on our bytes = {got_val}, we encoded {val:?}");
            }
        }
        if lines.next() != Some("done") {
            eprintln!("iba oracle: malformed oracle output");
            return failures + 1;
        }
    }
    let missing: Vec<&String> = known.difference(&covered).collect();
    if !missing.is_empty() {
        failures += 1;
        eprintln!("iba oracle: Linux fields never compared: {missing:?}");
    }
    println!(
        "iba oracle: {} MADs ({} per attribute x 12), {compared} field comparisons, {} of {} Linux fields covered, {failures} failures",
        expected.len(),
        cases,
        covered.len(),
        known.len()
    );
    failures
}

/// RoCEv2 framing of one MAD: Ethernet / IPv4 / UDP 4791 / BTH (UD SEND only to QP1) /
/// DETH (Q_Key 0x80010000, source QP 1) / MAD / ICRC (zero: tshark does not check it).
fn rocev2_frame(mad: &[u8; MAD_SIZE]) -> Vec<u8> {
    let mut ib = Vec::new();
    ib.extend_from_slice(&[0x64, 0x00, 0xff, 0xff, 0, 0, 0, 1, 0, 0, 0, 0]);
    ib.extend_from_slice(&[0x80, 0x01, 0x00, 0x00, 0, 0, 0, 1]);
    ib.extend_from_slice(mad);
    ib.extend_from_slice(&[0; 4]);
    let udp_len = 8 + ib.len();
    let ip_len = 20 + udp_len;
    let mut f = Vec::new();
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00]);
    f.extend_from_slice(&[
        0x45,
        0,
        (ip_len >> 8) as u8,
        ip_len as u8,
        0,
        0,
        0x40,
        0,
        64,
        17,
        0,
        0,
    ]);
    f.extend_from_slice(&[192, 0, 2, 1, 192, 0, 2, 2]);
    f.extend_from_slice(&[
        0xc0,
        0x00,
        0x12,
        0xb7,
        (udp_len >> 8) as u8,
        udp_len as u8,
        0,
        0,
    ]);
    f.extend_from_slice(&ib);
    f
}

fn pcap(frames: &[Vec<u8>]) -> Vec<u8> {
    let mut p = Vec::new();
    p.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    p.extend_from_slice(&2u16.to_le_bytes());
    p.extend_from_slice(&4u16.to_le_bytes());
    for w in [0u32, 0, 65535, 1] {
        p.extend_from_slice(&w.to_le_bytes());
    }
    for (i, f) in frames.iter().enumerate() {
        for w in [i as u32, 0, f.len() as u32, f.len() as u32] {
            p.extend_from_slice(&w.to_le_bytes());
        }
        p.extend_from_slice(f);
    }
    p
}

fn gid_fields(prefix: &str, which: &str, gid: &[u8; 16], out: &mut Vec<(String, Val)>) {
    // Over RoCEv2/IPv4, Wireshark shows the primary GIDs as IPv4 addresses: the last 4
    // bytes of the 16-byte field. The alternate GIDs are shown as raw bytes.
    if prefix == "prim" {
        out.push((
            format!("infiniband.cm.req.prim_{which}gid_ipv4"),
            bytes(&gid[12..]),
        ));
    } else {
        out.push((format!("infiniband.cm.req.{prefix}_{which}gid"), bytes(gid)));
    }
}

fn tshark_req_path(prefix: &str, p: &CmPath, out: &mut Vec<(String, Val)>) {
    let f = |n: &str| format!("infiniband.cm.req.{prefix}_{n}");
    out.push((f("locallid"), int(p.local_lid)));
    out.push((f("remotelid"), int(p.remote_lid)));
    gid_fields(prefix, "local", &p.local_gid, out);
    gid_fields(prefix, "remote", &p.remote_gid, out);
    // Wireshark 4.0 bug (packet-infiniband.c): the flow label is read as 3 bytes under a
    // 32-bit mask, and the packet rate from the first byte of the 32-bit word instead of
    // the last. Model exactly what it reads from our bytes, so an offset error on our side
    // still shows up here.
    out.push((f("flowlabel"), int(p.flow_label >> 8)));
    out.push((f("pktrate"), int((p.flow_label >> 12) & 0x3f)));
    out.push((f("tfcclass"), int(p.traffic_class)));
    out.push((f("hoplim"), int(p.hop_limit)));
    out.push((f("sl"), int(p.sl)));
    out.push((f("subnetlocal"), int(p.subnet_local)));
    out.push((f("localacktout"), int(p.local_ack_timeout)));
}

/// Our message's fields under Wireshark's names (only what it dissects).
fn tshark_fields(mad: &CmMad) -> Vec<(String, Val)> {
    let mut v: Vec<(String, Val)> = Vec::new();
    let h = &mad.header;
    for (n, x) in [
        ("baseversion", u64::from(h.base_version)),
        ("mgmtclass", h.mgmt_class.into()),
        ("classversion", h.class_version.into()),
        ("method", h.method.into()),
        ("status", h.status.into()),
        ("classspecific", h.class_specific.into()),
        ("transactionid", h.tid),
        ("attributeid", mad.msg.attr().to_u16().into()),
        ("attributemodifier", h.attr_mod.into()),
    ] {
        v.push((format!("infiniband.mad.{n}"), int(x)));
    }
    let mut put = |name: &str, val: Val| v.push((name.to_string(), val));
    match &mad.msg {
        CmMsg::Req(m) => {
            let (tt, ext) = m.transport.to_wire();
            put("infiniband.cm.req", int(m.local_comm_id));
            put("infiniband.cm.req.serviceid", int(m.service_id));
            put("infiniband.cm.req.localcaguid", int(m.local_ca_guid));
            put("infiniband.cm.req.localqkey", int(m.local_qkey));
            put("infiniband.cm.req.localqpn", int(m.local_qpn));
            put("infiniband.cm.req.responderres", int(m.responder_resources));
            put("infiniband.cm.req.localeecn", int(m.local_eecn));
            put("infiniband.cm.req.initdepth", int(m.initiator_depth));
            put("infiniband.cm.req.remoteeecn", int(m.remote_eecn));
            put(
                "infiniband.cm.req.remoteresptout",
                int(m.remote_cm_response_timeout),
            );
            put("infiniband.cm.req.transpsvctype", int(tt));
            put(
                "infiniband.cm.req.e2eflowctrl",
                int(m.end_to_end_flow_control),
            );
            put("infiniband.cm.req.startpsn", int(m.starting_psn));
            put(
                "infiniband.cm.req.localresptout",
                int(m.local_cm_response_timeout),
            );
            put("infiniband.cm.req.retrcount", int(m.retry_count));
            put("infiniband.cm.req.pkey", int(m.pkey));
            put("infiniband.cm.req.pppmtu", int(m.path_mtu));
            put("infiniband.cm.req.rdcexist", int(m.rdc_exists));
            put("infiniband.cm.req.rnrretrcount", int(m.rnr_retry_count));
            put("infiniband.cm.req.maxcmretr", int(m.max_cm_retries));
            put("infiniband.cm.req.srq", int(m.srq));
            put("infiniband.cm.req.ext_transport", int(ext));
            match CmaHdr::decode(m.private_data.as_bytes()) {
                Ok(hdr) if m.service_id >> 24 == 1 => {
                    let pd = m.private_data.padded();
                    put("infiniband.cm.req.ip_cm.majv", int(pd[0] >> 4));
                    put("infiniband.cm.req.ip_cm.minv", int(pd[0] & 0xf));
                    put("infiniband.cm.req.ip_cm.ipv", int(pd[1] >> 4));
                    put("infiniband.cm.req.ip_cm.sport", int(hdr.src_port));
                    match hdr.addrs {
                        CmaAddrs::V4 { src, dst } => {
                            put("infiniband.cm.req.ip_cm.sip4", bytes(&src));
                            put("infiniband.cm.req.ip_cm.dip4", bytes(&dst));
                        }
                        CmaAddrs::V6 { src, dst } => {
                            put("infiniband.cm.req.ip_cm.sip6", bytes(&src));
                            put("infiniband.cm.req.ip_cm.dip6", bytes(&dst));
                        }
                    }
                    put("infiniband.cm.req.ip_cm.private", bytes(&pd[36..]));
                }
                _ => put("infiniband.cm.req.private", bytes(m.private_data.padded())),
            }
            tshark_req_path("prim", &m.primary_path, &mut v);
            tshark_req_path("alt", &m.alternate_path, &mut v);
        }
        CmMsg::Rep(m) => {
            put("infiniband.cm.rep", int(m.local_comm_id));
            put("infiniband.cm.rep.remotecommid", int(m.remote_comm_id));
            put("infiniband.cm.rep.localqkey", int(m.local_qkey));
            put("infiniband.cm.rep.localqpn", int(m.local_qpn));
            put("infiniband.cm.rep.localeecn", int(m.local_eecn));
            put("infiniband.cm.rep.startpsn", int(m.starting_psn));
            put("infiniband.cm.rep.respres", int(m.responder_resources));
            put("infiniband.cm.rep.initdepth", int(m.initiator_depth));
            put("infiniband.cm.rep.tgtackdelay", int(m.target_ack_delay));
            put("infiniband.cm.rep.failoveracc", int(m.failover_accepted));
            put(
                "infiniband.cm.rep.e2eflowctrl",
                int(m.end_to_end_flow_control),
            );
            put("infiniband.cm.rep.rnrretrcount", int(m.rnr_retry_count));
            put("infiniband.cm.rep.srq", int(m.srq));
            put("infiniband.cm.rep.localcaguid", int(m.local_ca_guid));
            put("infiniband.cm.rep.private", bytes(m.private_data.padded()));
        }
        CmMsg::Rej(m) => {
            put("infiniband.cm.rej.localcommid", int(m.local_comm_id));
            put("infiniband.cm.rej.remotecommid", int(m.remote_comm_id));
            put("infiniband.cm.rej.msgrej", int(m.message_rejected.to_u8()));
            put("infiniband.cm.rej.rejinfolen", int(m.ari.len() as u64));
            put("infiniband.cm.rej.reason", int(m.reason));
            put("infiniband.cm.rej.ari", bytes(m.ari.padded()));
            put("infiniband.cm.rej.private", bytes(m.private_data.padded()));
        }
        CmMsg::Rtu(m) => {
            put("infiniband.cm.rtu.localcommid", int(m.local_comm_id));
            put("infiniband.cm.rtu.remotecommid", int(m.remote_comm_id));
            put("infiniband.cm.rtu.private", bytes(m.private_data.padded()));
        }
        CmMsg::Dreq(m) => {
            put("infiniband.cm.dreq.localcommid", int(m.local_comm_id));
            put("infiniband.cm.dreq.remotecommid", int(m.remote_comm_id));
            // Wireshark files the DREQ's RemoteQPN under the REQ prefix.
            put("infiniband.cm.req.remoteqpneecn", int(m.remote_qpn));
            put("infiniband.cm.dreq.private", bytes(m.private_data.padded()));
        }
        CmMsg::Drep(m) => {
            put("infiniband.cm.drsp.localcommid", int(m.local_comm_id));
            put("infiniband.cm.drsp.remotecommid", int(m.remote_comm_id));
            put("infiniband.cm.drsp.private", bytes(m.private_data.padded()));
        }
        _ => {}
    }
    v
}

/// Parses the `name` and `value` attributes of every `<field>` of every packet in PDML.
fn parse_pdml(xml: &str) -> Vec<BTreeMap<String, Vec<String>>> {
    fn attr<'a>(line: &'a str, key: &str) -> Option<&'a str> {
        let start = line.find(&format!(" {key}=\""))? + key.len() + 3;
        let rest = line.get(start..)?;
        rest.get(..rest.find('"')?)
    }
    let mut packets = Vec::new();
    let mut cur: Option<BTreeMap<String, Vec<String>>> = None;
    for line in xml.lines() {
        let t = line.trim_start();
        if t.starts_with("<packet") {
            cur = Some(BTreeMap::new());
        } else if t.starts_with("</packet") {
            packets.extend(cur.take());
        } else if t.starts_with("<field ") {
            if let (Some(p), Some(name), Some(value)) =
                (cur.as_mut(), attr(t, "name"), attr(t, "value"))
            {
                p.entry(name.to_string())
                    .or_default()
                    .push(value.to_string());
            }
        }
    }
    packets
}

/// A REQ as `rdma_cm` sends it: IP service ID and `cma_hdr`, so Wireshark's IP CM
/// dissection runs too.
fn rdma_cm_req(r: &mut Rng, v6: bool) -> CmMad {
    let mut req = gen::req(r);
    req.service_id = ip_service_id(PortSpace::Tcp, r.h());
    let hdr = CmaHdr {
        src_port: r.h(),
        addrs: if v6 {
            CmaAddrs::V6 {
                src: r.array(),
                dst: r.array(),
            }
        } else {
            CmaAddrs::V4 {
                src: r.array(),
                dst: r.array(),
            }
        },
    };
    let mut pd = [0u8; 92];
    pd[..36].copy_from_slice(&hdr.encode());
    pd[36..].copy_from_slice(&r.array::<56>());
    req.private_data = PrivateData::from_array(pd);
    req.primary_path.local_gid = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1];
    CmMad::new(r.next_u64(), 0, CmMsg::Req(req))
}

/// Runs the Wireshark oracle; returns the number of failures.
fn run_tshark(cases: u64, pcap_path: &str) -> usize {
    let dissected = [
        AttrId::Req,
        AttrId::Rep,
        AttrId::Rej,
        AttrId::Rtu,
        AttrId::Dreq,
        AttrId::Drep,
    ];
    let mut mads = Vec::new();
    for attr in dissected {
        for i in 0..cases {
            mads.push(gen::cm_mad_of(
                &mut Rng::new(0x75a2_0000 + i * 16 + attr.index() as u64),
                attr,
            ));
        }
    }
    for i in 0..cases {
        mads.push(rdma_cm_req(&mut Rng::new(0xc0a0_0000 + i), i % 2 == 1));
    }
    let frames: Vec<Vec<u8>> = mads.iter().map(|m| rocev2_frame(&encode(m))).collect();
    if let Err(e) = std::fs::write(pcap_path, pcap(&frames)) {
        eprintln!("tshark oracle: cannot write {pcap_path}: {e}");
        return 1;
    }
    let out = match Command::new("tshark")
        .args([
            "-n",
            "-r",
            pcap_path,
            "-T",
            "pdml",
            "-o",
            "infiniband.dissect_eoib:FALSE",
        ])
        .stderr(Stdio::null())
        .output()
    {
        Ok(o) if o.status.success() => o.stdout,
        Ok(_) => match Command::new("tshark")
            .args(["-n", "-r", pcap_path, "-T", "pdml"])
            .output()
        {
            Ok(o) if o.status.success() => o.stdout,
            other => {
                eprintln!("tshark oracle: tshark failed: {other:?}");
                return 1;
            }
        },
        Err(e) => {
            eprintln!("tshark oracle: cannot run tshark: {e}");
            return 1;
        }
    };
    let packets = parse_pdml(&String::from_utf8_lossy(&out));
    if packets.len() != mads.len() {
        eprintln!(
            "tshark oracle: {} packets dissected, {} written",
            packets.len(),
            mads.len()
        );
        return 1;
    }
    let mut failures = 0;
    let mut compared = 0;
    let mut names = BTreeSet::new();
    for (i, (mad, pkt)) in mads.iter().zip(&packets).enumerate() {
        for (name, val) in tshark_fields(mad) {
            names.insert(name.clone());
            let shown = pkt.get(&name).map(Vec::as_slice).unwrap_or(&[]);
            compared += 1;
            let ok = shown.len() == 1
                && match &val {
                    Val::Int(x) => u64::from_str_radix(&shown[0], 16).ok() == Some(*x),
                    Val::Bytes(b) => unhex(&shown[0]).as_deref() == Some(b.as_slice()),
                };
            if !ok {
                failures += 1;
                eprintln!(
                    "tshark oracle: frame {} ({}): {name} dissected as {shown:?}, we encoded {val:?}",
                    i + 1,
                    mad.msg.attr().name()
                );
            }
        }
    }
    println!(
        "tshark oracle: {} RoCEv2 frames ({} per attribute for REQ/REP/REJ/RTU/DREQ/DREP + {} rdma_cm REQs), {} Wireshark fields, {compared} comparisons, {failures} failures",
        mads.len(),
        cases,
        cases,
        names.len()
    );
    failures
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let failures = match args.get(1).map(String::as_str) {
        Some("iba") => {
            let Some(bin) = args.get(2) else {
                eprintln!("usage: oracle iba BIN [CASES]");
                return ExitCode::from(2);
            };
            run_iba(bin, args.get(3).and_then(|s| s.parse().ok()).unwrap_or(64))
        }
        Some("tshark") => {
            let cases = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(32);
            let path = args.get(3).cloned().unwrap_or_else(|| {
                std::env::temp_dir()
                    .join("cepm-proto-oracle.pcap")
                    .display()
                    .to_string()
            });
            run_tshark(cases, &path)
        }
        _ => {
            eprintln!("usage: oracle iba BIN [CASES] | oracle tshark [CASES] [PCAP]");
            return ExitCode::from(2);
        }
    };
    if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
