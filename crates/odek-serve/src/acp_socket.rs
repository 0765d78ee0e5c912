//! ACP over WebSocket at `/acp`: each text message is one JSON-RPC message of the Agent Client
//! Protocol, served by the ACP face the binary hands in ([`AcpConnector`], the one `odek acp`
//! runs on stdio), so a web ACP client gets what an editor gets. Behind the same token and
//! Host/Origin rules as every route; connections and message sizes are bounded, and a frame that
//! is not UTF-8 text ends its connection only.

use std::io;
use std::pin::Pin;
use std::sync::Arc;

use axum::extract::ws::{Message, WebSocket};
use futures_util::{Sink, SinkExt, Stream, StreamExt};
use odek::BoxFuture;
use tokio::sync::OwnedSemaphorePermit;
use tokio_util::sync::CancellationToken;

/// What the ACP face writes: one message per item.
pub type AcpOutput = Pin<Box<dyn Sink<String, Error = io::Error> + Send>>;

/// What the ACP face reads: one message per item, until the client goes.
pub type AcpInput = Pin<Box<dyn Stream<Item = io::Result<String>> + Send>>;

/// Serves ACP on one connection until its input ends.
pub type AcpConnector = Arc<dyn Fn(AcpOutput, AcpInput) -> BoxFuture<'static, ()> + Send + Sync>;

/// ACP connections open at once.
pub const MAX_ACP_CONNECTIONS: usize = 8;

/// The largest WebSocket message (and frame) read, as `odek acp` bounds a line.
pub const MAX_ACP_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// Runs `connector` over `socket` until the client closes it or `stop` (then the face sees
/// the end of its input and closes its sessions); `_place` is the connection's among
/// [`MAX_ACP_CONNECTIONS`], given back when it ends.
pub async fn serve(socket: WebSocket, connector: AcpConnector, stop: CancellationToken, _place: OwnedSemaphorePermit) {
    let (sink, stream) = socket.split();
    let output = sink
        .sink_map_err(io::Error::other)
        .with(|text: String| async move { Ok::<_, io::Error>(Message::Text(text.into())) });
    let input = stream
        .filter_map(|message| async move {
            match message {
                Ok(Message::Text(text)) => Some(Ok(text.as_str().to_owned())),
                Ok(Message::Binary(bytes)) => Some(String::from_utf8(bytes.to_vec()).map_err(|_| {
                    io::Error::new(io::ErrorKind::InvalidData, "a binary WebSocket message that is not UTF-8 text")
                })),
                Ok(Message::Ping(_) | Message::Pong(_) | Message::Close(_)) => None,
                Err(error) => Some(Err(io::Error::other(error))),
            }
        })
        .take_until(stop.cancelled_owned());
    connector(Box::pin(output), Box::pin(input)).await;
}
