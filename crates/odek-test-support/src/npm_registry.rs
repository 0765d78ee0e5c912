//! A scripted npm registry on 127.0.0.1 for tests, on plain std threads: it serves one package
//! built in the test — its packument at `/<name>` and its tarball (an uncompressed ustar archive,
//! which npm unpacks as it does a gzipped one, with its `sha512` integrity) at
//! `/<name>/-/<name>-<version>.tgz` — and answers anything else `404`. Every request is recorded
//! ([`NpmRegistry::requests`]); one request per connection (`Connection: close`).
//!
//! Start at [`NpmRegistry::start`]. Dropping the registry stops accepting and joins its thread.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use sha2::{Digest, Sha512};

/// Largest request head read (bytes); the rest of a longer one is not read.
const MAX_HEAD_BYTES: usize = 16 * 1024;
/// Longest request body read (and thrown away).
const MAX_BODY_BYTES: u64 = 1024 * 1024;
/// How long a connection may take to send its request head.
const READ_DEADLINE: Duration = Duration::from_secs(10);

/// A package the registry serves: `files` are paths inside the package (`package.json` is
/// written from the other fields) and their contents; `bin` names its one command.
#[derive(Debug, Clone)]
pub struct Package {
    pub name: String,
    pub version: String,
    pub bin: Option<(String, String)>,
    pub files: Vec<(String, Vec<u8>)>,
}

impl Package {
    /// Its `package.json`.
    fn manifest(&self) -> serde_json::Value {
        let mut manifest = serde_json::json!({"name": self.name, "version": self.version});
        if let Some((command, file)) = &self.bin {
            manifest["bin"] = serde_json::json!({ command: file });
        }
        manifest
    }

    /// The tarball: every file under `package/`, executable, `package.json` first.
    pub fn tarball(&self) -> Vec<u8> {
        let mut archive = Vec::new();
        let manifest = self.manifest().to_string().into_bytes();
        append_file(&mut archive, "package/package.json", &manifest);
        for (path, contents) in &self.files {
            append_file(&mut archive, &format!("package/{path}"), contents);
        }
        // Two zero blocks end an archive.
        archive.extend_from_slice(&[0_u8; 1024]);
        archive
    }
}

/// One ustar entry: a 512-byte header, then the contents padded to a block.
fn append_file(archive: &mut Vec<u8>, path: &str, contents: &[u8]) {
    let mut header = [0_u8; 512];
    let mut put = |at: usize, field: &[u8]| header[at..at + field.len()].copy_from_slice(field);
    put(0, path.as_bytes());
    put(100, b"0000755\0");
    put(108, b"0000000\0");
    put(116, b"0000000\0");
    put(124, format!("{:011o}\0", contents.len()).as_bytes());
    put(136, b"00000000000\0");
    put(148, b"        ");
    put(156, b"0");
    put(257, b"ustar\0");
    put(263, b"00");
    let checksum: u32 = header.iter().map(|byte| u32::from(*byte)).sum();
    header[148..156].copy_from_slice(format!("{checksum:06o}\0 ").as_bytes());
    archive.extend_from_slice(&header);
    archive.extend_from_slice(contents);
    archive.resize(archive.len().div_ceil(512) * 512, 0);
}

/// `sha512-<base64>`: npm's integrity string of `bytes`.
pub fn integrity(bytes: &[u8]) -> String {
    format!("sha512-{}", crate::base64(&Sha512::digest(bytes)))
}

#[derive(Debug)]
pub struct NpmRegistry {
    address: SocketAddr,
    requests: Arc<Mutex<Vec<String>>>,
    shutdown: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

impl NpmRegistry {
    /// Listens on 127.0.0.1 at a port the kernel picks and serves `package`.
    pub fn start(package: Package) -> NpmRegistry {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|error| panic!("bind the registry: {error}"));
        let address = listener.local_addr().unwrap_or_else(|error| panic!("the registry's address: {error}"));
        let tarball = package.tarball();
        let tarball_path = format!("/{0}/-/{0}-{1}.tgz", package.name, package.version);
        let mut version = package.manifest();
        version["dist"] = serde_json::json!({
            "tarball": format!("http://{address}{tarball_path}"),
            "integrity": integrity(&tarball),
        });
        let packument = serde_json::json!({
            "name": package.name,
            "dist-tags": {"latest": package.version},
            "versions": { package.version.clone(): version },
        })
        .to_string();
        let routes = Arc::new(vec![
            (format!("/{}", package.name), ("application/json", packument.into_bytes())),
            (tarball_path, ("application/octet-stream", tarball)),
        ]);
        let requests = Arc::new(Mutex::new(Vec::new()));
        let shutdown = Arc::new(AtomicBool::new(false));
        let (seen, stop) = (Arc::clone(&requests), Arc::clone(&shutdown));
        let acceptor = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (routes, seen) = (Arc::clone(&routes), Arc::clone(&seen));
                std::thread::spawn(move || serve(stream, &routes, &seen));
            }
        });
        NpmRegistry { address, requests, shutdown, acceptor: Some(acceptor) }
    }

    /// `http://127.0.0.1:<port>/`, what `npm_config_registry` is set to.
    pub fn url(&self) -> String {
        format!("http://{}/", self.address)
    }

    /// `127.0.0.1:<port>`.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The request lines (`GET /path`) received so far, in arrival order.
    pub fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl Drop for NpmRegistry {
    fn drop(&mut self) {
        self.shutdown.store(true, Ordering::SeqCst);
        // Wake the blocking accept so the acceptor sees the flag.
        let _ = TcpStream::connect(self.address);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

type Routes = Vec<(String, (&'static str, Vec<u8>))>;

fn serve(stream: TcpStream, routes: &Routes, requests: &Mutex<Vec<String>>) {
    let _ = stream.set_read_timeout(Some(READ_DEADLINE));
    let Ok(mut writer) = stream.try_clone() else { return };
    let mut reader = BufReader::new(stream).take(MAX_HEAD_BYTES as u64);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() || request_line.is_empty() {
        return;
    }
    // The rest of the head, then the body (npm's audit POST): a client whose body was not
    // read gets a reset instead of the answer, and retries after a pause.
    let mut line = String::new();
    let mut body_length = 0_u64;
    while reader.read_line(&mut line).is_ok_and(|read| read > 0) && !line.trim_end().is_empty() {
        if let Some((name, value)) = line.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            body_length = value.trim().parse().unwrap_or(0).min(MAX_BODY_BYTES);
        }
        line.clear();
    }
    let mut reader = reader.into_inner();
    let _ = std::io::copy(&mut reader.by_ref().take(body_length), &mut std::io::sink());
    let mut parts = request_line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
    requests.lock().unwrap_or_else(PoisonError::into_inner).push(format!("{method} {path}"));
    let found = routes.iter().find(|(route, _)| method == "GET" && route == path);
    let (status, content_type, body) = match found {
        Some((_, (content_type, body))) => ("200 OK", *content_type, body.as_slice()),
        None => ("404 Not Found", "application/json", b"{\"error\":\"not found\"}".as_slice()),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = writer.write_all(head.as_bytes()).and_then(|()| writer.write_all(body)).and_then(|()| writer.flush());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tar_header_checksum_covers_its_block() {
        let package = Package { name: "p".into(), version: "1.0.0".into(), bin: None, files: Vec::new() };
        let tarball = package.tarball();
        assert_eq!(tarball.len() % 512, 0);
        let header = &tarball[..512];
        let mut blank = header.to_vec();
        blank[148..156].copy_from_slice(b"        ");
        let sum: u32 = blank.iter().map(|byte| u32::from(*byte)).sum();
        let written = std::str::from_utf8(&header[148..154]).unwrap();
        assert_eq!(u32::from_str_radix(written, 8).unwrap(), sum);
    }
}
