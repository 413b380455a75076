//! Threads with endpoints of their own: fibers on the node's workers, or
//! OS threads. As std's `thread::spawn` and `Builder::spawn`, each comes
//! in two forms: `spawn*` panics where `try_spawn*` returns a
//! [`SpawnError`].

use super::Node;
use crate::error::SpawnError;
use crate::{Address, Endpoint};
use std::thread::JoinHandle;
use threadwire_fiber::{JoinError, JoinHandle as FiberHandle, Priority};

impl Node {
    /// Starts a fiber with an endpoint of its own and returns its handle.
    /// Fibers are cheap (a pooled stack, no system call): a node runs
    /// thousands on its workers (its share of the host's cores by default, see
    /// [`Config::workers`](crate::Config::workers)). A fiber that waits —
    /// `recv`, `wait`, `probe`, a [`threadwire_fiber::sync`] primitive —
    /// parks only itself; its worker runs other fibers meanwhile and, with
    /// nothing to run, drives the node's progress. Code that blocks in the
    /// kernel belongs in [`threadwire_fiber::bound`] or on an OS thread
    /// ([`spawn_os`](Self::spawn_os)). Thread numbers are given in the
    /// order of the spawn calls, so a program that spawns
    /// deterministically has the same addresses on every run.
    ///
    /// # Panics
    ///
    /// If the node's thread numbers are exhausted or the OS refuses to
    /// start the fiber workers; [`try_spawn`](Self::try_spawn) returns the
    /// error instead.
    pub fn spawn<F, T>(&self, f: F) -> ThreadHandle<T>
    where
        F: FnOnce(Endpoint) -> T + Send + 'static,
        T: Send + 'static,
    {
        self.spawn_with(Priority::NORMAL, f)
    }

    /// Like [`spawn`](Self::spawn), at a given priority (16 levels; higher
    /// runs first on its worker).
    ///
    /// # Panics
    ///
    /// As [`spawn`](Self::spawn); see [`try_spawn_with`](Self::try_spawn_with).
    pub fn spawn_with<F, T>(&self, priority: Priority, f: F) -> ThreadHandle<T>
    where
        F: FnOnce(Endpoint) -> T + Send + 'static,
        T: Send + 'static,
    {
        self.try_spawn_with(priority, f)
            .unwrap_or_else(|e| panic!("spawning a fiber: {e}"))
    }

    /// Starts an OS thread with an endpoint of its own: for code that
    /// blocks in the kernel or must not share a worker.
    ///
    /// # Panics
    ///
    /// If the node's thread numbers are exhausted or the OS refuses to
    /// start a thread; [`try_spawn_os`](Self::try_spawn_os) returns the
    /// error instead.
    pub fn spawn_os<F, T>(&self, f: F) -> ThreadHandle<T>
    where
        F: FnOnce(Endpoint) -> T + Send + 'static,
        T: Send + 'static,
    {
        self.try_spawn_os(f)
            .unwrap_or_else(|e| panic!("spawning an OS thread: {e}"))
    }

    /// [`spawn`](Self::spawn), returning an error where it panics.
    pub fn try_spawn<F, T>(&self, f: F) -> Result<ThreadHandle<T>, SpawnError>
    where
        F: FnOnce(Endpoint) -> T + Send + 'static,
        T: Send + 'static,
    {
        self.try_spawn_with(Priority::NORMAL, f)
    }

    /// [`spawn_with`](Self::spawn_with), returning an error where it panics.
    pub fn try_spawn_with<F, T>(
        &self,
        priority: Priority,
        f: F,
    ) -> Result<ThreadHandle<T>, SpawnError>
    where
        F: FnOnce(Endpoint) -> T + Send + 'static,
        T: Send + 'static,
    {
        // The scheduler first: a thread number taken for a fiber that
        // cannot start would be lost.
        let scheduler = self.shared.scheduler()?;
        let (address, body) = self.endpoint_body(f)?;
        let fiber = scheduler
            .handle()
            .fiber()
            .priority(priority)
            .name(address.to_string())
            .spawn(body);
        Ok(ThreadHandle {
            address,
            inner: Joinable::Fiber(fiber),
        })
    }

    /// [`spawn_os`](Self::spawn_os), returning an error where it panics.
    pub fn try_spawn_os<F, T>(&self, f: F) -> Result<ThreadHandle<T>, SpawnError>
    where
        F: FnOnce(Endpoint) -> T + Send + 'static,
        T: Send + 'static,
    {
        let (address, body) = self.endpoint_body(f)?;
        let inner = std::thread::Builder::new()
            .name(address.to_string())
            .spawn(body)?;
        Ok(ThreadHandle {
            address,
            inner: Joinable::Os(inner),
        })
    }

    /// A fresh thread number, and `f` wrapped to run as its endpoint on
    /// whatever thread (fiber or OS) runs it.
    fn endpoint_body<F, T>(
        &self,
        f: F,
    ) -> Result<(Address, impl FnOnce() -> T + Send + 'static), SpawnError>
    where
        F: FnOnce(Endpoint) -> T + Send + 'static,
        T: Send + 'static,
    {
        let node = self.clone();
        let thread = self.shared.next_thread()?;
        let body = move || {
            let ep = Endpoint::bind(node, thread).expect("a fresh thread number is free");
            f(ep)
        };
        Ok((Address::new(self.id(), thread), body))
    }
}

/// A thread started with [`Node::spawn`].
#[derive(Debug)]
pub struct ThreadHandle<T> {
    address: Address,
    inner: Joinable<T>,
}

#[derive(Debug)]
enum Joinable<T> {
    Fiber(FiberHandle<T>),
    Os(JoinHandle<T>),
}

impl<T> ThreadHandle<T> {
    /// The thread's address.
    pub fn address(&self) -> Address {
        self.address
    }

    /// Waits for the thread (from a fiber or an OS thread); `Err` carries
    /// its panic's message.
    pub fn join(self) -> Result<T, JoinError> {
        match self.inner {
            Joinable::Fiber(f) => f.join(),
            Joinable::Os(t) => t.join().map_err(|panic| JoinError::from_panic(&*panic)),
        }
    }
}
