//! The machine going to sleep and waking, as logind says it (`PrepareForSleep(true)` just before a
//! suspend, `PrepareForSleep(false)` after the resume, on `org.freedesktop.login1.Manager`): the
//! scheduler ends its stretch of presence `asleep` at the moment the machine goes, not at its last
//! pass (which may be minutes earlier now that it wakes only when something is due), and makes a
//! pass at once on waking (the slots the night held are caught up then).
//!
//! logind is asked over D-Bus on a thread of its own (a blocking connection, as for the sleep
//! inhibitor): the scheduler only reads what it heard. No logind (a container, another platform):
//! said once at debug level, and the scheduler tells sleep from the wall clock running ahead of the
//! monotonic one at its next pass, as before.

/// What logind said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sleep {
    /// The machine is about to suspend.
    Going,
    /// It has resumed.
    Back,
}

/// Hear logind's `PrepareForSleep` on `bus` (`None`: the system bus) for as long as the receiver
/// lives (the thread ends at the first signal after it is dropped).
pub(crate) fn watch(bus: Option<String>) -> tokio::sync::mpsc::Receiver<Sleep> {
    let (tx, rx) = tokio::sync::mpsc::channel(8);
    #[cfg(target_os = "linux")]
    {
        let spawned = std::thread::Builder::new().name("nightshift-sleep".into()).spawn(move || {
            if let Err(e) = listen(bus.as_deref(), &tx) {
                tracing::debug!(error = %e, "not hearing logind's sleep and wake (the scheduler tells a sleep from the clocks instead)");
            }
        });
        if let Err(e) = spawned {
            tracing::debug!(error = %e, "no thread to hear logind's sleep and wake");
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (bus, tx);
    rx
}

#[cfg(target_os = "linux")]
fn listen(bus: Option<&str>, tx: &tokio::sync::mpsc::Sender<Sleep>) -> Result<(), String> {
    let builder = match bus {
        Some(address) => zbus::blocking::connection::Builder::address(address),
        None => zbus::blocking::connection::Builder::system(),
    };
    let conn = builder.and_then(|b| b.build()).map_err(|e| format!("no connection to logind's bus: {e}"))?;
    let proxy = zbus::blocking::proxy::Builder::<zbus::blocking::Proxy<'_>>::new(&conn)
        .destination("org.freedesktop.login1")
        .and_then(|b| b.path("/org/freedesktop/login1"))
        .and_then(|b| b.interface("org.freedesktop.login1.Manager"))
        .map(|b| b.cache_properties(zbus::proxy::CacheProperties::No))
        .and_then(|b| b.build())
        .map_err(|e| format!("no logind: {e}"))?;
    let signals = proxy.receive_signal("PrepareForSleep").map_err(|e| format!("logind's PrepareForSleep cannot be heard: {e}"))?;
    for message in signals {
        let Ok(going) = message.body().deserialize::<bool>() else { continue };
        let said = if going { Sleep::Going } else { Sleep::Back };
        tracing::info!(?said, "logind: the machine {}", if going { "is going to sleep" } else { "woke" });
        if tx.blocking_send(said).is_err() {
            return Ok(()); // the scheduler is gone
        }
    }
    Ok(())
}
