//! The events of a channel waiting to be handed out, and the rule that one thread at a time
//! reads the channel's file: the others wait until what is waiting changes. A thread that reads
//! an event another thread wants leaves it here for that thread, so that each call gets the
//! events it asked for and none is lost.
//!
//! Generic over the event type so that the rule can be tested without a file.

use std::{
    collections::VecDeque,
    sync::{Condvar, Mutex, MutexGuard},
};

/// What waits, and whether a thread is reading the file.
struct State<T> {
    waiting: VecDeque<T>,
    reading: bool,
}

/// Events waiting to be handed out.
pub(crate) struct Handout<T> {
    state: Mutex<State<T>>,
    /// Signalled when `state` changes.
    changed: Condvar,
}

impl<T> Handout<T> {
    /// Nothing waiting, no thread reading.
    pub(crate) fn new() -> Self {
        Self {
            state: Mutex::new(State {
                waiting: VecDeque::new(),
                reading: false,
            }),
            changed: Condvar::new(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Leaves `event` for whoever wants it, and wakes the threads waiting.
    pub(crate) fn post(&self, event: T) {
        self.state().waiting.push_back(event);
        self.changed.notify_all();
    }

    /// Takes every waiting event that `which` picks.
    pub(crate) fn take(&self, which: impl Fn(&T) -> bool) -> VecDeque<T> {
        let mut state = self.state();
        let (taken, kept): (VecDeque<_>, VecDeque<_>) = state.waiting.drain(..).partition(which);
        state.waiting = kept;
        taken
    }

    /// The next event that `wanted` accepts: a waiting one, or one that `read` reads from the
    /// file, when no other thread is reading it. `read` gives `None` when it read nothing to
    /// hand out (or was woken for a posted event); what it reads that `wanted` refuses is left
    /// for the others. With another thread reading, a `nonblocking` caller gets `EAGAIN`.
    /// `taken` sees the event handed out while the lock is still held: until it returns, a
    /// [`Handout::take`] would still find the event, so an event is always either waiting or
    /// counted by `taken` (an ID's destroy relies on that).
    pub(crate) fn next(
        &self,
        wanted: impl Fn(&T) -> bool,
        taken: impl Fn(&T),
        nonblocking: bool,
        mut read: impl FnMut() -> Result<Option<T>, i32>,
    ) -> Result<T, i32> {
        let mut state = self.state();
        loop {
            if let Some(i) = state.waiting.iter().position(&wanted) {
                if let Some(event) = state.waiting.remove(i) {
                    taken(&event);
                    return Ok(event);
                }
            }
            if state.reading {
                if nonblocking {
                    return Err(libc::EAGAIN);
                }
                state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
                continue;
            }
            state.reading = true;
            drop(state);
            let got = read();
            state = self.state();
            state.reading = false;
            // Another thread may read now, or find what this one leaves.
            self.changed.notify_all();
            match got? {
                Some(event) if wanted(&event) => {
                    taken(&event);
                    return Ok(event);
                }
                Some(event) => state.waiting.push_back(event),
                None => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::{
        sync::{mpsc, Arc},
        thread::{self, JoinHandle},
        time::Duration,
    };

    type File = Arc<Mutex<mpsc::Receiver<u32>>>;

    /// A "file" that threads read one event at a time, blocking until there is one.
    fn file() -> (mpsc::Sender<u32>, File) {
        let (tx, rx) = mpsc::channel();
        (tx, Arc::new(Mutex::new(rx)))
    }

    /// A thread that waits, reading `file`, for the event `wanted` accepts; returned once it
    /// holds the file.
    fn spawn_reader(
        handout: &Arc<Handout<u32>>,
        file: File,
        wanted: impl Fn(&u32) -> bool + Send + 'static,
    ) -> JoinHandle<Result<u32, i32>> {
        let reader = {
            let handout = Arc::clone(handout);
            thread::spawn(move || {
                handout.next(
                    wanted,
                    |_| {},
                    false,
                    || Ok(file.lock().unwrap().recv().ok()),
                )
            })
        };
        while !handout.state().reading {
            thread::sleep(Duration::from_millis(1));
        }
        reader
    }

    #[test]
    fn a_waiting_event_goes_to_the_caller_that_wants_it() {
        let handout = Handout::new();
        handout.post(1);
        handout.post(2);
        let never = || -> Result<Option<u32>, i32> { panic!("nothing to read") };
        assert_eq!(handout.next(|e| *e == 2, |_| {}, false, never), Ok(2));
        assert_eq!(handout.next(|_| true, |_| {}, false, never), Ok(1));
    }

    #[test]
    fn what_the_reader_does_not_want_waits_for_its_owner() {
        let handout = Handout::new();
        let mut file = [5, 7].into_iter();
        let got = handout.next(|e| *e == 7, |_| {}, false, || Ok(file.next()));
        assert_eq!(got, Ok(7));
        assert_eq!(handout.take(|_| true), VecDeque::from([5]));
    }

    #[test]
    fn each_thread_gets_its_own_events_whoever_reads_them() {
        // Two threads each want their own events from one file; the events arrive in an
        // order that makes each reader read the other's first.
        for round in 0..50 {
            let handout = Arc::new(Handout::new());
            let (tx, rx) = file();
            let threads: Vec<_> = [0u32, 1]
                .into_iter()
                .map(|me| {
                    let handout = Arc::clone(&handout);
                    let rx = Arc::clone(&rx);
                    thread::spawn(move || {
                        (0..20)
                            .map(|_| {
                                let read = || Ok(rx.lock().unwrap().recv().ok());
                                handout.next(|e| e % 2 == me, |_| {}, false, read).unwrap()
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            for i in 0..20 {
                tx.send(2 * i + 1).unwrap();
                tx.send(2 * i).unwrap();
                if round % 2 == 0 {
                    thread::yield_now();
                }
            }
            let got: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
            assert_eq!(got[0], (0..20).map(|i| 2 * i).collect::<Vec<_>>());
            assert_eq!(got[1], (0..20).map(|i| 2 * i + 1).collect::<Vec<_>>());
        }
    }

    #[test]
    fn a_nonblocking_caller_does_not_wait_for_another_reader() {
        let handout = Arc::new(Handout::<u32>::new());
        let (tx, rx) = file();
        let reader = spawn_reader(&handout, rx, |_| true);
        let never = || -> Result<Option<u32>, i32> { panic!("another thread reads") };
        assert_eq!(
            handout.next(|_| true, |_| {}, true, never),
            Err(libc::EAGAIN)
        );
        tx.send(3).unwrap();
        assert_eq!(reader.join().unwrap(), Ok(3));
    }

    #[test]
    fn a_failed_read_lets_the_next_caller_read() {
        let handout = Handout::<u32>::new();
        assert_eq!(
            handout.next(|_| true, |_| {}, false, || Err(libc::EINTR)),
            Err(libc::EINTR)
        );
        assert_eq!(handout.next(|_| true, |_| {}, false, || Ok(Some(4))), Ok(4));
    }

    #[test]
    fn a_posted_event_wakes_a_waiting_thread() {
        let handout = Arc::new(Handout::<u32>::new());
        let (tx, rx) = file();
        // One thread reads the file for event 1; the other waits for event 2, which is
        // posted rather than read.
        let reader = spawn_reader(&handout, rx, |e| *e == 1);
        let waiter = {
            let handout = Arc::clone(&handout);
            thread::spawn(move || {
                handout.next(
                    |e| *e == 2,
                    |_| {},
                    false,
                    || -> Result<Option<u32>, i32> { panic!("the file is the other thread's") },
                )
            })
        };
        thread::sleep(Duration::from_millis(20));
        handout.post(2);
        assert_eq!(waiter.join().unwrap(), Ok(2));
        tx.send(1).unwrap();
        assert_eq!(reader.join().unwrap(), Ok(1));
    }

    #[test]
    fn an_event_handed_out_is_taken_under_the_lock() {
        // `taken` runs before the lock goes, for a waiting event and for one just read: a
        // `take` meanwhile (an ID's destroy) must wait, and then finds it counted.
        let handout = Handout::new();
        handout.post(1);
        let locked = |_: &u32| {
            assert!(
                handout.state.try_lock().is_err(),
                "taken after the lock went"
            )
        };
        let never = || -> Result<Option<u32>, i32> { panic!("one is waiting") };
        assert_eq!(handout.next(|_| true, locked, false, never), Ok(1));
        assert_eq!(handout.next(|_| true, locked, false, || Ok(Some(2))), Ok(2));
    }
}
