//! Is a node ready? One Metadata request (v12) on its PLAINTEXT listener, encoded and
//! decoded with kafka-protocol on a blocking socket.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{MetadataRequest, MetadataResponse, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};

const VERSION: i16 = 12;

/// What a node's Metadata answer says about the cluster.
#[derive(Debug)]
pub struct Seen {
    pub brokers: Vec<(i32, String)>,
    pub controller_id: i32,
}

pub fn metadata(addr: SocketAddr) -> Result<Seen> {
    let mut body = BytesMut::new();
    RequestHeader::default()
        .with_request_api_key(MetadataRequest::KEY)
        .with_request_api_version(VERSION)
        .with_correlation_id(1)
        .with_client_id(Some(StrBytes::from_static_str("kafka-harness")))
        .encode(&mut body, MetadataRequest::header_version(VERSION))?;
    MetadataRequest::default()
        .with_topics(Some(Vec::new()))
        .encode(&mut body, VERSION)?;
    let mut frame = BytesMut::with_capacity(body.len() + 4);
    frame.put_i32(body.len() as i32);
    frame.put_slice(&body);

    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.write_all(&frame)?;
    let mut size = [0; 4];
    stream.read_exact(&mut size).context("Metadata answer")?;
    let mut answer = vec![0; i32::from_be_bytes(size) as usize];
    stream.read_exact(&mut answer)?;
    let mut answer = Bytes::from(answer);
    let header = ResponseHeader::decode(&mut answer, MetadataResponse::header_version(VERSION))?;
    ensure!(
        header.correlation_id == 1,
        "correlation id {}",
        header.correlation_id
    );
    let response = MetadataResponse::decode(&mut answer, VERSION)?;
    ensure!(
        !answer.has_remaining(),
        "bytes left after the Metadata answer"
    );
    Ok(Seen {
        brokers: response
            .brokers
            .iter()
            .map(|b| {
                (
                    b.node_id.0,
                    b.rack.as_ref().map(|r| r.to_string()).unwrap_or_default(),
                )
            })
            .collect(),
        controller_id: response.controller_id.0,
    })
}
