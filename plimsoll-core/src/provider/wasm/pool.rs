//! The threads runs execute on. wasmtime runs wasm on the calling thread's
//! native stack, and QuickJS needs a deep one (each JavaScript call costs a few
//! hundred bytes of it), so runs get their own threads with [`THREAD_STACK`]
//! bytes of stack rather than tokio's 2 MiB blocking threads. Threads are
//! started as runs need them, up to the number of runs allowed in flight, and
//! then kept.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};

/// Each run thread's native stack: the wasm stack limit plus room for the
/// host frames below it.
pub const THREAD_STACK: usize = super::guest::MAX_WASM_STACK + 2 * 1024 * 1024;

type Job = Box<dyn FnOnce() + Send + 'static>;

/// A growing set of run threads fed from one queue.
#[derive(Debug)]
pub struct Pool {
    jobs: Mutex<Sender<Job>>,
    queue: Arc<Mutex<Receiver<Job>>>,
    busy: Arc<AtomicUsize>,
    threads: AtomicUsize,
}

impl Pool {
    /// An empty pool; threads start on demand.
    pub fn new() -> Pool {
        let (tx, rx) = mpsc::channel();
        Pool {
            jobs: Mutex::new(tx),
            queue: Arc::new(Mutex::new(rx)),
            busy: Arc::default(),
            threads: AtomicUsize::new(0),
        }
    }

    /// Runs `job` on a pool thread and hands back its result. A thread is
    /// started whenever every existing one is busy, so no job waits behind
    /// another (the caller bounds how many are in flight).
    pub async fn run<R: Send + 'static>(
        &self,
        job: impl FnOnce() -> R + Send + 'static,
    ) -> std::io::Result<R> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let busy = self.busy.clone();
        let wanted = busy.fetch_add(1, Ordering::AcqRel) + 1;
        let job: Job = Box::new(move || {
            // A panicking job loses its answer (the caller sees an error), not
            // the thread or the count of busy threads.
            // The thread is free again before the caller can see the answer (or
            // its absence), so a caller's next job never finds it still busy.
            let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            busy.fetch_sub(1, Ordering::AcqRel);
            if let Ok(answer) = answer {
                let _ = tx.send(answer);
            }
        });
        if wanted > self.threads.load(Ordering::Acquire) {
            self.spawn().inspect_err(|_| {
                self.busy.fetch_sub(1, Ordering::AcqRel);
            })?;
        }
        self.jobs
            .lock()
            .map_err(|_| std::io::Error::other("the run queue is poisoned"))?
            .send(job)
            .map_err(|_| std::io::Error::other("the run threads are gone"))?;
        rx.await
            .map_err(|_| std::io::Error::other("the run's thread ended without an answer"))
    }

    fn spawn(&self) -> std::io::Result<()> {
        let n = self.threads.fetch_add(1, Ordering::AcqRel);
        let queue = self.queue.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("plimsoll-wasm-{n}"))
            .stack_size(THREAD_STACK)
            .spawn(move || {
                loop {
                    let job = match queue.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => return,
                    };
                    match job {
                        Ok(job) => job(),
                        Err(_) => return,
                    }
                }
            });
        spawned.map(drop).inspect_err(|_| {
            self.threads.fetch_sub(1, Ordering::AcqRel);
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn runs_jobs_concurrently_on_big_stacks() {
        let pool = Arc::new(Pool::new());
        let barrier = Arc::new(std::sync::Barrier::new(3));
        let jobs: Vec<_> = (0..3)
            .map(|i| {
                let (pool, barrier) = (pool.clone(), barrier.clone());
                // All three must be running at once to pass the barrier.
                tokio::spawn(async move {
                    pool.run(move || barrier.wait().is_leader() as usize + i)
                        .await
                        .unwrap()
                })
            })
            .collect();
        let mut sum = 0;
        for j in jobs {
            sum += j.await.unwrap();
        }
        assert_eq!(sum, 1 + 2 + 1, "one leader, indices 0..3");
        assert_eq!(pool.threads.load(Ordering::Acquire), 3);
        // A deep frame that a 2 MiB stack could not hold.
        let depth = pool.run(|| {
            let big = [1u8; 4 * 1024 * 1024];
            std::hint::black_box(&big)
                .iter()
                .map(|&b| b as usize)
                .sum::<usize>()
        });
        assert_eq!(depth.await.unwrap(), 4 * 1024 * 1024);
    }

    #[tokio::test]
    async fn a_panicking_job_is_an_error_and_the_thread_lives_on() {
        let pool = Pool::new();
        let err = pool
            .run(|| -> usize { panic!("a bug in a job") })
            .await
            .unwrap_err();
        assert!(err.to_string().contains("without an answer"), "{err}");
        assert_eq!(pool.run(|| 7).await.unwrap(), 7);
        assert_eq!(
            pool.threads.load(Ordering::Acquire),
            1,
            "the same thread ran both"
        );
        assert_eq!(pool.busy.load(Ordering::Acquire), 0);
    }
}
