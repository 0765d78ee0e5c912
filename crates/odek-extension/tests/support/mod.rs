//! Test support: an in-process [`odek_extension::Server`] on pipes ([`InProcess`]), driven by
//! the shared JSON-RPC [`Peer`]; and the resources scenario both transports run (`resources`).

#![allow(dead_code)]

use std::sync::mpsc::{self, Receiver};
use std::thread;

pub mod resources;

pub use odek_test_support::peer::{Peer, READ_DEADLINE, line_channel};

/// An in-process server on pipes (async on the server's side), on its own runtime thread.
pub struct InProcess {
    pub peer: Peer,
    done: Receiver<Result<(), odek_extension::Error>>,
}

impl InProcess {
    pub fn start(server: odek_extension::Server) -> Self {
        let (server_input, client_output) = std::io::pipe().unwrap();
        let (client_input, server_output) = std::io::pipe().unwrap();
        let (done_sender, done) = mpsc::channel();
        thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
            // As `run_stdio` serves a client's pipes: waited on by the runtime, no threads.
            let outcome = runtime.block_on(async move {
                use tokio::net::unix::pipe;
                let input = pipe::Receiver::from_owned_fd(server_input.into()).unwrap();
                let output = pipe::Sender::from_owned_fd(server_output.into()).unwrap();
                server.run_async(input, output).await
            });
            let _ = done_sender.send(outcome);
        });
        Self { peer: Peer::new(Box::new(client_output), line_channel(client_input)), done }
    }

    /// Waits for `Server::run` to return.
    pub fn finished(&self) -> Result<(), odek_extension::Error> {
        self.done.recv_timeout(READ_DEADLINE).expect("server did not stop")
    }
}

impl std::ops::Deref for InProcess {
    type Target = Peer;
    fn deref(&self) -> &Peer {
        &self.peer
    }
}

impl std::ops::DerefMut for InProcess {
    fn deref_mut(&mut self) -> &mut Peer {
        &mut self.peer
    }
}
