//! Waiting for a wall-clock instant without looking at the clock in between.
//!
//! The scheduler waits for a slot's time (02:00), not for a number of seconds: a monotonic timer
//! stops while the machine is suspended and would fire hours late, and the wall clock may be
//! stepped (NTP, a time zone's clock change made by hand, DST is not a step). Looking at the wall
//! clock every 30 s covers both, at the price of waking the process twice a minute all day.
//!
//! On Linux one `timerfd` on `CLOCK_REALTIME`, armed at the absolute instant
//! (`TFD_TIMER_ABSTIME`), fires when the wall clock reaches it — after a resume too, at once if
//! the instant passed during the suspend — and, with `TFD_TIMER_CANCEL_ON_SET`, wakes early when
//! the clock is stepped (its read fails with `ECANCELED`): the waiter works out what is due again.
//! Elsewhere, and for a clock that is not the system's (tests drive a manual one), the wait is
//! sliced: the clock is looked at again after at most [`SLICE`].

use chrono::{DateTime, Utc};
use std::time::Duration;

/// Without a wall timer, the longest a wait goes before the clock is looked at again.
pub const SLICE: Duration = Duration::from_secs(30);

/// Why a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Woke {
    /// The instant came (or the slice ran out: look at the clock).
    Due,
    /// The wall clock was stepped while waiting: what is due must be worked out again.
    ClockStepped,
}

/// A wall-clock timer, made once and re-armed for each wait.
pub struct WallTimer {
    #[cfg(target_os = "linux")]
    fd: Option<tokio::io::unix::AsyncFd<linux::TimerFd>>,
}

impl WallTimer {
    /// `wall`: the engine's clock is the system's (else waits are sliced, as they must follow a
    /// clock the kernel does not know).
    pub fn new(wall: bool) -> WallTimer {
        #[cfg(target_os = "linux")]
        {
            let fd = wall.then(linux::TimerFd::new).and_then(|made| match made {
                // SAFETY: `TimerFd` owns its descriptor and always answers the same one; the
                // `AsyncFd` owns the `TimerFd`, so it stays open for as long as it is registered.
                Ok(fd) => unsafe { tokio::io::unix::AsyncFd::register(fd) }.map_err(|e| tracing::warn!(error = %e.into_parts().1, "no wall-clock timer; the scheduler looks at the clock every 30 s")).ok(),
                Err(e) => {
                    tracing::warn!(error = %e, "no wall-clock timer; the scheduler looks at the clock every 30 s");
                    None
                }
            });
            WallTimer { fd }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = wall;
            WallTimer {}
        }
    }

    /// Whether waits are whole (a kernel wall timer), not sliced.
    pub fn is_whole(&self) -> bool {
        #[cfg(target_os = "linux")]
        {
            self.fd.is_some()
        }
        #[cfg(not(target_os = "linux"))]
        {
            false
        }
    }

    /// Wait until the wall clock reads `at` (`now` is the clock's reading now), or the clock is
    /// stepped, or — without a kernel timer — at most [`SLICE`].
    pub async fn wait_until(&self, at: DateTime<Utc>, now: DateTime<Utc>) -> Woke {
        #[cfg(target_os = "linux")]
        if let Some(fd) = &self.fd {
            if let Err(e) = fd.get_ref().arm(at) {
                tracing::warn!(error = %e, "could not arm the wall-clock timer; looking again in 30 s");
                tokio::time::sleep(SLICE).await;
                return Woke::Due;
            }
            loop {
                let Ok(mut ready) = fd.readable().await else {
                    tokio::time::sleep(SLICE).await;
                    return Woke::Due;
                };
                match ready.try_io(|inner| inner.get_ref().read()) {
                    Ok(Ok(())) => return Woke::Due,
                    Ok(Err(e)) if e.raw_os_error() == Some(libc::ECANCELED) => return Woke::ClockStepped,
                    Ok(Err(e)) => {
                        tracing::warn!(error = %e, "the wall-clock timer failed; looking again in 30 s");
                        tokio::time::sleep(SLICE).await;
                        return Woke::Due;
                    }
                    Err(_would_block) => continue,
                }
            }
        }
        tokio::time::sleep((at - now).to_std().unwrap_or_default().min(SLICE)).await;
        Woke::Due
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use chrono::{DateTime, Utc};
    use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

    /// A `timerfd` on `CLOCK_REALTIME`, non-blocking.
    pub struct TimerFd(OwnedFd);

    impl TimerFd {
        pub fn new() -> std::io::Result<TimerFd> {
            // SAFETY: a plain syscall; the descriptor it returns is owned from here on.
            let fd = unsafe { libc::timerfd_create(libc::CLOCK_REALTIME, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) };
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // SAFETY: `fd` was just created and is owned by nobody else.
            Ok(TimerFd(unsafe { OwnedFd::from_raw_fd(fd) }))
        }

        /// Fire at `at` on the wall clock (at once if it has passed); wake early on a clock step.
        pub fn arm(&self, at: DateTime<Utc>) -> std::io::Result<()> {
            // An instant at or before the epoch (an all-zero value would disarm it): its first nanosecond.
            let (secs, nanos) = if at.timestamp() > 0 { (at.timestamp(), i64::from(at.timestamp_subsec_nanos())) } else { (0, 1) };
            let spec = libc::itimerspec { it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 }, it_value: libc::timespec { tv_sec: secs as libc::time_t, tv_nsec: nanos as _ } };
            // SAFETY: `spec` is a valid itimerspec; the old value is not asked for.
            let r = unsafe { libc::timerfd_settime(self.0.as_raw_fd(), libc::TFD_TIMER_ABSTIME | libc::TFD_TIMER_CANCEL_ON_SET, &spec, std::ptr::null_mut()) };
            if r < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        }

        /// Take the expiry (`ECANCELED`: the clock was stepped; `WouldBlock`: not yet).
        pub fn read(&self) -> std::io::Result<()> {
            let mut expirations = 0u64;
            // SAFETY: reads 8 bytes into a u64, as timerfd documents.
            let n = unsafe { libc::read(self.0.as_raw_fd(), (&mut expirations as *mut u64).cast(), 8) };
            if n < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        }
    }

    impl AsFd for TimerFd {
        fn as_fd(&self) -> BorrowedFd<'_> {
            self.0.as_fd()
        }
    }

    impl AsRawFd for TimerFd {
        fn as_raw_fd(&self) -> RawFd {
            self.0.as_raw_fd()
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_wall_timer_fires_at_its_instant_at_once_for_one_past_and_early_on_a_clock_step() {
        let timer = WallTimer::new(true);
        assert!(timer.is_whole());
        let now = Utc::now();
        let started = std::time::Instant::now();
        assert_eq!(timer.wait_until(now + chrono::Duration::milliseconds(200), now).await, Woke::Due);
        assert!(started.elapsed() >= Duration::from_millis(150), "not before its instant: {:?}", started.elapsed());
        let now = Utc::now();
        let started = std::time::Instant::now();
        assert_eq!(timer.wait_until(now - chrono::Duration::hours(1), now).await, Woke::Due);
        assert!(started.elapsed() < SLICE, "an instant an hour past fires at once, not after a wait");
        assert!(!WallTimer::new(false).is_whole(), "a clock that is not the system's is followed by slices");
        // In the same test, after the waits above: a step of the clock is felt by every such
        // timer on the machine, and would end those waits early.
        a_step_of_the_wall_clock_ends_a_wait_early(&timer).await;
    }

    /// A wait an hour long ends as soon as the wall clock is stepped. The step is the clock set to
    /// what it reads — a step of microseconds, harmless to everything else on the machine, which
    /// the kernel still announces to every `TFD_TIMER_CANCEL_ON_SET` timer — made every 200 ms
    /// until the wait ends (so a slow start of the wait cannot miss it). Setting the clock needs
    /// `CAP_SYS_TIME` (CI runs as root); without it the test says so and checks nothing more.
    async fn a_step_of_the_wall_clock_ends_a_wait_early(timer: &WallTimer) {
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut stepper = {
            let done = std::sync::Arc::clone(&done);
            tokio::task::spawn_blocking(move || -> std::io::Result<()> {
                while !done.load(std::sync::atomic::Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(200));
                    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
                    // SAFETY: plain syscalls on a local timespec.
                    if unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut now) } != 0 || unsafe { libc::clock_settime(libc::CLOCK_REALTIME, &now) } != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            })
        };
        let now = Utc::now();
        let wait = tokio::time::timeout(Duration::from_secs(60), timer.wait_until(now + chrono::Duration::hours(1), now));
        // The wait's end, or the stepper's failure (it stops at its first refused step).
        let mut stepped = None;
        let woke = tokio::select! {
            woke = wait => Some(woke),
            ended = &mut stepper => {
                stepped = Some(ended.unwrap());
                None
            }
        };
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        let stepped = match stepped {
            Some(ended) => ended,
            None => stepper.await.unwrap(),
        };
        match stepped {
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => eprintln!("not checked: setting the clock needs CAP_SYS_TIME ({e})"),
            Err(e) => panic!("could not step the clock: {e}"),
            Ok(()) => assert_eq!(woke, Some(Ok(Woke::ClockStepped)), "a wait of an hour ends at a clock step, within a minute"),
        }
    }
}
