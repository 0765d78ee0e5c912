//! Test support: an in-process [`odek_extension::Server`] on pipes ([`InProcess`]), driven by
//! the shared JSON-RPC [`Peer`]; and the resources scenario both transports run (`resources`).

#![allow(dead_code)]

use std::sync::mpsc::{self, Receiver};
use std::thread;

pub mod resources;

pub use odek_test_support::peer::{Peer, READ_DEADLINE, line_channel};

/// An in-process server on `std::io::pipe()`s, on its own runtime thread.
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
            let outcome = runtime.block_on(server.run(server_input, server_output));
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
