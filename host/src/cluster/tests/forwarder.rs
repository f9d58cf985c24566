//! A Kafka-aware TCP forwarder between one host node and the upstream, to cut that node alone off
//! the upstream while the upstream and the other nodes live on. It names itself in every
//! answer that names a broker (Metadata, FindCoordinator, DescribeCluster), so librdkafka
//! sends all of the node's upstream traffic through it, not to the address the broker
//! advertises; `cut` then drops every connection and refuses new ones, as a stopped proxy or
//! a firewall rule would.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, DescribeClusterResponse, FindCoordinatorResponse, MetadataResponse, ResponseHeader,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};
use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

pub struct Forwarder {
    pub addr: SocketAddr,
    cut: CancellationToken,
}

impl Forwarder {
    /// Listens on a free loopback port and forwards to `upstream`.
    pub async fn start(upstream: SocketAddr) -> Forwarder {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let cut = CancellationToken::new();
        let stop = cut.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => return, // the listener closes: connects refused
                    accepted = listener.accept() => {
                        let Ok((client, _)) = accepted else { continue };
                        let stop = stop.clone();
                        tokio::spawn(async move {
                            tokio::select! {
                                () = stop.cancelled() => {}
                                () = forward(client, upstream, addr) => {}
                            }
                        });
                    }
                }
            }
        });
        Forwarder { addr, cut }
    }

    /// Drops every connection and refuses new ones.
    pub fn cut(&self) {
        self.cut.cancel();
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.cut.cancel();
    }
}

/// One connection: requests pass as they are (their api key and version noted by correlation
/// id), answers naming brokers are rewritten to name `me`.
async fn forward(client: TcpStream, upstream: SocketAddr, me: SocketAddr) {
    let Ok(server) = TcpStream::connect(upstream).await else {
        return;
    };
    let (mut client_rx, mut client_tx) = client.into_split();
    let (mut server_rx, mut server_tx) = server.into_split();
    let asked: Arc<Mutex<HashMap<i32, (i16, i16)>>> = Arc::default();
    let noted = asked.clone();
    let requests = async move {
        while let Some(frame) = read_frame(&mut client_rx).await {
            if frame.len() >= 8 {
                let key = i16::from_be_bytes([frame[0], frame[1]]);
                let version = i16::from_be_bytes([frame[2], frame[3]]);
                let id = i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
                noted.lock().insert(id, (key, version));
            }
            if write_frame(&mut server_tx, &frame).await.is_err() {
                return;
            }
        }
    };
    let answers = async move {
        while let Some(frame) = read_frame(&mut server_rx).await {
            let id = i32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]);
            let request = asked.lock().remove(&id);
            let frame = match request {
                Some((key, version)) => rewrite(frame.clone(), key, version, me).unwrap_or(frame),
                None => frame,
            };
            if write_frame(&mut client_tx, &frame).await.is_err() {
                return;
            }
        }
    };
    tokio::select! {
        () = requests => {}
        () = answers => {}
    }
}

/// The answer with every broker named at `me`; `None` for answers that name none.
fn rewrite(frame: Bytes, key: i16, version: i16, me: SocketAddr) -> Option<Bytes> {
    let host = StrBytes::from_string(me.ip().to_string());
    let port = i32::from(me.port());
    let mut body = frame;
    match ApiKey::try_from(key).ok()? {
        ApiKey::Metadata => {
            let hv = MetadataResponse::header_version(version);
            let header = ResponseHeader::decode(&mut body, hv).ok()?;
            let mut answer = MetadataResponse::decode(&mut body, version).ok()?;
            for broker in &mut answer.brokers {
                broker.host = host.clone();
                broker.port = port;
            }
            encode(&header, hv, &answer, version)
        }
        ApiKey::FindCoordinator => {
            let hv = FindCoordinatorResponse::header_version(version);
            let header = ResponseHeader::decode(&mut body, hv).ok()?;
            let mut answer = FindCoordinatorResponse::decode(&mut body, version).ok()?;
            if answer.error_code == 0 {
                answer.host = host.clone();
                answer.port = port;
            }
            for coordinator in &mut answer.coordinators {
                coordinator.host = host.clone();
                coordinator.port = port;
            }
            encode(&header, hv, &answer, version)
        }
        ApiKey::DescribeCluster => {
            let hv = DescribeClusterResponse::header_version(version);
            let header = ResponseHeader::decode(&mut body, hv).ok()?;
            let mut answer = DescribeClusterResponse::decode(&mut body, version).ok()?;
            for broker in &mut answer.brokers {
                broker.host = host.clone();
                broker.port = port;
            }
            encode(&header, hv, &answer, version)
        }
        _ => None,
    }
}

fn encode(
    header: &ResponseHeader,
    header_version: i16,
    answer: &impl Encodable,
    version: i16,
) -> Option<Bytes> {
    let mut out = BytesMut::new();
    header.encode(&mut out, header_version).ok()?;
    answer.encode(&mut out, version).ok()?;
    Some(out.freeze())
}

async fn read_frame(from: &mut (impl AsyncReadExt + Unpin)) -> Option<Bytes> {
    let size = from.read_i32().await.ok()?;
    let mut frame = vec![0; usize::try_from(size).ok()?];
    from.read_exact(&mut frame).await.ok()?;
    Some(Bytes::from(frame))
}

async fn write_frame(to: &mut (impl AsyncWriteExt + Unpin), frame: &[u8]) -> std::io::Result<()> {
    to.write_i32(frame.len() as i32).await?;
    to.write_all(frame).await
}
